"""``memcue remember|recall|update|edit|import``: putting memories in and asking for them. Thin over
``memcue.client.Client``."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import Any

from memcue.cli.arguments import (
    AddCommand,
    add_project_options,
    add_tag_option,
    iso_time,
    kind,
    limit,
    project_of,
    token_budget,
)
from memcue.cli.output import clean, emit, format_recall, progress, stdin_text, usage_error

#: Memories sent per ``remember_batch`` call by ``memcue import``.
IMPORT_BATCH = 500

#: Bad lines ``memcue import`` lists by number (the rest are counted).
IMPORT_ERRORS_SHOWN = 20


def cmd_remember(args: argparse.Namespace) -> int:
    """``memcue remember TEXT``: store a memory (exit 2 for an empty text)."""
    from memcue.client import Client

    text = clean(args.text) if args.text != "-" else stdin_text().rstrip("\n")
    if not text.strip():
        return usage_error("nothing to remember: the text is empty", args.json)
    with Client() as client:
        client.ensure_running()
        out = client.remember(text, kind=args.kind, project=project_of(args), pinned=args.pinned, source="cli",
                              tags=args.tags)
    note = " (flagged as bookkeeping: kept, never recalled or injected)" if out["bookkeeping"] else ""
    note += redaction_note(out)
    said = f"already remembered as #{out['id']} (counted again)" if out.get("duplicate") else f"remembered #{out['id']}"
    if args.tags:
        note += f" [tags: {', '.join(sorted(set(args.tags)))}]"
    return emit(out, args.json, f"{said}{note}")


def redaction_note(out: dict[str, Any]) -> str:
    """" (N secret(s) replaced by [REDACTED:…] markers)" for a write whose answer ``out`` counts ``redacted``
    secrets; "" when it has none."""
    count = out.get("redacted") or 0
    return f" ({count} secret{'s' if count > 1 else ''} replaced by [REDACTED:…] markers)" if count else ""


def _recall_fields(args: argparse.Namespace, project: str | None) -> dict[str, Any]:
    """The recall request's fields besides the query (``Client.recall``), from the command's flags."""
    from memcue.core.session_ids import resolve_session_id

    fields: dict[str, Any] = {"project": project, "limit": args.limit, "mode": "keyword" if args.keyword else "full",
                              "depth": args.depth, "max_tokens": args.max_tokens,
                              "include_requests": args.include_requests,
                              "session_id": resolve_session_id(args.session_id, os.environ) or "cli:recall"}
    if args.since or args.until:
        fields["window"] = {"from": args.since, "to": args.until}
    if args.as_of:
        fields["as_of"] = args.as_of
    if args.valid_at:
        fields["valid_at"] = args.valid_at
    if args.kind:
        fields["kind"] = args.kind
    if args.tags:
        fields["tags"] = args.tags
    return fields


def cmd_recall(args: argparse.Namespace) -> int:
    """``memcue recall QUERY``: the memories that are evidence for the question."""
    from memcue.client import Client

    project = project_of(args)
    args.query = clean(args.query)
    if not args.query.strip():
        return usage_error("the question is empty", args.json)
    if args.since and args.until and dt.datetime.fromisoformat(args.until) <= dt.datetime.fromisoformat(args.since):
        return usage_error("--until must be later than --since")  # on stderr, even with --json
    fields = _recall_fields(args, project)
    with Client() as client:
        client.ensure_running()
        answer = client.recall(args.query, **fields)
    text = format_recall(answer, show_weak=args.show_weak)
    if not answer["results"] and project is not None and not (answer.get("layers") or {}).get("left_out"):
        text += f"\n(searched project {project or '(global)'}; --all-projects searches every project)"
    if not answer["results"] and (args.kind or args.tags):
        wanted = [*([f"kind {args.kind}"] if args.kind else []), *(f"tag {t}" for t in args.tags)]
        text += f"\n(only memories with {' and '.join(wanted)} were searched)"
    return emit(answer, args.json, text)


def cmd_update(args: argparse.Namespace) -> int:
    """``memcue update ID TEXT``: a new version of a memory; the old one stays for --as-of."""
    from memcue.client import Client

    text = stdin_text() if args.text == "-" else clean(args.text)
    if not text.strip():
        return usage_error("the memory text is empty")  # on stderr, even with --json
    body: dict[str, Any] = {"memory_id": args.id, "content": text}
    if args.kind:
        body["kind"] = args.kind
    with Client() as client:
        client.ensure_running()
        out = client.update(body)
    return emit(out, args.json, f"memory #{args.id} replaced by #{out['id']} (the old version stays for --as-of)"
                f"{redaction_note(out)}")


def cmd_edit(args: argparse.Namespace) -> int:
    """``memcue edit ID``: the memory's text in ``$VISUAL``/``$EDITOR`` (else ``vi``); a changed text is saved as a
    new version (as ``memcue update``), an unchanged or emptied one saves nothing."""
    import shlex
    import subprocess
    import tempfile

    from memcue.client import Client

    chosen = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not chosen and not (sys.stdin.isatty() and sys.stdout.isatty()):
        return usage_error("no terminal for vi: set $VISUAL or $EDITOR (a GUI editor such as `code --wait` works "
                           f"without one), or use `memcue update {args.id} \"new text\"`", args.json)
    with Client() as client:
        client.ensure_running()
        found = client.fetch(str(args.id))["results"]
        if not found:
            return emit({"not_found": [args.id]}, args.json, f"not found: #{args.id}", ok=False)
        before = found[0]["content"]
        editor = shlex.split(chosen or "vi")
        with tempfile.TemporaryDirectory(prefix="memcue-edit-") as folder:
            path = Path(folder) / f"memory-{args.id}.md"
            path.write_text(before + "\n", encoding="utf-8")
            if subprocess.run([*editor, str(path)]).returncode != 0:
                return emit({"saved": False}, args.json, "the editor exited with an error: nothing saved", ok=False)
            after = path.read_text(encoding="utf-8").strip()
        if not after or after == before.strip():
            return emit({"saved": False}, args.json, "unchanged (or empty): nothing saved")
        out = client.update({"memory_id": args.id, "content": after})
    return emit({**out, "saved": True}, args.json,
                f"memory #{args.id} replaced by #{out['id']} (the old version stays for --as-of){redaction_note(out)}")


def _import_rows(path: Path, default_project: str | None) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """The JSONL file's memories as ``(line number, RememberIn body)``, and a message per bad line (``"line N:
    why"``). A line's missing project, source and source_id default to ``default_project``, ``import:<file
    name>`` and ``import:<absolute path>:<line>``: two files of the same name in different folders never share
    ids, and a re-import of the same file finds each line's memory again."""
    from pydantic import ValidationError

    from memcue.sidecar.api_models import RememberIn

    rows, errors = [], []
    where = path.resolve()
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                if not isinstance(rec, dict):
                    raise ValueError("needs a JSON object with a 'content' string")
                rec.setdefault("project", default_project)
                rec.setdefault("source", f"import:{path.name}")
                rec.setdefault("source_id", f"import:{where}:{n}")
                rows.append((n, RememberIn.model_validate(rec).model_dump(exclude_none=True)))
            except ValidationError as exc:
                problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
                errors.append(f"line {n}: {problems}")
            except json.JSONDecodeError as exc:
                errors.append(f"line {n}: not JSON ({exc})")
            except ValueError as exc:
                errors.append(f"line {n}: {exc}")
    return rows, errors


