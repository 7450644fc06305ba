"""The real Claude Code (npm ``@anthropic-ai/claude-code``) with memcue installed by ``memcue install``:
``claude -p`` against a loopback Anthropic Messages server, which records what reached the model.

Checks: the remembered fact reached the model in the request, exactly once; the session-start block arrived
in the same request; the prompt, the answer (Stop) and the session's end were captured; uninstall gives back
the settings file byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from model_stubs import ModelStub
from real_harness import (
    FACT,
    PINNED,
    QUESTION,
    QUIET,
    explain,
    memcue_cli,
    private_env,
    program,
    project_dir,
    run,
    seeded_sidecar,
    user_claude_settings,
    wait_for_bookkeeping,
)

from memcue.core.blocks import PROMPT_HEADER, SESSION_HEADER, STANDING_NOTE, STANDING_NOTE_NO_TOOLS
from memcue.core.project import resolve_project

pytestmark = [pytest.mark.real_harness, pytest.mark.slow]



def test_claude_code_gets_the_fact_once_and_the_session_block(home: Path, tmp_path: Path) -> None:
    claude = program("claude")
    env = private_env(tmp_path, home, **QUIET)
    original = b'{\n  "permissions": {"allow": ["Bash(git status)"]},\n  "model": "claude-opus-5-5"\n}\n'
    settings = user_claude_settings(env, original)
    report = memcue_cli("install", "claude-code", env=env)["data"][0]
    assert report["changed"] and report["path"] == str(settings)

    project = project_dir(tmp_path)
    sc = seeded_sidecar(home, project)
    try:
        with ModelStub("anthropic") as stub:
            proc = run([str(claude), "-p", QUESTION, "--output-format", "json"], cwd=project,
                       env={**env, "ANTHROPIC_BASE_URL": stub.url, "ANTHROPIC_API_KEY": "sk-ant-loopback"})
        assert proc.returncode == 0, explain(proc, sc)
        assert json.loads(proc.stdout)["result"] == stub.reply
        captured = sc.client.recall(QUESTION, project=resolve_project(str(project)), include_requests=True)
        bookkeeping = wait_for_bookkeeping(sc, 2)  # the answer (Stop) and the session's end
    finally:
        sc.stop()

    turns = stub.turns(QUESTION)
    assert len(turns) == 1, [r.path for r in stub.requests]
    sent = turns[0].text
    assert sent.count(FACT) == 1, explain(proc, sc)  # by the prompt hook, once
    assert sent.count(PINNED) == 1  # by the session-start block, once
    assert SESSION_HEADER in sent and PROMPT_HEADER in sent
    # The note names memcue's MCP tools only when the install registered the server (`claude` on PATH).
    note = STANDING_NOTE if report.get("mcp_registered") else STANDING_NOTE_NO_TOOLS
    assert sent.count(note) == 1 and sent.index(note) < sent.index(SESSION_HEADER)
    assert sent.index(SESSION_HEADER) < sent.index(PINNED) and sent.index(PROMPT_HEADER) < sent.index(FACT)
    assert sum(r.text.count(FACT) for r in stub.requests) == 1  # and nowhere else
    assert any(r["memory_kind"] == "request" and r["content"] == QUESTION for r in captured["results"])
    assert bookkeeping == 2, "the answer (Stop) and the session's end (SessionEnd) are recorded"

    assert memcue_cli("uninstall", "claude-code", env=env)["data"][0]["restored"]
    assert settings.read_bytes() == original


def test_mcp_server_registered_through_claude_and_removed_again(home: Path, tmp_path: Path) -> None:
    claude = program("claude")
    env = private_env(tmp_path, home, **QUIET)
    env["PATH"] = f"{claude.parent}:{env.get('PATH', '')}"  # `--mcp` runs the claude on PATH
    state = Path(env["HOME"]) / ".claude.json"
    first = memcue_cli("install", "claude-code", "--mcp", env=env)["data"][0]
    again = memcue_cli("install", "claude-code", "--mcp", env=env)["data"][0]
    entry = json.loads(state.read_text())["mcpServers"]["memcue"]
    assert "registered" in first["mcp"] and "already registered" in again["mcp"]
    assert entry["args"] == ["-P", "-m", "memcue", "mcp"] and entry["env"] == {"MEMCUE_HOME": str(home)}
    removed = memcue_cli("uninstall", "claude-code", env=env)["data"][0]
    assert removed["mcp"] == "MCP server 'memcue' removed"
    assert "memcue" not in json.loads(state.read_text()).get("mcpServers", {})


#: What the scripted model asks memcue's MCP server to remember.
SAVED = "The invoice exporter retries S3 uploads five times with jittered backoff"


def test_default_install_lets_claude_p_call_remember_without_a_manual_allow(home: Path, tmp_path: Path) -> None:
    """After a plain `memcue install claude-code` (no --mcp, no allow by hand), `claude -p` runs the model's
    call of mcp__memcue__remember and the memory is stored; uninstall gives the settings file back byte for
    byte, the user's own permission rules kept throughout."""
    claude = program("claude")
    env = private_env(tmp_path, home, **QUIET)
    env["PATH"] = f"{claude.parent}:{env.get('PATH', '')}"  # the default install registers through `claude`
    original = b'{\n  "permissions": {"allow": ["Bash(git status)"], "deny": ["WebFetch"]}\n}\n'
    settings = user_claude_settings(env, original)
    report = memcue_cli("install", "claude-code", env=env)["data"][0]
    assert report["mcp_registered"] is True, report
    assert json.loads(settings.read_text())["permissions"]["allow"] == ["Bash(git status)", "mcp__memcue__*"]

    project = project_dir(tmp_path)
    sc = seeded_sidecar(home, project)
    try:
        call = {"name": "mcp__memcue__remember", "input": {"content": SAVED, "kind": "howto"}}
        # `claude -p` connects MCP servers without waiting for them (anthropics/claude-code#65094): on a busy
        # machine its first turn may go out before memcue's tools are listed. Then, and only then, once more.
        for _attempt in range(2):
            with ModelStub("anthropic", tool_use=call) as stub:
                proc = run([str(claude), "-p", "note how the exporter retries uploads", "--output-format", "json"],
                           cwd=project, env={**env, "ANTHROPIC_BASE_URL": stub.url,
                                             "ANTHROPIC_API_KEY": "sk-ant-loopback"}, timeout=180)
            assert proc.returncode == 0, explain(proc, sc)
            if any(call["name"] in r.text for r in stub.requests):
                break
        stored = [m for m in sc.client.list_recent(all_projects=True, limit=100)["results"] if m["content"] == SAVED]
    finally:
        sc.stop()
    results = [r.text for r in stub.requests if "tool_result" in r.text]
    assert stored, explain(proc, sc) + "\ntool results: " + "\n".join(results)[-2000:]
    assert stored[0]["memory_kind"] == "howto" and stored[0]["project"] == resolve_project(str(project))

    assert memcue_cli("uninstall", "claude-code", env=env)["data"][0]["restored"]
    assert settings.read_bytes() == original
