"""Capture candidates (``candidates`` table): held apart from ``memories``, so nothing here is ever a recall
candidate. A candidate's text goes through the one write-preparation path (``store.write.prepare_write``, as a
captured text: sanitised, memcue blocks stripped, secrets redacted, cut to the capture cap) before the writer lock.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Sequence
from typing import Any

from memcue.sidecar.store.sqlite.db import Database
from memcue.sidecar.store.write import CANDIDATE_TTL_S, CandidateAdded, NewCandidate, NewMemory, prepare_write

_COLUMNS = ("id, content, kind, project, session_id, harness, turn, signal, evidence, created_at, expires_at, "
            "state, memory_id, reason, decided_at")


#: The columns of a recurrence read: a candidate's with its digest and embedding (``vector``: float32 bytes or None,
#: ``vector_model``: the model that made it, "" when none).
_RECUR_COLUMNS = _COLUMNS + ", content_sha1, vector, vector_model"
#: The columns of a candidate compared with another (``peers``).
_PEER_COLUMNS = "id, content, session_id, content_sha1, vector, vector_model"
#: Not held for review: a candidate whose evidence gives a ``held`` reason waits for a person.
_NOT_HELD = "coalesce(json_extract(evidence, '$.held'), '') = ''"


def _prepared(c: NewCandidate) -> tuple[str, str]:
    """``c``'s text as stored (``prepare_write`` with the captured kind ``request``) and its digest."""
    text = prepare_write(NewMemory(content=c.content, kind="request")).content
    return text, hashlib.sha1(text.encode()).hexdigest()


def _row(values: tuple[Any, ...], columns: str = _COLUMNS) -> dict[str, Any]:
    row = dict(zip([c.strip() for c in columns.split(",")], values, strict=True))
    if "evidence" in row:
        row["evidence"] = json.loads(row["evidence"] or "{}")
    return row


