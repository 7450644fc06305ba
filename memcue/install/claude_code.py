"""Wiring memcue into Claude Code: ``$CLAUDE_CONFIG_DIR/settings.json`` (default ``~/.claude/settings.json``).

The file's hooks section is edited by ``install.edits.hooks_json`` (cases C11, C12, C15). Claude Code's
UserPromptSubmit timeout defaults to 30 s, so memcue always writes one (the registry's timeouts). What differs
from the defaults (``install.base``): a per-project settings file kept out of git, and the MCP server
registered through ``claude mcp add`` and read from ``.claude.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from memcue.harnesses import hook_events
from memcue.install import base, doctor, mcp_servers
from memcue.install.edits import hooks_json
from memcue.install.edits.files import InstallError
from memcue.install.edits.hooks_json import dump, parse

NAME = "claude-code"
#: Claude Code event -> (memcue event, timeout in s), from the registry.
EVENTS = hook_events(NAME)

__all__ = ["EVENTS", "NAME", "check", "dump", "files", "install", "install_note", "install_state", "keep_out_of_git",
           "mcp_add", "mcp_registered", "mcp_remove", "merged_project_files", "parse", "project_settings_path",
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


def uninstall(settings: dict[str, Any], path: Path, state: dict[str, Any] | None = None) -> dict[str, Any]:
    """``settings`` without memcue's Claude Code hooks (see ``hooks_json.uninstall``)."""
    return hooks_json.uninstall(settings, path, EVENTS)


def check() -> dict[str, Any]:
    """Doctor's finding: memcue's hooks present and current in ``settings_path()``, and registered once with the
    project settings Claude Code merges for the current directory (``doctor.check_hooks_file``)."""
    return doctor.check_hooks_file(NAME, also=merged_project_files(Path.cwd()))


def merged_project_files(cwd: Path) -> list[Path]:
    """The project settings files Claude Code merges with the user's when started in ``cwd``: ``.claude/
    settings.json`` and ``.claude/settings.local.json`` of ``cwd`` and of its project (``resolve_project``)."""
    from memcue.core.project import resolve_project

    roots = list(dict.fromkeys([cwd, Path(resolve_project(str(cwd)))]))
    return [root / ".claude" / name for root in roots for name in ("settings.json", "settings.local.json")]


def mcp_registered() -> dict[str, Any] | None:
    """The ``memcue`` entry of ``mcpServers`` in Claude Code's ``.claude.json`` (``$CLAUDE_CONFIG_DIR`` or
    HOME), or None. Raises ``InstallError`` when the file cannot be read or parsed."""
    base_dir = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    path = Path(base_dir).expanduser() / ".claude.json" if base_dir else Path.home() / ".claude.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InstallError(f"cannot read {path}: {exc}") from None
    entry = (data.get("mcpServers") or {}).get(mcp_servers.SERVER) if isinstance(data, dict) else None
    return entry if isinstance(entry, dict) else None


def mcp_add(state_dir: Path, argv: list[str], home: Path, replace: bool) -> str:
    """Register memcue's MCP server with ``claude mcp add -s user`` (``mcp_servers.cli_add``)."""
    return mcp_servers.cli_add(NAME, state_dir, argv, home, replace)


def mcp_remove(state_dir: Path) -> str:
    """Remove memcue's MCP server with ``claude mcp remove -s user`` (``mcp_servers.cli_remove``)."""
    return mcp_servers.cli_remove(NAME)


files = base.no_files
install_state = base.no_state
install_note = base.no_note
