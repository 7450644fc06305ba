"""``memcue receipt``: what memcue did in one session. Thin over ``memcue.client.Client``.

``memcue receipt [SESSION]`` shows the session's receipt (without SESSION: this project's most recent session,
``--project DIR`` another's, ``--all-projects`` the most recent of any): what was captured, the memories saved
in it, its capture
candidates by state (promoted with their reason, held with why, rejected, expired), what was injected (memories
per block, tokens), what was skipped and why, what failed, and (when a model is configured) what distilling the
session spent and made. Counts first, then a few items per section with
ids and previews (``--full``: every item); ``--json`` gives everything. ``memcue receipt --list`` lists recent
sessions with their counts. Exit codes: 0 ok, 1 error (an unknown session), 2 usage, 75 busy.
"""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from memcue.cli.arguments import AddCommand, add_project_options, count, project_of
from memcue.cli.output import emit
from memcue.core.text import preview

#: Items shown per section (``--full`` shows all of them).
ITEMS = 5
#: Characters of an item's preview.
PREVIEW_CHARS = 90

EPILOG = """examples:
  memcue receipt                    this project's most recent session
  memcue receipt --list             recent sessions of this project with their counts
  memcue receipt 5f1c0a9e-...       one session (ids as --list shows them)
  memcue receipt --json             everything, as JSON"""


def _when(ts: float | None) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts else "?"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _cut(lines: list[str], full: bool) -> list[str]:
    """At most ``ITEMS`` lines (all with ``full``), then how many more there are."""
    if full or len(lines) <= ITEMS:
        return lines
    return [*lines[:ITEMS], f"  ... and {len(lines) - ITEMS} more (--full, --json)"]


def _captured(r: dict[str, Any], full: bool) -> list[str]:
    c = r["captured"]
    head = f"captured: {c['total']}" + (f" ({_counts(c['by_kind'])}; {_counts(c['by_via'])})" if c["total"] else "")
    return [head, *_cut([f"  #{i['id']} {i['kind']} ({i['via']}): {preview(i['content'], PREVIEW_CHARS)}"
                         for i in c["items"]], full)]


def _saved(r: dict[str, Any], full: bool) -> list[str]:
    c = r["saved"]
    head = f"saved: {c['total']}" + (f" ({_counts(c['by_source'])})" if c["total"] else "")
    return [head, *_cut([f"  #{i['id']} {i['kind']} ({i['source']}): {preview(i['content'], PREVIEW_CHARS)}"
                         for i in c["items"]], full)]


def _candidates(r: dict[str, Any], full: bool) -> list[str]:
    c = r["candidates"]
    head = f"candidates: {c['total']}" + (f" ({_counts(c['by_state'])}; signals: {_counts(c['by_signal'])})"
                                          if c["total"] else "")
    lines = []
    for i in c["items"]:
        memory = f" -> memory #{i['memory_id']}" if i.get("memory_id") else ""
        lines.append(f"  #{i['id']} {i['state']} {i['signal']}{memory} ({i['why']}): "
                     f"{preview(i['content'], PREVIEW_CHARS)}")
    return [head, *_cut(lines, full)]


def _injected(r: dict[str, Any], full: bool) -> list[str]:
    c = r["injected"]
    head = (f"injected: {c['memories']} memories in {c['blocks']} block(s), {c['tokens']} tokens"
            + (f" ({_counts(c['tokens_by_block'])})" if c["blocks"] else ""))
    lines = []
    for b in c["items"]:
        name = b["served_by"] + (f"/{b['block']}" if b["block"] else "")
        memories = "; ".join(f"#{m['memory_id']} {preview(m['content'], 50)}" for m in b["memories"]) or "note only"
        lines.append(f"  {name} {b['tokens']} tokens: {memories}")
    return [head, *_cut(lines, full)]


def _skipped_line(i: dict[str, Any]) -> str:
    """One skipped item: a held candidate, a prompt that got nothing (by id, or by time when its row is not
    found), or what else the session's signals skipped (``what``: "git", the commits not read) with why."""
    if i["what"] == "candidate":
        return f"  candidate #{i['id']}: {i['reason']}: {preview(i['content'], 60)}"
    if i["what"] != "prompt":
        return f"  {i['what']}" + (f" at {_when(i['created_at'])}" if i.get("created_at") else "") + f": {i['reason']}"
    if i.get("id"):
        return f"  prompt #{i['id']}: {i['reason']}: {preview(i['content'], 60)}"
    return f"  prompt at {_when(i['created_at'])}: {i['reason']}"


