"""Hermes Agent: the memory provider's payload in, plain text out.

Standard library only (runs inside the hook process). Hermes has no command hooks: memcue's memory-provider
plugin (``memcue/install/hermes_plugin.py``, copied to ``$HERMES_HOME/plugins/memcue/``) runs this hook as a
subprocess from the provider methods Hermes calls, with one JSON object on stdin:
``{"session_id", "cwd", "hook_event_name"}`` plus ``"prompt"`` (``prefetch``), ``"source"``
(``system_prompt_block``: startup|resume|clear) or ``"last_assistant_message"`` (``sync_turn``). stdout is the
text itself: Hermes wraps a prefetch result in its own ``<memory-context>`` block with a system note
(Hermes 0.19 ``agent/memory_manager.py:337``, ``build_memory_context_block``) and puts the session-start block
into the system prompt as it is; empty stdout injects nothing.
"""

from __future__ import annotations

import os
import re

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
from memcue.adapters.output import cap

NAME = "hermes"

#: memcue event name -> the ``hook_event_name`` the plugin sends (Hermes has no hook names of its own).
EVENTS: dict[str, str] = {
    USER_PROMPT_SUBMIT: "UserPromptSubmit",
    SESSION_START: "SessionStart",
    STOP: "Stop",
    SESSION_END: "SessionEnd",
}
#: Events whose block reaches the model; Stop and SessionEnd only capture (hooks/run.py).
INJECTING = (USER_PROMPT_SUBMIT, SESSION_START)

#: Characters of one block. Hermes caps provider text nowhere; this is the same last guard as the
#: command-hook harnesses' (the token budget already keeps a block far shorter).
MAX_CHARS = 9_500
#: Token budgets: the command-hook defaults (``base.COMMAND_HOOK_TOKENS``): 600 per prompt, 1,500 at session start.
DEFAULT_TOKENS = COMMAND_HOOK_TOKENS
#: Payload keys copied into ``HookEvent.extra`` when present (scalars only).
_EXTRA_KEYS = ("hook_event_name", "reason", "platform", "agent_context")
#: Hermes' fence tags (its ``_FENCE_TAG_RE``, ``agent/memory_manager.py:153``). Hermes deletes a whole
#: ``<memory-context>…</memory-context>`` span found in provider text, so a memory quoting the tags would lose
#: text; they are defused instead.
_FENCE = re.compile(r"<(/?\s*memory-context\s*)>", re.IGNORECASE)


def parse(event: str, payload: object) -> HookEvent:
    """A ``HookEvent`` from the plugin's decoded payload; a non-object payload counts as empty.

    ``cwd`` falls back to the process's working directory; ``project`` is ``resolve_project(cwd)``; Stop's
    ``last_assistant_message`` is kept in ``extra`` for capture. Never raises on payload content.
    """
    data: dict[str, object] = payload if isinstance(payload, dict) else {}
    cwd = text_field(data, "cwd")
    if not cwd:
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = ""
    extra = {key: data[key] for key in _EXTRA_KEYS if isinstance(data.get(key), str | int | float | bool)}
    if event == STOP and text_field(data, "last_assistant_message"):
        extra["last_assistant_message"] = text_field(data, "last_assistant_message")
    return command_event(NAME, event, data, session_id=text_field(data, "session_id"), cwd=cwd, extra=extra)


def budget(event: str) -> Budget:
    """Budget for ``event``: 600 tokens for prompts, 1,500 at session start, at most 9,500 characters;
    ``$MEMCUE_PROMPT_TOKENS`` / ``$MEMCUE_SESSION_START_TOKENS`` override the tokens (positive integers)."""
    return token_budget(event, DEFAULT_TOKENS, MAX_CHARS)


def render(event: HookEvent, context: str) -> str:
    """Hermes' stdout for ``context``: the plain text (no JSON, no fence: Hermes adds its own), "" when blank
    or for a capture-only event. Cut to the event's character budget at a memory boundary as a last guard;
    ``<memory-context>`` tags inside it are defused to ``[memory-context]``."""
    if event.event not in INJECTING or not context.strip():
        return ""
    return cap(_FENCE.sub(r"[\1]", context), budget(event.event).max_chars)
