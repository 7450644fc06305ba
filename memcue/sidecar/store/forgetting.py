"""Soft delete: ``forget`` marks memories ``forgotten_at`` (Unix s) instead of removing them.

A forgotten memory never answers: every scoped query leaves it out (``rows.scope_conditions``), recall's
filters drop it (``recall.filters``), and the in-memory vector index treats it as not current, as it does a
superseded row (the id goes into ``Store.vector_journal``). It can still be fetched by id, marked forgotten.
Mixed into ``Store`` (``store.memories``), which provides the writer connection, its lock, ``generation``
and ``vector_journal``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import apsw

    from memcue.sidecar.store.journal import VectorJournal


@dataclass(frozen=True)
class ForgetResult:
    """Outcome of ``forget``: ids ``forgotten`` now, ``already`` forgotten before, ``not_found``; each in the
    order asked, without repeats."""

    forgotten: list[int] = field(default_factory=list)
    already: list[int] = field(default_factory=list)
    not_found: list[int] = field(default_factory=list)


class Forgetting:
    """The soft-delete write; see the module docstring."""

    _writer: apsw.Connection
    _write_lock: threading.Lock
    generation: int
    vector_journal: VectorJournal

    def forget(self, ids: Iterable[int], *, now: float | None = None) -> ForgetResult:
        """Mark memories forgotten at ``now`` (Unix s, default the clock). Idempotent: a memory forgotten
        before keeps its first ``forgotten_at`` and is reported in ``already``. Any change bumps
        ``generation`` (answer caches drop) and logs the ids in ``vector_journal`` (vector indexes drop them)."""
        wanted = list(dict.fromkeys(int(i) for i in ids))
        if not wanted:
            return ForgetResult()
        when = time.time() if now is None else float(now)
        marks = ",".join("?" * len(wanted))
        with self._write_lock, self._writer:
            found = dict(self._writer.execute(
                f"SELECT id, forgotten_at FROM memories WHERE id IN ({marks})", wanted).fetchall())
            forgotten = [i for i in wanted if i in found and found[i] is None]
            if forgotten:
                self._writer.execute(
                    f"UPDATE memories SET forgotten_at = ? WHERE id IN ({','.join('?' * len(forgotten))})",
                    [when, *forgotten])
                self.generation += 1
        if forgotten:
            self.vector_journal.record(forgotten)
        return ForgetResult(forgotten=forgotten,
                            already=[i for i in wanted if i in found and found[i] is not None],
                            not_found=[i for i in wanted if i not in found])
