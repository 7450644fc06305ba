"""``memcue ledger``: what the optional model distiller spent and made. Thin over ``Client.ledger``
(``POST /ledger``).

Shows whether distillation is on (and why not), today's tokens against the daily budget, then one line per
session the distiller considered in the last ``--days`` days (default 7): when, the outcome, the tokens (and
whether the endpoint reported them or tiktoken counted them), the candidates made, the session, and why
nothing was made. ``--json`` gives everything. Exit codes: 0 ok, 1 error, 2 usage, 75 busy.
"""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from memcue.cli.arguments import AddCommand, days
from memcue.cli.output import emit
from memcue.core.text import preview

#: Days ``memcue ledger`` looks back by default.
DEFAULT_DAYS = 7.0


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def _entry(e: dict[str, Any]) -> str:
    tokens = (f"{e['prompt_tokens']:,}+{e['completion_tokens']:,} tokens ({e['tokens_from']})" if e["tokens_from"]
              else "0 tokens (nothing sent)")
    why = f": {preview(e['error'], 100)}" if e["error"] else ""
    return (f"  {_when(e['created_at'])}  {e['outcome']:<9}  {tokens}, {e['candidates']} candidate(s)  "
            f"session {e['session_id']} ({e['harness'] or '?'}){why}")


def render(data: dict[str, Any]) -> str:
    """A ``Client.ledger`` answer as lines: on/off, today's spend, the rows."""
    if data["enabled"]:
        model = f", model {data['model']}" if data["model"] else ""
        head = f"distillation: on ({data['runner']} {data['target']}{model})"
    else:
        head = f"distillation: off ({data['off_reason']})"
    today = data["today"]
    lines = [head, f"today: {today['spent']:,} of {data['daily_tokens']:,} tokens spent ({today['left']:,} left), "
                   f"{today['calls']} call(s)"]
    entries = data["entries"]
    lines.append(f"last {data['days']:g} days: {len(entries)} session(s) considered" + (":" if entries else ""))
    lines += [_entry(e) for e in entries]
    return "\n".join(lines)


def cmd_ledger(args: argparse.Namespace) -> int:
    """``memcue ledger [--days N]``."""
    from memcue.client import Client

    with Client() as client:
        client.ensure_running()
        out = client.ledger(args.days)
    return emit(out, args.json, render(out))


def register(add: AddCommand) -> None:
    """Register ``ledger``."""
    p = add("ledger", "What the optional model distillation spent and made: today's tokens against the daily "
                      "budget, and each session it considered (outcome, tokens, candidates).")
    p.add_argument("--days", type=days(365), default=DEFAULT_DAYS,
                   help=f"rows of the last N days (default {DEFAULT_DAYS:g})")
    p.set_defaults(fn=cmd_ledger)
