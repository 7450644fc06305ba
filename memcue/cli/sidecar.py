"""``memcue serve|stop|status|mcp``: running the sidecar and the MCP server, and asking whether they run."""

from __future__ import annotations

import argparse
import os
import signal
import time
from pathlib import Path
from typing import Any

from memcue.cli.arguments import AddCommand
from memcue.cli.output import emit, fail
from memcue.core.paths import Locations

#: Seconds ``memcue stop`` waits for the sidecar to exit after SIGTERM.
STOP_WAIT_S = 15


def cmd_serve(args: argparse.Namespace) -> int:
    """``memcue serve``: the sidecar in the foreground, until stopped."""
    from memcue.sidecar.lifecycle import serve

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    return serve(foreground=True)


def _suspended(pid: int) -> bool:
    """The process ``pid`` is stopped (state T in ``/proc/<pid>/stat``; False where there is no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] in ("T", "t")
    except (OSError, IndexError):
        return False


def cmd_stop(args: argparse.Namespace) -> int:
    """``memcue stop``: SIGTERM to the sidecar, then wait up to ``STOP_WAIT_S`` for it to exit (exit 1 if not)."""
    from memcue.core.paths import locations
    from memcue.sidecar.lifecycle import read_pid

    pid = read_pid(locations())
    if pid is None:
        return emit({"stopped": False}, args.json, "memcue sidecar is not running")
    if not _is_sidecar(pid):
        return emit({"stopped": False}, args.json, f"memcue sidecar is not running (stale pid file names pid {pid}, "
                                                   "which is not a memcue sidecar; left alone)")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return emit({"stopped": False}, args.json, "memcue sidecar is not running (stale pid file)")
    deadline = time.monotonic() + STOP_WAIT_S
    while time.monotonic() < deadline and _is_sidecar(pid):
        time.sleep(0.05)
    if _is_sidecar(pid):  # on stderr, even with --json
        hint = (f"it is suspended (Ctrl-Z or SIGSTOP): `kill -CONT {pid}` lets it finish stopping"
                if _suspended(pid) else f"it may be stuck: `kill -9 {pid}` ends it (the database stays consistent)")
        return fail(f"the sidecar (pid {pid}) did not stop within {STOP_WAIT_S} s; {hint}")
    return emit({"stopped": True, "pid": pid}, args.json, f"stopped memcue sidecar (pid {pid})")


def _is_sidecar(pid: int) -> bool:
    """True while ``pid`` is alive and (where /proc exists) runs memcue's sidecar, so a pid reused by
    another program after a crash is never signalled."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    if not cmdline.parent.exists():
        return True
    try:
        args = cmdline.read_bytes().split(b"\0")
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":  # exited, waiting to be reaped
        return False
    return b"memcue.sidecar" in args or (b"serve" in args and any(a.endswith(b"memcue") for a in args))


def _not_running(args: argparse.Namespace, loc: Locations) -> int:
    """``memcue status`` when no sidecar answers: where it would run (exit 0: it starts on demand), and why it
    cannot start if a file is in the way of its socket (case C09: the sidecar refuses to start until it moves;
    exit 1)."""
    from memcue.core.paths import socket_blocked

    data = {"running": False, "data_dir": str(loc.root), "socket": str(loc.socket), "log": str(loc.sidecar_log)}
    if socket_blocked(loc.socket):
        data["blocked"] = f"{loc.socket} exists and is not a socket; memcue will not delete it"
        return emit(data, args.json, f"memcue sidecar cannot start: {data['blocked']}. Move it away, or set "
                                     f"MEMCUE_HOME to another folder. Log: {loc.sidecar_log}", ok=False)
    from memcue.sidecar.settings import load_settings

    stored = "memories stored" if loc.database.exists() else "no memories yet"
    text = (f"memcue sidecar is not running (socket {loc.socket}); the next hook, or a command that reads or writes "
            f"memories (`memcue list`), starts it, and then `memcue status` counts the memories. Data in {loc.root} "
            f"({stored}). Log: {loc.sidecar_log}")
    data["config_error"] = load_settings(loc.config_file, quiet=True).error
    if data["config_error"]:
        text += f"\nconfig problems (those entries are ignored): {data['config_error']}"
    return emit(data, args.json, text)


