"""``memcue search|fetch|list|forget|expand|session-context``: reading and managing stored memories by hand
(CLI parity with the MCP tools). Thin over ``memcue.client.Client``.

Every command prints text for people, or with ``--json`` the ``{"success": ..., "data": ...}`` envelope;
exit codes as for the rest of the CLI: 0 ok, 1 error (or nothing found by id), 2 usage, 75 busy.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from typing import Any

from memcue.cli.arguments import (
    AddCommand,
    add_project_options,
    add_tag_option,
    count,
    kind,
    project_of,
    token_budget,
)
from memcue.cli.output import emit, format_recall, usage_error
from memcue.core.address import parse_id_list
from memcue.core.limits import SESSION_BLOCK_TOKENS
from memcue.core.text import preview

#: Characters of a memory's text shown per line by ``memcue list`` (``--full`` shows all of it).
LIST_CHARS = 120


def clean_ids(text: str) -> str:
    """An ids argument as the sidecar takes it: ``"#12, #15"`` -> ``"12,15"`` (people copy ids with their #),
    ``memcue://`` addresses as their ids (``memcue.core.address.parse_id_list``). Raises
    ``argparse.ArgumentTypeError`` (exit 2) for anything else."""
    try:
        return ",".join(str(i) for i in parse_id_list(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give memory ids like 12 or 12,15 (or memcue:// addresses)") from None


def _client() -> Any:
    from memcue.client import Client

    client = Client()
    client.ensure_running()
    return client


def _when(ts: float | None) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts else "-"


def _indent(line: str) -> str:
    """The leading blanks of ``line`` (a tab as 4 spaces) as spaces, at most 40: YAML or code keeps its shape."""
    blanks = line[:len(line) - len(line.lstrip(" \t"))]
    return " " * min(40, len(blanks.replace("\t", "    ")))


def _line(m: dict[str, Any], full: bool = False) -> str:
    """One memory in a line: id, kind, age, flags, then its text (cut to ``LIST_CHARS``); with ``full`` its whole
    text, each further line of it on its own indented line."""
    flags = [f for f, on in (("pinned", m.get("pinned")), ("bookkeeping", m.get("bookkeeping")),
                             ("forgotten", m.get("forgotten")),
                             (f"replaced by #{m.get('superseded_by')}", m.get("superseded_by"))) if on]
    content = str(m.get("content", ""))
    if full:  # whole, its lines kept (a commit's subject apart from its body, code's own indent), under the first
        text = "\n    ".join(_indent(part) + preview(part) for part in content.splitlines() if part.strip())
    else:
        text = preview(content, LIST_CHARS, trim=False)
    age = m.get("age_label") or _when(m.get("created_at"))
    flags += [f"#{t}" for t in m.get("tags") or []]
    label = f"{m.get('memory_kind') or m.get('kind') or 'note'}, {age}" + "".join(f", {f}" for f in flags)
    return f"#{m['memory_id']} ({label}) {text}"


def cmd_search(args: argparse.Namespace) -> int:
    """Keyword-only recall: for a known exact term (an error code, a flag, a file name)."""
    if not args.term.strip():
        return usage_error("the search term is empty", args.json)
    with _client() as client:
        answer = client.recall(args.term, project=project_of(args), limit=args.limit, mode="keyword",
                               session_id="cli:search")
    return emit(answer, args.json, format_recall(answer, show_weak=True))


def _opened(args: argparse.Namespace) -> dict[str, str]:
    """The recall a fetch/expand opens: ``--query-id``, and ``--session-id`` or the agent's session from the
    environment (``memcue.core.session_ids``); marks those memories used (``memcue stats``)."""
    from memcue.core.session_ids import resolve_session_id

    fields = {"query_id": args.query_id or "", "session_id": args.session_id or resolve_session_id("", os.environ)}
    return {k: v for k, v in fields.items() if v}


def cmd_fetch(args: argparse.Namespace) -> int:
    """``memcue fetch IDS``: the memories whole; exit 1 when none exists."""
    with _client() as client:
        out = client.fetch(",".join(args.ids), **_opened(args))
    lines = [f"{_line(m, full=True)}\n   project {m.get('project') or '(global)'}; written "
             f"{_when(m.get('created_at'))}; seen {m.get('seen_count', 1)}x{_provenance(m)}" for m in out["results"]]
    if out["not_found"]:
        lines.append(f"not found: {', '.join(f'#{i}' for i in out['not_found'])}")
    ok = bool(out.pop("success", out["results"]))  # the envelope says it once
    return emit(out, args.json, "\n".join(lines), ok=ok)


def _provenance(memory: dict[str, Any]) -> str:
    """"; by capture:commit-landed, kept because commit-landed" for ``memcue fetch``'s text ("" when unknown)."""
    source, why = memory.get("source") or "", memory.get("promoted_by")
    return (f"; by {source}" if source else "") + (f", kept because {why}" if why else "")


def cmd_list(args: argparse.Namespace) -> int:
    """``memcue list``: the newest memories of this project (or every one), one line each."""
    project = project_of(args)
    fields: dict[str, Any] = {"limit": args.limit, "include_forgotten": args.include_forgotten,
                              "include_bookkeeping": args.include_bookkeeping,
                              "include_captured": args.include_captured}
    if project is None:
        fields["all_projects"] = True
    else:
        fields["project"] = project
    if args.kind:
        fields["kind"] = args.kind
    if args.tags:
        fields["tags"] = args.tags
    with _client() as client:
        out = client.list_recent(**fields)
    where = "any project" if project is None else (f"project {project}" if project else "global memories")
    which = "memories" + (f" of kind {args.kind!r}" if args.kind else "") + (
        f" tagged {', '.join(args.tags)}" if args.tags else "")
    text = "\n".join(_line(m, args.full) for m in out["results"]) or (
        f"(no {which} in {where}" + ("; --all-projects lists every project)" if project is not None else ")"))
    return emit({**out, "looked_in": where}, args.json, text)


def cmd_forget(args: argparse.Namespace) -> int:
    """``memcue forget IDS``: soft-delete; exit 1 when none was found."""
    with _client() as client:
        out = client.forget(args.ids)
    text = _id_lines(out, ("forgotten", "forgotten"), ("already", "already forgotten"), ("not_found", "not found"))
    if out["forgotten"]:
        text += "\n(they no longer answer; `memcue list --include-forgotten` and `memcue fetch` still show them)"
    return emit(out, args.json, text, ok=bool(out["forgotten"] or out["already"]))


def _id_lines(out: dict[str, Any], *sections: tuple[str, str]) -> str:
    """One line per non-empty id list of ``out``: ``(key, label)`` pairs as ``label: #12, #15``, in order."""
    return "\n".join(f"{label}: {', '.join(f'#{i}' for i in out[key])}" for key, label in sections if out.get(key))


def _marked(out: dict[str, Any], done: str, already: str, as_json: bool) -> int:
    """Print a pin/unpin/unforget answer (``changed``, ``unchanged``, ``not_found``); exit 1 when no id was found."""
    text = _id_lines(out, ("changed", done), ("unchanged", already), ("not_found", "not found"))
    return emit(out, as_json, text, ok=bool(out["changed"] or out["unchanged"]))


def cmd_pin(args: argparse.Namespace) -> int:
    """``memcue pin IDS`` / ``memcue unpin IDS``: mark memories in place (``args.pinned``)."""
    with _client() as client:
        out = client.pin(args.ids, pinned=args.pinned)
    word = "pinned" if args.pinned else "unpinned"
    return _marked(out, word, f"already {word}", args.json)


def cmd_unforget(args: argparse.Namespace) -> int:
    """``memcue unforget IDS``: forgotten memories answer again."""
    with _client() as client:
        out = client.unforget(args.ids)
    return _marked(out, "answering again", "not forgotten", args.json)


def cmd_purge(args: argparse.Namespace) -> int:
    """``memcue purge IDS [--yes]``: hard delete, after a confirmation typed at a terminal (or ``--yes``); exit 1
    when none was found, 2 when not confirmed."""
    ids = [int(i) for i in args.ids.split(",")]
    if not args.yes:
        if not sys.stdin.isatty():
            return usage_error("purge deletes for good and cannot be undone: pass --yes to confirm", args.json)
        shown = ", ".join(f"#{i}" for i in ids)
        answer = input(f"Purge {shown} and every version of them for good? This cannot be undone. [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            return usage_error("nothing purged", args.json)
    with _client() as client:
        out = client.purge(ids)
    text = _id_lines(out, ("purged", "purged for good"), ("not_found", "not found"))
    if out["purged"] and not out["wal_truncated"]:
        text += "\n(the write-ahead log is emptied at the next checkpoint: a reader was busy)"
    return emit(out, args.json, text, ok=bool(out["purged"]))


def cmd_expand(args: argparse.Namespace) -> int:
    """``memcue expand IDS``: the memories with their session, entity and replacement context."""
    with _client() as client:
        out = client.expand(",".join(args.ids), **_opened(args))
    lines = []
    for item in out.get("items", []):
        lines.append(_line(item, full=True) if "memory_id" in item else json.dumps(item, ensure_ascii=False))
        context = item.get("context") or {}
        newer = (context.get("replaced_by") or {}).get("memory_id")
        for key in ("session", "entities"):
            for c in context.get(key, []):
                if c["memory_id"] != newer:  # shown once, as what replaced it
                    lines.append(f"     {key}: #{c['memory_id']} {str(c['content'])[:100]}")
        if newer and item.get("superseded_by") != newer:  # else the memory's own line already says so
            lines.append(f"     replaced by #{newer}")
    if out.get("not_found"):
        lines.append(f"not found: {', '.join(f'#{i}' for i in out['not_found'])}")
    out.pop("success", None)  # the envelope says it once
    return emit(out, args.json, "\n".join(lines), ok=bool(out.get("items")))


def cmd_session_context(args: argparse.Namespace) -> int:
    """``memcue session-context``: the block a new session of this project starts with."""
    fields: dict[str, Any] = {"project": project_of(args) or "", "harness": "cli", "max_tokens": args.max_tokens}
    if args.session_id:
        fields["session_id"] = args.session_id
    with _client() as client:
        out = client.session_context(**fields)
    text = out["context"] or "(nothing to show for this project in this session)"
    return emit(out, args.json, f"{text}\n[session {out['session_id']} · {out['tokens']} tokens]")


def _opening(p: argparse.ArgumentParser) -> None:
    """``--query-id`` and ``--session-id`` of ``fetch`` and ``expand`` (see ``_opened``)."""
    p.add_argument("--query-id", help="the recall these ids came from (a memcue-recall block's query_id): "
                                      "marks them used for `memcue stats`")
    p.add_argument("--session-id", help="the session they were recalled in (default: the agent's, from the "
                                        "environment)")


SESSION_CONTEXT_HELP = ("The block a new session of this project starts with (the standing note, then pinned "
                        "memories, standing rules, the newest and those named after the project).")


def register(add: AddCommand) -> None:
    """Register ``search``, ``fetch``, ``list``, ``forget``, ``unforget``, ``pin``, ``unpin``, ``purge``,
    ``expand`` and ``session-context``."""
    p = add("search", "Keyword-only search for a known exact term (an error code, a flag, a file name).")
    p.add_argument("term", help="the exact term(s)")
    p.add_argument("--limit", type=count(100), default=20, help="most results, 1-100 (default 20)")
    add_project_options(p, all_projects=True)
    p.set_defaults(fn=cmd_search)

    p = add("fetch", "Show memories by id, whole: forgotten and replaced ones too. Exit 1 when none exist.")
    p.add_argument("ids", nargs="+", type=clean_ids,
                   help="ids: 12 or 12,15 or 12 15 (a # is allowed), or memcue://<project>/<id> addresses")
    _opening(p)
    p.set_defaults(fn=cmd_fetch)

    p = add("list", "The newest memories, one line each (this project and global ones).")
    p.add_argument("--limit", type=count(500), default=20, help="how many (1-500, default 20)")
    p.add_argument("--kind", type=kind, help="only this kind (decision, preference, bug, howto, note, request, ...)")
    add_tag_option(p, "only memories carrying this tag; repeat: they must carry every one")
    p.add_argument("--include-forgotten", action="store_true", help="also memories you forgot (marked)")
    p.add_argument("--include-bookkeeping", action="store_true",
                   help="also bookkeeping rows (session ends, trivial or older captured answers)")
    p.add_argument("--include-captured", action="store_true", help="also the prompts the hooks captured (kind "
                   "request: they answer only \"what did I ask\"); --kind request lists only them")
    p.add_argument("--full", action="store_true", help=f"whole texts (default: cut at {LIST_CHARS} characters)")
    add_project_options(p, all_projects=True)
    p.set_defaults(fn=cmd_list)

    p = add("forget", "Forget memories (soft delete): they stop answering at once, and stay listable and fetchable.")
    p.add_argument("ids", type=clean_ids, help="ids: 12 or 12,15")
    p.set_defaults(fn=cmd_forget)

    p = add("unforget", "Take a forget back: the memories answer again.")
    p.add_argument("ids", type=clean_ids, help="ids: 12 or 12,15")
    p.set_defaults(fn=cmd_unforget)

    for name, pinned, what in (("pin", True, "Pin memories: the session-start block offers them first."),
                               ("unpin", False, "Unpin memories.")):
        p = add(name, what + " Marked in place (no new version); agents cannot pin.")
        p.add_argument("ids", type=clean_ids, help="ids: 12 or 12,15")
        p.set_defaults(fn=cmd_pin, pinned=pinned)

    p = add("purge", "Delete memories for good (every version; rows, keyword index, vectors, entity graph, "
                     "candidates), for a secret or a private detail that got stored. Asks first; cannot be undone.")
    p.add_argument("ids", type=clean_ids, help="ids: 12 or 12,15")
    p.add_argument("--yes", action="store_true", help="do not ask (needed when stdin is not a terminal)")
    p.set_defaults(fn=cmd_purge)

    p = add("expand", "Show memories with their context: the same session's neighbours, shared entities, the "
                      "version that replaced them.")
    p.add_argument("ids", nargs="+", type=clean_ids, help="ids: 12 or 12,15, or memcue://<project>/<id> addresses")
    _opening(p)
    p.set_defaults(fn=cmd_expand)

    p = add("session-context", SESSION_CONTEXT_HELP)
    p.add_argument("--session-id", help="a session to continue (a second call in one session gets a pointer)")
    p.add_argument("--max-tokens", type=token_budget, default=SESSION_BLOCK_TOKENS, metavar="N",
                   help=f"token budget of the block, 1-100000 (default {SESSION_BLOCK_TOKENS})")
    add_project_options(p)
    p.set_defaults(fn=cmd_session_context)
