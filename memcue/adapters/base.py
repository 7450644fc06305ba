"""The contract every harness adapter implements, and the event it produces.

Standard library only: adapters run inside the hook process. Modelled on pre-commit's
``lang_base.py``: a small ``Protocol`` names the functions each harness module provides.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

#: Event names memcue uses internally, whatever the harness calls them.
USER_PROMPT_SUBMIT = "user-prompt-submit"
SESSION_START = "session-start"
STOP = "stop"
SESSION_END = "session-end"
EVENTS = (USER_PROMPT_SUBMIT, SESSION_START, STOP, SESSION_END)


@dataclass
class HookEvent:
    """One hook firing, normalised from a harness payload.

    ``prompt`` is the user's text exactly as sent (after lenient decoding); ``project`` is the
    resolved project identity (git top-level of ``cwd``, realpath; else realpath of ``cwd``);
    ``source`` is the SessionStart source (startup|resume|clear|compact|fork) or "".
    """

    harness: str
    event: str
    session_id: str = ""
    cwd: str = ""
    project: str = ""
    prompt: str = ""
    source: str = ""
    transcript_path: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Budget:
    """Limits for one injected block: ``max_tokens`` (o200k_base tokens) and ``max_chars`` (characters)."""

    max_tokens: int
    max_chars: int


class Adapter(Protocol):
    """What every harness module provides (``memcue/adapters/<harness>.py``)."""

    NAME: str

    def parse(self, event: str, payload: Any) -> HookEvent:
        """Turn a decoded stdin payload (any JSON value, or None) into a ``HookEvent``. Never raises."""
        ...

    def budget(self, event: str) -> Budget:
        """The token and character budget of the block injected for ``event``."""
        ...

    def render(self, event: HookEvent, context: str) -> str:
        """The exact stdout for the harness: "" when there is nothing to inject."""
        ...


def resolve_project(cwd: str) -> str:
    """Project identity for a working directory: the git top-level (realpath), else realpath(cwd).

    Returns "" for an empty ``cwd``. One resolver for writes and reads (case C16). Runs ``git`` with a
    1 s timeout; any failure falls back to the realpath.
    """
    if not cwd:
        return ""
    real = os.path.realpath(cwd)
    try:
        out = subprocess.run(
            ["git", "-C", real, "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=1.0,
            check=False,
        )
        top = out.stdout.strip()
        if out.returncode == 0 and top:
            return os.path.realpath(top)
    except (OSError, subprocess.SubprocessError):
        pass
    return real
