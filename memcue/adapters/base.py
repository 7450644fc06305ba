"""The event every harness adapter produces and its budget.

Standard library only, and light: this runs in the hook process on every prompt, so it avoids
``dataclasses``, ``typing`` and ``subprocess`` (together about 10 ms of imports). The ``Adapter``
protocol that each harness module follows lives in ``memcue.adapters.protocol``, off the hook path.
"""

from __future__ import annotations

import os
from collections import namedtuple

from memcue.core.project import resolve_project

#: Event names memcue uses internally, whatever the harness calls them.
USER_PROMPT_SUBMIT = "user-prompt-submit"
SESSION_START = "session-start"
STOP = "stop"
SESSION_END = "session-end"
EVENTS = (USER_PROMPT_SUBMIT, SESSION_START, STOP, SESSION_END)

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
#: that override them: 600 per prompt, 1,500 at session start (Codex keeps about 2,500 hook tokens).
COMMAND_HOOK_TOKENS: dict[str, tuple[int, str]] = {
    USER_PROMPT_SUBMIT: (600, "MEMCUE_PROMPT_TOKENS"),
    SESSION_START: (1_500, "MEMCUE_SESSION_START_TOKENS"),
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
    (the turn's answer, which both harnesses send) goes into ``extra`` for capture."""
    if event == STOP and text_field(data, "last_assistant_message"):
        extra = {**extra, "last_assistant_message": text_field(data, "last_assistant_message")}
    return HookEvent(harness=harness, event=event, session_id=session_id, cwd=cwd, project=resolve_project(cwd),
                     prompt=text_field(data, "prompt") if event == USER_PROMPT_SUBMIT else "",
                     source=text_field(data, "source") if event == SESSION_START else "",
                     transcript_path=text_field(data, "transcript_path"), extra=extra)


def token_budget(event: str, defaults: dict[str, tuple[int, str]], max_chars: int) -> Budget:
    """``Budget`` for ``event`` from ``defaults`` (event -> (tokens, environment variable that overrides them
    with a positive integer)); events not listed get the prompt's."""
    default, env = defaults.get(event, defaults[USER_PROMPT_SUBMIT])
    raw = os.environ.get(env, "").strip()
    return Budget(max_tokens=int(raw) if raw.isdigit() and int(raw) > 0 else default, max_chars=max_chars)

