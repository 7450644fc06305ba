"""Registering memcue's MCP server (``memcue mcp``) with a harness: the shared steps and the CLI way.

``memcue install <harness>`` (unless ``--no-mcp``; for the harnesses whose ``MCP_BY_DEFAULT`` is set) asks the
harness's installer (``mcp_registered``, ``mcp_add``,
``mcp_remove``; ``install.protocol.Installer``) after the steps every harness shares: a server of ours already
current is left alone, one named ``memcue`` that is not ours is refused. Claude Code registers it through its own
CLI (``cli_add``: ``claude mcp add -s user …``, which writes its ``.claude.json``); Codex through an appended
``config.toml`` table (``install.codex``); Hermes needs none (its memory provider gives the agent memcue's
tools). The server gets ``MEMCUE_HOME`` in its ``env``: stdio MCP servers start with a cleared environment
(DESIGN.md section 3), and the data dir holds the sidecar's socket. An uninstall removes the server only when
memcue registered it (install record ``mcp-<harness>``) and it still runs memcue.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from memcue.core.paths import mcp_record
from memcue.harnesses import HARNESSES
from memcue.install.edits.files import InstallError, drop_record, load_record, save_record
from memcue.install.engine import installer

#: The server's name in every harness.
SERVER = "memcue"
#: Seconds a harness CLI call may take.
CLI_TIMEOUT_S = 60.0

__all__ = ["SERVER", "ProgramMissing", "cli_add", "cli_remove", "is_ours", "left_elsewhere", "program", "record_name",
           "register", "registered", "run", "server_command", "unregister", "unregister_preview"]


def server_command(python: str | None = None) -> list[str]:
    """The server's argv: ``[<interpreter>, "-P", "-m", "memcue", "mcp"]`` (absolute interpreter path). ``-P``: the
    harness starts the server in the user's project folder, and ``-m`` would otherwise put that folder first on
    the import path, so a project holding a ``memcue`` folder (memcue's own checkout) would run its code."""
    return [python or sys.executable, "-P", "-m", "memcue", "mcp"]


def record_name(harness: str) -> str:
    """The install-record name of the MCP server memcue registered with ``harness`` (``core.paths.mcp_record``)."""
    return mcp_record(harness)


def note_declined(harness: str, state_dir: Path, declined: bool) -> None:
    """Record (or forget) that the user installed ``harness`` with ``--no-mcp``, so doctor does not ask them to
    register the server they declined."""
    if declined:
        save_record(state_dir, mcp_record(harness, declined=True), {"harness": harness})
    else:
        drop_record(state_dir, mcp_record(harness, declined=True))


def declined(harness: str, state_dir: Path) -> bool:
    """True when ``harness`` was installed with ``--no-mcp`` (``note_declined``) and not since with the server."""
    return bool(load_record(state_dir, mcp_record(harness, declined=True)))


class ProgramMissing(InstallError):
    """The harness's program, through which memcue registers its MCP server, is not on PATH."""


def program(harness: str) -> str:
    """The path of ``harness``'s program (its registry row's). Raises ``ProgramMissing`` when it is not on
    PATH."""
    name = HARNESSES[harness].program
    path = shutil.which(name)
    if path is None:
        raise ProgramMissing(f"registering memcue's MCP server needs the `{name}` program on PATH (the harness "
                             "registers the server itself)")
    return path


#: Claude Code's switches for no telemetry or other traffic while memcue runs ``claude mcp`` (its docs:
#: "Environment variables").
QUIET_ENV = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a harness CLI ``argv`` quietly (``QUIET_ENV``), at most ``CLI_TIMEOUT_S`` s. Raises ``InstallError``
    when it cannot start or times out."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, stdin=subprocess.DEVNULL,
                              env={**os.environ, **QUIET_ENV})
    except (OSError, subprocess.SubprocessError) as exc:
        raise InstallError(f"`{' '.join(argv[:3])}` failed: {exc}") from None


def registered(harness: str) -> dict | None:
    """``harness``'s current ``memcue`` MCP server entry (``{"command", "args", "env"}``), or None; read
    without starting it. Raises ``InstallError`` when its file cannot be read or parsed."""
    return installer(harness).mcp_registered()


def is_ours(entry: dict | None, python: str | None = None, home: Path | None = None) -> bool:
    """True when ``entry`` runs memcue's server (with this interpreter and data dir, when given)."""
    if not entry or list(entry.get("args") or [])[-3:] != ["-m", "memcue", "mcp"]:
        return False
    if python is not None and entry.get("command") != python:
        return False
    return home is None or (entry.get("env") or {}).get("MEMCUE_HOME") == str(home)


def register(harness: str, state_dir: Path, home: Path, python: str | None = None) -> str:
    """Register memcue's MCP server with ``harness`` (``home``: the data dir passed as ``MEMCUE_HOME``);
    returns what was done. One of memcue's with another interpreter, data dir or arguments (an older memcue's,
    without ``-P``) is replaced, and the answer says which it replaced. Raises ``InstallError`` when the
    harness's CLI is missing or refuses, or when another server already has the name ``memcue``."""
    argv = server_command(python)
    entry = registered(harness)
    step = _step(entry, argv, home)
    if step == "registered":
        return f"MCP server '{SERVER}' already registered"
    if step == "foreign":
        raise InstallError(f"{harness} already has an MCP server named '{SERVER}' that is not memcue's; memcue left "
                           "it alone")
    done = installer(harness).mcp_add(state_dir, argv, home, step == "replace")
    if step == "add":
        return done
    old = entry or {}
    before = (old.get("env") or {}).get("MEMCUE_HOME") or "no data dir given"
    return f"replaced memcue's earlier MCP entry (`{old.get('command')}`, MEMCUE_HOME={before}); {done}"


