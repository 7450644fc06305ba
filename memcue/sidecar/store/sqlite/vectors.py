"""The store's vector rows: binding the embedding model to a vec0 table, texts waiting for an embedding,
writing vectors and baselines, and reading them back (sqlite-vec KNN, vectors by id, every vector for an
in-memory index, and the scope fields such an index filters on)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from memcue.sidecar.store.sqlite.db import Database
from memcue.sidecar.store.sqlite.meta import MetaTable
from memcue.sidecar.store.sqlite.migrations import ensure_vector_table

#: What an in-memory index filters a row on: ``(project, kind, current)``; current = not superseded, not
#: forgotten.
ScopeFields = tuple[str, str, bool]
_SCOPE_COLUMNS = "id, project, kind, superseded_by IS NULL AND forgotten_at IS NULL"


class VectorRows:
    """Vector reads and writes over ``db``; ``vector_dim`` is the bound dimension (None until ``bind_model``
    succeeds) and ``vector_note`` says why vectors are off."""

    def __init__(self, db: Database, meta: MetaTable) -> None:
        self._db = db
        self._meta = meta
        self.vector_dim: int | None = None
        self.vector_note = "" if db.vec.available else f"sqlite-vec unavailable: {db.vec.error}"

    def bind_model(self, model_id: str, dim: int) -> bool:
        """Record the embedding model (id, dimension) or check it against the recorded one.

        Returns True when vectors can be used: sqlite-vec loaded and the model matches what the stored
        vectors were made with. On a mismatch nothing is dropped; ``vector_note`` says why.
        """
        db = self._db
        if not db.vec.available:
            return False
        recorded_id, recorded_dim = self._meta.get("embedding_model"), self._meta.get("embedding_dim")
        if recorded_id is None:
            self._meta.set("embedding_model", model_id)
            self._meta.set("embedding_dim", str(dim))
        elif recorded_id != model_id or int(recorded_dim or 0) != dim:
            self.vector_note = (
                f"embedding model mismatch: the stored vectors were made with {recorded_id} ({recorded_dim} dims), "
                f"the configured model is {model_id} ({dim} dims); recall is keyword-only until `memcue reindex` "
                f"re-embeds every memory with {model_id}. Nothing was deleted: configuring {recorded_id} again "
                "restores hybrid recall at once"
            )
            return False
        with db.write_lock, db.writer:
            ensure_vector_table(db.writer, dim)
        self.vector_dim = dim
        db.vector_journal.reset()
        self.vector_note = ""
        return True

    def stored_readable(self) -> bool:
        """Stored vectors can be read: the model is bound, or no model was bound yet in this process but an earlier
        one recorded its vectors (sqlite-vec loaded, no mismatch found: after one, ``vector_note`` says so and the
        vectors, of another model, stay unread)."""
        if self.vector_dim is not None:
            return True
        if not self._db.vec.available or self.vector_note or self._meta.get("embedding_model") is None:
            return False
        return self._db.reader().execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memories_vec'").fetchone() is not None

    def pending_embeddings(self, limit: int = 64) -> list[tuple[int, str, str, dict[str, Any]]]:
        """Rows still waiting for a vector: ``(id, content, project, metadata)``, oldest first."""
        rows = self._db.reader().execute(
            "SELECT id, content, project, metadata FROM memories WHERE embedded = 0 ORDER BY id LIMIT ?", (limit,)
        ).fetchall()
        return [(int(r[0]), r[1], r[2], json.loads(r[3] or "{}")) for r in rows]

    def reembed_with(self, items: Sequence[tuple[int, str]]) -> int:
        """Set each memory's ``metadata["embed_text"]`` to the given text and mark it for embedding again
        (``pending_embeddings``); its old vector serves until the new one is stored. ``items``: ``(memory id,
        text)``; returns the rows changed."""
        db, changed = self._db, 0
        with db.write_lock, db.writer:
            for mid, text in items:
                db.writer.execute(
                    "UPDATE memories SET metadata = json_set(coalesce(metadata, '{}'), '$.embed_text', ?),"
                    " embedded = 0 WHERE id = ?", (text, mid))
                changed += db.writer.changes()
        return changed

    def set_embeddings(self, items: Sequence[tuple[int, bytes]]) -> None:
        """Store vectors: ``(memory id, float32 bytes)`` each; marks the rows embedded.

        The vector row copies the memory's project and kind, so KNN can scope and filter on them.
        """
        db = self._db
        with db.write_lock, db.writer:
            for mid, blob in items:
                db.writer.execute("DELETE FROM memories_vec WHERE rowid = ?", (mid,))
                db.writer.execute(
                    "INSERT INTO memories_vec(rowid, embedding, project, kind)"
                    " SELECT id, ?, project, kind FROM memories WHERE id = ?", (blob, mid)
                )
                db.writer.execute("UPDATE memories SET embedded = 1 WHERE id = ?", (mid,))
        db.vector_journal.record(mid for mid, _ in items)

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
        rows = self._db.reader().execute(sql, args).fetchall()
        return sorted(((int(r[0]), 1.0 - float(r[1])) for r in rows), key=lambda x: (-x[1], x[0]))

    def vectors(self, ids: Iterable[int]) -> dict[int, bytes]:
        """Stored float32 vectors by memory id (ids without a vector are absent). Readable once the model is bound,
        and before that while the model loads (``stored_readable``): stored vectors compare with each other, so the
        session-start block of a sidecar that just started can already show a fact told twice once."""
        ids = list(dict.fromkeys(int(i) for i in ids))
        if not ids or not self.stored_readable():
            return {}
        out: dict[int, bytes] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.reader().execute(
                f"SELECT rowid, embedding FROM memories_vec WHERE rowid IN ({marks})", chunk).fetchall()
            out.update((int(r[0]), bytes(r[1])) for r in rows)
        return out

    def all_vectors(self, batch: int, cache_kib: int) -> Iterator[list[tuple[int, bytes]]]:
        """Every stored vector as ``(memory id, float32 bytes)``, in lists of ``batch`` (the last one shorter,
        maybe empty), read with a ``cache_kib`` (KiB) page cache: vec0 reads a whole chunk of vectors per row,
        so with the small reader cache every row would read its chunk again (2.4 s instead of 0.25 s at
        27,000). The reader's cache is restored (and its memory released) when the iteration ends."""
        conn = self._db.reader()
        cache = conn.execute("PRAGMA cache_size").fetchall()[0][0]
        conn.execute(f"PRAGMA cache_size = -{int(cache_kib)}")
        try:
            rows: list[tuple[int, bytes]] = []
            for mid, blob in conn.execute("SELECT rowid, embedding FROM memories_vec"):
                rows.append((int(mid), blob))
                if len(rows) == batch:
                    yield rows
                    rows = []
            yield rows
        finally:
            conn.execute(f"PRAGMA cache_size = {int(cache)}")
            conn.execute("PRAGMA shrink_memory")

    def scope_fields(self, ids: Sequence[int]) -> dict[int, ScopeFields]:
        """id -> ``(project, kind, current)`` for the non-bookkeeping rows among ``ids``."""
        out: dict[int, ScopeFields] = {}
        reader = self._db.reader()
        for i in range(0, len(ids), 900):
            chunk = list(ids[i:i + 900])
            rows = reader.execute(f"SELECT {_SCOPE_COLUMNS} FROM memories"
                                  f" WHERE bookkeeping = 0 AND id IN ({','.join('?' * len(chunk))})", chunk).fetchall()
            out.update((int(r[0]), (str(r[1]), str(r[2]), bool(r[3]))) for r in rows)
        return out

    def all_scope_fields(self) -> dict[int, ScopeFields]:
        """id -> ``(project, kind, current)`` for every embedded, non-bookkeeping row."""
        rows = self._db.reader().execute(
            f"SELECT {_SCOPE_COLUMNS} FROM memories WHERE embedded = 1 AND bookkeeping = 0")
        return {int(r[0]): (str(r[1]), str(r[2]), bool(r[3])) for r in rows}

    def set_baselines(self, items: Sequence[tuple[int, float]]) -> None:
        """Store each memory's ``baseline`` cosine ``(memory id, value)`` (see ``recall.baseline``)."""
        db = self._db
        with db.write_lock, db.writer:
            db.writer.executemany("UPDATE memories SET baseline = ? WHERE id = ?", [(b, m) for m, b in items])

    def missing_baselines(self, limit: int = 256) -> list[int]:
        """Ids of embedded memories without a baseline yet, oldest first."""
        rows = self._db.reader().execute(
            "SELECT id FROM memories WHERE embedded = 1 AND baseline IS NULL ORDER BY id LIMIT ?", (limit,)).fetchall()
        return [int(r[0]) for r in rows]
