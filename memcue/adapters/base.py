"""The event every harness adapter produces, its budget, and the adapters' shared defaults.

Standard library only, and light: this runs in the hook process on every prompt, so it avoids
``dataclasses``, ``typing`` and ``subprocess`` (together about 10 ms of imports). The ``Adapter``
protocol that each harness module follows lives in ``memcue.adapters.protocol``, off the hook path. The
defaults (after pre-commit's ``lang_base``): ``command_parse`` (the payload of a command-hook harness),
``budget`` (600 / 2,200 tokens, 9,500 characters) and ``render_hook_output`` (one ``hookSpecificOutput``
object); a harness module assigns the ones it shares and writes only what differs.
"""

from __future__ import annotations

import os
from collections import namedtuple

from memcue.adapters.output import hook_specific_output
from memcue.core.limits import SESSION_BLOCK_TOKENS
from memcue.core.project import resolve_project
from memcue.harnesses import (
    EVENTS,
    HARNESSES,
    POST_TOOL_USE,
    POST_TOOL_USE_FAILURE,
    PRE_COMPACT,
    PRE_TOOL_USE,
    SESSION_END,
    SESSION_START,
    STOP,
    USER_PROMPT_SUBMIT,
)

__all__ = ["COMMAND_HOOK_TOKENS", "EVENTS", "INJECTING", "MAX_CHARS", "POST_TOOL_USE", "POST_TOOL_USE_FAILURE",
           "PRE_COMPACT", "PRE_TOOL_USE", "SESSION_END", "SESSION_START", "STOP",
           "USER_PROMPT_SUBMIT", "Budget", "HookEvent", "budget", "command_event", "command_parse",
           "render_hook_output", "text_field", "token_budget"]

#: Events whose block reaches the model; Stop and SessionEnd only capture (hooks/run.py).
INJECTING = (USER_PROMPT_SUBMIT, SESSION_START, PRE_TOOL_USE)
#: Characters of one block: Claude Code replaces additionalContext over 10,000 characters with a 2 KB preview
#: (DESIGN.md section 3); this stays under it with room for the harness's own wrapping, and serves as the
#: last guard elsewhere (the token budget already keeps a block far shorter).
MAX_CHARS = 9_500

_FIELDS = ("harness", "event", "session_id", "cwd", "project", "prompt", "source", "transcript_path", "extra")


class HookEvent:
    """One hook firing, normalised from a harness payload.

    ``prompt`` is the user's text exactly as sent (after lenient decoding); ``project`` is the
    resolved project identity (see ``resolve_project``); ``source`` is the SessionStart source
    (startup|resume|clear|compact|fork) or ""; ``extra`` holds harness-specific scalars and the hook's
    ``request_id``. Compares equal field by field.
    """

    __slots__ = _FIELDS

    def __init__(self, harness: str, event: str, session_id: str = "", cwd: str = "", project: str = "",
                 prompt: str = "", source: str = "", transcript_path: str = "",
                 extra: dict[str, object] | None = None) -> None:
        self.harness = harness
        self.event = event
        self.session_id = session_id
        self.cwd = cwd
        self.project = project
        self.prompt = prompt
        self.source = source
        self.transcript_path = transcript_path
        self.extra: dict[str, object] = {} if extra is None else extra

    def to_dict(self) -> dict[str, object]:
        """The fields as a JSON-ready dict (``extra`` copied)."""
        out: dict[str, object] = {name: getattr(self, name) for name in _FIELDS}
        out["extra"] = dict(self.extra)
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HookEvent) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dataclass without frozen

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in _FIELDS)
        return f"HookEvent({fields})"


Budget = namedtuple("Budget", ["max_tokens", "max_chars"])
#: Token budgets of the command-hook harnesses' blocks (o200k_base tokens) and the environment variables
#: that override them: 600 per prompt, 2,200 at session start (``core.limits.SESSION_BLOCK_TOKENS``), 300 beside a
#: tool call (it lands next to every matched edit or command, so it stays small).
COMMAND_HOOK_TOKENS: dict[str, tuple[int, str]] = {
    USER_PROMPT_SUBMIT: (600, "MEMCUE_PROMPT_TOKENS"),
    SESSION_START: (SESSION_BLOCK_TOKENS, "MEMCUE_SESSION_START_TOKENS"),
    PRE_TOOL_USE: (300, "MEMCUE_TOOL_TOKENS"),
}
Budget.__doc__ = "Limits for one injected block: ``max_tokens`` (o200k_base tokens) and ``max_chars`` (characters)."


def text_field(payload: dict[str, object], key: str) -> str:
    """``payload[key]`` when it is a string, else ""."""
    value = payload.get(key)
    return value if isinstance(value, str) else ""


