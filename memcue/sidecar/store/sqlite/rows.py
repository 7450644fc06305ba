"""Row helpers shared by the store's queries: the column list, row decoding and scope conditions."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

#: The columns of a memory row as the store returns it (``row_dict``): ``tags`` is read from ``memory_tags`` (a
#: correlated subquery, so ``COLUMNS`` is only for a ``FROM memories`` without an alias).
_PLAIN = (
    "id, content, kind, project, session_id, created_at, updated_at, pinned, bookkeeping, "
    "superseded_by, source, source_id, embedded, metadata, seen_count, valid_from, valid_to, superseded_at, baseline, "
    "forgotten_at"
)
COLUMNS = _PLAIN + ", (SELECT group_concat(tag, char(10)) FROM memory_tags WHERE memory_id = memories.id) AS tags"
#: The separator of ``tags`` in a row as read (tags never hold whitespace).
_TAG_SEP = "\n"


def tags_condition(tags: Sequence[str], alias: str = "") -> tuple[str, list[Any]]:
    """An SQL condition (and its arguments) keeping the memories that carry every one of ``tags`` (normalised
    already); ``alias`` prefixes ``id``."""
    col = f"{alias}." if alias else ""
    wanted = sorted(set(tags))
    marks = ",".join("?" * len(wanted))
    return (f"{col}id IN (SELECT memory_id FROM memory_tags WHERE tag IN ({marks}) GROUP BY memory_id"
            " HAVING count(*) = ?)", [*wanted, len(wanted)])


def scope_conditions(
    alias: str = "", *, project: str | None = None, exclude_kinds: Sequence[str] = (),
    include_superseded: bool = False, include_bookkeeping: bool = False, include_forgotten: bool = False,
) -> tuple[list[str], list[Any]]:
    """SQL conditions (and their arguments) for the rows a recall may see: ``project`` and global rows
    (every project when None), not ``exclude_kinds``, not superseded unless ``include_superseded``, not
    bookkeeping unless ``include_bookkeeping``, not forgotten unless ``include_forgotten`` (a forgotten row
    stays out even under ``include_superseded``: an ``as_of`` recall never brings it back). ``alias``
    prefixes the columns ("m" -> "m.project")."""
    col = f"{alias}." if alias else ""
    where: list[str] = []
    args: list[Any] = []
    if not include_bookkeeping:
        where.append(f"{col}bookkeeping = 0")
    if not include_superseded:
        where.append(f"{col}superseded_by IS NULL")
    if not include_forgotten:
        where.append(f"{col}forgotten_at IS NULL")
    if project is not None:
        where.append(f"{col}project IN (?, '')")
        args.append(project)
    for kind in exclude_kinds:
        where.append(f"{col}kind != ?")
        args.append(kind)
    return where, args


#: The keys of ``row_dict``, in ``COLUMNS`` order.
_KEYS = [*(c.strip() for c in _PLAIN.split(",")), "tags"]


def row_dict(row: Sequence[Any]) -> dict[str, Any]:
    """A ``memories`` row (``COLUMNS`` order) as a dict, flags as bools, metadata decoded and ``tags`` a sorted
    list."""
    out = dict(zip(_KEYS, row, strict=True))
    out["tags"] = sorted(out["tags"].split(_TAG_SEP)) if out["tags"] else []
    out["pinned"] = bool(out["pinned"])
    out["bookkeeping"] = bool(out["bookkeeping"])
    out["metadata"] = json.loads(out["metadata"] or "{}")
    return out
