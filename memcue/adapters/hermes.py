"""Hermes Agent: the memory provider's payload in, plain text out.

Standard library only (runs inside the hook process). Hermes has no command hooks: memcue's memory-provider
plugin (``memcue/install/templates/hermes_plugin.py``, copied to ``$HERMES_HOME/plugins/memcue/``) runs this
hook as a subprocess from the provider methods Hermes calls, with one JSON object on stdin:
``{"session_id", "cwd", "hook_event_name"}`` plus ``"prompt"`` (``prefetch``), ``"source"``
(``system_prompt_block``: startup|resume|clear) or ``"last_assistant_message"`` (``sync_turn``), and for each
shell or edit call of the finished turn (``sync_turn`` reads them from the turn's messages) a PostToolUse with
``"tool_name"`` (Hermes' own: ``TOOL_NAMES``), ``"tool_input"`` (the call's arguments), ``"tool_response"`` (the
tool's result text: for ``terminal`` the JSON ``{"output", "exit_code", "error"}``) and ``"tool_use_id"``, which
become the compact tool record of ``adapters.tools`` (a test that failed and then passed is then a
signal for Hermes too). stdout is the
text itself: Hermes wraps a prefetch result in its own ``<memory-context>`` block with a system note
(Hermes 0.19 ``agent/memory_manager.py:337``, ``build_memory_context_block``) and puts the session-start block
into the system prompt as it is; empty stdout injects nothing. What differs from the command-hook defaults
(``adapters.base``): the payload keys kept, Hermes' tool names and result text, and ``render``.
"""

from __future__ import annotations

import json
import re

from memcue.adapters import base
from memcue.adapters.base import INJECTING, POST_TOOL_USE, HookEvent
from memcue.adapters.output import cap
from memcue.harnesses import harness_events

NAME = "hermes"
#: memcue event name -> the ``hook_event_name`` the plugin sends (Hermes has no hook names of its own).
EVENTS = harness_events(NAME)
#: Characters of one block. Hermes caps provider text nowhere; this is the same last guard as the
#: command-hook harnesses' (``base.MAX_CHARS``; the token budget already keeps a block far shorter).
MAX_CHARS = base.MAX_CHARS

#: Payload keys copied into ``HookEvent.extra`` when present (scalars only).
_EXTRA_KEYS = ("hook_event_name", "reason", "platform", "agent_context", "tool_use_id")
#: Hermes 0.19's tools that memcue records -> the tool name ``adapters.tools`` reads them as: ``terminal`` (its
#: shell tool: ``command``, a JSON result with ``exit_code``), ``write_file`` (one ``path``) and ``patch`` (a
#: replace in one ``path``, or with ``mode: patch`` a V4A patch whose ``*** Update File:`` lines name the files,
#: the format of Codex's ``apply_patch``). The record keeps Hermes' name.
TOOL_NAMES = {"terminal": "Bash", "write_file": "Write", "patch": "apply_patch"}
#: Hermes' fence tags (its ``_FENCE_TAG_RE``, ``agent/memory_manager.py:153``). Hermes deletes a whole
#: ``<memory-context>…</memory-context>`` span found in provider text, so a memory quoting the tags would lose
#: text; they are defused instead.
_FENCE = re.compile(r"<(/?\s*memory-context\s*)>", re.IGNORECASE)


def parse(event: str, payload: object) -> HookEvent:
    """A ``HookEvent`` from the plugin's decoded payload; a non-object payload counts as empty.

    ``cwd`` falls back to the process's working directory; ``project`` is ``resolve_project(cwd)``; Stop's
    ``last_assistant_message`` is kept in ``extra`` for capture, and a PostToolUse's tool record
    (``extra["tool"]``; none for a tool not in ``TOOL_NAMES``). Never raises on payload content.
    """
    name = payload.get("tool_name") if event == POST_TOOL_USE and isinstance(payload, dict) else None
    if not isinstance(name, str):
        return base.command_parse(NAME, event, payload, _EXTRA_KEYS)
    parsed = base.command_parse(NAME, event, _tool_payload(payload, name), _EXTRA_KEYS)
    tool = parsed.extra.get("tool")
    if isinstance(tool, dict):
        tool["tool"] = name
    return parsed


def _tool_payload(payload: dict[str, object], name: str) -> dict[str, object]:
    """``payload`` as a command hook sends a tool call: the tool named as ``adapters.tools`` knows it (an unknown
    tool under a name nothing records) and a result that is a JSON object decoded (``terminal``'s exit code)."""
    response = payload.get("tool_response")
    if isinstance(response, str) and response.lstrip().startswith("{"):
        try:
            decoded = json.loads(response)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            response = decoded
    return {**payload, "tool_name": TOOL_NAMES.get(name, f"hermes:{name}"), "tool_response": response}


budget = base.budget


def render(event: HookEvent, context: str) -> str:
    """Hermes' stdout for ``context``: the plain text (no JSON, no fence: Hermes adds its own), "" when blank
    or for a capture-only event. Cut to the event's character budget at a memory boundary as a last guard;
    ``<memory-context>`` tags inside it are defused to ``[memory-context]``."""
    if event.event not in INJECTING or not context.strip():
        return ""
    return cap(_FENCE.sub(r"[\1]", context), budget(event.event).max_chars)
