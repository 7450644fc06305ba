"""``memcue export`` and the restore half of ``memcue import``: a lossless backup of the store as JSON Lines, and
that file written back (the format: ``memcue.sidecar.export``). Thin over ``memcue.client.Client``.

An export file starts with ``{"format": "memcue-export", ...}``; ``memcue import`` sees that header and restores
the file here instead of importing it as notes. Every line is checked before anything is written (a bad line
refuses the whole file); records then go to the sidecar in batches, newer versions before the versions they
replaced, so each link finds its row.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memcue.cli.arguments import AddCommand, add_project_options, project_of
from memcue.cli.output import emit, fail, usage_error

#: The export format's name and the newest version this CLI reads.
FORMAT, VERSION = "memcue-export", 1
#: Records sent per ``/restore`` call.
RESTORE_BATCH = 500
#: Bad lines listed by number (the rest are counted).
ERRORS_SHOWN = 20
#: The record types of an export, in the order they are restored.
TYPES = ("memory", "candidate", "delivery")

EXPORT_HELP = """Write a lossless export of memcue's store as JSON Lines (to stdout, or -o FILE): a header line
{"format": "memcue-export", "version": 1, ...}, then one line per memory version (ids, versions and
supersession links, times as stored, kind, text, project, pinned, forgotten, provenance, metadata, tags), per
capture candidate (with its review state and reason) and per delivered source id. Two exports of the same
store are byte-identical. `memcue import FILE` restores it into an empty store exactly (--merge adds it to a
store that holds memories). Default: this project and the global memories; --all-projects for everything
(a full backup). Vectors are not exported: the sidecar computes them again."""


def header_of(path: Path) -> dict[str, Any] | None:
    """The export header of the file at ``path`` (its first non-empty line, when that is one), else None."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for text in fh:
            if text.strip():
                try:
                    first = json.loads(text)
                except json.JSONDecodeError:
                    return None
                return first if isinstance(first, dict) and first.get("format") == FORMAT else None
    return None


def cmd_export(args: argparse.Namespace) -> int:
    """``memcue export``: the export's lines to stdout or ``-o FILE`` (written whole, then renamed into place,
    mode 0600); a summary on stderr (or, with ``--json`` and ``-o``, on stdout)."""
    from memcue.client import Client

    if args.json and not args.output:
        return usage_error("--json needs -o FILE: without it the export itself goes to stdout", True)
    project = project_of(args)
    fields = {"all_projects": True} if project is None else {"project": project}
    counts = dict.fromkeys(TYPES, 0)
    with Client() as client:
        client.ensure_running()
        if args.output:
            target = Path(args.output)
            partial = target.with_name(target.name + ".partial")
            try:
                fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            except OSError as exc:
                why = (f"the folder {target.parent} does not exist" if exc.errno == errno.ENOENT
                       else exc.strerror or str(exc))
                return fail(f"cannot write {target}: {why}", as_json=args.json)
            try:
                with os.fdopen(fd, "wb") as out:
                    _copy(client.export_chunks(**fields), out, counts)
                os.replace(partial, target)
            finally:
                partial.unlink(missing_ok=True)  # an export cut short leaves no file behind
        else:
            _copy(client.export_chunks(**fields), sys.stdout.buffer, counts)
    where = "every project" if project is None else f"project {project or '(global)'} and global memories"
    text = (f"exported {counts['memory']} memory versions, {counts['candidate']} candidates and "
            f"{counts['delivery']} deliveries of {where}" + (f" to {args.output}" if args.output else ""))
    if args.output:
        return emit({"file": str(args.output), "scope": where, **counts}, args.json, text)
    print(text, file=sys.stderr)
    return 0


def _copy(chunks: Iterable[bytes], out: Any, counts: dict[str, int]) -> None:
    """Write ``chunks`` to ``out`` as they come, counting the records of each type (by each line's opening)."""
    rest = b""
    for chunk in chunks:
        out.write(chunk)
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for raw in lines:
            for kind in TYPES:
                if raw.startswith(b'{"type": "%s"' % kind.encode()):
                    counts[kind] += 1
    out.flush()


