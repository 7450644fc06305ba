"""Registering memcue's MCP server (``memcue mcp``) with a harness.

``memcue install <harness> --mcp`` runs ``claude mcp add -s user …``: Claude Code writes its own
``.claude.json``. For Codex, memcue appends the ``[mcp_servers.memcue]`` table to ``config.toml`` itself:
``codex mcp add`` rewrites the ``mcp_servers`` tables and drops comments in them (Codex 0.171), while an
append keeps every byte of the user's and can be taken off again exactly (checked by a strict parse). The
server gets ``MEMCUE_HOME`` in its ``env``: stdio MCP servers start with a cleared environment (DESIGN.md
section 3), and the data dir holds the sidecar's socket. Hermes needs none: its memory provider already
gives the agent memcue's tools. An uninstall removes the server only when memcue registered it (install
record ``mcp-<harness>``) and it still runs memcue.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from memcue.install import codex
from memcue.install.files import (
    InstallError,
    drop_record,
    load_record,
    read_bytes,
    save_record,
    sha256,
    write_atomic,
)

#: The server's name in every harness.
SERVER = "memcue"
#: Seconds a harness CLI call may take.
CLI_TIMEOUT_S = 60.0
HERMES_NOTE = "Hermes: no MCP server needed (its memory provider gives the agent memcue_recall and memcue_remember)"

__all__ = ["SERVER", "is_ours", "register", "registered", "server_command", "unregister"]


def server_command(python: str | None = None) -> list[str]:
    """The server's argv: ``[<interpreter>, "-m", "memcue", "mcp"]`` (absolute interpreter path)."""
    return [python or sys.executable, "-m", "memcue", "mcp"]


def _program(harness: str) -> str:
    from memcue.install import installer

    name = installer(harness).PROGRAM
    path = shutil.which(name)
    if path is None:
        raise InstallError(f"--mcp needs the `{name}` program on PATH (the harness registers the server itself)")
    return path


#: Claude Code's switches for no telemetry or other traffic while memcue runs ``claude mcp`` (its docs:
#: "Environment variables").
QUIET_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, stdin=subprocess.DEVNULL,
                              env={**os.environ, **QUIET_ENV})
    except (OSError, subprocess.SubprocessError) as exc:
        raise InstallError(f"`{' '.join(argv[:3])}` failed: {exc}") from None


