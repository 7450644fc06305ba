"""The memory store: one SQLite file holding rows, the FTS5 index and the vec0 index.

One writer connection (guarded by a lock) and one reader connection per thread (WAL lets them run
side by side). Every write bumps ``generation`` so caches can tell the store changed.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from memcue.sidecar.store.bookkeeping import is_bookkeeping
from memcue.sidecar.store.db import READER_CACHE_KIB, connect
from memcue.sidecar.store.entities import extract_entities, link_entities
from memcue.sidecar.store.forgetting import Forgetting
from memcue.sidecar.store.journal import VectorJournal
from memcue.sidecar.store.migrations import ensure_vector_table, migrate, schema_version
from memcue.sidecar.store.recall_queries import RecallQueries
from memcue.sidecar.store.redaction import redact
from memcue.sidecar.store.rows import COLUMNS, row_dict, scope_conditions
from memcue.sidecar.store.sanitize import sanitize_text
from memcue.sidecar.store.strip import strip_injected
from memcue.sidecar.store.usage import RecallUsage
from memcue.sidecar.store.vectors import VectorRows

#: ``embedded`` values: 0 waiting for a vector, 1 has one, 2 never embedded (bookkeeping rows).
PENDING, EMBEDDED, SKIPPED = 0, 1, 2
#: ``doc_frequencies`` stops counting here: a word in this many memories is common.
DF_CAP = 1000
#: How long a counted document frequency is reused (s), and how many (project, cap, term) counts are kept.
DF_CACHE_TTL_S = 30.0
DF_CACHE_SIZE = 8192
#: Inserted rows between two refreshes of the query planner's statistics (``Store.optimize_if_due``).
OPTIMIZE_EVERY = 1000

#: Kinds that are a record of the session rather than knowledge: stored as bookkeeping rows (never an answer,
#: never embedded). ``response``: an agent's answer captured at Stop (hooks/run.py).
RECORD_KINDS = ("response",)


@dataclass
class NewMemory:
    """A memory to write. Times are Unix seconds; ``source_id`` makes a write idempotent (spool, import)."""

    content: str
    kind: str = "note"
    project: str = ""
    session_id: str = ""
    pinned: bool = False
    source: str = ""
    source_id: str | None = None
    created_at: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    valid_from: float | None = None
    valid_to: float | None = None


@dataclass(frozen=True)
class WriteResult:
    """Outcome of one write: the row ``id``, whether it was flagged ``bookkeeping``, and whether it was a
    ``duplicate`` of an earlier write (same ``source_id``, or same text in the same project): then nothing
    new was stored. ``redacted``: secrets replaced by markers in the text (``store.redaction``)."""

    id: int
    bookkeeping: bool
    duplicate: bool = False
    redacted: int = 0


def _redact_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` with secrets out of ``embed_text`` (embedded instead of the content when present)."""
    if isinstance(metadata.get("embed_text"), str):
        return {**metadata, "embed_text": redact(metadata["embed_text"]).text}
    return metadata


