"""The installers' shared defaults (after pre-commit's ``lang_base``): a harness module assigns the ones it
does not change (``files = base.no_files``) and writes only what differs (``install.protocol.Installer``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["no_files", "no_mcp_server", "no_note", "no_project_settings", "no_state",
           "nothing_to_keep_out", "nothing_to_remove"]


def no_project_settings(project: Path) -> Path | None:
    """None: the harness has no per-project config file memcue writes."""
    return None


def nothing_to_keep_out(project: Path) -> str:
    """"": nothing to keep out of git after a per-project install."""
    return ""


def no_files(python: str | None = None) -> dict[Path, bytes]:
    """{}: memcue owns no whole file in the harness."""
    return {}


def no_state(settings: Any, recorded: dict[str, Any]) -> dict[str, Any]:
    """{}: an install replaces nothing that an uninstall must put back."""
    return {}


def no_note(settings: Any) -> str:
    """"": the install report carries no note."""
    return ""


def no_mcp_server() -> dict[str, Any] | None:
    """None: the harness has no MCP server entry memcue reads."""
    return None


def nothing_to_remove(state_dir: Path) -> str:
    """"": no MCP server of memcue's to remove."""
    return ""


def nothing_to_preview(state_dir: Path, argv: list[str], home: Path, replace: bool) -> str:
    """"": no MCP server is registered, so a dry run has nothing to show."""
    return ""
