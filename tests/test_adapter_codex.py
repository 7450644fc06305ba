"""The Codex adapter: Codex 0.171's payload shapes in, exactly the output its strict schema accepts (C14)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import run_hook, start_sidecar

from memcue.adapters import codex, event_name
from memcue.adapters.base import SESSION_END, SESSION_START, STOP, USER_PROMPT_SUBMIT
from memcue.core.blocks import PROMPT_HEADER, SESSION_HEADER, STANDING_NOTE

#: Payloads as Codex writes them (fields of codex-rs/hooks/schema/generated/*.command.input.schema.json).
PROMPT = {"session_id": "019a-codex", "turn_id": "t1", "transcript_path": None, "cwd": "/tmp",
          "hook_event_name": "UserPromptSubmit", "model": "gpt-5-codex", "permission_mode": "default",
          "prompt": "how do we rotate the build-cache key?"}
START = {"session_id": "019a-codex", "transcript_path": "/tmp/rollout.jsonl", "cwd": "/tmp",
         "hook_event_name": "SessionStart", "model": "gpt-5-codex", "permission_mode": "default",
         "source": "startup"}
STOP_PAYLOAD = {"session_id": "019a-codex", "turn_id": "t1", "transcript_path": None, "cwd": "/tmp",
                "hook_event_name": "Stop", "model": "gpt-5-codex", "permission_mode": "default",
                "last_assistant_message": "Rotated the key.", "stop_hook_active": False}


def test_parse_prompt_session_start_and_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "not-codex")  # Codex sets no session variable: never used
    prompt = codex.parse(USER_PROMPT_SUBMIT, PROMPT)
    assert (prompt.harness, prompt.session_id, prompt.prompt, prompt.source) == (
        "codex", "019a-codex", "how do we rotate the build-cache key?", "")
    assert prompt.extra["turn_id"] == "t1" and prompt.transcript_path == ""
    start = codex.parse(SESSION_START, START)
    assert (start.source, start.prompt, start.transcript_path) == ("startup", "", "/tmp/rollout.jsonl")
    stop = codex.parse(STOP, STOP_PAYLOAD)
    assert stop.extra["last_assistant_message"] == "Rotated the key." and stop.extra["stop_hook_active"] is False
    assert codex.parse(USER_PROMPT_SUBMIT, ["not", "an", "object"]).session_id == ""


@pytest.mark.parametrize("name,ours", [("UserPromptSubmit", USER_PROMPT_SUBMIT), ("SessionStart", SESSION_START),
                                       ("Stop", STOP), ("stop", STOP), ("SessionEnd", SESSION_END),
                                           ("PreToolUse", "pre-tool-use"), ("PermissionRequest", None)])
def test_event_names(name: str, ours: str | None) -> None:
    assert event_name(codex, name) == ours


@pytest.mark.parametrize("event,hook_event_name", [(USER_PROMPT_SUBMIT, "UserPromptSubmit"),
                                                   (SESSION_START, "SessionStart")])
def test_C14_output_has_exactly_the_fields_codex_accepts(event: str, hook_event_name: str) -> None:
    out = codex.render(codex.parse(event, PROMPT if event == USER_PROMPT_SUBMIT else START), "- (note) x")
    assert json.loads(out) == {"hookSpecificOutput": {"hookEventName": hook_event_name,
                                                      "additionalContext": "- (note) x"}}


def test_C14_nothing_to_inject_and_stop_print_nothing() -> None:
    assert codex.render(codex.parse(USER_PROMPT_SUBMIT, PROMPT), "  \n") == ""
    assert codex.render(codex.parse(STOP, STOP_PAYLOAD), "- (note) would never be shown") == ""


def test_C14_through_the_real_hook_and_sidecar(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "svc"
    project.mkdir()
    env = {**os.environ, "MEMCUE_HOME": str(home), "MEMCUE_HOOK_SPAWN": "0"}
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        sc.client.remember("We rotate the build-cache key after every release", project=str(project),
                           kind="decision", pinned=True)
        runs = {
            "prompt": run_hook({**PROMPT, "cwd": str(project)}, "user-prompt-submit", env=env, harness="codex"),
            "start": run_hook({**START, "cwd": str(project)}, "session-start", env=env, harness="codex"),
            "stop": run_hook({**STOP_PAYLOAD, "cwd": str(project)}, "stop", env=env, harness="codex"),
            "empty": run_hook({**PROMPT, "cwd": str(tmp_path), "prompt": "write a haiku about autumn"},
                              "user-prompt-submit", env=env, harness="codex"),
            "empty start": run_hook({**START, "session_id": "another", "cwd": str(tmp_path / "nothing-here")},
                                    "session-start", env=env,
                                    harness="codex"),
        }
    finally:
        sc.stop()
    assert all((r.returncode, r.stderr) == (0, b"") for r in runs.values())
    prompt = json.loads(runs["prompt"].stdout)
    assert set(prompt) == {"hookSpecificOutput"} and set(prompt["hookSpecificOutput"]) == {
        "hookEventName", "additionalContext"}
    assert prompt["hookSpecificOutput"]["additionalContext"].startswith(PROMPT_HEADER)
    assert "build-cache key" in prompt["hookSpecificOutput"]["additionalContext"]
    start = json.loads(runs["start"].stdout)["hookSpecificOutput"]
    assert start["hookEventName"] == "SessionStart"
    assert start["additionalContext"].startswith(f"{STANDING_NOTE}\n\n{SESSION_HEADER}\n")
    assert "build-cache key" in start["additionalContext"]
    empty_start = json.loads(runs["empty start"].stdout)["hookSpecificOutput"]  # no memories: the note alone
    assert empty_start == {"hookEventName": "SessionStart", "additionalContext": STANDING_NOTE}
    assert runs["stop"].stdout == b"" and runs["empty"].stdout == b""
