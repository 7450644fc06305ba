"""Wiring memcue into Claude Code: ``$CLAUDE_CONFIG_DIR/settings.json`` (default ``~/.claude/settings.json``).

The file's hooks section is edited by ``install.edits.hooks_json`` (cases C11, C12, C15). Claude Code's
UserPromptSubmit timeout defaults to 30 s, so memcue always writes one (the registry's timeouts). With the MCP
server (the default), the same file's ``permissions.allow`` gets ``ALLOW_RULE``, which allows memcue's own MCP
tools and nothing else: without it ``claude -p`` denies them (no one is there to approve). What memcue added
(the rule, and ``allow``/``permissions`` when it created them) is kept in the install state, so an uninstall
takes back exactly that. What differs from the defaults (``install.base``): a per-project settings file kept
out of git, and the MCP server registered through ``claude mcp add`` and read from ``.claude.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from memcue.harnesses import background_events, hook_events, hook_matchers
from memcue.install import base, doctor, mcp_servers
from memcue.install.edits import hooks_json
from memcue.install.edits.files import InstallError
from memcue.install.edits.hooks_json import dump, parse

NAME = "claude-code"
#: Claude Code event -> (memcue event, timeout in s), from the registry.
EVENTS = hook_events(NAME)
#: The permission rule for every tool of memcue's MCP server (``mcp__<server>__*``, Claude Code 2.1.332's
#: form for all tools of one server), and only those.
ALLOW_RULE = f"mcp__{mcp_servers.SERVER}__*"
#: Rules that also allow every tool of memcue's server (doctor accepts either).
_ALLOWING = (ALLOW_RULE, f"mcp__{mcp_servers.SERVER}")
#: memcue registers its MCP server with Claude Code unless told not to.
MCP_BY_DEFAULT = True

__all__ = ["ALLOW_RULE", "EVENTS", "MCP_BY_DEFAULT", "NAME", "allowed", "check", "dump", "files", "install",
           "install_note", "install_state", "keep_out_of_git", "mcp_add", "mcp_registered", "mcp_remove",
           "merged_project_files", "parse", "project_settings_path", "settings_path", "uninstall"]


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


def install(settings: dict[str, Any], path: Path, python: str | None = None, mcp: bool = True) -> dict[str, Any]:
    """``settings`` with memcue's Claude Code hooks present and current (see ``hooks_json.install``), and with
    ``mcp`` ``ALLOW_RULE`` in ``permissions.allow`` (appended; the user's rules kept as they are). Raises
    ``InstallError`` when ``permissions`` or its ``allow`` has an unexpected shape."""
    settings = hooks_json.install(settings, path, NAME, EVENTS, python, background_events(NAME),
                                  matchers=hook_matchers(NAME))
    if mcp:
        permissions = settings.setdefault("permissions", {})
        if not isinstance(permissions, dict) or not isinstance(permissions.setdefault("allow", []), list):
            raise InstallError(f'{path}: "permissions" is not an object with an "allow" list; memcue changed '
                               "nothing")
        if ALLOW_RULE not in permissions["allow"]:
            permissions["allow"].append(ALLOW_RULE)
    return settings


def install_state(settings: dict[str, Any], recorded: dict[str, Any]) -> dict[str, Any]:
    """What the first install found of ``permissions`` (``recorded``: an earlier install's, kept): ``{"allow":
    {"rule": bool, "allow": bool, "permissions": bool}}``, whether ``ALLOW_RULE``, ``permissions.allow`` and
    ``permissions`` were there before memcue."""
    if recorded.get("allow"):
        return recorded
    permissions = settings.get("permissions")
    allow = permissions.get("allow") if isinstance(permissions, dict) else None
    return {"allow": {"rule": isinstance(allow, list) and ALLOW_RULE in allow, "allow": allow is not None,
                      "permissions": permissions is not None}}


def uninstall(settings: dict[str, Any], path: Path, state: dict[str, Any] | None = None) -> dict[str, Any]:
    """``settings`` without memcue's Claude Code hooks (see ``hooks_json.uninstall``) and without what the
    install added to ``permissions`` (``state``: ``install_state``'s; without one, ``ALLOW_RULE`` and the
    ``allow`` list and ``permissions`` it leaves empty go)."""
    settings = hooks_json.uninstall(settings, path, EVENTS)
    found = (state or {}).get("allow") or {}
    permissions = settings.get("permissions")
    if found.get("rule") or not isinstance(permissions, dict) or not isinstance(permissions.get("allow"), list):
        return settings
    permissions["allow"] = [rule for rule in permissions["allow"] if rule != ALLOW_RULE]
    if not permissions["allow"] and not found.get("allow"):
        del permissions["allow"]
    if not permissions and not found.get("permissions"):
        del settings["permissions"]
    return settings


def allowed(settings: Any) -> bool:
    """True when ``settings`` (a parsed settings file) allows every tool of memcue's MCP server."""
    permissions = settings.get("permissions") if isinstance(settings, dict) else None
    allow = permissions.get("allow") if isinstance(permissions, dict) else None
    return isinstance(allow, list) and any(rule in _ALLOWING for rule in allow)


def check() -> dict[str, Any]:
    """Doctor's finding: memcue's hooks present and current in ``settings_path()``, and registered once with the
    project settings Claude Code merges for the current directory (``doctor.check_hooks_file``); with memcue's
    MCP server registered, whether a settings file Claude Code reads allows its tools (``mcp_allowed``; a
    warning when none does: ``claude -p`` denies them)."""
    found = doctor.check_hooks_file(NAME, also=merged_project_files(Path.cwd()))
    if not found.get("mcp"):
        return found
    files = [settings_path(), *merged_project_files(Path.cwd())]
    found["mcp_allowed"] = any(allowed(_parsed(path)) for path in dict.fromkeys(files))
    if found["mcp_allowed"]:
        found["message"] += " and its tools allowed"
    else:
        found["message"] += (f", but its tools are not allowed ({ALLOW_RULE} in permissions.allow): `claude -p` "
                             f"denies them. Run `memcue install {NAME}`")
        found["status"] = doctor.WARN if found["status"] == doctor.OK else found["status"]
    return found


def _parsed(path: Path) -> Any:
    """``path`` parsed, or None when it is missing or not readable JSON."""
    try:
        data = path.read_bytes()
        return parse(data, path)[0]
    except (OSError, InstallError):
        return None


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


def mcp_preview(state_dir: Path, argv: list[str], home: Path, replace: bool) -> str:
    """The ``claude mcp`` commands ``mcp_add`` would run (``mcp_servers.cli_preview``)."""
    return mcp_servers.cli_preview(NAME, argv, home, replace)


files = base.no_files
install_note = base.no_note