def _import_chunk(client: Any, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``/import`` outcomes of ``bodies``; when the sidecar refuses the whole request (a line it validates
    more strictly than this CLI), each body is sent alone so only the refused ones come back ``bad``. Raises
    ``SidecarDown`` and ``SidecarBusy``."""
    from memcue.client import ClientError, SidecarBusy, SidecarDown

    try:
        return client.import_batch(bodies)
    except (SidecarDown, SidecarBusy):
        raise
    except ClientError as exc:
        if len(bodies) == 1:
            return [{"status": "bad", "error": str(exc)}]
    return [out for body in bodies for out in _import_chunk(client, [body])]


def cmd_import(args: argparse.Namespace) -> int:
    """``memcue import FILE``: store a JSONL file's memories in batches, each line stored, updated (a changed
    line: a new version of its memory), unchanged or bad (reported, skipped); exit 1 when a line was bad."""
    from memcue.cli import export
    from memcue.client import Client

    path = Path(args.file)
    if not path.is_file():
        return usage_error(f"{path}: no such file")  # on stderr, even with --json
    head = export.header_of(path)
    if head is not None:
        return export.restore_file(args, path, head)
    rows, errors = _import_rows(path, project_of(args))
    counts = {"stored": 0, "updated": 0, "unchanged": 0, "bad": 0}
    with Client() as client:
        client.ensure_running()
        for i in range(0, len(rows), IMPORT_BATCH):
            chunk = rows[i:i + IMPORT_BATCH]
            for (n, _), out in zip(chunk, _import_chunk(client, [body for _, body in chunk]), strict=True):
                counts[out["status"]] = counts.get(out["status"], 0) + 1
                if out["status"] == "bad":
                    errors.append(f"line {n}: {out.get('error') or 'refused by the sidecar'}")
            progress(min(i + IMPORT_BATCH, len(rows)), len(rows), "importing")
    counts["bad"] = len(errors)
    errors.sort(key=lambda e: int(e.split()[1].rstrip(":")))
    data = {**counts, "duplicates": counts["unchanged"], "errors": errors}
    more = len(errors) - IMPORT_ERRORS_SHOWN
    lines = [f"imported {path}: {counts['stored']} stored, {counts['updated']} updated, {counts['unchanged']} "
             f"unchanged, {counts['bad']} bad (skipped)",
             *errors[:IMPORT_ERRORS_SHOWN], *([f"... and {more} more"] if more > 0 else [])]
    return emit(data, args.json, "\n".join(lines), ok=not errors)


def register(add: AddCommand) -> None:
    """Register ``remember``, ``recall``, ``update`` and ``import``."""
    p = add("remember", "Store a memory now (keyword-searchable at once, embedded in the background).")
    p.add_argument("text", help="the memory text, or - to read it from stdin")
    p.add_argument("--kind", type=kind, default="note",
                   help="decision, preference, bug, howto, note, ... (one lowercase word; default: note)")
    p.add_argument("--pinned", action="store_true", help="always offered at session start")
    add_tag_option(p, "a label to find it by later (recall/list --tag); repeat for several")
    add_project_options(p, global_flag=True)
    p.set_defaults(fn=cmd_remember)
    _register_recall(add)

    p = add("edit", "Edit a memory's text in $VISUAL / $EDITOR; a changed text is saved as a new version.")
    p.add_argument("id", type=int, help="the memory id")
    p.set_defaults(fn=cmd_edit)

    p = add("update", "Write a new version of memory ID; the old one is kept for --as-of and never served.")
    p.add_argument("id", type=int, help="the memory id (from recall)")
    p.add_argument("text", help="the new text, or - to read it from stdin")
    p.add_argument("--kind", type=kind, help="change the kind (default: keep it)")
    p.set_defaults(fn=cmd_update)

    p = add("import", "Import memories from a JSONL file: one {\"content\": ...} object per line, optionally with "
                      "kind, project, pinned, session_id, source_id, created_at (Unix s) and metadata. Each line "
                      "is known by the file's absolute path and its line number (or its source_id): importing the "
                      "same file again stores nothing twice, and a line whose text changed is written as a new "
                      "version of its memory (as memcue update does). A bad line is reported and skipped; the "
                      "others are imported. Exit status: 0 when every line was stored, updated or unchanged, 1 "
                      "when any line was bad. A file written by `memcue export` is restored as it was instead: "
                      "into an empty store only, unless --merge.")
    p.add_argument("file")
    p.add_argument("--merge", action="store_true",
                   help="a `memcue export` file into a store that holds memories: add what it lacks, skip (and "
                        "count) what it holds already; ids that are taken are given new ones")
    add_project_options(p, global_flag=True)
    p.set_defaults(fn=cmd_import)


def _register_recall(add: AddCommand) -> None:
    p = add("recall", "Find the memories that are evidence for QUERY.")
    p.add_argument("query", help="the question, in your own words")
    p.add_argument("--limit", type=limit, default=10, help="results at most, 1-100 (default 10)")
    p.add_argument("--keyword", action="store_true", help="BM25 keyword search only")
    p.add_argument("--all-projects", action="store_true", help="search every project")
    p.add_argument("--show-weak", action="store_true", help="also list weak matches, labelled [weak] (left out by "
                                                            "default: they are not evidence)")
    p.add_argument("--include-requests", action="store_true",
                   help="let prompts you typed (captured by the hook, kind request) answer too")
    add_project_options(p)
    p.add_argument("--since", metavar="TIME", type=iso_time,
                   help="only memories written at or after TIME (ISO 8601 date/time, or Unix seconds)")
    p.add_argument("--until", metavar="TIME", type=iso_time, help="only memories written before TIME")
    p.add_argument("--as-of", metavar="TIME", type=iso_time,
                   help="what memcue knew at TIME: versions current then")
    p.add_argument("--valid-at", metavar="TIME", type=iso_time, help="facts valid at TIME")
    p.add_argument("--kind", type=kind, help="only memories of this kind (decision, preference, bug, howto, note, "
                                             "request, episode, ...)")
    add_tag_option(p, "only memories carrying this tag; repeat: they must carry every one")
    p.add_argument("--depth", type=int, choices=(0, 1, 2), default=1,
                   help="0: a glance (one-line previews), 1: full memories (default), 2: with session/entity context")
    p.add_argument("--max-tokens", type=token_budget, default=None, metavar="N",
                   help="never more than N tokens of memory text, 1-100000 (drops context, then shortens, then "
                        "leaves out)")
    p.add_argument("--session-id", default="", help="session for the working set (default: MEMCUE_SESSION_ID, "
                   "CLAUDE_SESSION_ID, CLAUDE_CODE_SESSION_ID; none: a synthetic cli: session)")
    p.set_defaults(fn=cmd_recall)

