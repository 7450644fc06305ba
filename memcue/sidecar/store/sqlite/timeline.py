"""Reads by time and session order: memories in a time window (the temporal channel), a memory's neighbours
in its session (the session-context boost), and the memories of its session nearest in time (a recall
answer's depth-2 context), and when a session was first seen (the commit signal's start)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from memcue.sidecar.store.sqlite.db import Database
from memcue.sidecar.store.sqlite.rows import COLUMNS, row_dict, scope_conditions


class Timeline:
    """Time and session reads over ``db``; see the module docstring."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def session_neighbours(self, ids: Iterable[int]) -> dict[int, tuple[int | None, int | None]]:
        """For each memory, the previous and next non-bookkeeping memory of the same session (by
        ``created_at``, then id): ``id -> (previous id or None, next id or None)``. Memories without a
        session have no neighbours."""
        ids = list(dict.fromkeys(int(i) for i in ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        side = ("SELECT m.id FROM memories m WHERE m.session_id = s.session_id AND m.bookkeeping = 0"
                " AND (m.created_at, m.id) {op} (s.created_at, s.id)"
                " ORDER BY m.created_at {order}, m.id {order} LIMIT 1")
        sql = (f"SELECT s.id, ({side.format(op='<', order='DESC')}), ({side.format(op='>', order='ASC')})"
               f" FROM memories s WHERE s.id IN ({marks}) AND s.session_id != ''")
        rows = self._db.reader().execute(sql, ids).fetchall()
        return {int(r[0]): (r[1], r[2]) for r in rows}

    def in_window(
        self, start: float | None, end: float | None, *, project: str | None, limit: int,
        exclude_kinds: Sequence[str] = (), include_superseded: bool = False,
    ) -> list[dict[str, Any]]:
        """Non-bookkeeping memories created in ``[start, end)`` (Unix s; None = open), newest first."""
        where, args = scope_conditions(project=project, exclude_kinds=exclude_kinds,
                                       include_superseded=include_superseded)
        if start is not None:
            where.append("created_at >= ?")
            args.append(start)
        if end is not None:
            where.append("created_at < ?")
            args.append(end)
        sql = f"SELECT {COLUMNS} FROM memories WHERE {' AND '.join(where)} ORDER BY created_at DESC, id DESC LIMIT ?"
        return [row_dict(r) for r in self._db.reader().execute(sql, [*args, limit]).fetchall()]

    def session_context(self, session_id: str, memory_id: int, created_at: float, limit: int
                        ) -> list[tuple[int, str]]:
        """Up to ``limit`` other current, non-bookkeeping memories of ``session_id``, nearest to
        ``created_at`` (Unix s) first: ``(id, content)``."""
        rows = self._db.reader().execute(
            "SELECT id, content FROM memories WHERE session_id = ? AND id != ? AND bookkeeping = 0"
            " AND superseded_by IS NULL AND forgotten_at IS NULL ORDER BY abs(created_at - ?), id LIMIT ?",
            (session_id, memory_id, created_at, limit)).fetchall()
        return [(int(i), c) for i, c in rows]

    def session_first_seen(self, session_id: str) -> float | None:
        """The earliest time (Unix s) ``session_id`` left a trace: its first stored memory (any kind, forgotten
        ones too) or its first logged recall (a session start's injection); None for an unknown or empty id."""
        if not session_id:
            return None
        rows = self._db.reader().execute(
            "SELECT min(t) FROM (SELECT min(created_at) AS t FROM memories WHERE session_id = ?"
            " UNION ALL SELECT min(created_at) FROM recall_log WHERE session_id = ?)",
            (session_id, session_id)).fetchall()
        return float(rows[0][0]) if rows and rows[0][0] is not None else None
