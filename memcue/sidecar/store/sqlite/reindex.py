"""A re-index to another embedding model: the new vectors wait in ``reindex_vectors`` (migration m018) while the
old model's stay in ``memories_vec``, and one transaction swaps them when every memory has its new vector.

The re-index's target is kept in ``meta``: ``reindex_model``, ``reindex_dim`` and ``reindex_state``
("running" or "paused"). A memory counts as re-embedded once its row is in ``reindex_vectors``, so a re-index
stopped anywhere (a paused re-index, a killed sidecar) goes on with the memories still missing, never from
zero. Memories written while it runs are picked up by the same query. Bookkeeping rows (``embedded = 2``) are
never embedded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memcue.sidecar.store.sqlite.db import Database
from memcue.sidecar.store.sqlite.meta import MetaTable
from memcue.sidecar.store.sqlite.migrations import ensure_vector_table

#: ``meta`` keys of the re-index target.
MODEL_KEY, DIM_KEY, STATE_KEY = "reindex_model", "reindex_dim", "reindex_state"
#: ``reindex_state`` values.
RUNNING, PAUSED = "running", "paused"


class ReindexRows:
    """The re-index's rows and meta over ``db`` (see the module docstring)."""

    def __init__(self, db: Database, meta: MetaTable) -> None:
        self._db = db
        self._meta = meta

    def target(self) -> tuple[str, int, str] | None:
        """``(model id, dim, state)`` of the re-index started (running or paused), None when there is none."""
        model = self._meta.get(MODEL_KEY)
        if not model:
            return None
        return model, int(self._meta.get(DIM_KEY) or 0), self._meta.get(STATE_KEY) or PAUSED

    def start(self, model_id: str, dim: int) -> bool:
        """Run a re-index to ``model_id`` (``dim`` dimensions): one already started for that model goes on where
        it was; one for another model is dropped first. True when it goes on (vectors were kept)."""
        db = self._db
        target = self.target()
        same = target is not None and target[0] == model_id and target[1] == dim
        with db.write_lock, db.writer:
            if not same:
                db.writer.execute("DELETE FROM reindex_vectors")
            for key, value in ((MODEL_KEY, model_id), (DIM_KEY, str(dim)), (STATE_KEY, RUNNING)):
                db.writer.execute("INSERT INTO meta(key, value) VALUES (?, ?)"
                                  " ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))
        return same

    def set_state(self, state: str) -> None:
        """Mark the re-index started ``RUNNING`` or ``PAUSED`` (no-op when none was started). Raises
        ``ValueError`` for another state."""
        if state not in (RUNNING, PAUSED):
            raise ValueError(f"re-index state {state!r}: must be {RUNNING} or {PAUSED}")
        if self.target() is not None:
            self._meta.set(STATE_KEY, state)

    def counts(self) -> tuple[int, int]:
        """``(done, total)``: memories with their new vector, and memories to embed (not bookkeeping)."""
        reader = self._db.reader()
        done = int(reader.execute("SELECT count(*) FROM reindex_vectors").fetchall()[0][0])
        total = int(reader.execute("SELECT count(*) FROM memories WHERE embedded != 2").fetchall()[0][0])
        return done, total

    def pending(self, limit: int, after: int = 0) -> list[tuple[int, str, str, dict[str, Any]]]:
        """Memories still without their new vector, ids above ``after``, oldest first: ``(id, content, project,
        metadata)``, as ``VectorRows.pending_embeddings``."""
        rows = self._db.reader().execute(
            "SELECT id, content, project, metadata FROM memories m WHERE id > ? AND embedded != 2"
            " AND NOT EXISTS (SELECT 1 FROM reindex_vectors r WHERE r.id = m.id) ORDER BY id LIMIT ?",
            (int(after), int(limit))).fetchall()
        return [(int(r[0]), r[1], r[2], json.loads(r[3] or "{}")) for r in rows]

    def add(self, items: Sequence[tuple[int, bytes, float | None]]) -> int:
        """Keep ``(memory id, float32 bytes, baseline)`` as new vectors; a memory purged meanwhile is skipped.
        Returns how many were kept."""
        db = self._db
        kept = 0
        with db.write_lock, db.writer:
            for mid, blob, baseline in items:
                db.writer.execute("INSERT OR REPLACE INTO reindex_vectors(id, vector, baseline)"
                                  " SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM memories WHERE id = ?)",
                                  (int(mid), blob, baseline, int(mid)))
                kept += db.writer.changes()
        return kept

    def finish(self, model_id: str, dim: int) -> int:
        """Swap in the new vectors in one transaction: ``memories_vec`` is made again for ``dim`` from
        ``reindex_vectors`` (the old model's vectors go), each memory's ``embedded`` and ``baseline`` follow
        (a memory written too late for the re-index waits for the worker as any new one), the store is bound to
        ``model_id``, and the re-index is over. Returns the vectors swapped in. Raises ``ValueError`` when the
        re-index started is not to ``model_id`` / ``dim``."""
        target = self.target()
        if target is None or target[:2] != (model_id, dim):
            raise ValueError(f"no re-index to {model_id} ({dim} dims) was started")
        db = self._db
        with db.write_lock, db.writer:
            w = db.writer
            w.execute("DROP TABLE IF EXISTS memories_vec")
            ensure_vector_table(w, dim)
            w.execute("INSERT INTO memories_vec(rowid, embedding, project, kind)"
                      " SELECT r.id, r.vector, m.project, m.kind FROM reindex_vectors r JOIN memories m ON m.id = r.id"
                      " ORDER BY r.id")
            swapped = int(w.execute("SELECT count(*) FROM reindex_vectors").fetchall()[0][0])
            w.execute("UPDATE memories SET embedded = CASE WHEN r.id IS NULL THEN 0 ELSE 1 END, baseline = r.baseline"
                      " FROM (SELECT m.id AS mid, x.id, x.baseline FROM memories m"
                      " LEFT JOIN reindex_vectors x ON x.id = m.id WHERE m.embedded != 2) AS r"
                      " WHERE memories.id = r.mid")
            w.execute("DELETE FROM reindex_vectors")
            for key, value in (("embedding_model", model_id), ("embedding_dim", str(dim))):
                w.execute("INSERT INTO meta(key, value) VALUES (?, ?)"
                          " ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))
            w.execute(f"DELETE FROM meta WHERE key IN ('{MODEL_KEY}', '{DIM_KEY}', '{STATE_KEY}')")
            db.generation += 1
        return swapped
