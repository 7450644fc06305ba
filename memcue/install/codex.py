"""Wiring memcue into Codex: ``$CODEX_HOME/hooks.json`` (default ``~/.codex/hooks.json``).

Same JSON shape as Claude Code's hooks (``install.edits.hooks_json``): ``command`` is one shell string and every
``timeout`` an integer (a fractional one makes Codex discard the whole file). Codex runs a hook only once
the user has trusted it (``/hooks`` in Codex, or ``hooks.state`` in its ``config.toml``), and says nothing
about an untrusted one, so an install here never claims the hooks are active: its note says what to
do, ``memcue install codex --trust`` trusts them through Codex's own app-server (``install.codex_trust``), and
doctor asks Codex whether it does. memcue's MCP server is a table appended to ``config.toml``
(``install.edits.toml_file``): ``codex mcp add`` rewrites the ``mcp_servers`` tables and drops comments in them
(Codex 0.171), while an append keeps every byte of the user's and can be taken off again exactly.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from memcue.harnesses import hook_events, hook_matchers
from memcue.install import base, codex_trust, doctor, mcp_servers
from memcue.install.edits import hooks_json, toml_file
from memcue.install.edits.files import (
    InstallError,
    backup,
    drop_spent_backup,
    load_record,
    read_bytes,
    save_record,
    sha256,
)
from memcue.install.edits.hooks_json import dump, parse

NAME = "codex"
#: Codex event -> (memcue event, timeout in s), from the registry (SessionEnd 3 s: Codex's own cap).
EVENTS = hook_events(NAME)
#: memcue registers its MCP server with Codex unless told not to.
MCP_BY_DEFAULT = True

__all__ = ["EVENTS", "MCP_BY_DEFAULT", "NAME", "check", "config_path", "dump", "files", "install", "install_note",
           "install_state", "keep_out_of_git", "mcp_add", "mcp_registered", "mcp_remove", "parse",
           "project_settings_path", "settings_path", "uninstall"]


def settings_path() -> Path:
    """``$CODEX_HOME/hooks.json``, else ``~/.codex/hooks.json``."""
    base_dir = os.environ.get("CODEX_HOME", "").strip()
    return (Path(base_dir).expanduser() if base_dir else Path.home() / ".codex") / "hooks.json"


def config_path() -> Path:
    """Codex's ``config.toml``, beside its ``hooks.json``."""
    return settings_path().with_name("config.toml")


def install(settings: dict[str, Any], path: Path, python: str | None = None, mcp: bool = True) -> dict[str, Any]:
    """``settings`` with memcue's Codex hooks present and current (see ``hooks_json.install``); ``mcp`` changes
    nothing here (the server's table goes into ``config.toml``, ``mcp_add``)."""
    return hooks_json.install(settings, path, NAME, EVENTS, python, matchers=hook_matchers(NAME))


def uninstall(settings: dict[str, Any], path: Path, state: dict[str, Any] | None = None) -> dict[str, Any]:
    """``settings`` without memcue's Codex hooks (see ``hooks_json.uninstall``)."""
    return hooks_json.uninstall(settings, path, EVENTS)


def install_note(settings: dict[str, Any]) -> str:
    """``codex_trust.TRUST_NOTE``: written hooks are not active until Codex trusts them."""
    return codex_trust.TRUST_NOTE


def check() -> dict[str, Any]:
    """Doctor's finding: memcue's hooks present and current in ``settings_path()``, and trusted by Codex
    (``codex_trust.trust_finding``)."""
    return doctor.check_hooks_file(NAME, trusted=codex_trust.trust_finding)


def mcp_registered() -> dict[str, Any] | None:
    """The ``[mcp_servers.memcue]`` table of ``config.toml``, or None. Raises ``InstallError`` when the file
    cannot be read or is not valid TOML."""
    entry = (toml_file.read(config_path()).get("mcp_servers") or {}).get(mcp_servers.SERVER)
    return entry if isinstance(entry, dict) else None


