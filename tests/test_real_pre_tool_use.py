"""Recall at the point of action through the real harnesses: with memcue installed, a memory that names the file
(Claude Code's Write) or the command (Codex's shell tool) the loopback model's tool call touches reaches the model
in the request after that call, once, and not before it (neither the session-start block nor the prompt's recall
brought it: it is older than the session block's newest and shares no word with the prompt).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from conftest import Sidecar, start_sidecar
from model_stubs import ModelStub
from real_harness import (
    NEWER,
    QUIET,
    explain,
    memcue_cli,
    private_env,
    program,
    project_dir,
    run,
    user_claude_settings,
)
from test_real_claude_code_tools import MAKEFILE
from test_real_codex import _config, _env

from memcue.core.blocks import TOOL_LEAD
from memcue.core.project import resolve_project

pytestmark = [pytest.mark.real_harness, pytest.mark.slow]

TAX_BUG = "src/billing/tax.py must round VAT per invoice, not per line: per-line rounding drifts totals by a cent"
CHECK_NOTE = "make check needs the local Postgres on port 5433; start it with `docker compose up db` first"
PROMPT = "bump the version string"


def _seeded(home: Path, project: Path, memory: str) -> Sidecar:
    """A keyword sidecar (the lookup needs no vectors) holding ``memory`` as the project's oldest row, under more
    newer ones than the session-start block offers (``inject.service.SESSION_RECENT``), so the block leaves it
    out."""
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    scope = resolve_project(str(project))
    sc.client.remember(memory, project=scope, kind="bug")
    for text in NEWER:
        sc.client.remember(text, project=scope, kind="fact")
    return sc


def _after_tool_call(requests: list, memory: str) -> tuple[list[str], list[str]]:
    """The model requests (JSON text) before the tool's result came back, and from then on."""
    posts = [r.text for r in requests if r.method == "POST" and PROMPT in r.text]
    split = next((i for i, text in enumerate(posts) if "tool_result" in text or "function_call_output" in text),
                 len(posts))
    return posts[:split], posts[split:]


def test_claude_code_write_gets_the_memory_naming_the_file(home: Path, tmp_path: Path) -> None:
    claude = program("claude")
    env = private_env(tmp_path, home, **QUIET)
    original = b'{\n  "permissions": {"allow": ["Write"]}\n}\n'
    settings = user_claude_settings(env, original)
    assert memcue_cli("install", "claude-code", "--no-mcp", env=env)["data"][0]["changed"]
    project = project_dir(tmp_path)
    target = project / "src" / "billing" / "tax.py"
    target.parent.mkdir(parents=True)
    sc = _seeded(home, project, TAX_BUG)
    try:
        call = {"name": "Write", "input": {"file_path": str(target), "content": "RATE = 21\n"}}
        with ModelStub("anthropic", tool_use=call) as stub:
            proc = run([str(claude), "-p", PROMPT, "--output-format", "json", "--session-id", str(uuid.uuid4())],
                       cwd=project, env={**env, "ANTHROPIC_BASE_URL": stub.url,
                                         "ANTHROPIC_API_KEY": "sk-ant-loopback"}, timeout=180)
        assert proc.returncode == 0, explain(proc, sc)
        before, after = _after_tool_call(stub.requests, TAX_BUG)
    finally:
        sc.stop()
    assert target.read_text() == "RATE = 21\n", "the tool call ran: the hook never blocks it"
    assert before and not any(TAX_BUG in text for text in before), "not in context before the tool call"
    assert after, explain(proc, sc)
    assert after[-1].count(TAX_BUG) == 1 and TOOL_LEAD in after[-1], explain(proc, sc) + after[-1][-3000:]

    assert memcue_cli("uninstall", "claude-code", env=env)["data"][0]["restored"]
    assert settings.read_bytes() == original


def test_codex_shell_command_gets_the_memory_naming_the_command(home: Path, tmp_path: Path) -> None:
    env = _env(tmp_path, home)
    codex_home = Path(env["HOME"]) / ".codex"
    codex_home.mkdir()
    project = project_dir(tmp_path)
    (project / "Makefile").write_text(MAKEFILE)
    sc = _seeded(home, project, CHECK_NOTE)
    try:
        call = {"name": "exec_command", "input": {"cmd": "make check"}}
        with ModelStub("responses", tool_use=call) as stub:
            (codex_home / "config.toml").write_text(_config(stub.url))
            memcue_cli("install", "codex", "--no-mcp", "--trust", env=env)
            proc = run([str(program("codex")), "exec", "--skip-git-repo-check", "-s", "danger-full-access", PROMPT],
                       env=env, cwd=project, timeout=180)
            assert proc.returncode == 0, explain(proc, sc)
            before, after = _after_tool_call(stub.requests, CHECK_NOTE)
    finally:
        sc.stop()
    assert before and not any(CHECK_NOTE in text for text in before), "not in context before the tool call"
    assert after, explain(proc, sc)
    assert after[-1].count(CHECK_NOTE) == 1 and TOOL_LEAD in after[-1], explain(proc, sc) + after[-1][-3000:]
