"""The real Codex CLI (npm ``@openai/codex``) with memcue installed and trusted: its PostToolUse hook fires on a
shell command the (loopback, scripted) model runs, and the tool record reaches the store.

Two ``codex exec`` runs (the second ``codex exec resume --last``: the same session), each with one scripted
``exec_command`` call of ``make check``: the first fails, the second passes. The sidecar then holds one memory
promoted with reason ``test-passed`` that names the command and its failure line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import start_sidecar
from model_stubs import ModelStub
from real_harness import explain, memcue_cli, program, project_dir, promoted_and_tool_records, run
from test_real_claude_code_tools import MAKEFILE
from test_real_codex import _config, _env

pytestmark = [pytest.mark.real_harness, pytest.mark.slow]


def test_codex_post_tool_use_fires_and_a_fail_then_pass_is_promoted(home: Path, tmp_path: Path) -> None:
    env = _env(tmp_path, home)
    codex_home = Path(env["HOME"]) / ".codex"
    codex_home.mkdir()
    project = project_dir(tmp_path)
    (project / "Makefile").write_text(MAKEFILE)
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        call = {"name": "exec_command", "input": {"cmd": "make check"}}
        procs = []
        with ModelStub("responses", tool_use=call) as stub:
            (codex_home / "config.toml").write_text(_config(stub.url))
            memcue_cli("install", "codex", "--no-mcp", "--trust", env=env)
            for argv in (["exec", "--skip-git-repo-check", "-s", "danger-full-access", "run the checks"],
                         ["exec", "--skip-git-repo-check", "-s", "danger-full-access", "resume", "--last",
                          "run the checks again"]):
                procs.append(run([str(program("codex")), *argv], env=env, cwd=project, timeout=180))
                assert procs[-1].returncode == 0, explain(procs[-1], sc)
        promoted, spooled = promoted_and_tool_records(sc, home)
    finally:
        sc.stop()
    assert [(r["tool"]["command"], r["tool"]["failed"]) for r in spooled] == [
        ("make check", True), ("make check", False)], (spooled, explain(procs[-1], sc))
    assert len({r["session_id"] for r in spooled}) == 1
    assert [(c["signal"], c["reason"], c["harness"]) for c in promoted] == [
        ("test-passed", "test-passed", "codex")], spooled
    assert "`make check` failed with `error: invoice total 10.0 != 10.5`" in promoted[0]["content"]
