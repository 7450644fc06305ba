"""Codex CLI: hook payload in, strict ``hookSpecificOutput`` out.

Standard library only (runs inside the hook process). Codex runs the commands of ``$CODEX_HOME/hooks.json``
with one JSON object on stdin (Codex 0.171 schemas ``codex-rs/hooks/schema/generated/*.command.input``):
UserPromptSubmit ``{"session_id", "turn_id", "transcript_path", "cwd", "hook_event_name", "model",
"permission_mode", "prompt"}``, SessionStart the same with ``"source"`` (startup|resume|clear|compact) and no
prompt, Stop with ``"last_assistant_message"`` and ``"stop_hook_active"``, SessionEnd ``{"session_id",
"transcript_path", "cwd", "hook_event_name", "reason"}``. Codex sets no session variables:
the session id comes from stdin only. Output schemas forbid unknown fields, so stdout is exactly
``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`` or empty; Stop and SessionEnd
inject nothing.
Codex keeps about 2,500 tokens of hook context (DESIGN.md section 3), so blocks stay under that.
"""

from __future__ import annotations

import os

from memcue.adapters.base import (
    COMMAND_HOOK_TOKENS,
    SESSION_END,
    SESSION_START,
    STOP,
    USER_PROMPT_SUBMIT,
    Budget,
    HookEvent,
    command_event,
    text_field,
    token_budget,
)
from memcue.adapters.output import hook_specific_output

NAME = "codex"

#: memcue event name -> Codex's ``hook_event_name`` / ``hookEventName``.
EVENTS: dict[str, str] = {
    USER_PROMPT_SUBMIT: "UserPromptSubmit",
    SESSION_START: "SessionStart",
    STOP: "Stop",
    SESSION_END: "SessionEnd",
}
#: Events whose block reaches the model; the others only capture.
INJECTING = (USER_PROMPT_SUBMIT, SESSION_START)

#: Characters of one block: the same guard as Claude Code's (Codex keeps about 2,500 tokens anyway).
MAX_CHARS = 9_500
#: Token budgets: the command-hook defaults (``base.COMMAND_HOOK_TOKENS``).
DEFAULT_TOKENS = COMMAND_HOOK_TOKENS
#: Payload keys copied into ``HookEvent.extra`` when present (scalars only).
_EXTRA_KEYS = ("hook_event_name", "permission_mode", "model", "turn_id", "stop_hook_active", "reason")


def parse(event: str, payload: object) -> HookEvent:
    """A ``HookEvent`` from a decoded Codex payload; a non-object payload counts as empty.

    ``cwd`` falls back to the process's working directory (Codex starts hooks in the session's); ``project``
    is ``resolve_project(cwd)``; Stop's ``last_assistant_message`` goes into ``extra`` (``command_event``). Never
    raises on payload content.
    """
    data: dict[str, object] = payload if isinstance(payload, dict) else {}
    cwd = text_field(data, "cwd")
    if not cwd:
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = ""
    extra = {key: data[key] for key in _EXTRA_KEYS if isinstance(data.get(key), str | int | float | bool)}
    return command_event(NAME, event, data, session_id=text_field(data, "session_id"), cwd=cwd, extra=extra)


def budget(event: str) -> Budget:
    """Budget for ``event``: 600 tokens for prompts, 1,500 at session start, at most 9,500 characters;
    ``$MEMCUE_PROMPT_TOKENS`` / ``$MEMCUE_SESSION_START_TOKENS`` override the tokens (positive integers)."""
    return token_budget(event, DEFAULT_TOKENS, MAX_CHARS)


def render(event: HookEvent, context: str) -> str:
    """Codex's stdout for ``context``: "" when blank or for a capture-only event (Stop, SessionEnd), else exactly one
    ``hookSpecificOutput`` object (no other field: Codex fails a hook whose output has unknown fields)."""
    name = EVENTS.get(event.event) if event.event in INJECTING else None
    return hook_specific_output(name, context, budget(event.event).max_chars)
