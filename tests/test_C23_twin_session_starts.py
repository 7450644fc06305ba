"""C23: twin session starts and events delivered twice, through the real hook and the real sidecar.

Two SessionStart hooks for one new session at the same moment give one full block between them; one event
delivered twice (the same request id, live and through the spool, or one spool record read twice) counts
once; ``memcue doctor`` names a hook registered twice for one event.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import context_of, start_sidecar

from memcue.core.blocks import SESSION_HEADER

ROUNDS = 10


def _start_payload(project: Path, session_id: str) -> bytes:
    return json.dumps({"session_id": session_id, "transcript_path": f"/tmp/{session_id}.jsonl",
                       "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"}).encode()


def _twin_starts(env: dict[str, str], payload: bytes) -> list[str]:
    """Two real SessionStart hooks for one session, their payloads written at the same moment (both processes
    are up and waiting on stdin first); the contexts they printed."""
    procs = [subprocess.Popen([sys.executable, "-m", "memcue.hooks", "claude-code", "session-start"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for _ in range(2)]
    time.sleep(0.3)  # both interpreters started and blocked on stdin
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(payload)
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
    out = []
    for proc in procs:
        assert proc.stdout is not None and proc.stderr is not None
        stdout, stderr = proc.stdout.read(), proc.stderr.read()
        assert (proc.wait(timeout=30), stderr) == (0, b"")
        out.append(context_of(subprocess.CompletedProcess(proc.args, 0, stdout, stderr)))
    return out


def test_C23_two_session_starts_at_once_give_one_full_block(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "billing-api"
    project.mkdir()
    env = {**os.environ, "MEMCUE_HOME": str(home), "MEMCUE_HOOK_SPAWN": "0"}
    sc = start_sidecar(home)
    try:
        for i in range(30):
            sc.client.remember(f"billing-api note {i}: invoices are cut on the {i + 1}th by the cron in ops/cron.yml",
                               project=str(project), kind="decision", pinned=i < 5)
        rounds = [_twin_starts(env, _start_payload(project, f"twin-{n}")) for n in range(ROUNDS)]
    finally:
        sc.stop()
    for n, contexts in enumerate(rounds):
        full = [c for c in contexts if c.startswith(SESSION_HEADER)]
        assert len(full) == 1, (n, contexts)
        other = next(c for c in contexts if not c.startswith(SESSION_HEADER))
        assert other == "" or (other.count("\n") == 0 and other.startswith("memcue: memory is on")), (n, other)
