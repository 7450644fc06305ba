"""Recall usage: which recalls were served, what each showed, and which of those memories were opened.

Every recall served (a prompt hook's block, a session-start block, a ``/recall`` question) is logged with its
``query_id``, ``session_id``, how it was served (``served_by`` "hook", "session" or "question"; ``block``
"full", "compact" or "" for a question), the block's size in ``tokens``, ``skipped`` (why a hook showed nothing:
such a recall has no items) and, per memory it showed, the memory's kind and the channels that found it (the
result's ``channel_scores`` keys). ``fetch``/``expand`` naming a ``query_id`` mark those (query, memory) pairs used;
naming only a ``session_id``, they mark the session's latest recall that showed the memory. ``usage_stats``
counts used and unused per channel and kind (``memcue stats``).

Bounded on write: recalls older than ``RETENTION_DAYS`` go, and so do the oldest beyond ``MAX_RECALLS``
(their items follow by ``ON DELETE CASCADE``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from typing import Any

from memcue.sidecar.store.sqlite.db import Database
from memcue.sidecar.store.write import ServedRecall

#: Recalls older than this are pruned on write (days).
RETENTION_DAYS = 90
#: Most recalls kept (the oldest beyond go first): about 8 items each, a few MB of SQLite at most.
MAX_RECALLS = 20_000


def _fraction(used: int, total: int) -> float | None:
    return round(used / total, 4) if total else None


def _group(rows: Iterable[tuple[Any, int, int]]) -> dict[str, dict[str, Any]]:
    return {str(name): {"used": int(used), "unused": int(total) - int(used), "total": int(total),
                        "used_fraction": _fraction(int(used), int(total))} for name, total, used in rows}


class UsageLog:
    """The recall-usage log over ``db``; see the module docstring."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def log_recalls(self, served: Sequence[ServedRecall], *, now: float | None = None) -> None:
        """Store ``served`` recalls (a ``query_id`` seen before is kept as first logged) and prune."""
        if not served:
            return
        now = time.time() if now is None else now
        db = self._db
        with db.write_lock, db.writer:
            for s in served:
                db.writer.execute(
                    "INSERT OR IGNORE INTO recall_log(query_id, session_id, created_at, served_by, block, tokens, "
                    "skipped, project) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (s.query_id, s.session_id, s.created_at, s.served_by, s.block, int(s.tokens), s.skipped,
                     s.project))
                db.writer.executemany(
                    "INSERT OR IGNORE INTO recall_items(query_id, memory_id, kind, channels) VALUES (?, ?, ?, ?)",
                    [(s.query_id, int(mid), kind, json.dumps(sorted(channels))) for mid, kind, channels in s.items])
            db.writer.execute("DELETE FROM recall_log WHERE created_at < ?", (now - RETENTION_DAYS * 86400.0,))
            db.writer.execute("DELETE FROM recall_log WHERE id <= (SELECT max(id) FROM recall_log) - ?",
                                 (MAX_RECALLS,))

    def mark_used(self, memory_ids: Iterable[int], *, query_id: str = "", session_id: str = "",
                  now: float | None = None) -> int:
        """Mark ``memory_ids`` used in recall ``query_id`` or, without one, in ``session_id``'s latest recall
        that showed each; a pair already used keeps its first time. Returns the pairs newly marked."""
        ids = list(dict.fromkeys(int(i) for i in memory_ids))
        if not ids or not (query_id or session_id):
            return 0
        now = time.time() if now is None else now
        marks = ",".join("?" * len(ids))
        db = self._db
        with db.write_lock, db.writer:
            if query_id:
                pairs = [(query_id, mid) for mid in ids]
            else:
                pairs = [(qid, mid) for mid, qid in db.writer.execute(
                    f"SELECT i.memory_id, (SELECT l2.query_id FROM recall_items i2 JOIN recall_log l2 USING (query_id) "
                    f"WHERE i2.memory_id = i.memory_id AND l2.session_id = ? ORDER BY l2.created_at DESC, l2.id DESC "
                    f"LIMIT 1) FROM recall_items i WHERE i.memory_id IN ({marks}) GROUP BY i.memory_id",
                    [session_id, *ids]).fetchall() if qid is not None]
            before = db.writer.total_changes()
            db.writer.executemany(
                "UPDATE recall_items SET used_at = ? WHERE query_id = ? AND memory_id = ? AND used_at IS NULL",
                [(now, qid, mid) for qid, mid in pairs])
            return db.writer.total_changes() - before

    def usage_stats(self, since: float) -> dict[str, Any]:
        """Used and unused memories shown by recalls logged since ``since`` (Unix s): totals, ``recalls`` (a
        recall is used when any memory it showed was opened), ``by_channel``, ``by_kind`` and ``by_served``
        (``"hook/compact"``, ``"question"``, …), each ``{"used", "unused", "total", "used_fraction"}``."""
        conn = self._db.reader()
        scope = "FROM recall_items i JOIN recall_log l USING (query_id) WHERE l.created_at >= ?"
        [(total, used)] = conn.execute(f"SELECT count(*), count(i.used_at) {scope}", (since,)).fetchall()
        [(recalls, used_recalls)] = conn.execute(
            "SELECT count(*), coalesce(sum(used), 0) FROM (SELECT max(i.used_at IS NOT NULL) AS used "
            f"{scope} GROUP BY l.id)", (since,)).fetchall()
        each = scope.replace("WHERE", ", json_each(i.channels) j WHERE")
        by_channel = conn.execute(f"SELECT j.value, count(*), count(i.used_at) {each} GROUP BY j.value "
                                  "ORDER BY count(*) DESC", (since,)).fetchall()
        by_kind = conn.execute(f"SELECT i.kind, count(*), count(i.used_at) {scope} GROUP BY i.kind "
                               "ORDER BY count(*) DESC", (since,)).fetchall()
        by_served = conn.execute(
            f"SELECT l.served_by || CASE WHEN l.block != '' THEN '/' || l.block ELSE '' END, count(*), "
            f"count(i.used_at) {scope} GROUP BY 1 ORDER BY count(*) DESC", (since,)).fetchall()
        return {"since": since, "items": {"used": int(used), "unused": int(total) - int(used), "total": int(total),
                                          "used_fraction": _fraction(int(used), int(total))},
                "recalls": {"used": int(used_recalls), "unused": int(recalls) - int(used_recalls),
                            "total": int(recalls), "used_fraction": _fraction(int(used_recalls), int(recalls))},
                "by_channel": _group(by_channel), "by_kind": _group(by_kind), "by_served": _group(by_served)}
