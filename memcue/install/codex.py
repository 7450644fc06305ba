"""Wiring memcue into Codex: ``$CODEX_HOME/hooks.json`` (default ``~/.codex/hooks.json``).

Same JSON shape as Claude Code's hooks (``install.hooks_json``): ``command`` is one shell string and every
``timeout`` an integer (a fractional one makes Codex discard the whole file). Codex runs a hook only once
the user has trusted it (``/hooks`` in Codex, or ``hooks.state`` in its ``config.toml``), and says nothing
about an untrusted one, so an install here never claims the hooks are active: ``TRUST_NOTE`` says what to
do, and ``memcue install codex --trust`` trusts them through Codex's own app-server (``install.codex_trust``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memcue.install import hooks_json
from memcue.install.hooks_json import dump, parse

NAME = "codex"
#: The harness's program, looked for on PATH (``memcue install all``, ``memcue doctor``).
PROGRAM = "codex"
#: Codex event -> (memcue event, timeout in s): the prompt hook 3 s (deadline 2.5 s), session start 5 s,
#: Stop 5 s (capture only). SessionEnd gets 3 s: Codex 0.171 caps SessionEnd hooks at 3 s and warns about more.
EVENTS: dict[str, tuple[str, int]] = {
    "UserPromptSubmit": ("user-prompt-submit", 3),
    "SessionStart": ("session-start", 5),
    "Stop": ("stop", 5),
    "SessionEnd": ("session-end", 3),
}
TRUST_NOTE = ("Codex runs these hooks only after you trust them: run `memcue install codex --trust`, or start "
              "`codex`, run /hooks and trust memcue's entries. Until then they are written but not active.")

__all__ = ["EVENTS", "NAME", "PROGRAM", "TRUST_NOTE", "dump", "install", "parse", "settings_path", "uninstall"]


def settings_path() -> Path:
    """``$CODEX_HOME/hooks.json``, else ``~/.codex/hooks.json``."""
    base = os.environ.get("CODEX_HOME", "").strip()
    return (Path(base).expanduser() if base else Path.home() / ".codex") / "hooks.json"


def install(settings: dict[str, Any], path: Path, python: str | None = None) -> dict[str, Any]:
    """``settings`` with memcue's Codex hooks present and current (see ``hooks_json.install``)."""
    return hooks_json.install(settings, path, NAME, EVENTS, python)


def uninstall(settings: dict[str, Any], path: Path) -> dict[str, Any]:
    """``settings`` without memcue's Codex hooks (see ``hooks_json.uninstall``)."""
    return hooks_json.uninstall(settings, path, EVENTS)
