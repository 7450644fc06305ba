"""Wiring memcue into Claude Code: ``$CLAUDE_CONFIG_DIR/settings.json`` (default ``~/.claude/settings.json``).

The file's hooks section is edited by ``install.hooks_json`` (cases C11, C12, C15). Claude Code's
UserPromptSubmit timeout defaults to 30 s, so memcue always writes one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memcue.install import hooks_json
from memcue.install.hooks_json import dump, parse

NAME = "claude-code"
#: The harness's program, looked for on PATH (``memcue install all``, ``memcue doctor``).
PROGRAM = "claude"
#: Claude Code event -> (memcue event, timeout in s). Prompt hooks get 3 s (the hook's own deadline is
#: 2.5 s); session start 5 s (deadline 4.5 s); Stop and SessionEnd, capture only (spooled at once), 5 s.
EVENTS: dict[str, tuple[str, int]] = {
    "UserPromptSubmit": ("user-prompt-submit", 3),
    "SessionStart": ("session-start", 5),
    "Stop": ("stop", 5),
    "SessionEnd": ("session-end", 5),
}

__all__ = ["EVENTS", "NAME", "PROGRAM", "dump", "install", "keep_out_of_git", "parse", "project_settings_path",
           "settings_path", "uninstall"]


def settings_path() -> Path:
    """``$CLAUDE_CONFIG_DIR/settings.json``, else ``~/.claude/settings.json``."""
    base = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    return (Path(base).expanduser() if base else Path.home() / ".claude") / "settings.json"


def project_settings_path(project: Path) -> Path:
    """``<project>/.claude/settings.local.json``: the project's personal settings (the shared ``settings.json``
    would carry this machine's interpreter path to every clone); ``keep_out_of_git`` keeps it out of git."""
    return project / ".claude" / "settings.local.json"


#: The line that keeps the personal settings file, and memcue's backups of it, out of git (``.git/info/exclude``
#: syntax, relative to the repository).
EXCLUDE_LINE = "/.claude/settings.local.json*"


def keep_out_of_git(project: Path) -> str:
    """Add ``EXCLUDE_LINE`` to ``<project>/.git/info/exclude`` (the repository's own, uncommitted ignore list)
    unless it is there; returns a note saying so ("" when nothing was done: no ``.git`` folder, or already
    listed). Never raises: the install itself is done."""
    info = project / ".git" / "info"
    if not (project / ".git").is_dir():
        return ""
    exclude = info / "exclude"
    try:
        text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        if EXCLUDE_LINE in text.splitlines():
            return ""
        info.mkdir(exist_ok=True)
        with exclude.open("a", encoding="utf-8") as fh:
            fh.write(("" if not text or text.endswith("\n") else "\n") + EXCLUDE_LINE + "\n")
    except OSError as exc:
        return f"could not add {EXCLUDE_LINE} to {exclude} ({exc.strerror}); keep the file out of git yourself"
    return f"{EXCLUDE_LINE} added to {exclude}, so git leaves this personal file alone"


def install(settings: dict[str, Any], path: Path, python: str | None = None) -> dict[str, Any]:
    """``settings`` with memcue's Claude Code hooks present and current (see ``hooks_json.install``)."""
    return hooks_json.install(settings, path, NAME, EVENTS, python)


def uninstall(settings: dict[str, Any], path: Path) -> dict[str, Any]:
    """``settings`` without memcue's Claude Code hooks (see ``hooks_json.uninstall``)."""
    return hooks_json.uninstall(settings, path, EVENTS)