def _step(entry: dict | None, argv: list[str], home: Path) -> str:
    """What registering ``argv`` with ``MEMCUE_HOME=home`` does over the harness's current ``entry``: "registered"
    (ours already, as is), "foreign" (another server has the name: refused), "replace" (ours, another interpreter,
    data dir or arguments) or "add"."""
    if entry is None:
        return "add"
    if is_ours(entry, argv[0], home) and list(entry.get("args") or []) == argv[1:]:
        return "registered"
    return "replace" if is_ours(entry) else "foreign"


def unregister(harness: str, state_dir: Path) -> str:
    """Remove memcue's MCP server from ``harness`` when memcue registered it and it still runs memcue;
    returns what was done ("" when nothing). Raises ``InstallError`` when the harness's CLI refuses."""
    if not load_record(state_dir, record_name(harness)):
        return ""
    done = installer(harness).mcp_remove(state_dir) if is_ours(registered(harness)) else ""
    drop_record(state_dir, record_name(harness))
    return done


def left_elsewhere(harness: str, state_dir: Path) -> str:
    """What an uninstall leaves of memcue's MCP server that another data dir registered: a note naming that data
    dir and how to take the entry off, or "" (no entry of memcue's, one of this data dir ``state_dir``'s, or a file
    that cannot be read)."""
    try:
        entry = registered(harness)
    except InstallError:
        return ""
    home = ((entry or {}).get("env") or {}).get("MEMCUE_HOME")
    if not is_ours(entry) or not home or home == str(state_dir):
        return ""
    return (f"MCP server '{SERVER}' left in place: the data dir {home} registered it; `MEMCUE_HOME={home} memcue "
            f"uninstall {harness}` takes it off")


def unregister_preview(harness: str, state_dir: Path) -> str:
    """What ``unregister`` would do, for an uninstall's dry run (nothing is run or written), or ``left_elsewhere``'s
    note; "" when there is nothing to say."""
    if not load_record(state_dir, record_name(harness)):
        return left_elsewhere(harness, state_dir)
    try:
        ours = is_ours(registered(harness))
    except InstallError as exc:
        return f"cannot tell what would be done: {exc}"
    return f"would remove MCP server '{SERVER}' (registered by this data dir)" if ours else ""


def cli_add(harness: str, state_dir: Path, argv: list[str], home: Path, replace: bool) -> str:
    """Register ``argv`` through the harness's own CLI (``<program> mcp add -s user memcue -e MEMCUE_HOME=…
    -- argv``), after removing an older entry of ours (``replace``); recorded for the uninstall. Raises
    ``InstallError`` when the program is missing or refuses."""
    path = program(harness)
    if replace:  # ours, but another interpreter or data dir: replace it
        run(_remove_argv(path))
    out = run([path, "mcp", "add", "-s", "user", SERVER, "-e", f"MEMCUE_HOME={home}", "--", *argv])
    if out.returncode != 0:
        why = (out.stderr or out.stdout).strip()[-300:]
        raise InstallError(f"`{HARNESSES[harness].program} mcp add` failed: {why}")
    save_record(state_dir, record_name(harness), {"server": SERVER, "command": argv})
    return f"MCP server '{SERVER}' registered (`{' '.join(argv)}`, MEMCUE_HOME={home})"


def preview(harness: str, state_dir: Path, home: Path, python: str | None = None) -> str:
    """What ``register`` would do, for a dry run (nothing is run or written): already registered, refused (a
    server named ``memcue`` that is not memcue's), or the harness's ``mcp_preview``."""
    argv = server_command(python)
    try:
        entry = registered(harness)
    except InstallError as exc:
        return f"cannot tell what would be done: {exc}"
    step = _step(entry, argv, home)
    if step == "registered":
        return f"'{SERVER}' already registered; nothing to do"
    if step == "foreign":
        return f"would refuse: {harness} already has an MCP server named '{SERVER}' that is not memcue's"
    return installer(harness).mcp_preview(state_dir, argv, home, step == "replace")


def cli_preview(harness: str, argv: list[str], home: Path, replace: bool) -> str:
    """The ``<program> mcp`` commands ``cli_add`` would run for ``harness`` (``replace``: the remove first), and
    whether the program is there to run them (nothing is run)."""
    name = HARNESSES[harness].program
    command = f"{name} mcp add -s user {SERVER} -e MEMCUE_HOME={home} -- {' '.join(argv)}"
    if replace:
        command = f"{name} mcp remove -s user {SERVER}` then `{command}"
    if shutil.which(name) is None:
        return (f"would run `{command}`, but `{name}` is not on PATH: the install will skip the MCP server and say "
                "so (hooks still work)")
    return f"would run `{command}`"


def cli_remove(harness: str) -> str:
    """Remove memcue's server through the harness's own CLI (``<program> mcp remove -s user memcue``). Raises
    ``InstallError`` when the program is missing or refuses."""
    out = run(_remove_argv(program(harness)))
    if out.returncode != 0:
        raise InstallError(f"`{harness} mcp remove` failed: {(out.stderr or out.stdout).strip()[-300:]}")
    return f"MCP server '{SERVER}' removed"


def _remove_argv(path: str) -> list[str]:
    return [path, "mcp", "remove", "-s", "user", SERVER]
