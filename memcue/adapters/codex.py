"""Codex CLI: hook payload in, strict ``hookSpecificOutput`` out.

Standard library only (runs inside the hook process). Codex runs the commands of ``$CODEX_HOME/hooks.json``
with one JSON object on stdin (Codex 0.171 schemas ``codex-rs/hooks/schema/generated/*.command.input``):
UserPromptSubmit ``{"session_id", "turn_id", "transcript_path", "cwd", "hook_event_name", "model",
"permission_mode", "prompt"}``, SessionStart the same with ``"source"`` (startup|resume|clear|compact) and no
prompt, Stop with ``"last_assistant_message"`` and ``"stop_hook_active"``, SessionEnd ``{"session_id",
"transcript_path", "cwd", "hook_event_name", "reason"}``. Codex sets no session variables:
the session id comes from stdin only. Output schemas forbid unknown fields, so stdout is exactly
``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`` or empty (``base.render_hook_output``);
Stop and SessionEnd inject nothing. Codex keeps about 2,500 tokens of hook context (DESIGN.md section 3), so
blocks stay under that (``base.budget``).
"""

from __future__ import annotations

from memcue.adapters import base
from memcue.adapters.base import HookEvent
from memcue.harnesses import harness_events

NAME = "codex"
#: memcue event name -> Codex's ``hook_event_name`` / ``hookEventName`` (the registry's).
EVENTS = harness_events(NAME)
#: Characters of one block: the same guard as Claude Code's (``base.MAX_CHARS``).
MAX_CHARS = base.MAX_CHARS

#: Payload keys copied into ``HookEvent.extra`` when present (scalars only).
_EXTRA_KEYS = ("hook_event_name", "permission_mode", "model", "turn_id", "stop_hook_active", "reason", "trigger",
               "tool_use_id")


def parse(event: str, payload: object) -> HookEvent:
    """A ``HookEvent`` from a decoded Codex payload; a non-object payload counts as empty.

    ``cwd`` falls back to the process's working directory (Codex starts hooks in the session's); ``project``
    is ``resolve_project(cwd)``; Stop's ``last_assistant_message`` goes into ``extra`` (``command_event``). Never
    raises on payload content.
    """
    return base.command_parse(NAME, event, payload, _EXTRA_KEYS)


budget = base.budget
render = base.render_hook_output
