"""The session-start block at its full budget (Codex: 2,200 tokens of briefs, ``adapters.base.COMMAND_HOOK_TOKENS``;
Claude Code: up to its 9,500-character guard, ``adapters.claude_code.TOKENS``) reaches the model whole through the
real Claude Code and Codex: its last memory, its left-out line and its
closing tag are in the model's first request. Claude Code replaces additionalContext over 10,000 characters
with a preview and Codex keeps a bounded amount of hook context (DESIGN.md section 3), so a budget past what
they keep would cut the block's end (and the tag that closes the stored data) without a word.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import Sidecar, start_sidecar
from model_stubs import ModelStub
from real_harness import (
    CODEX_STUB_PROVIDER,
    QUIET,
    explain,
    memcue_cli,
    private_env,
    program,
    project_dir,
    run,
)

from memcue.core.blocks import BLOCK_CLOSE, MEMORY_LINE_START, SESSION_HEADER
from memcue.core.project import resolve_project

pytestmark = [pytest.mark.real_harness, pytest.mark.slow]

QUESTION = "what should I look at first in this repository?"
#: Components and choices the seeded memories combine: 45 distinct notes of about 230 characters.
PARTS = ["billing", "search", "exports", "auth", "uploads", "reports", "mailer", "scheduler", "cache"]
CHOICES = ["retries with jittered backoff", "a read replica", "signed URLs", "a nightly batch", "feature flags"]


def _seed(home: Path, project: Path) -> tuple[Sidecar, str]:
    """A real sidecar holding 45 notes for ``project``, more than the block can hold; returns it and the
    newest note's text (the block's first recent memory)."""
    sc = start_sidecar(home)
    scope = resolve_project(str(project))
    text = ""
    for i, (part, choice) in enumerate((p, c) for c in CHOICES for p in PARTS):
        text = (f"Note {i:02d}: the {part} module moved to {choice} after the incident review of week {i + 1}; "
                f"the runbook in docs/{part}.md says how to check it, and the owner of {part} signs off changes "
                f"to its configuration before they ship.")
        sc.client.remember(text, project=scope, kind="note")
    sc.client.wait_idle(timeout_s=120)
    return sc, text


def _session_block(sent: str) -> str:
    """The session-start block in a request's text, from its header to its closing tag ("" when absent)."""
    start = sent.find(SESSION_HEADER)
    end = sent.find(BLOCK_CLOSE, start)
    return sent[start:end + len(BLOCK_CLOSE)] if start >= 0 and end > start else ""


def _assert_whole(sent: str, newest: str, least_chars: int = 7_000) -> None:
    block = _session_block(sent)
    assert block, "the session-start block and its closing tag reach the model"
    assert block.count(MEMORY_LINE_START) >= 18, block
    assert newest in block and "left out" in block
    assert len(block) > least_chars, "the block used its budget, so the test shows the harness keeps that much"


def test_claude_code_keeps_a_full_session_block(home: Path, tmp_path: Path) -> None:
    claude = program("claude")
    env = private_env(tmp_path, home, **QUIET)
    memcue_cli("install", "claude-code", "--no-mcp", env=env)
    project = project_dir(tmp_path)
    sc, newest = _seed(home, project)
    try:
        with ModelStub("anthropic") as stub:
            proc = run([str(claude), "-p", QUESTION, "--output-format", "json"], cwd=project,
                       env={**env, "ANTHROPIC_BASE_URL": stub.url, "ANTHROPIC_API_KEY": "sk-ant-loopback"})
        assert proc.returncode == 0, explain(proc, sc)
    finally:
        sc.stop()
    _assert_whole(stub.turns(QUESTION)[0].text, newest, least_chars=9_200)


def test_codex_keeps_a_full_session_block(home: Path, tmp_path: Path) -> None:
    codex = program("codex")
    env = private_env(tmp_path, home, STUB_API_KEY="loopback")
    env["PATH"] = f"{codex.parent}{os.pathsep}{env.get('PATH', '')}"  # `--trust` runs the codex on PATH
    config = Path(env["HOME"]) / ".codex" / "config.toml"
    config.parent.mkdir()
    project = project_dir(tmp_path)
    sc, newest = _seed(home, project)
    try:
        with ModelStub("responses") as stub:
            config.write_text(f'model = "stub-model"\nmodel_provider = "stub"\ncheck_for_update_on_startup = false\n\n'
                              f"{CODEX_STUB_PROVIDER.format(url=stub.url)}\n[analytics]\nenabled = false\n")
            memcue_cli("install", "codex", "--trust", "--no-mcp", env=env)
            proc = run([str(codex), "exec", "--skip-git-repo-check", QUESTION], env=env, cwd=project)
        assert proc.returncode == 0, explain(proc, sc)
    finally:
        sc.stop()
    _assert_whole(stub.turns(QUESTION)[-1].text, newest)
