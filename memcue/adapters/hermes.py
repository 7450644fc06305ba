"""Hermes Agent: the memory provider's payload in, plain text out.

Standard library only (runs inside the hook process). Hermes has no command hooks: memcue's memory-provider
plugin (``memcue/install/templates/hermes_plugin.py``, copied to ``$HERMES_HOME/plugins/memcue/``) runs this
hook as a subprocess from the provider methods Hermes calls, with one JSON object on stdin:
``{"session_id", "cwd", "hook_event_name"}`` plus ``"prompt"`` (``prefetch``), ``"source"``
(``system_prompt_block``: startup|resume|clear) or ``"last_assistant_message"`` (``sync_turn``). stdout is the
text itself: Hermes wraps a prefetch result in its own ``<memory-context>`` block with a system note
(Hermes 0.19 ``agent/memory_manager.py:337``, ``build_memory_context_block``) and puts the session-start block
into the system prompt as it is; empty stdout injects nothing. What differs from the command-hook defaults
(``adapters.base``): the payload keys kept and ``render``.
"""

from __future__ import annotations

import re

from memcue.adapters import base
from memcue.adapters.base import INJECTING, HookEvent
from memcue.adapters.output import cap
from memcue.harnesses import harness_events

NAME = "hermes"
#: memcue event name -> the ``hook_event_name`` the plugin sends (Hermes has no hook names of its own).
EVENTS = harness_events(NAME)
#: Characters of one block. Hermes caps provider text nowhere; this is the same last guard as the
#: command-hook harnesses' (``base.MAX_CHARS``; the token budget already keeps a block far shorter).
MAX_CHARS = base.MAX_CHARS

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
    return base.command_parse(NAME, event, payload, _EXTRA_KEYS)


budget = base.budget


def render(event: HookEvent, context: str) -> str:
    """Hermes' stdout for ``context``: the plain text (no JSON, no fence: Hermes adds its own), "" when blank
    or for a capture-only event. Cut to the event's character budget at a memory boundary as a last guard;
    ``<memory-context>`` tags inside it are defused to ``[memory-context]``."""
    if event.event not in INJECTING or not context.strip():
        return ""
    return cap(_FENCE.sub(r"[\1]", context), budget(event.event).max_chars)
