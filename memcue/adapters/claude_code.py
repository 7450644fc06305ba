"""Claude Code: hook payload in, ``hookSpecificOutput`` out.

Standard library only (runs inside the hook process). Claude Code sends one JSON object on stdin, e.g.
for UserPromptSubmit ``{"session_id", "transcript_path", "cwd", "permission_mode",
"hook_event_name": "UserPromptSubmit", "prompt"}`` and for SessionStart ``{"session_id",
"transcript_path", "cwd", "hook_event_name": "SessionStart", "source": "startup"}``. Text is injected
through ``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`` on stdout; empty
stdout injects nothing.
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

NAME = "claude-code"

#: memcue event name -> Claude Code's ``hook_event_name`` / ``hookEventName``.
EVENTS: dict[str, str] = {
    USER_PROMPT_SUBMIT: "UserPromptSubmit",
    SESSION_START: "SessionStart",
    STOP: "Stop",
    SESSION_END: "SessionEnd",
}
#: Events whose block reaches the model; Stop and SessionEnd only capture (hooks/run.py).
INJECTING = (USER_PROMPT_SUBMIT, SESSION_START)

#: Claude Code replaces additionalContext over 10,000 characters with a 2 KB preview; stay under it
#: with room for the harness's own wrapping.
MAX_CHARS = 9_500

#: Token budgets: the command-hook defaults (``base.COMMAND_HOOK_TOKENS``).
DEFAULT_TOKENS = COMMAND_HOOK_TOKENS

#: Payload keys copied into ``HookEvent.extra`` when present (scalars only).
_EXTRA_KEYS = ("hook_event_name", "permission_mode", "model", "agent_type", "reason", "stop_hook_active")


def _cwd(payload: dict[str, object]) -> str:
    cwd = text_field(payload, "cwd") or os.environ.get("CLAUDE_PROJECT_DIR", "")
    if cwd:
        return cwd
    try:
        return os.getcwd()
    except OSError:
        return ""


def parse(event: str, payload: object) -> HookEvent:
    """A ``HookEvent`` from a decoded Claude Code payload; a non-object payload counts as empty.

    ``session_id`` falls back to ``$CLAUDE_CODE_SESSION_ID``; ``cwd`` to ``$CLAUDE_PROJECT_DIR`` and
    then the process's working directory. ``project`` is ``resolve_project(cwd)``. Never raises on
    payload content.
    """
    data: dict[str, object] = payload if isinstance(payload, dict) else {}
    cwd = _cwd(data)
    extra = {key: data[key] for key in _EXTRA_KEYS if isinstance(data.get(key), str | int | float | bool)}
    session_id = text_field(data, "session_id") or os.environ.get("CLAUDE_CODE_SESSION_ID", "")
    return command_event(NAME, event, data, session_id=session_id, cwd=cwd, extra=extra)


def budget(event: str) -> Budget:
    """Budget for ``event``: 600 tokens for prompts, 1,500 at session start, at most 9,500 characters.

    ``$MEMCUE_PROMPT_TOKENS`` / ``$MEMCUE_SESSION_START_TOKENS`` override the token counts (positive
    integers; anything else is ignored).
    """
    return token_budget(event, DEFAULT_TOKENS, MAX_CHARS)


def render(event: HookEvent, context: str) -> str:
    """Claude Code's stdout for ``context``: "" when blank, else one JSON object on one line.

    The shape is exactly ``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}``
    with non-ASCII kept as is (the caller writes it as UTF-8). A context over the event's character
    budget is cut at a memory boundary as a last guard (the sidecar already fits it), ending with
    a line that says how many memories were left out.
    """
    name = EVENTS.get(event.event) if event.event in INJECTING else None
    return hook_specific_output(name, context, budget(event.event).max_chars)
