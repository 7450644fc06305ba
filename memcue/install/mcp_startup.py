"""Doctor's check that memcue's MCP server starts within the time Codex gives it.

Codex 0.171 starts MCP servers beside a turn and builds the turn's tools without an optional server that has
not finished its start (``initialize`` and ``tools/list``) within ``mcp_optional_startup_grace_ms``, a top-level
``config.toml`` setting, 1,000 ms by default (openai/codex pull request 31641, "one-second concurrent startup
grace"; the key is in the 0.171 binary). Importing the ``mcp`` SDK alone takes about 0.7 s on an idle 2-core
machine, so memcue's server answers the handshake from the SDK's earlier answers while it loads (``mcp.early``),
and an install starts it once to fill that cache (``teach_handshake``). The check times a real start of the
registered server and compares it with the grace; memcue never changes the setting, which applies to every
optional server of the user's.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from typing import Any

from memcue.core.switches import MCP_WARM_UP_ENV
from memcue.install.edits.files import InstallError

#: Codex's default ``mcp_optional_startup_grace_ms`` (ms), as of Codex 0.171 (module docstring).
CODEX_DEFAULT_GRACE_MS = 1000
#: A start slower than this share of the grace gets a warning: a busier moment than doctor's can cross it.
WARN_SHARE = 0.7
#: The grace doctor suggests (ms): three times the slowest start measured under load here (about 1.6 s).
SUGGESTED_GRACE_MS = 3000
#: How long one timed start may take before it counts as failed (s).
START_TIMEOUT_S = 15.0
_INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "memcue-doctor", "version": "1"}}}

__all__ = ["CODEX_DEFAULT_GRACE_MS", "codex_grace_ms", "start_ms", "startup_finding", "teach_handshake"]


def start_ms(command: str, args: list[str], env: dict[str, str], timeout_s: float = START_TIMEOUT_S) -> float:
    """Milliseconds from starting the MCP server ``command`` ``args`` (stdio, with exactly ``env``, as a
    harness starts it) to its answer to ``tools/list`` after ``initialize``. Raises ``InstallError`` when it
    cannot start, exits, answers with an error or takes longer than ``timeout_s`` seconds."""
    started = time.perf_counter()
    try:
        proc = subprocess.Popen([command, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env)
    except OSError as exc:
        raise InstallError(f"could not start memcue's MCP server: {exc}") from None
    timer = threading.Timer(timeout_s, proc.kill)  # a hung server ends the readline below
    timer.start()
    try:
        _send(proc, _INITIALIZE)
        _answer(proc, 1)
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        _answer(proc, 2)
        return (time.perf_counter() - started) * 1000.0
    finally:
        timer.cancel()
        proc.kill()
        proc.wait()


def _send(proc: subprocess.Popen, message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()
    except OSError as exc:
        raise InstallError(f"memcue's MCP server stopped reading: {exc}") from None


def _answer(proc: subprocess.Popen, wanted: int) -> dict[str, Any]:
    """The server's response to request ``wanted`` (notifications and log lines before it skipped)."""
    assert proc.stdout is not None
    for raw in proc.stdout:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("id") == wanted:
            if "error" in message:
                raise InstallError(f"memcue's MCP server answered with an error: {message['error']}")
            return message
    raise InstallError(f"memcue's MCP server exited or took over {START_TIMEOUT_S:.0f} s to start")


def codex_grace_ms(config: dict[str, Any]) -> int:
    """``mcp_optional_startup_grace_ms`` of a parsed Codex ``config.toml`` (ms), Codex's default when unset or
    not a number."""
    value = config.get("mcp_optional_startup_grace_ms")
    return value if isinstance(value, int) and not isinstance(value, bool) else CODEX_DEFAULT_GRACE_MS


def teach_handshake(entry: dict[str, Any]) -> None:
    """Start memcue's registered server ``entry`` once, so that its first start under Codex answers the handshake
    early (``mcp.early``) rather than teaching it; a failure is left to doctor to report."""
    try:
        start_ms(*_server(entry))
    except InstallError:
        pass


def _server(entry: dict[str, Any]) -> tuple[str, list[str], dict[str, str]]:
    """``(command, args, env)`` to start the server ``entry`` as Codex does: the entry's ``env`` over ``PATH``
    and ``HOME`` only (Codex clears a stdio server's environment, DESIGN.md section 3), and no sidecar start."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME")}
    env.update({str(k): str(v) for k, v in (entry.get("env") or {}).items()})
    env[MCP_WARM_UP_ENV] = "0"  # a check starts no sidecar
    return str(entry.get("command", "")), [str(a) for a in entry.get("args") or []], env


def startup_finding(entry: dict[str, Any], grace_ms: int) -> tuple[str, str, dict[str, Any]]:
    """``(status, message, detail)`` for memcue's server ``entry`` (``{"command", "args", "env"}`` as
    registered) against ``grace_ms``: "ok", or "warn" when one timed start takes ``WARN_SHARE`` of the grace
    or more, or fails. The timed start is the second: the first fills the server's handshake cache
    (``mcp.early``) when an install or upgrade left it empty, as a harness's first start does. The server starts
    as ``_server`` says, without starting the sidecar."""
    command, args, env = _server(entry)
    try:
        start_ms(command, args, env)  # the first start after an install or upgrade fills the handshake cache
        ms = start_ms(command, args, env)
    except InstallError as exc:
        return "warn", f"memcue's MCP server did not start: {exc}", {"grace_ms": grace_ms}
    detail = {"start_ms": round(ms, 1), "grace_ms": grace_ms}
    if ms < WARN_SHARE * grace_ms:
        return "ok", f"memcue's MCP server started in {ms:.0f} ms (Codex waits {grace_ms} ms)", detail
    return "warn", (f"memcue's MCP server took {ms:.0f} ms to start and Codex waits {grace_ms} ms for an optional "
                    f"server before a turn, so a first turn (codex exec) may lack memcue's tools; set "
                    f"`mcp_optional_startup_grace_ms = {SUGGESTED_GRACE_MS}` at the top of Codex's config.toml "
                    "(it applies to every optional server)"), detail
