"""Soft delete: ``forget`` marks memories ``forgotten_at`` (Unix s) instead of removing them.

A forgotten memory never answers: every scoped query leaves it out (``rows.scope_conditions``), recall's
filters drop it (``recall.filters``), and the in-memory vector index treats it as not current, as it does a
superseded row (the id goes into the ``vector_journal``). It can still be fetched by id, marked forgotten.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from memcue.sidecar.store.sqlite.db import Database
from memcue.sidecar.store.write import ForgetResult


class Forgetting:
    """The soft-delete write over ``db``; see the module docstring."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def forget(self, ids: Iterable[int], *, now: float | None = None) -> ForgetResult:
        """Mark memories forgotten at ``now`` (Unix s, default the clock). Idempotent: a memory forgotten
        before keeps its first ``forgotten_at`` and is reported in ``already``. Any change bumps
        ``generation`` (answer caches drop) and logs the ids in ``vector_journal`` (vector indexes drop them)."""
        wanted = list(dict.fromkeys(int(i) for i in ids))
        if not wanted:
            return ForgetResult()
        when = time.time() if now is None else float(now)
        marks = ",".join("?" * len(wanted))
        db = self._db
        with db.write_lock, db.writer:
            found = dict(db.writer.execute(
                f"SELECT id, forgotten_at FROM memories WHERE id IN ({marks})", wanted).fetchall())
            forgotten = [i for i in wanted if i in found and found[i] is None]
            if forgotten:
                db.writer.execute(
                    f"UPDATE memories SET forgotten_at = ? WHERE id IN ({','.join('?' * len(forgotten))})",
                    [when, *forgotten])
                db.generation += 1
        if forgotten:
            db.vector_journal.record(forgotten)
        return ForgetResult(forgotten=forgotten,
                            already=[i for i in wanted if i in found and found[i] is not None],
                            not_found=[i for i in wanted if i not in found])