def command_event(harness: str, event: str, data: dict[str, object], *, session_id: str, cwd: str,
                  extra: dict[str, object]) -> HookEvent:
    """The ``HookEvent`` of a command-hook harness (Claude Code, Codex): ``prompt`` only for prompts,
    ``source`` only at session start, ``project`` resolved from ``cwd``; Stop's ``last_assistant_message``
    (the turn's answer, which both harnesses send) goes into ``extra`` for capture, and so does a tool call's
    compact record (``extra["tool"]``, ``memcue.adapters.tools.tool_record``; absent for a tool not recorded); a
    tool call about to run gives its lookup (``extra["tool_query"]``, ``memcue.adapters.tool_query.tool_query``;
    absent for a tool not looked up)."""
    project = resolve_project(cwd)
    if event == STOP and text_field(data, "last_assistant_message"):
        extra = {**extra, "last_assistant_message": text_field(data, "last_assistant_message")}
    elif event in (POST_TOOL_USE, POST_TOOL_USE_FAILURE):
        from memcue.adapters.tools import tool_record  # only on tool events: keeps ``re`` off the prompt path

        record = tool_record(data, failed=event == POST_TOOL_USE_FAILURE)
        if record is not None:
            extra = {**extra, "tool": record}
    elif event == PRE_TOOL_USE:
        from memcue.adapters.tool_query import tool_query  # only on tool events

        query = tool_query(data, cwd, project)
        if query is not None:
            extra = {**extra, "tool_query": query}
    return HookEvent(harness=harness, event=event, session_id=session_id, cwd=cwd, project=project,
                     prompt=text_field(data, "prompt") if event == USER_PROMPT_SUBMIT else "",
                     source=text_field(data, "source") if event == SESSION_START else "",
                     transcript_path=text_field(data, "transcript_path"), extra=extra)


def command_parse(harness: str, event: str, payload: object, extra_keys: tuple[str, ...], *, cwd_env: str = "",
                  session_env: str = "") -> HookEvent:
    """A ``HookEvent`` from a decoded command-hook payload (``command_event``); a non-object payload counts as
    empty. ``extra_keys``: payload keys copied into ``extra`` when present (scalars only). ``cwd`` falls back to
    ``$<cwd_env>`` (when named) and then the process's working directory; ``session_id`` to ``$<session_env>``
    (when named). Never raises on payload content."""
    data: dict[str, object] = payload if isinstance(payload, dict) else {}
    cwd = text_field(data, "cwd") or (os.environ.get(cwd_env, "") if cwd_env else "")
    if not cwd:
        try:
            cwd = os.getcwd()
        except OSError:
            cwd = ""
    extra = {key: data[key] for key in extra_keys if isinstance(data.get(key), str | int | float | bool)}
    session_id = text_field(data, "session_id") or (os.environ.get(session_env, "") if session_env else "")
    return command_event(harness, event, data, session_id=session_id, cwd=cwd, extra=extra)


def budget(event: str) -> Budget:
    """Budget for ``event``: 600 tokens for prompts, 2,200 at session start (``COMMAND_HOOK_TOKENS``), at most
    ``MAX_CHARS`` characters; ``$MEMCUE_PROMPT_TOKENS`` / ``$MEMCUE_SESSION_START_TOKENS`` override the tokens
    (positive integers; anything else is ignored)."""
    return token_budget(event, COMMAND_HOOK_TOKENS, MAX_CHARS)


def render_hook_output(event: HookEvent, context: str) -> str:
    """The stdout of a ``hookSpecificOutput`` harness (Claude Code, Codex) for ``context``: "" when blank or for
    a capture-only event (Stop, SessionEnd), else exactly ``{"hookSpecificOutput": {"hookEventName": ...,
    "additionalContext": ...}}`` on one line (no other field: Codex fails a hook whose output has unknown
    fields), the event named as ``event.harness`` names it (``memcue.harnesses``). A context over the event's
    character budget is cut at a memory boundary as a last guard, ending with a line that says how many
    memories were left out. Uses the default ``budget``: a harness with its own writes its own ``render``."""
    row = HARNESSES.get(event.harness)
    found = row.events.get(event.event) if row is not None and event.event in INJECTING else None
    return hook_specific_output(found.name if found else None, context, budget(event.event).max_chars)


def token_budget(event: str, defaults: dict[str, tuple[int, str]], max_chars: int) -> Budget:
    """``Budget`` for ``event`` from ``defaults`` (event -> (tokens, environment variable that overrides them
    with a positive integer)); events not listed get the prompt's."""
    default, env = defaults.get(event, defaults[USER_PROMPT_SUBMIT])
    raw = os.environ.get(env, "").strip()
    return Budget(max_tokens=int(raw) if raw.isdigit() and int(raw) > 0 else default, max_chars=max_chars)