class Store(RecallQueries, VectorRows, Forgetting, RecallUsage):
    """Rows, keyword index and vector index in one SQLite file at ``path``.

    Raises ``apsw.Error`` when the file cannot be opened or migrated.
    """

    def __init__(self, path: Path | str, *, want_vec: bool = True) -> None:
        self.path = str(path)
        self._want_vec = want_vec
        self._write_lock = threading.Lock()
        self._local = threading.local()
        self._writer, self.vec = connect(self.path, want_vec=want_vec)
        migrate(self._writer)
        # Query-planner statistics (SQLite's advice for long-lived connections: optimize with 0x10002 at
        # open, then now and then); without them a pinned lookup scans the project's rows.
        self._writer.execute("PRAGMA optimize=0x10002")
        self.generation = 0
        #: Rows inserted through this Store (``optimize_if_due`` counts from it).
        self.rows_written = 0
        self._optimized_at = 0
        #: Ids whose vector or currency changed, for in-memory vector indexes (``recall.vector_index``).
        self.vector_journal = VectorJournal()
        self._df_cache: dict[tuple[str | None, int, str], tuple[int, float]] = {}
        self._df_lock = threading.Lock()
        self.vector_dim: int | None = None
        self.vector_note = "" if self.vec.available else f"sqlite-vec unavailable: {self.vec.error}"

    # -- connections -------------------------------------------------------------------------
    def _reader(self) -> apsw.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn, _ = connect(self.path, want_vec=self.vec.available, cache_kib=READER_CACHE_KIB)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Checkpoint the WAL and close the writer connection."""
        with self._write_lock:
            try:
                self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                self._writer.close()

    def optimize_if_due(self, every: int = OPTIMIZE_EVERY) -> bool:
        """Refresh the query planner's statistics (``PRAGMA optimize``) once ``every`` rows were inserted
        since the last refresh; True when it ran. Cheap when nothing needs analysing."""
        if self.rows_written - self._optimized_at < every:
            return False
        with self._write_lock:
            self._writer.execute("PRAGMA optimize")
        self._optimized_at = self.rows_written
        return True

    # -- meta and model ----------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        rows = self._reader().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchall()
        return rows[0][0] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self._write_lock, self._writer:
            self._writer.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def delete_meta(self, key: str) -> None:
        """Forget ``key`` in the ``meta`` table (no error when absent)."""
        with self._write_lock, self._writer:
            self._writer.execute("DELETE FROM meta WHERE key = ?", (key,))

    @property
    def schema_version(self) -> int:
        return schema_version(self._reader())

    def bind_model(self, model_id: str, dim: int) -> bool:
        """Record the embedding model (id, dimension) or check it against the recorded one.

        Returns True when vectors can be used: sqlite-vec loaded and the model matches what the stored
        vectors were made with. On a mismatch nothing is dropped; ``vector_note`` says why.
        """
        if not self.vec.available:
            return False
        recorded_id, recorded_dim = self.get_meta("embedding_model"), self.get_meta("embedding_dim")
        if recorded_id is None:
            self.set_meta("embedding_model", model_id)
            self.set_meta("embedding_dim", str(dim))
        elif recorded_id != model_id or int(recorded_dim or 0) != dim:
            self.vector_note = (
                f"embedding model mismatch: store has {recorded_id} ({recorded_dim} dims), "
                f"configured {model_id} ({dim} dims); keyword-only until re-indexed"
            )
            return False
        with self._write_lock, self._writer:
            ensure_vector_table(self._writer, dim)
        self.vector_dim = dim
        self.vector_journal.reset()
        self.vector_note = ""
        return True

    # -- writes ------------------------------------------------------------------------------
    def remember(self, memory: NewMemory) -> WriteResult:
        """Store one memory at once (keyword-searchable on return); its vector comes later."""
        return self.remember_many([memory])[0]

    def remember_many(self, memories: Iterable[NewMemory]) -> list[WriteResult]:
        """Store several memories in one transaction; bookkeeping flags are set in the same transaction.

        The same text (and kind) written again in the same project is not stored twice: the existing row's
        ``seen_count`` goes up and the result says ``duplicate``. Secrets are replaced by markers first
        (``store.redaction``, also in ``metadata["embed_text"]``, the text embedded instead when given), and a
        captured prompt (kind ``request``) loses any memcue block pasted into it (``store.strip``). Raises
        ``ValueError`` for empty text (nothing of the batch is written then).
        """
        results: list[WriteResult] = []
        now = time.time()
        with self._write_lock, self._writer:
            for m in memories:
                if m.source_id:
                    found = self._writer.execute(
                        "SELECT id, bookkeeping FROM memories WHERE source_id = ?", (m.source_id,)
                    ).fetchall()
                    if found:
                        results.append(WriteResult(int(found[0][0]), bool(found[0][1]), duplicate=True))
                        continue
                content = sanitize_text(m.content)
                # A captured prompt: memcue's own injected block is not stored again. A prompt that was only
                # such a block is kept as it was, as a bookkeeping row (never recalled, never embedded).
                stripped = strip_injected(content) if m.kind == "request" else content
                only_block = bool(content.strip()) and not stripped.strip()
                content = content if only_block else stripped
                secrets = redact(content)
                content = secrets.text
                if not content.strip():
                    raise ValueError("a memory needs some text: the content is empty after cleaning")
                project = sanitize_text(m.project or "")
                digest = hashlib.sha1(f"{m.kind}\x00{content}".encode()).hexdigest()
                same = self._writer.execute(
                    "SELECT id, bookkeeping FROM memories WHERE project = ? AND content_sha1 = ?"
                    " AND superseded_by IS NULL AND forgotten_at IS NULL LIMIT 1", (project, digest)).fetchall()
                if same:
                    self._writer.execute(
                        "UPDATE memories SET seen_count = seen_count + 1, updated_at = ? WHERE id = ?",
                        (now, same[0][0]))
                    results.append(WriteResult(int(same[0][0]), bool(same[0][1]), duplicate=True,
                                               redacted=secrets.count))
                    continue
                flagged = only_block or m.kind in RECORD_KINDS or is_bookkeeping(content)
                created = m.created_at if m.created_at is not None else now
                self._writer.execute(
                    "INSERT INTO memories(content, kind, project, session_id, created_at, updated_at, pinned,"
                    " bookkeeping, source, source_id, embedded, metadata, content_sha1, valid_from, valid_to)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        content,
                        sanitize_text(m.kind or "note"),
                        project,
                        sanitize_text(m.session_id or ""),
                        created,
                        created,
                        int(m.pinned),
                        int(flagged),
                        sanitize_text(m.source or ""),
                        m.source_id,
                        SKIPPED if flagged else PENDING,
                        json.dumps(_redact_metadata(m.metadata), ensure_ascii=False),
                        digest,
                        m.valid_from,
                        m.valid_to,
                    ),
                )
                new_id = self._writer.last_insert_rowid()
                if not flagged:
                    link_entities(self._writer, new_id, extract_entities(content))
                results.append(WriteResult(new_id, flagged, redacted=secrets.count))
                self.rows_written += 1
            self.generation += 1
        return results

    def reinforce(self, memory_id: int) -> None:
        """Count one more sighting of ``memory_id`` (``seen_count`` + 1, ``updated_at`` now), as writing the same
        text again does; used for near-duplicates (``sidecar.dedup``)."""
        with self._write_lock, self._writer:
            self._writer.execute("UPDATE memories SET seen_count = seen_count + 1, updated_at = ? WHERE id = ?",
                                 (time.time(), int(memory_id)))
            self.generation += 1

    def update(self, memory_id: int, memory: NewMemory) -> WriteResult:
        """Write ``memory`` as a new version of ``memory_id``: the old row gets ``superseded_by`` (the new id),
        ``superseded_at`` (now) and, if open, ``valid_to`` (now); the new row is valid from now unless
        ``memory.valid_from`` says otherwise. Superseded rows are served only under an earlier ``as_of``.

        Raises ``KeyError`` for an unknown id, ``ValueError`` for a row already superseded or empty text.
        """
        now = time.time()
        old = self.fetch([memory_id]).get(int(memory_id))
        if old is None:
            raise KeyError(f"no memory with id {memory_id}")
        if old["superseded_by"] is not None:
            raise ValueError(f"memory {memory_id} was already replaced by {old['superseded_by']}; update that one")
        if old["forgotten_at"] is not None:
            raise ValueError(f"memory {memory_id} was forgotten; remember the new text instead")
        if memory.valid_from is None:
            memory.valid_from = now
        if not memory.project:
            memory.project = old["project"]
        memory.source_id = None
        with self._write_lock, self._writer:
            # The new text may equal an older version's: skip the exact-duplicate reinforcement by hashing
            # the old row out of the way first.
            self._writer.execute("UPDATE memories SET content_sha1 = NULL WHERE id = ?", (memory_id,))
        new = self.remember_many([memory])[0]
        with self._write_lock, self._writer:
            self._writer.execute(
                "UPDATE memories SET superseded_by = ?, superseded_at = ?, valid_to = coalesce(valid_to, ?)"
                " WHERE id = ?", (new.id, now, now, memory_id))
            self.generation += 1
        self.vector_journal.record([int(memory_id)])
        return new

    # -- reads -------------------------------------------------------------------------------
    def fetch(self, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """Rows by id as dicts (columns of ``COLUMNS``); unknown ids are absent."""
        ids = list(dict.fromkeys(int(i) for i in ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self._reader().execute(f"SELECT {COLUMNS} FROM memories WHERE id IN ({marks})", ids).fetchall()
        return {int(r[0]): row_dict(r) for r in rows}

    def list_memories(
        self, *, project: str | None = None, limit: int = 50, include_bookkeeping: bool = True,
        kinds_excluded: Sequence[str] = (), pinned_only: bool = False, kind: str | None = None,
        include_forgotten: bool = False,
    ) -> list[dict[str, Any]]:
        """Newest first. ``project`` None means every project; a project also gets global ("") rows; ``kind``
        keeps only rows of that kind. Forgotten rows only with ``include_forgotten``."""
        where, args = scope_conditions(project=project, exclude_kinds=kinds_excluded,
                                       include_bookkeeping=include_bookkeeping, include_forgotten=include_forgotten)
        if pinned_only:
            where.append("pinned = 1")
        if kind is not None:
            where.append("kind = ?")
            args.append(kind)
        sql = f"SELECT {COLUMNS} FROM memories WHERE {' AND '.join(where)} ORDER BY created_at DESC, id DESC LIMIT ?"
        return [row_dict(r) for r in self._reader().execute(sql, [*args, limit]).fetchall()]

    def bm25(
        self, match: str, *, project: str | None, limit: int, exclude_kinds: Sequence[str] = (),
        include_superseded: bool = False,
    ) -> list[tuple[int, float]]:
        """FTS5 search: ``(id, score)`` best first, score = -bm25() (higher is better, > 0 for a match).

        ``match`` must already be a safe FTS5 expression (see ``recall.query``). Superseded rows only with
        ``include_superseded`` (an ``as_of`` recall).
        """
        where, args = scope_conditions("m", project=project, exclude_kinds=exclude_kinds,
                                       include_superseded=include_superseded)
        where, args = ["memories_fts MATCH ?", *where], [match, *args]
        sql = (
            # CROSS JOIN: the full-text match drives the join whatever the planner's statistics say (with stale
            # ones it ran the MATCH once per row of a project: 2.8 s at 27,000 memories).
            "SELECT m.id, -bm25(memories_fts) AS score FROM memories_fts"
            " CROSS JOIN memories m ON m.id = memories_fts.rowid"
            f" WHERE {' AND '.join(where)} ORDER BY bm25(memories_fts), m.id LIMIT ?"
        )
        return [(int(r[0]), float(r[1])) for r in self._reader().execute(sql, [*args, limit]).fetchall()]

    def doc_frequencies(self, terms: Sequence[str], cap: int = DF_CAP, *, project: str | None = None) -> dict[str, int]:
        """How many indexed memories (in ``project`` and global rows; all projects when None) contain each
        term, through FTS5's own tokenizer. Counts stop at ``cap``: past that a word is simply common.
        ``terms`` must be plain words.

        Counts above zero are reused for ``DF_CACHE_TTL_S`` (s) even across writes: a word's frequency barely
        moves in that time, and counting a common word costs about a millisecond per recall. A word no
        memory carries is counted every time, so a new word is known as soon as it is written."""
        conn = self._reader()
        out = {}
        now = time.monotonic()
        for term in terms:
            key = (project, cap, term)
            hit = self._df_cache.get(key)
            if hit is not None and now - hit[1] < DF_CACHE_TTL_S:
                out[term] = hit[0]
                continue
            phrase = '"' + term.replace('"', '""') + '"'
            if project is None:
                sql, args = "SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?", (phrase, cap)
            else:
                sql = ("SELECT 1 FROM memories_fts f CROSS JOIN memories m ON m.id = f.rowid"
                       " WHERE memories_fts MATCH ? AND m.project IN (?, '') LIMIT ?")
                args = (phrase, project, cap)
            count = out[term] = int(conn.execute(f"SELECT count(*) FROM ({sql})", args).fetchall()[0][0])
            if count > 0:
                with self._df_lock:
                    self._df_cache[key] = (count, now)
                    while len(self._df_cache) > DF_CACHE_SIZE:
                        self._df_cache.pop(next(iter(self._df_cache)))
        return out

    def doc_count(self, project: str | None = None) -> int:
        """Number of current (not superseded, not forgotten), non-bookkeeping memories in ``project`` and global
        rows (all when None)."""
        sql = "SELECT count(*) FROM memories WHERE bookkeeping = 0 AND superseded_by IS NULL AND forgotten_at IS NULL"
        args: list[str] = []
        if project is not None:
            sql += " AND project IN (?, '')"
            args.append(project)
        return int(self._reader().execute(sql, args).fetchall()[0][0])

    def counts(self) -> dict[str, int]:
        """Row counts: total, bookkeeping, pending embeddings, embedded."""
        row = self._reader().execute(
            "SELECT count(*), coalesce(sum(bookkeeping), 0), coalesce(sum(embedded = 0), 0),"
            " coalesce(sum(embedded = 1), 0) FROM memories"
        ).fetchall()[0]
        return {"memories": row[0], "bookkeeping": row[1], "pending_embeddings": row[2], "embedded": row[3]}