class CandidateRows:
    """Writes and reads of ``candidates`` over ``db``; see the module docstring."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, candidates: Iterable[NewCandidate]) -> list[CandidateAdded]:
        """Hold ``candidates`` in one transaction; one already held (same signal, turn and text) is not added
        again. Raises ``ValueError`` for text empty after preparation (nothing of the batch is written then)."""
        prepared = [(c, *_prepared(c)) for c in candidates]
        if any(not text.strip() for _, text, _ in prepared):
            raise ValueError("a candidate needs some text: the content is empty after cleaning")
        now = time.time()
        out: list[CandidateAdded] = []
        db = self._db
        with db.write_lock, db.writer:
            for c, text, digest in prepared:
                created = c.created_at if c.created_at is not None else now
                expires = c.expires_at if c.expires_at is not None else created + CANDIDATE_TTL_S
                rows = db.writer.execute(
                    "INSERT INTO candidates(content, kind, project, session_id, harness, turn, signal, evidence,"
                    " content_sha1, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT(signal, turn, content_sha1) DO NOTHING RETURNING id",
                    (text, c.kind or "note", c.project, c.session_id, c.harness, c.turn, c.signal,
                     json.dumps(c.evidence, ensure_ascii=False), digest, created, expires)).fetchall()
                if rows:
                    out.append(CandidateAdded(int(rows[0][0]), True))
                    continue
                held = db.writer.execute("SELECT id FROM candidates WHERE signal = ? AND turn = ? AND content_sha1 = ?",
                                         (c.signal, c.turn, digest)).fetchall()
                out.append(CandidateAdded(int(held[0][0]), False))
        return out

    def get(self, candidate_id: int) -> dict[str, Any] | None:
        """One candidate as a dict (``_COLUMNS``; ``evidence`` decoded), None when unknown."""
        rows = self._db.reader().execute(f"SELECT {_COLUMNS} FROM candidates WHERE id = ?", (candidate_id,)).fetchall()
        return _row(rows[0]) if rows else None

    def list(self, *, state: str | None = None, project: str | None = None, session_id: str | None = None,
             limit: int = 50) -> list[dict[str, Any]]:
        """Candidates newest first, filtered by ``state``, ``project`` (exactly) and ``session_id`` when given."""
        where, args = [], []
        for column, value in (("state", state), ("project", project), ("session_id", session_id)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = (f"SELECT {_COLUMNS} FROM candidates{' WHERE ' + ' AND '.join(where) if where else ''}"
               " ORDER BY created_at DESC, id DESC LIMIT ?")
        return [_row(r) for r in self._db.reader().execute(sql, (*args, int(limit))).fetchall()]

    def decide(self, candidate_id: int, state: str, *, reason: str, memory_id: int | None = None,
               now: float | None = None) -> bool:
        """Move a pending candidate to ``state`` with ``reason`` (and ``memory_id`` when promoted); False when it
        is not pending (decided already, or unknown)."""
        db = self._db
        with db.write_lock, db.writer:
            rows = db.writer.execute(
                "UPDATE candidates SET state = ?, reason = ?, memory_id = ?, decided_at = ?"
                " WHERE id = ? AND state = 'pending' RETURNING id",
                (state, reason, memory_id, time.time() if now is None else now, candidate_id)).fetchall()
        return bool(rows)

    def expire(self, now: float | None = None, limit: int = 500) -> int:
        """Mark up to ``limit`` pending candidates past their ``expires_at`` expired; returns how many."""
        now = time.time() if now is None else now
        db = self._db
        with db.write_lock, db.writer:
            rows = db.writer.execute(
                "UPDATE candidates SET state = 'expired', reason = 'no confirming signal before it expired',"
                " decided_at = ? WHERE id IN (SELECT id FROM candidates WHERE state = 'pending' AND expires_at <= ?"
                " LIMIT ?) RETURNING id", (now, now, int(limit))).fetchall()
        return len(rows)

    def next_expiry(self) -> float | None:
        """The earliest ``expires_at`` of a pending candidate (Unix s), None when none is pending."""
        rows = self._db.reader().execute(
            "SELECT min(expires_at) FROM candidates WHERE state = 'pending'").fetchall()
        return rows[0][0] if rows and rows[0][0] is not None else None

    def pending_after(self, after_id: int, signals: Sequence[str], limit: int = 100) -> list[dict[str, Any]]:
        """Pending candidates of ``signals`` with an id above ``after_id`` that are not held for review (no
        ``held`` in their evidence), oldest first: ``_COLUMNS`` plus ``content_sha1``, ``vector`` (float32 bytes or
        None) and ``vector_model``."""
        marks = ", ".join("?" * len(signals))
        rows = self._db.reader().execute(
            f"SELECT {_RECUR_COLUMNS} FROM candidates WHERE id > ? AND state = 'pending' AND signal IN ({marks})"
            f" AND {_NOT_HELD} ORDER BY id LIMIT ?", (int(after_id), *signals, int(limit))).fetchall()
        return [_row(r, _RECUR_COLUMNS) for r in rows]

    def peers(self, project: str, kind: str, *, other_than: str, signals: Sequence[str], digest: str = "",
              limit: int = 2000) -> list[dict[str, Any]]:
        """Pending candidates of ``signals`` in ``project`` and ``kind`` from a known session other than
        ``other_than``, not held for review: those whose ``content_sha1`` is ``digest`` first (however old), then
        newest first; at most ``limit``. Columns ``_PEER_COLUMNS``: ``id``, ``content``, ``session_id``,
        ``content_sha1``, ``vector``, ``vector_model``."""
        marks = ", ".join("?" * len(signals))
        rows = self._db.reader().execute(
            f"SELECT {_PEER_COLUMNS} FROM candidates WHERE state = 'pending' AND project = ? AND kind = ?"
            f" AND session_id NOT IN ('', ?) AND signal IN ({marks}) AND {_NOT_HELD}"
            " ORDER BY content_sha1 = ? DESC, id DESC LIMIT ?",
            (project, kind, other_than, *signals, digest, int(limit))).fetchall()
        keys = [c.strip() for c in _PEER_COLUMNS.split(",")]
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def set_vectors(self, items: Sequence[tuple[int, bytes]], model: str) -> None:
        """Store each candidate's embedding ``(candidate id, float32 bytes)`` made by ``model``."""
        db = self._db
        with db.write_lock, db.writer:
            db.writer.executemany("UPDATE candidates SET vector = ?, vector_model = ? WHERE id = ?",
                                  [(blob, model, int(cid)) for cid, blob in items])