def _vectors_off(health: dict[str, Any]) -> str:
    """Why ``/health`` says vector search is off, in a few words."""
    if (health.get("reindex") or {}).get("state") in ("needed", "running", "paused"):
        return "the embedding model changed: see the warning below"
    if health["model"]["state"] == "error":
        return f"the embedding model failed: {health['model']['error']}"
    return health["vector_note"] or "warming up"


def _health_text(health: dict[str, Any]) -> str:
    """A running sidecar's ``/health`` answer as ``memcue status`` prints it."""
    text = (f"memcue {health['version']} running (pid {health['pid']}), data in {health['data_dir']}\n"
            f"model: {health['model']['id'] or '-'} ({health['model']['state']}); vector search: "
            f"{'on' if health['vector_search'] else 'off (' + _vectors_off(health) + ')'}; "
            f"tokenizer: {health['tokenizer']}\n"
            f"memories: {health['counts']['memories']} ({health['counts'].get('answering', 0)} that can answer, "
            f"{health['counts'].get('captured', 0)} captured prompts, answers and session events, "
            f"{health['counts'].get('other_bookkeeping', health['counts']['bookkeeping'])} other bookkeeping, "
            f"{health['counts'].get('inactive', 0)} forgotten or replaced; "
            f"{health['counts']['pending_embeddings']} "
            f"{'waiting for vectors' if health['vector_search'] or health['warming_up'] else 'without vectors'})")
    reindex = health.get("reindex") or {}
    if reindex.get("state") in ("needed", "running", "paused"):
        text += f"\nWARNING: embedding model changed: {reindex['note']}"
    reranker = health.get("reranker") or {}
    if reranker.get("status") not in (None, "off"):
        text += f"\nreranker: {reranker['status']}" + (f" ({reranker['note']})" if reranker.get("note") else "")
    if health.get("config_error"):
        text += f"\nconfig problems (those entries are ignored): {health['config_error']}"
    now = health.get("config_now")  # the file as it is now (``cmd_status``), when read
    if now is not None and now != (health.get("config_error") or ""):
        text += (f"\nconfig.toml changed since the sidecar started ({now or 'no problems now'}): `memcue stop` so the "
                 "next one reads it")
    return text


def cmd_status(args: argparse.Namespace) -> int:
    """``memcue status``: whether the sidecar runs, its model, vector search and store counts."""
    from memcue.client import Client, SidecarDown

    with Client(timeout_s=5) as client:
        try:
            health: dict[str, Any] = client.health()  # a stuck sidecar raises ClientError: exit 1, said
        except SidecarDown:
            return _not_running(args, client.loc)
    from memcue.sidecar.settings import load_settings

    health["config_now"] = load_settings(client.loc.config_file, quiet=True).error  # the file as it is now
    return emit({"running": True, **health}, args.json, _health_text(health))


def cmd_mcp(args: argparse.Namespace) -> int:
    """``memcue mcp``: the MCP server on stdio, its handshake answered early (``mcp.early``) unless
    ``$MEMCUE_MCP_EARLY`` turns that off."""
    from memcue.core.switches import MCP_EARLY_ENV, switched_off
    from memcue.mcp.early import answer_early

    relay = None if switched_off(MCP_EARLY_ENV) else answer_early()
    from memcue.mcp.server import main as run_mcp  # the SDK's import: the slow part early answers cover

    try:
        return run_mcp()
    finally:
        if relay is not None:
            relay.close()


def register(add: AddCommand) -> None:
    """Register ``serve``, ``stop``, ``status`` and ``mcp``."""
    add("serve", "Run the sidecar in the foreground (clients start it detached when needed).",
        json_flag=False).set_defaults(fn=cmd_serve)
    add("stop", "Stop the running sidecar (finishes writes, checkpoints the database).").set_defaults(fn=cmd_stop)
    add("status", "Is the sidecar running; model, vector search and store counts.").set_defaults(fn=cmd_status)
    add("mcp", "Run the MCP server on stdio; it starts the sidecar if needed. `memcue install claude-code|codex` "
               "registers it. By hand, an agent's MCP config runs this interpreter with `-P -m memcue mcp` (or the "
               "`memcue` program with the argument `mcp`), with MEMCUE_HOME in its environment if you set one.",
        json_flag=False).set_defaults(fn=cmd_mcp)
