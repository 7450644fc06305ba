"""``memcue review``: the capture candidates waiting for a decision, and accepting or rejecting one. Thin over
``memcue.client.Client``.

``memcue review`` lists pending candidates of this project (``--state``, ``--all-projects``, ``--session-id``,
``--json``); ``memcue review accept ID [--content TEXT]`` writes one as a memory (edited when ``--content`` is
given); ``memcue review reject ID`` turns one down. Exit codes as for the rest of the CLI: 0 ok, 1 error
(unknown id, decided already), 2 usage, 75 busy.
"""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from memcue.cli.arguments import AddCommand, add_project_options, count, project_of
from memcue.cli.output import emit, usage_error
from memcue.core.text import preview

#: Characters of a candidate's text per listed line (``--full`` shows all of it).
LIST_CHARS = 140

EPILOG = """examples:
  memcue review                          pending candidates of this project
  memcue review --state promoted --json  what was promoted, as JSON
  memcue review accept 12                write candidate 12 as a memory
  memcue review accept 12 --content "We keep invoices in Postgres 16 on port 5433"
  memcue review reject 13

Candidates come from capture signals: durable statements in your prompts ("from now on ..."), commits that
landed, tests that went from failing to passing, and, when you turn it on, the model distiller's reading of a
session. A statement you typed, a landed commit and a passing test are promoted at once; a distilled fact waits
for a confirmation (you accept it here, the agent saves it or accepts it on your word, or it comes back in
another session); text that reads like an injection (role markers, "ignore previous instructions", a download
piped into a shell), the agent's own saves included, waits here for you alone. Pending candidates expire after
30 days."""


def _client() -> Any:
    from memcue.client import Client

    client = Client()
    client.ensure_running()
    return client


def _line(c: dict[str, Any], full: bool = False) -> str:
    """One candidate: id, state, kind, signal, when, then its text (cut unless ``full``) and why it was held or
    decided."""
    when = dt.datetime.fromtimestamp(c["created_at"]).strftime("%Y-%m-%d %H:%M")
    text = preview(str(c["content"]), None if full else LIST_CHARS, trim=False)
    line = f"candidate {c['id']} [{c['state']}] ({c['kind']}, {c['signal']}, {when}) {text}"
    held = (c.get("evidence") or {}).get("held")
    notes = [f"held: {held}" if held and c["state"] == "pending" else "",
             f"{c['reason']}" if c.get("reason") else "",
             f"memory #{c['memory_id']}" if c.get("memory_id") else ""]
    notes = [n for n in notes if n]
    return line + (f"\n   {'; '.join(notes)}" if notes else "")


def cmd_review(args: argparse.Namespace) -> int:
    """``memcue review [accept|reject] ...``: dispatch on the action (listing without one)."""
    if args.action is None:
        return _list(args)
    if args.id is None:
        return usage_error(f"`memcue review {args.action}` needs a candidate id", args.json)
    if args.action == "reject" and args.content is not None:
        return usage_error("--content goes with accept, not reject", args.json)
    with _client() as client:
        if args.action == "accept":
            out = client.accept_candidate(args.id, content=args.content)
            text = f"accepted candidate {out['id']} as memory #{out['memory_id']}" + (
                " (it was known already: reinforced)" if out.get("duplicate") else "")
        else:
            out = client.reject_candidate(args.id)
            text = f"rejected candidate {out['id']}"
    return emit(out, args.json, text)


def _list(args: argparse.Namespace) -> int:
    fields: dict[str, Any] = {"limit": args.limit}
    if args.state != "all":
        fields["state"] = args.state
    project = project_of(args)
    if project is not None:
        fields["project"] = project
    if args.session_id:
        fields["session_id"] = args.session_id
    with _client() as client:
        out = client.candidates(**fields)
        elsewhere = 0
        if not out["results"] and project is not None:  # none here: say when other projects hold some
            elsewhere = len(client.candidates(**{k: v for k, v in fields.items() if k != "project"})["results"])
    none = "(no candidates" if args.state == "all" else f"(no {args.state} candidates"
    many = f"{elsewhere}{'+' if elsewhere >= args.limit else ''} such candidate{'' if elsewhere == 1 else 's'}"
    none += f" in this project; other projects have {many}: --all-projects lists them)" if elsewhere else ")"
    text = "\n".join(_line(c, args.full) for c in out["results"]) or none
    return emit(out, args.json, text)


def _candidate_id(text: str) -> int:
    """A candidate id argument: ``12`` or ``#12``."""
    try:
        return int(text.lstrip("#"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a candidate id like 12") from None


def register(add: AddCommand) -> None:
    """Register ``review`` (list, ``accept ID [--content TEXT]``, ``reject ID``)."""
    p = add("review", "Review capture candidates: list them (default: pending, this project), accept one as a "
                      "memory (optionally edited) or reject it.")
    p.epilog = EPILOG
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("action", nargs="?", choices=("accept", "reject"),
                   help="accept: write the candidate as a memory; reject: turn it down (omit to list)")
    p.add_argument("id", nargs="?", type=_candidate_id, help="the candidate's id (as listed: 12 or #12)")
    p.add_argument("--content", help="accept: the memory's text as you edited it (default: the candidate's)")
    p.add_argument("--state", choices=("pending", "promoted", "rejected", "expired", "all"), default="pending",
                   help="list candidates in this state (default pending)")
    p.add_argument("--session-id", help="list only candidates from this session")
    p.add_argument("--limit", type=count(500), default=50, help="list at most this many (1-500, default 50)")
    p.add_argument("--full", action="store_true", help=f"whole texts (default: cut at {LIST_CHARS} characters)")
    add_project_options(p, all_projects=True)
    p.set_defaults(fn=cmd_review)
