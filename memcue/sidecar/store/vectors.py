"""The store's vector rows: texts waiting for an embedding, writing vectors and baselines, and reading them
back (sqlite-vec KNN, vectors by id). Mixed into ``Store`` (``store.memories``), which provides the
connections, the write lock and the vector journal."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from memcue.sidecar.store.journal import VectorJournal

if TYPE_CHECKING:
    import apsw


class VectorRows:
    """Vector reads and writes; see the module docstring."""

    vector_dim: int | None
    vector_note: str
    vector_journal: VectorJournal
    _write_lock: threading.Lock
    _writer: apsw.Connection

    def _reader(self) -> apsw.Connection:  # provided by Store
        raise NotImplementedError

    def pending_embeddings(self, limit: int = 64) -> list[tuple[int, str, str, dict[str, Any]]]:
        """Rows still waiting for a vector: ``(id, content, project, metadata)``, oldest first."""
        rows = self._reader().execute(
            "SELECT id, content, project, metadata FROM memories WHERE embedded = 0 ORDER BY id LIMIT ?", (limit,)
        ).fetchall()
        return [(int(r[0]), r[1], r[2], json.loads(r[3] or "{}")) for r in rows]

    def set_embeddings(self, items: Sequence[tuple[int, bytes]]) -> None:
        """Store vectors: ``(memory id, float32 bytes)`` each; marks the rows embedded.

        The vector row copies the memory's project and kind, so KNN can scope and filter on them.
        """
        with self._write_lock, self._writer:
            for mid, blob in items:
                self._writer.execute("DELETE FROM memories_vec WHERE rowid = ?", (mid,))
                self._writer.execute(
                    "INSERT INTO memories_vec(rowid, embedding, project, kind)"
                    " SELECT id, ?, project, kind FROM memories WHERE id = ?", (blob, mid)
                )
                self._writer.execute("UPDATE memories SET embedded = 1 WHERE id = ?", (mid,))
        self.vector_journal.record(mid for mid, _ in items)

    def knn(
        self, vector: bytes, *, project: str | None, k: int, exclude_kinds: Sequence[str] = ()
    ) -> list[tuple[int, float]]:
        """Nearest vectors by cosine distance: ``(id, cosine similarity)`` best first.

        With a ``project``, searches that project and global rows; ``exclude_kinds`` are filtered inside
        the KNN (so thousands of captured prompts cannot crowd real memories out of the top k).
        Raises ``RuntimeError`` when no vector table is bound.
        """
        if self.vector_dim is None:
            raise RuntimeError(self.vector_note or "no vector table")
        sql, args = "SELECT rowid, distance FROM memories_vec WHERE embedding MATCH ? AND k = ?", [vector, k]
        if project is not None:
            sql += " AND project IN (?, '')"
            args.append(project)
        for kind in exclude_kinds:
            sql += " AND kind != ?"
            args.append(kind)
        rows = self._reader().execute(sql, args).fetchall()
        return sorted(((int(r[0]), 1.0 - float(r[1])) for r in rows), key=lambda x: (-x[1], x[0]))

    def vectors(self, ids: Iterable[int]) -> dict[int, bytes]:
        """Stored float32 vectors by memory id (ids without a vector are absent)."""
        ids = list(dict.fromkeys(int(i) for i in ids))
        if not ids or self.vector_dim is None:
            return {}
        out: dict[int, bytes] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._reader().execute(
                f"SELECT rowid, embedding FROM memories_vec WHERE rowid IN ({marks})", chunk).fetchall()
            out.update((int(r[0]), bytes(r[1])) for r in rows)
        return out

    def set_baselines(self, items: Sequence[tuple[int, float]]) -> None:
        """Store each memory's ``baseline`` cosine ``(memory id, value)`` (see ``recall.baseline``)."""
        with self._write_lock, self._writer:
            self._writer.executemany("UPDATE memories SET baseline = ? WHERE id = ?", [(b, m) for m, b in items])

    def missing_baselines(self, limit: int = 256) -> list[int]:
        """Ids of embedded memories without a baseline yet, oldest first."""
        rows = self._reader().execute(
            "SELECT id FROM memories WHERE embedded = 1 AND baseline IS NULL ORDER BY id LIMIT ?", (limit,)).fetchall()
        return [int(r[0]) for r in rows]
