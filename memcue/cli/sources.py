"""``memcue sources``: the harnesses' own memory files memcue reads (``CLAUDE.md``, ``AGENTS.md``, Claude Code's
auto memory, Codex's memories, Hermes' ``MEMORY.md``/``USER.md``): per source whether it is read, each file, the
memories it holds, the harnesses that load it themselves (memcue does not inject it there) and the last sync.
``--off NAME`` / ``--on NAME`` stop or resume reading a source (kept in ``config.toml``; turning one off retires
its memories). Thin over ``Client.sources`` (``POST /sources``). Exit codes: 0 ok, 1 error, 2 usage, 75 busy.
"""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from memcue.cli.arguments import AddCommand
from memcue.cli.output import emit, usage_error

#: The source names (``capture.native.SOURCES``), listed here so ``--help`` needs no sidecar import.
NAMES = ("claude-code", "agents-md", "codex-memories", "hermes")


def _when(ts: float | None) -> str:
    return "never" if ts is None else dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def _memories(n: int) -> str:
    return f"{n} {'memory' if n == 1 else 'memories'}"


def render(data: dict[str, Any]) -> str:
    """A ``Client.sources`` answer as lines: one block per source, one line per file."""
    lines = []
    for src in data["sources"]:
        state = "on" if src["enabled"] else "off"
        lines.append(f"{src['name']} ({src['harness']}, {state}): {_memories(src['memories'])}, "
                     f"last sync {_when(src['last_sync'])}")
        if not src["files"]:
            lines.append("  (no files found)" if src["enabled"] else "  (not read: memcue sources --on "
                         f"{src['name']})")
        for f in src["files"]:
            where = f["project"] or "global"
            error = f"  ERROR: {f['error']}" if f["error"] else ""
            if f.get("skipped"):
                error += f"  ({f['skipped']} instruction-like entr{'y' if f['skipped'] == 1 else 'ies'} not imported)"
            lines.append(f"  {f['path']}  {_memories(f['memories'])}, {where}, loaded by "
                         f"{', '.join(f['loaded_by']) or 'none'}{error}")
    lines.append(f"watching: {data.get('watch', '?')}")
    return "\n".join(lines)


def cmd_sources(args: argparse.Namespace) -> int:
    """``memcue sources [--off NAME | --on NAME]``."""
    from memcue.client import Client

    name, enabled = (args.off, False) if args.off else (args.on, True) if args.on else (None, None)
    if name is not None and name not in NAMES:
        return usage_error(f"unknown source {name!r} (known: {', '.join(NAMES)})", args.json)
    with Client() as client:
        client.ensure_running()
        out = client.sources(name, enabled)
    return emit(out, args.json, render(out))


def register(add: AddCommand) -> None:
    """Register ``sources``."""
    p = add("sources", "The harnesses' own memory files memcue reads (CLAUDE.md, AGENTS.md, auto memory, Hermes' "
                       "MEMORY.md/USER.md): files, memories, last sync; --off/--on NAME.")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--off", metavar="NAME",
                       help=f"stop reading a source and retire its memories ({', '.join(NAMES)})")
    group.add_argument("--on", metavar="NAME", help="read a source again")
    p.set_defaults(fn=cmd_sources)
