"""``memcue stats``: how often the memories recalls showed were opened, per channel and per kind.

A memory shown by a recall (a prompt hook's block, a question) counts as *used* once a ``fetch`` or ``expand``
named that recall (its ``query_id``, or the session it was recalled in); otherwise *unused*. A memory found by
several channels counts once for each. Thin over ``Client.stats`` (``POST /stats``).
"""

from __future__ import annotations

import argparse
from typing import Any

from memcue.cli.arguments import AddCommand, days
from memcue.cli.output import emit

#: Days ``memcue stats`` looks back by default.
DEFAULT_DAYS = 30


def _fraction(row: dict[str, Any]) -> str:
    return "-" if row.get("used_fraction") is None else f"{row['used_fraction'] * 100:.0f}%"


def format_stats(data: dict[str, Any]) -> str:
    """The text report of a ``Client.stats`` answer: totals, then one table per grouping."""
    days = data.get("days", DEFAULT_DAYS)
    recalls, items = data["recalls"], data["items"]
    if not items["total"]:
        return f"no recalls showed any memory in the last {days:g} days"
    out = [f"last {days:g} days: {recalls['total']} recall{'s' if recalls['total'] != 1 else ''} showed "
           f"{items['total']} memor{'ies' if items['total'] != 1 else 'y'}; "
           f"{recalls['used']} recalls ({_fraction(recalls)}) and {items['used']} memories ({_fraction(items)}) "
           "were opened (fetch/expand)"]
    for title, key in (("channel", "by_channel"), ("kind", "by_kind"), ("served as", "by_served")):
        groups = data.get(key) or {}
        if not groups:
            continue
        width = max(len(title), *(len(name or "(none)") for name in groups))
        out.append("")
        out.append(f"{title:<{width}}  {'used':>6}  {'unused':>6}  {'used %':>6}")
        for name, row in groups.items():
            out.append(f"{name or '(none)':<{width}}  {row['used']:>6}  {row['unused']:>6}  {_fraction(row):>6}")
    return "\n".join(out)


def cmd_stats(args: argparse.Namespace) -> int:
    """``memcue stats``: how often recalled memories were opened (``format_stats``)."""
    from memcue.client import Client

    with Client() as client:
        client.ensure_running()
        data = client.stats(days=args.days)
    return emit(data, args.json, format_stats(data))


def register(add: AddCommand) -> None:
    """Register ``stats``."""
    p = add("stats", "How often recalled memories were opened (fetch/expand): used and unused per channel, per "
                     "kind and per way served, over the last N days.")
    p.add_argument("--days", type=days(3650), default=DEFAULT_DAYS, help=f"days to look back (default {DEFAULT_DAYS})")
    p.set_defaults(fn=cmd_stats)