def _toml_string(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's for these characters)."""
    return json.dumps(value, ensure_ascii=False)


def _table(argv: list[str], home: Path) -> bytes:
    """memcue's ``[mcp_servers.memcue]`` table (and its ``env``) for server ``argv``, data dir ``home``."""
    server, args = mcp_servers.SERVER, ", ".join(_toml_string(a) for a in argv[1:])
    return (f"\n[mcp_servers.{server}]\ncommand = {_toml_string(argv[0])}\nargs = [{args}]\n\n"
            f"[mcp_servers.{server}.env]\nMEMCUE_HOME = {_toml_string(str(home))}\n").encode()


def mcp_add(state_dir: Path, argv: list[str], home: Path, replace: bool) -> str:
    """Append memcue's table to ``config.toml`` (after taking an older one of ours off, ``replace``), first copying
    a file that has content to ``config.toml.memcue-backup-<UTC time>`` beside it, as every other user file memcue
    edits; recorded for an exact removal. Raises ``InstallError`` when the result would not parse (nothing written,
    no copy left)."""
    if replace:  # ours, but another interpreter or data dir: replace it
        mcp_remove(state_dir)
    path = config_path()
    kept = backup(path) if read_bytes(path) else None
    try:
        block, new, existed = toml_file.append(path, _table(argv, home), "memcue's MCP table")
    except InstallError:
        if kept:
            kept.unlink(missing_ok=True)
        raise
    save_record(state_dir, mcp_servers.record_name(NAME), {"server": mcp_servers.SERVER, "command": argv,
                                                          "block": block.decode(), "written_sha256": sha256(new),
                                                          "existed": existed, "backup": str(kept) if kept else None})
    saved = f"; the file before is {kept}" if kept else ""
    return f"MCP server '{mcp_servers.SERVER}' added to {path} (`{' '.join(argv)}`, MEMCUE_HOME={home}){saved}"


def mcp_preview(state_dir: Path, argv: list[str], home: Path, replace: bool) -> str:
    """The table ``mcp_add`` would append to ``config.toml`` (nothing is written); with ``replace``, also how the
    older entry of ours comes off: its recorded bytes, else ``codex mcp remove``, which needs ``codex`` on PATH."""
    table = f"append to {config_path()}:\n{_table(argv, home).decode().strip()}"
    if not replace:
        return f"would {table}"
    block = str(load_record(state_dir, mcp_servers.record_name(NAME)).get("block", "")).encode()
    if block and block in (read_bytes(config_path()) or b""):
        return f"would take memcue's older table (another interpreter or data dir) off and {table}"
    if codex_trust.codex_program() is None:
        return ("would replace memcue's entry for another interpreter or data dir, which this data dir did not write: "
                "that needs `codex mcp remove`, and `codex` is not on PATH, so the install will skip the MCP server "
                "and say so (hooks still work)")
    return (f"would run `codex mcp remove {mcp_servers.SERVER}` (memcue's entry for another interpreter or data dir) "
            f"and {table}")


def mcp_remove(state_dir: Path) -> str:
    """Take memcue's table off ``config.toml``: the appended bytes when they are still the file's end, else
    through ``codex mcp remove``; the copy ``mcp_add`` made goes when the file holds its bytes again
    (``drop_spent_backup``). Raises ``InstallError`` when Codex refuses."""
    record = load_record(state_dir, mcp_servers.record_name(NAME))
    block = str(record.get("block", "")).encode()
    if not toml_file.remove_appended(config_path(), block, bool(record.get("existed"))):
        out = mcp_servers.run([mcp_servers.program(NAME), "mcp", "remove", mcp_servers.SERVER])
        if out.returncode != 0:
            raise InstallError(f"`codex mcp remove` failed: {(out.stderr or out.stdout).strip()[-300:]}")
    drop_spent_backup(record.get("backup"), read_bytes(config_path()))
    return f"MCP server '{mcp_servers.SERVER}' removed"


project_settings_path = base.no_project_settings
keep_out_of_git = base.nothing_to_keep_out
files = base.no_files
install_state = base.no_state
