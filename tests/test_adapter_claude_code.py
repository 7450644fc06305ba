"""The Claude Code adapter: real payload shapes in, the exact hookSpecificOutput shape out (C07, C14, C16)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from memcue import adapters
from memcue.adapters import claude_code
from memcue.adapters.base import SESSION_START, USER_PROMPT_SUBMIT, Budget, HookEvent
from memcue.core.blocks import BLOCK_CLOSE, BLOCK_OPEN, PROMPT_HEADER, SESSION_HEADER, left_out_line

UPS_PAYLOAD = {
    "session_id": "abc123",
    "transcript_path": "/home/u/.claude/projects/p/abc123.jsonl",
    "cwd": "/tmp",
    "permission_mode": "default",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "Write a function to calculate the factorial of a number",
}
SESSION_PAYLOAD = {
    "session_id": "abc123",
    "transcript_path": "/home/u/.claude/projects/p/abc123.jsonl",
    "cwd": "/tmp",
    "hook_event_name": "SessionStart",
    "source": "startup",
    "model": "claude-sonnet-4-5",
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "CLAUDE_CODE_SESSION_ID",
        "CLAUDE_PROJECT_DIR",
        "MEMCUE_PROMPT_TOKENS",
        "MEMCUE_SESSION_START_TOKENS",
    ):
        monkeypatch.delenv(name, raising=False)


def test_parse_user_prompt_submit() -> None:
    event = claude_code.parse(USER_PROMPT_SUBMIT, UPS_PAYLOAD)
    assert event == HookEvent(
        harness="claude-code",
        event="user-prompt-submit",
        session_id="abc123",
        cwd="/tmp",
        project=os.path.realpath("/tmp"),
        prompt="Write a function to calculate the factorial of a number",
        source="",
        transcript_path="/home/u/.claude/projects/p/abc123.jsonl",
        extra={"hook_event_name": "UserPromptSubmit", "permission_mode": "default"},
    )


def test_parse_session_start() -> None:
    event = claude_code.parse(SESSION_START, SESSION_PAYLOAD)
    assert (event.event, event.source, event.prompt, event.session_id) == (
        "session-start",
        "startup",
        "",
        "abc123",
    )
    assert event.extra == {"hook_event_name": "SessionStart", "model": "claude-sonnet-4-5"}
    assert event.to_dict()["transcript_path"] == SESSION_PAYLOAD["transcript_path"]


@pytest.mark.parametrize("source", ["startup", "resume", "clear", "compact", "fork", "something-new"])
def test_C15_session_start_sources_pass_through(source: str) -> None:
    assert claude_code.parse(SESSION_START, {**SESSION_PAYLOAD, "source": source}).source == source


@pytest.mark.parametrize("payload", [None, [], ["prompt"], "prompt", 42, {"prompt": 7, "session_id": ["x"]}])
def test_C02_parse_non_object_or_wrong_types(payload: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "env-session")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", "/tmp")
    event = claude_code.parse(USER_PROMPT_SUBMIT, payload)
    assert event.prompt == ""
    assert event.session_id == "env-session"
    assert event.cwd == "/tmp"
    assert event.project == os.path.realpath("/tmp")


def test_parse_falls_back_to_process_cwd(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    event = claude_code.parse(USER_PROMPT_SUBMIT, {"prompt": "x"})
    assert event.cwd == str(tmp_path)
    assert event.session_id == ""


def test_C16_project_is_git_top_level(tmp_path: Path) -> None:
    repo = tmp_path / "billing-api"
    sub = repo / "src" / "deep"
    sub.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    link = tmp_path / "link"
    link.symlink_to(sub)
    for cwd in (repo, sub, link):
        event = claude_code.parse(USER_PROMPT_SUBMIT, {**UPS_PAYLOAD, "cwd": str(cwd)})
        assert event.project == str(repo.resolve())
        assert event.cwd == str(cwd), "cwd is kept as given; only project is resolved"


def test_budget_defaults_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    assert claude_code.budget(USER_PROMPT_SUBMIT) == Budget(max_tokens=600, max_chars=9500)
    assert claude_code.budget(SESSION_START) == Budget(max_tokens=2450, max_chars=9500)
    monkeypatch.setenv("MEMCUE_PROMPT_TOKENS", "900")
    monkeypatch.setenv("MEMCUE_SESSION_START_TOKENS", "3000")
    assert claude_code.budget(USER_PROMPT_SUBMIT).max_tokens == 900
    assert claude_code.budget(SESSION_START).max_tokens == 3000
    for bad in ("zero", "0", "-5", "1.5"):
        monkeypatch.setenv("MEMCUE_PROMPT_TOKENS", bad)
        assert claude_code.budget(USER_PROMPT_SUBMIT).max_tokens == 600


@pytest.mark.parametrize(
    ("event", "name"), [(USER_PROMPT_SUBMIT, "UserPromptSubmit"), (SESSION_START, "SessionStart")]
)
def test_C14_render_shape(event: str, name: str) -> None:
    context = 'memcue recalled:\n- "quoted" C:\\new\\table 构建 🔑\n- tab\there'
    out = claude_code.render(HookEvent(harness="claude-code", event=event), context)
    assert "\n" not in out
    assert json.loads(out.encode("utf-8").decode("utf-8")) == {
        "hookSpecificOutput": {"hookEventName": name, "additionalContext": context}
    }
    assert "构建 🔑" in out, "non-ASCII is written as is, not as \\u escapes"


@pytest.mark.parametrize("context", ["", "   ", "\n\n\t"])
def test_C14_render_nothing_to_inject(context: str) -> None:
    assert claude_code.render(HookEvent(harness="claude-code", event=USER_PROMPT_SUBMIT), context) == ""
    assert claude_code.render(HookEvent(harness="claude-code", event=SESSION_START), context) == ""


def _injected(context: str, event: str = SESSION_START) -> str:
    out = json.loads(claude_code.render(HookEvent(harness="claude-code", event=event), context))
    return out["hookSpecificOutput"]["additionalContext"]


def _memory(i: int, text: str, kind: str = "note") -> str:
    return f'<memory id="{i}" kind="{kind}" source="user" age="today">{text}</memory>'


def test_C07_render_caps_at_9500_characters_on_a_line() -> None:
    lines = [_memory(i, f"memory {i}: " + "长期记忆😀" * 55) for i in range(200)]
    injected = _injected("\n".join(lines))
    assert len(injected) <= 9500
    kept, marker = injected.rsplit("\n", 1)
    kept_lines = kept.split("\n")
    assert kept_lines == lines[: len(kept_lines)], "whole lines only"
    assert marker == f"[memcue: {200 - len(kept_lines)} more memories left out of this block; recall finds them]"
    fits = "x" * 9500
    assert _injected(fits, USER_PROMPT_SUBMIT) == fits


def test_C07_render_cap_counts_the_sidecars_own_left_out_line() -> None:
    """A sidecar block that already left 7 out and still overflows: the count covers both, and the cut block is
    closed again (C24)."""
    lines = [_memory(i, f"memory {i}: " + "部署キャッシュ🚀 " * 40) for i in range(60)]
    context = "\n".join([PROMPT_HEADER, BLOCK_OPEN, *lines, left_out_line(7), BLOCK_CLOSE])
    assert len(context) > 9500
    injected = _injected(context, USER_PROMPT_SUBMIT)
    assert len(injected) <= 9500
    body = injected.split("\n")
    assert body[:2] == [PROMPT_HEADER, BLOCK_OPEN] and body[-1] == BLOCK_CLOSE
    kept = body[2:-2]
    assert kept == lines[: len(kept)]
    assert body[-2] == f"[memcue: {60 - len(kept) + 7} more memories left out of this block; recall finds them]"


def test_C07_render_cap_never_keeps_half_a_memory() -> None:
    """Multi-line memories are one line each (line breaks shown as a mark): kept or dropped whole."""
    steps = " ".join(f"{j}. " + "run the migration and check the logs " * 3 for j in range(8))
    memories = [_memory(i, f"step list {i}: ⏎ {steps}", "howto") for i in range(40)]
    context = "\n".join([SESSION_HEADER, BLOCK_OPEN, *memories, BLOCK_CLOSE])
    assert len(context) > 9500
    injected = _injected(context)
    assert len(injected) <= 9500
    body = injected.split("\n")
    assert body[:2] == [SESSION_HEADER, BLOCK_OPEN] and body[-1] == BLOCK_CLOSE
    kept = body[2:-2]
    assert kept == memories[: len(kept)], "only whole memories"
    assert body[-2] == f"[memcue: {40 - len(kept)} more memories left out of this block; recall finds them]"


def test_C07_render_cap_singular_and_plain_text() -> None:
    two = _memory(1, "first " + "a" * 6000) + "\n" + _memory(2, "second " + "b" * 6000)
    assert _injected(two).endswith("\n[memcue: 1 more memory left out of this block; recall finds them]")
    # Text without memory lines (not a sidecar block) still gets a marker, without a count.
    plain = "\n".join(["x" * 100] * 200)
    injected = _injected(plain)
    assert len(injected) <= 9500 and injected.endswith("\n[memcue: cut to fit the context limit]")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("user-prompt-submit", USER_PROMPT_SUBMIT),
        ("UserPromptSubmit", USER_PROMPT_SUBMIT),
        ("userpromptsubmit", USER_PROMPT_SUBMIT),
        ("USER_PROMPT_SUBMIT", USER_PROMPT_SUBMIT),
        ("session-start", SESSION_START),
        ("SessionStart", SESSION_START),
        ("PreToolUse", "pre-tool-use"),
        ("PermissionRequest", None),
        ("", None),
    ],
)
def test_registry_event_names(name: str, expected: str | None) -> None:
    assert adapters.event_name(claude_code, name) == expected


def test_registry_harness_names() -> None:
    assert adapters.get("claude-code") is claude_code
    assert adapters.get("Claude_Code") is claude_code
    assert adapters.get("no-such-harness") is None
    assert set(adapters.HARNESSES) == {"claude-code", "codex", "hermes"}


def test_adapter_module_matches_the_protocol() -> None:
    for name in ("NAME", "EVENTS", "parse", "budget", "render"):
        assert hasattr(claude_code, name)
    assert claude_code.NAME == "claude-code"
