"""The stress benchmark's bounded version (issue 13): nothing lost, nothing counted twice under load.

Four Claude Code sessions at once, five rounds each of UserPromptSubmit, Stop and SessionEnd through the
installed hook command (``python -I -S memcue/hooks/launch.py``) with real payloads, against the real
sidecar with the real model, which is stopped (SIGTERM) and started again once in the middle. Two of the
sessions run starved: half their hooks are suspended for 1.2 s early in their run, with the payload
already in the pipe (the issue's reproduction of a payload thrown away). The workload and the counting are
``benchmarks/stress.py``'s own (``make bench-stress`` runs the full size).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hookutil import kill_spawned_sidecars

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import stress  # noqa: E402

#: 4 sessions x 5 rounds, one restart, two starved sessions: about 30-60 s on 2 cores.
LOAD = stress.Load(sessions=4, rounds=5, restarts=1, stall_sessions=2, stall_share=0.5, stall_s=1.2)


@pytest.mark.slow
def test_C21_stress_rounds_lose_nothing_and_count_nothing_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCUE_HOME", os.environ.get("MEMCUE_HOME", ""))  # make_setup sets it; restored after
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    root = Path(tempfile.mkdtemp(prefix="mc-st-", dir="/tmp"))
    setup = stress.make_setup(root, "s")
    try:
        report = stress.stress_scenario(setup, LOAD, memories=0, seed_=13)
    finally:
        stress.finish(setup)
        kill_spawned_sidecars(setup.home)
        shutil.rmtree(root, ignore_errors=True)
    counts, hooks, logs = report["counts"], report["hooks"], report["logs"]
    assert len(report["restarts"]) == 1 and report["restarts"][0]["up_after_s"] is not None, report["restarts"]
    assert sum(h["stalled"] for h in hooks.values()) > 0, "the starved sessions must have had suspended hooks"
    assert {kind: h["exit_codes"] for kind, h in hooks.items()} == {kind: {0: 20} for kind in stress.KINDS}
    assert {kind: c["sent"] for kind, c in counts.items()} == {kind: 20 for kind in stress.KINDS}
    assert {kind: (c["lost"], c["duplicated"]) for kind, c in counts.items()} == {
        kind: (0, 0) for kind in stress.KINDS}, (counts, logs)
    assert logs["lock_errors"] == 0, logs["lock_error_lines"]
    assert logs["empty_stdin"] == 0, logs
