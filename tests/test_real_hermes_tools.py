"""The real Hermes Agent 0.19 with memcue installed (``memcue install hermes``): the shell calls of a turn reach
memcue's spool through the memory provider's ``sync_turn`` (Hermes hands it the turn's messages, tool calls and
results included), and a test that failed and then passed is promoted.

One ``hermes chat -q`` turn against a loopback Chat Completions server scripted to call Hermes' ``terminal`` tool
with ``make check`` twice: the first run fails, the second passes. The sidecar then holds one memory promoted
with reason ``test-passed`` that names the command and its failure line, with harness ``hermes``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import start_sidecar
from model_stubs import ModelStub
from real_harness import explain, memcue_cli, program, project_dir, promoted_and_tool_records
from test_real_claude_code_tools import MAKEFILE
from test_real_hermes import CONFIG, hermes_env

pytestmark = [pytest.mark.real_harness, pytest.mark.slow]


def test_hermes_terminal_calls_are_spooled_and_a_fail_then_pass_is_promoted(home: Path, tmp_path: Path) -> None:
    hermes = program("hermes")
    env, hermes_home = hermes_env(tmp_path, home)
    project = project_dir(tmp_path)
    (project / "Makefile").write_text(MAKEFILE)
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        call = {"name": "terminal", "input": {"command": "make check"}}
        with ModelStub("chat", tool_use=call, tool_rounds=2) as stub:
            (hermes_home / "config.yaml").write_text(CONFIG.format(url=stub.url))
            memcue_cli("install", "hermes", env=env)
            proc = subprocess.run([str(hermes), "chat", "-q", "run the checks", "-Q", "--accept-hooks"], cwd=project,
                                  env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=180)
        assert proc.returncode == 0, explain(proc, sc)
        results = [m for r in stub.requests if r.method == "POST" for m in (r.body or {}).get("messages", [])
                   if m.get("role") == "tool"]
        assert len({m.get("tool_call_id") for m in results}) == 2, "Hermes ran make check twice"
        promoted, spooled = promoted_and_tool_records(sc, home)
    finally:
        sc.stop()
    assert [(r["tool"]["tool"], r["tool"]["command"], r["tool"]["failed"]) for r in spooled] == [
        ("terminal", "make check", True), ("terminal", "make check", False)], (spooled, explain(proc, sc))
    assert spooled[0]["tool"]["exit_code"] == 2 and spooled[1]["tool"]["exit_code"] == 0
    assert len({r["session_id"] for r in spooled}) == 1 and spooled[0]["session_id"]
    assert [(c["signal"], c["reason"], c["harness"]) for c in promoted] == [
        ("test-passed", "test-passed", "hermes")], spooled
    assert "`make check` failed with `error: invoice total 10.0 != 10.5`" in promoted[0]["content"]