def _skipped_failed(r: dict[str, Any], full: bool) -> list[str]:
    s, f = r["skipped"], r["failed"]
    lines = [f"skipped: {s['total']}" + (f" ({_counts(s['by_reason'])})" if s["total"] else "")]
    lines += _cut([_skipped_line(i) for i in s["items"]], full)
    lines.append(f"failed: {f['total']}")
    lines += [f"  {i['count']} {i['what']} of {i['harness']} ({i['file']}): {i['reason']}" for i in f["items"]]
    return lines


def _distilled(r: dict[str, Any]) -> list[str]:
    """The model distiller's rows for the session (``memcue ledger`` has them all); nothing when it never ran."""
    d = r.get("distilled") or {}
    if not d.get("total"):
        return []
    return [f"distilled: {d['total']} ({_counts(d['by_outcome'])}), {d['tokens']} tokens",
            *[f"  {e['outcome']}: {e['candidates']} candidate(s), {e['prompt_tokens']}+{e['completion_tokens']} "
              f"tokens" + (f" ({preview(e['error'], 80)})" if e["error"] else "") for e in d["items"]]]


def render(r: dict[str, Any], full: bool = False) -> str:
    """A receipt (``Client.receipt``) as a few lines per section."""
    harnesses = ", ".join(r["harnesses"]) or "harness not recorded"
    head = (f"session {r['session_id']} ({harnesses}) in {r['project'] or '(global)'}, "
            f"{_when(r['first_at'])} to {_when(r['last_at'])}")
    return "\n".join([head, *_captured(r, full), *_saved(r, full), *_candidates(r, full), *_injected(r, full),
                      *_skipped_failed(r, full), *_distilled(r)])


def render_sessions(sessions: list[dict[str, Any]], *, every_project: bool = False) -> str:
    """Recent sessions (``Client.sessions``), one line each; when there are none, what to try (``every_project``:
    the list already covers every project)."""
    if not sessions:
        return ("(no session has run with memcue's hooks yet)" if every_project else
                "(no session of this project yet; --all-projects lists sessions elsewhere)")
    return "\n".join(f"{s['session_id']}  {_when(s['last_at'])}  captured {s['captured']}, stored {s['stored']}"
                     + (f" ({_counts(s['by_kind'])})" if s["by_kind"] else "")
                     + f", candidates {s['candidates']}, recalls {s['recalls']}  {s['project'] or '(global)'}"
                     for s in sessions)


#: What ``memcue receipt`` says before any harness session has run in the project (not an error: a fresh install).
NO_SESSION = ("No session of this project has stored anything yet. A receipt appears once a harness session runs "
              "here with memcue's hooks (`memcue install all` wires them; `memcue receipt --list --all-projects` "
              "lists sessions elsewhere).")


def cmd_receipt(args: argparse.Namespace) -> int:
    """``memcue receipt [SESSION] [--list]``."""
    from memcue.client import Client

    project = project_of(args)
    with Client() as client:
        client.ensure_running()
        if args.list:
            out = client.sessions(project=project, limit=args.limit)
            return emit(out, args.json, render_sessions(out["results"], every_project=project is None))
        if not args.session and not client.sessions(project=project, limit=1)["results"]:
            return emit({"session_id": None, "note": NO_SESSION}, args.json, NO_SESSION)
        out = client.receipt(args.session or None, project=project)
    return emit(out, args.json, render(out, args.full))


def register(add: AddCommand) -> None:
    """Register ``receipt``."""
    p = add("receipt", "What memcue did in one session: captured, candidates (promoted, held, rejected, "
                       "expired), injected (memories, tokens), skipped and why, failed.")
    p.epilog = EPILOG
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("session", nargs="?", help="the session id (default: this project's most recent session)")
    p.add_argument("--list", action="store_true", help="list recent sessions with their counts")
    p.add_argument("--limit", type=count(200), default=10,
                   help="--list: at most this many sessions (1-200, default 10)")
    p.add_argument("--full", action="store_true", help=f"every item (default: {ITEMS} per section)")
    add_project_options(p, all_projects=True)
    p.set_defaults(fn=cmd_receipt)
