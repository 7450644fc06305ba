"""The real Claude Code (npm ``@anthropic-ai/claude-code``) with memcue installed: its PostToolUse hooks fire on
a Bash command the (loopback, scripted) model runs, and the tool record reaches the store.

Two ``claude -p`` runs of one session (``--session-id``, then ``--resume``), each with one scripted Bash call of
``make check``: the first fails (PostToolUseFailure), the second passes (PostToolUse). The sidecar then holds one
memory promoted with reason ``test-passed`` that names the command and its failure line.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from conftest import start_sidecar
from model_stubs import ModelStub
from real_harness import (
    QUIET,
    explain,
    memcue_cli,
    private_env,
    program,
    project_dir,
    promoted_and_tool_records,
    run,
    user_claude_settings,
)

pytestmark = [pytest.mark.real_harness, pytest.mark.slow]

#: A check that fails once (the first run leaves the marker its second run needs).
MAKEFILE = "check:\n\t@test -f .fixed || (touch .fixed; echo 'error: invoice total 10.0 != 10.5'; exit 1)\n"


def test_post_tool_use_hooks_fire_and_a_fail_then_pass_is_promoted(home: Path, tmp_path: Path) -> None:
    claude = program("claude")
    env = private_env(tmp_path, home, **QUIET)
    original = b'{\n  "permissions": {"allow": ["Bash(make check)"]}\n}\n'
    settings = user_claude_settings(env, original)
    assert memcue_cli("install", "claude-code", "--no-mcp", env=env)["data"][0]["changed"]
    project = project_dir(tmp_path)
    (project / "Makefile").write_text(MAKEFILE)
    session = str(uuid.uuid4())
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        call = {"name": "Bash", "input": {"command": "make check", "description": "Run the checks"}}
        procs = []
        for first in (True, False):
            with ModelStub("anthropic", tool_use=call) as stub:
                argv = [str(claude), "-p", "run the checks", "--output-format", "json",
                        *(["--session-id", session] if first else ["--resume", session])]
                procs.append(run(argv, cwd=project, env={**env, "ANTHROPIC_BASE_URL": stub.url,
                                                         "ANTHROPIC_API_KEY": "sk-ant-loopback"}, timeout=180))
            assert procs[-1].returncode == 0, explain(procs[-1], sc)
            assert any("tool_result" in r.text for r in stub.requests), "the model's Bash call ran"
        promoted, spooled = promoted_and_tool_records(sc, home)
    finally:
        sc.stop()
    assert [r["tool"]["failed"] for r in spooled] == [True, False], (spooled, explain(procs[-1], sc))
    assert {r["session_id"] for r in spooled} == {session}
    assert [(c["signal"], c["reason"], c["harness"]) for c in promoted] == [
        ("test-passed", "test-passed", "claude-code")], spooled
    assert "`make check` failed with `error: invoice total 10.0 != 10.5`" in promoted[0]["content"]

    assert memcue_cli("uninstall", "claude-code", env=env)["data"][0]["restored"]
    assert settings.read_bytes() == original
