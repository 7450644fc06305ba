"""The scripted-week benchmark's runner (``benchmarks/capture_week_run.py``) on a two-session script, so the
benchmark cannot rot: a decision the user states in Claude Code (with a scripted shell call in the same turn)
must reach the model's context when a Codex session asks for it, through the real binaries, memcue's default
install and the scripted loopback model; memcue itself must call the model zero times; and every shell call the
harness ran leaves one PostToolUse record, the ones it refused none."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import REPO
from real_harness import program

sys.path.insert(0, str(REPO / "benchmarks"))

from capture_week_run import run_week  # noqa: E402
from capture_week_score import summarise  # noqa: E402

pytestmark = [pytest.mark.real_harness, pytest.mark.slow]

SCRIPT = {
    "name": "smoke", "description": "a statement made in Claude Code, needed in Codex",
    "files": {"app.py": "PORT = 1\n"},
    "facts": {"F01": {"signal": "statement", "text": "The invoices database listens on port 5433",
                      "expect": ["invoices database", "5433"]}},
    "sessions": [
        {"id": "S1", "harness": "claude-code", "turns": [
            {"prompt": "From now on the invoices database listens on port 5433. Update app.py.",
             "actions": [{"tool": "shell", "command": "sed -i 's/PORT = 1/PORT = 5433/' app.py"}],
             "answer": "app.py now uses port 5433 for the invoices database.", "introduces": ["F01"], "needs": []}]},
        {"id": "S2", "harness": "codex", "turns": [
            {"prompt": "Which port does the invoices database listen on?",
             "actions": [{"tool": "shell", "command": "ls"}, {"tool": "shell", "command": "rm -rf build"}],
             "answer": "5433.", "introduces": [], "needs": ["F01"]}]},
    ],
}


def test_a_statement_made_in_claude_code_comes_back_in_codex(tmp_path: Path) -> None:
    program("claude")
    program("codex")
    run = run_week(SCRIPT, tmp_path, say=lambda _: None)
    assert [t.code for t in run.turns] == [0, 0]
    assert (tmp_path / "shop" / "app.py").read_text() == "PORT = 5433\n", "the scripted shell call ran"
    score = summarise(SCRIPT, run)
    (fact,) = score["facts"]
    assert fact["back"], (fact, run.rows)
    need = fact["needs"][0]
    assert fact["needs"] == [{"turn": "S2 t0", "harness": "codex", "back": True, "via": need["via"],
                              "prompt_alone": need["prompt_alone"]}]
    assert isinstance(need["prompt_alone"], bool) and "S2 t0" in run.prompt_alone, "the prompt hook was replayed"
    assert score["model_calls"]["non_harness_requests"] == 0
    assert not run.problems, "the stub found every tool it was told to call"
    # Codex 0.171 refuses `rm -rf` itself and runs no hook for it: counted apart, not as a lost record.
    assert score["tool_records"] == {"claude-code": {"scripted": 1, "refused": 0, "spooled": 1},
                                     "codex": {"scripted": 2, "refused": 1, "spooled": 1}}
    assert "1 facts (at least 20)" in score["script_problems"], "the week rules are checked (this script breaks them)"


def test_the_runner_waits_for_a_hook_of_its_data_dir_still_running(tmp_path: Path) -> None:
    """Claude Code runs PostToolUse ``async``, so ``claude -p`` may exit before its last capture hook has spooled
    (a fresh-clone run once read the spool too early): ``settle`` waits while a hook of the week's data dir runs,
    and a hook of another data dir is not the week's."""
    import os
    import subprocess
    import time

    from capture_week_run import hooks_running  # noqa: E402

    from memcue.core.paths import Locations

    ours, other = tmp_path / "ours", tmp_path / "other"
    argv = [sys.executable, "-c", "import time; time.sleep(60)", "memcue/hooks/launch.py"]
    procs = [subprocess.Popen(argv, env={**os.environ, "MEMCUE_HOME": str(home)}) for home in (ours, other, ours)]
    try:
        deadline = time.monotonic() + 10  # a child's /proc entry shows its command line a moment after the fork
        while hooks_running(Locations(ours)) + hooks_running(Locations(other)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert hooks_running(Locations(ours)) == 2
        assert hooks_running(Locations(other)) == 1
        assert hooks_running(Locations(tmp_path / "nobody")) == 0
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    assert hooks_running(Locations(ours)) == 0