def registered(harness: str) -> dict | None:
    """The harness's current ``memcue`` MCP server entry (``{"command", "args", "env"}``), or None. Read
    without starting it: Claude Code's ``.claude.json`` (``$CLAUDE_CONFIG_DIR`` or HOME), Codex's
    ``config.toml``. Raises ``InstallError`` when the file cannot be read or parsed."""
    if harness == "claude-code":
        base = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
        path = Path(base).expanduser() / ".claude.json" if base else Path.home() / ".claude.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise InstallError(f"cannot read {path}: {exc}") from None
        entry = (data.get("mcpServers") or {}).get(SERVER) if isinstance(data, dict) else None
        return entry if isinstance(entry, dict) else None
    try:
        config = tomllib.loads((read_bytes(_codex_config()) or b"").decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InstallError(f"{_codex_config()} is not valid TOML ({exc}); memcue changed nothing") from None
    entry = (config.get("mcp_servers") or {}).get(SERVER)
    return entry if isinstance(entry, dict) else None


def _codex_config() -> Path:
    """Codex's ``config.toml``, beside its ``hooks.json`` (``install.codex.settings_path``)."""
    return codex.settings_path().with_name("config.toml")


def _toml_string(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's for these characters)."""
    return json.dumps(value, ensure_ascii=False)


def _codex_block(argv: list[str], home: Path) -> bytes:
    args = ", ".join(_toml_string(a) for a in argv[1:])
    return (f"\n[mcp_servers.{SERVER}]\ncommand = {_toml_string(argv[0])}\nargs = [{args}]\n\n"
            f"[mcp_servers.{SERVER}.env]\nMEMCUE_HOME = {_toml_string(str(home))}\n").encode()


def _codex_add(state_dir: Path, argv: list[str], home: Path) -> None:
    """Append memcue's table to Codex's config.toml (see module doc); recorded for an exact removal."""
    path = _codex_config()
    old = read_bytes(path) or b""
    block = (b"" if not old or old.endswith(b"\n") else b"\n") + _codex_block(argv, home)
    new = old + block
    try:
        tomllib.loads(new.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InstallError(f"adding memcue's MCP table would break {path} ({exc}); memcue changed nothing") from None
    write_atomic(path, new)
    save_record(state_dir, "mcp-codex", {"server": SERVER, "command": argv, "block": block.decode(),
                                         "written_sha256": sha256(new), "existed": bool(old)})


def _codex_remove(state_dir: Path) -> str:
    """Take memcue's table off Codex's config.toml: the appended bytes when they are still the file's end,
    else through ``codex mcp remove``."""
    record, path = load_record(state_dir, "mcp-codex"), _codex_config()
    now = read_bytes(path) or b""
    block = str(record.get("block", "")).encode()
    if block and now.endswith(block):
        rest = now[: len(now) - len(block)]
        if rest or record.get("existed"):
            write_atomic(path, rest)
        else:
            path.unlink()
        return f"MCP server '{SERVER}' removed"
    out = _run([_program("codex"), "mcp", "remove", SERVER])
    if out.returncode != 0:
        raise InstallError(f"`codex mcp remove` failed: {(out.stderr or out.stdout).strip()[-300:]}")
    return f"MCP server '{SERVER}' removed"


def is_ours(entry: dict | None, python: str | None = None, home: Path | None = None) -> bool:
    """True when ``entry`` runs memcue's server (with this interpreter and data dir, when given)."""
    if not entry or list(entry.get("args") or [])[-3:] != ["-m", "memcue", "mcp"]:
        return False
    if python is not None and entry.get("command") != python:
        return False
    return home is None or (entry.get("env") or {}).get("MEMCUE_HOME") == str(home)


def register(harness: str, state_dir: Path, home: Path, python: str | None = None) -> str:
    """Register memcue's MCP server with ``harness`` (``home``: the data dir passed as ``MEMCUE_HOME``);
    returns what was done. Raises ``InstallError`` when the harness's CLI is missing or refuses, or when
    another server already has the name ``memcue``."""
    if harness == "hermes":
        return HERMES_NOTE
    argv = server_command(python)
    entry = registered(harness)
    if is_ours(entry, argv[0], home):
        return f"MCP server '{SERVER}' already registered"
    if entry is not None and not is_ours(entry):
        raise InstallError(f"{harness} already has an MCP server named '{SERVER}' that is not memcue's; memcue left "
                           "it alone")
    if harness == "codex":
        if entry is not None:  # ours, but another interpreter or data dir: replace it
            _codex_remove(state_dir)
        _codex_add(state_dir, argv, home)
        return f"MCP server '{SERVER}' added to {_codex_config()} (`{' '.join(argv)}`, MEMCUE_HOME={home})"
    program = _program(harness)
    if entry is not None:  # ours, but another interpreter or data dir: replace it
        _run(_remove_argv(harness, program))
    out = _run([program, "mcp", "add", "-s", "user", SERVER, "-e", f"MEMCUE_HOME={home}", "--", *argv])
    if out.returncode != 0:
        raise InstallError(f"`claude mcp add` failed: {(out.stderr or out.stdout).strip()[-300:]}")
    save_record(state_dir, f"mcp-{harness}", {"server": SERVER, "command": argv})
    return f"MCP server '{SERVER}' registered (`{' '.join(argv)}`, MEMCUE_HOME={home})"


def _remove_argv(harness: str, program: str) -> list[str]:
    return [program, "mcp", "remove", "-s", "user", SERVER]


def unregister(harness: str, state_dir: Path) -> str:
    """Remove memcue's MCP server from ``harness`` when memcue registered it and it still runs memcue;
    returns what was done ("" when nothing). Raises ``InstallError`` when the harness's CLI refuses."""
    if harness == "hermes" or not load_record(state_dir, f"mcp-{harness}"):
        return ""
    if not is_ours(registered(harness)):
        drop_record(state_dir, f"mcp-{harness}")
        return ""
    if harness == "codex":
        done = _codex_remove(state_dir)
        drop_record(state_dir, "mcp-codex")
        return done
    out = _run(_remove_argv(harness, _program(harness)))
    if out.returncode != 0:
        raise InstallError(f"`{harness} mcp remove` failed: {(out.stderr or out.stdout).strip()[-300:]}")
    drop_record(state_dir, f"mcp-{harness}")
    return f"MCP server '{SERVER}' removed"
