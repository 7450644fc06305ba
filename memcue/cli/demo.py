"""``memcue demo``: a seeded store in a temp dir, real Claude Code payloads through the real hook
(``memcue.demo.run``)."""

from __future__ import annotations

import argparse

from memcue.cli.arguments import AddCommand
from memcue.cli.output import emit, narrator


def cmd_demo(args: argparse.Namespace) -> int:
    """``memcue demo``: run the demo, narrating unless --json; exit 1 when a scenario failed."""
    from memcue.demo.run import run_demo, summary_text

    report = run_demo(keep=args.keep, say=narrator(args.json))
    passed = report["summary"]["passed"] == report["summary"]["scenarios"]
    return emit(report, args.json, summary_text(report, args.keep), ok=passed)


def register(add: AddCommand) -> None:
    """Register ``demo``."""
    p = add("demo", "Seed a demo store in a temp dir and run real Claude Code payloads through the real hook.")
    p.add_argument("--keep", action="store_true", help="leave the demo sidecar running and print its MEMCUE_HOME")
    p.set_defaults(fn=cmd_demo)
