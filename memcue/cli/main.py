"""The ``memcue`` command: a thin client of the sidecar.

The root parser, one ``register(add)`` per command group (``memcue.cli.arguments.AddCommand``), dispatch,
and the errors mapped to exit codes: 0 ok, 1 error, 2 usage, 75 busy (try again). Every command that
prints data takes ``--json``.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from typing import Any, NoReturn

from memcue.cli import (
    demo,
    export,
    install,
    ledger,
    memory,
    receipt,
    reindex,
    remember,
    review,
    sidecar,
    sources,
    stats,
)
from memcue.cli.arguments import AddCommand
from memcue.cli.output import EXIT_BUSY, EXIT_ERROR, EXIT_OK, ReaderGone, fail, flush_stdout, usage_error

#: The command groups, in the order ``memcue --help`` lists their commands.
GROUPS = (remember, sidecar, memory, review, receipt, ledger, stats, export, sources, reindex, install, demo)

EPILOG = """examples:
  memcue remember "We pin httpx to 0.28 because 0.29 broke unix sockets" --kind decision
  memcue recall "why is httpx pinned?"
  memcue import notes.jsonl          one JSON object per line: {"content": ..., "kind": ..., "project": ...}
  memcue status --json
  memcue export --all-projects -o backup.jsonl   a lossless backup; `memcue import backup.jsonl` restores it
  memcue review                      capture candidates waiting for you: accept ID [--content TEXT], reject ID
  memcue receipt                     what memcue captured, promoted, injected and skipped in your last session
  memcue install all                 wire memcue into Claude Code, Codex and Hermes (those found); --dry-run first
  memcue install codex --trust       Codex runs only trusted hooks: have Codex trust memcue's hooks
  memcue doctor                      is everything wired, trusted and answering?
  memcue sources                     the CLAUDE.md / AGENTS.md / auto-memory files memcue reads; --off NAME
  memcue reindex                     re-embed every memory after changing [model] name in config.toml
  memcue demo                        seed a demo store and run real Claude Code payloads through the hook

Data lives in $MEMCUE_HOME (default ~/.local/share/memcue)."""


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors honour ``--json``: with ``wants_json`` (``--json`` on the command
    line) the error is the JSON envelope ``{"success": false, "error": ...}`` on stdout (``output.usage_error``),
    exit 2."""

    def __init__(self, *args: Any, wants_json: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.wants_json = wants_json

    def error(self, message: str) -> NoReturn:
        if self.wants_json:
            raise SystemExit(usage_error(f"{self.prog}: {message}", True))
        super().error(message)


def build_parser(wants_json: bool = False) -> argparse.ArgumentParser:
    """The ``memcue`` parser: ``--version`` and every group's commands; a parsed command's ``fn(args)``
    runs it and returns its exit code. ``wants_json``: usage errors as JSON (``_Parser``)."""
    from memcue import __version__

    parser = _Parser(prog="memcue", wants_json=wants_json, description="Local long-term memory for coding agents.",
                                     epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"memcue {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=functools.partial(_Parser, wants_json=wants_json))
    add = _adder(sub)
    for group in GROUPS:
        group.register(add)
    parser.set_defaults(commands=sub.choices)
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, but an argument the command does not take is the command's usage error, with
    its own usage line (``memcue uninstall: error: unrecognized arguments: --no-mcp``), not the root's."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        command = args.commands.get(args.command, parser)
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _adder(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> AddCommand:
    """The ``add`` every group registers its commands with (``AddCommand``)."""

    def add(name: str, help_text: str, json_flag: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        if json_flag:
            p.add_argument("--json", action="store_true", help="print JSON: {\"success\": true, \"data\": ...}")
        return p

    return add


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``memcue`` console script; returns the exit code."""
    wants_json = "--json" in (sys.argv[1:] if argv is None else argv)
    args = parse(build_parser(wants_json), argv)
    from memcue.client import ClientError, SidecarBusy

    try:
        code: int = args.fn(args)
        flush_stdout()  # inside the try: a reader that left (| head) shows up here, not at exit
        return code
    except ReaderGone:  # `memcue list | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except SidecarBusy as exc:
        return fail(str(exc), EXIT_BUSY)
    except (ClientError, OSError) as exc:
        return fail(str(exc), EXIT_ERROR, as_json=getattr(args, "json", False))
    except KeyboardInterrupt:
        return 130