def _records(path: Path) -> tuple[dict[str, list[tuple[int, dict[str, Any]]]], list[str]]:
    """The file's records by type as ``(line number, validated body)``, and a message per bad line."""
    from pydantic import ValidationError

    from memcue.sidecar.api_models import ExportCandidateIn, ExportDeliveryIn, ExportMemoryIn

    models = {"memory": ExportMemoryIn, "candidate": ExportCandidateIn, "delivery": ExportDeliveryIn}
    out: dict[str, list[tuple[int, dict[str, Any]]]] = {t: [] for t in TYPES}
    errors: list[str] = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = [(n, text) for n, text in enumerate(fh, 1) if text.strip()]
    for n, text in lines[1:]:
        try:
            rec = json.loads(text)
            kind = rec.get("type") if isinstance(rec, dict) else None
            if kind not in models:
                raise ValueError(f"not an export record (type must be one of {', '.join(TYPES)})")
            out[kind].append((n, models[kind].model_validate(rec).model_dump(mode="json")))
        except ValidationError as exc:
            errors.append(f"line {n}: " + "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                                                    for e in exc.errors()))
        except (json.JSONDecodeError, ValueError) as exc:
            errors.append(f"line {n}: {exc}")
    return out, errors


def _newest_first(memories: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
    """``memories`` ordered so that each comes after the newer version that replaced it (current versions first,
    then those one step older, ...; by id within a step)."""
    by_id = {m["id"]: m for _, m in memories}

    def steps(m: dict[str, Any]) -> int:
        n, seen = 0, {m["id"]}
        while m["superseded_by"] in by_id and m["superseded_by"] not in seen:
            m = by_id[m["superseded_by"]]
            seen.add(m["id"])
            n += 1
        return n

    return sorted(memories, key=lambda item: (steps(item[1]), item[1]["id"]))


def restore_file(args: argparse.Namespace, path: Path, head: dict[str, Any]) -> int:
    """``memcue import`` of an export: every line checked, then written back through ``/restore``; exit 1 when a
    record was bad, 2 for a file this version cannot read."""
    from memcue.client import Client, ClientError

    if not isinstance(head.get("version"), int) or head["version"] > VERSION:
        return usage_error(f"{path}: export format version {head.get('version')!r}; this memcue reads version "
                           f"{VERSION} (upgrade memcue to import it)")
    records, errors = _records(path)
    if errors:
        return _report(args, path, {}, errors, refused=True)
    tally: dict[str, dict[str, int]] = {t: {"restored": 0, "renumbered": 0, "present": 0, "bad": 0} for t in TYPES}
    with Client() as client:
        client.ensure_running()
        try:
            _send(client, args.merge, records, tally, errors, head)
        except ClientError as exc:
            if not any(t["restored"] or t["present"] for t in tally.values()):
                return fail(str(exc), as_json=args.json)
            raise
    return _report(args, path, tally, errors)


def _send(client: Any, merge: bool, records: dict[str, list[tuple[int, dict[str, Any]]]],
          tally: dict[str, dict[str, int]], errors: list[str], head: dict[str, Any]) -> None:
    """Every record to ``/restore`` in batches (memories newest version first, then candidates, then
    deliveries), the header's ``id_floor`` with the last call; counts into ``tally``, bad lines into ``errors``."""
    ids: dict[int, int] = {}
    keys = {"memory": "memories", "candidate": "candidates", "delivery": "deliveries"}
    links = {"memory": "superseded_by", "candidate": "memory_id", "delivery": "memory_id"}
    batches = [(kind, chunk) for kind in TYPES
               for chunk in _chunks(_newest_first(records[kind]) if kind == "memory" else records[kind])]
    if not batches:
        batches = [("memory", [])]
    for i, (kind, chunk) in enumerate(batches):
        known = {b[links[kind]]: ids[b[links[kind]]] for _, b in chunk if b.get(links[kind]) in ids}
        body = {"merge": merge, "start": i == 0, keys[kind]: [b for _, b in chunk], "known": known,
                "id_floor": head.get("id_floor") if i == len(batches) - 1 else None}
        out = client.restore(body)
        ids.update({int(k): v for k, v in out["ids"].items()})
        for (n, _), result in zip(chunk, out[keys[kind]], strict=True):
            tally[kind][result["status"]] += 1
            tally[kind]["renumbered"] += bool(result.get("renumbered"))
            if result["status"] == "bad":
                errors.append(f"line {n}: {result.get('error') or 'refused by the sidecar'}")


def _chunks(items: list[Any]) -> list[list[Any]]:
    """``items`` in lists of ``RESTORE_BATCH``."""
    return [items[i:i + RESTORE_BATCH] for i in range(0, len(items), RESTORE_BATCH)]


def _report(args: argparse.Namespace, path: Path, tally: dict[str, dict[str, int]], errors: list[str], *,
            refused: bool = False) -> int:
    """Print what a restore did (or why the file was refused); exit 1 when a line was bad."""
    errors.sort(key=lambda e: int(e.split()[1].rstrip(":")))
    more = len(errors) - ERRORS_SHOWN
    shown = [*errors[:ERRORS_SHOWN], *([f"... and {more} more"] if more > 0 else [])]
    if refused:
        text = "\n".join([f"{path}: {len(errors)} bad line(s) in the export; nothing was imported", *shown])
        return emit({"refused": True, "errors": errors}, args.json, text, ok=False)
    m, c, d = tally["memory"], tally["candidate"], tally["delivery"]
    present = m["present"] + c["present"] + d["present"]
    lines = [f"restored {path}: {m['restored']} memory versions, {c['restored']} candidates, {d['restored']} "
             f"deliveries" + (f"; {present} already present (skipped)" if args.merge else "")
             + (f"; {m['renumbered'] + c['renumbered']} given new ids (theirs were taken)"
                if m["renumbered"] + c["renumbered"] else ""),
             *shown]
    data = {"memories": m, "candidates": c, "deliveries": d, "skipped_present": present, "errors": errors}
    return emit(data, args.json, "\n".join(lines), ok=not errors)


def register(add: AddCommand) -> None:
    """Register ``export``."""
    p = add("export", EXPORT_HELP)
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (mode 0600, replaced whole) instead of stdout")
    add_project_options(p, all_projects=True)
    p.set_defaults(fn=cmd_export)
