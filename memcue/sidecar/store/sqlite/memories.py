"""Memory rows: writing them (new, again, as a new version) and reading them back (by id, newest first, counts).

Every write goes through the one preparation path (``store.write.prepare_write``) unless the caller prepared it
already (the near-duplicate check of ``/remember`` does), before the writer lock is taken: under the lock run
only the statements, the row and its entities (``graph.link_entities``) in one transaction, and the bump of
``Database.generation``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from typing import Any

import apsw

from memcue.sidecar.store.sqlite.db import Database
from memcue.sidecar.store.sqlite.graph import link_entities
from memcue.sidecar.store.sqlite.rows import COLUMNS, row_dict, scope_conditions, tags_condition
from memcue.sidecar.store.write import CAPTURED_KINDS, NewMemory, PreparedWrite, WriteResult, prepare_write


def _tag(writer: apsw.Connection, memory_id: int, tags: Sequence[str]) -> None:
    """Put ``tags`` (normalised) on ``memory_id`` (inside the caller's transaction); tags it has already stay."""
    writer.executemany("INSERT OR IGNORE INTO memory_tags(memory_id, tag) VALUES (?, ?)",
                       [(memory_id, t) for t in tags])


#: ``embedded`` values: 0 waiting for a vector, 1 has one, 2 never embedded (bookkeeping rows).
PENDING, EMBEDDED, SKIPPED = 0, 1, 2


class MemoryRows:
    """Writes and plain reads of ``memories`` over ``db``; see the module docstring."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- writes ------------------------------------------------------------------------------
    def remember_many(self, memories: Iterable[NewMemory | PreparedWrite]) -> list[WriteResult]:
        """Store several memories in one transaction; bookkeeping flags are set in the same transaction.

        The same text (and kind) written again in the same project is not stored twice: the existing row's
        ``seen_count`` goes up and the result says ``duplicate``. A ``source_id`` seen before (as a row's own, or
        recorded in ``delivered_ids`` when its write was such a duplicate) is the same delivery again: the result
        says ``duplicate`` and nothing changes, so one event delivered twice counts once. Each memory is prepared
        first, before the writer lock (``store.write.prepare``: cleaned, a captured prompt's memcue block stripped,
        secrets redacted, also in ``metadata["embed_text"]``, a captured text cut to its cap, entities found)
        unless it comes prepared. Raises ``ValueError`` for empty text (nothing of the batch is written then).
        """
        results: list[WriteResult] = []
        # The text work (cleaning, redaction, the cut, entity extraction) before the lock: only SQL under it.
        prepared = [m if isinstance(m, PreparedWrite) else prepare_write(m) for m in memories]
        now = time.time()
        db = self._db
        with db.write_lock, db.writer:
            for p in prepared:
                if p.memory.source_id:  # delivered before: as a row of its own, or as a sighting of one
                    found = db.writer.execute(
                        "SELECT id, bookkeeping FROM memories WHERE source_id = ? UNION ALL"
                        " SELECT m.id, m.bookkeeping FROM delivered_ids d JOIN memories m ON m.id = d.memory_id"
                        " WHERE d.source_id = ?", (p.memory.source_id, p.memory.source_id)).fetchall()
                    if found:
                        results.append(WriteResult(int(found[0][0]), bool(found[0][1]), duplicate=True))
                        continue
                if not p.content.strip():
                    raise ValueError("a memory needs some text: the content is empty after cleaning")
                same = db.writer.execute(
                    "SELECT id, bookkeeping FROM memories WHERE project = ? AND content_sha1 = ?"
                    " AND superseded_by IS NULL AND forgotten_at IS NULL LIMIT 1", (p.project, p.digest)).fetchall()
                if same:
                    db.writer.execute(
                        "UPDATE memories SET seen_count = seen_count + 1, updated_at = ? WHERE id = ?",
                        (now, same[0][0]))
                    _tag(db.writer, int(same[0][0]), p.tags)  # the same text tagged anew carries both tags
                    if p.memory.source_id:  # the same delivery again is then no second sighting (issue 13)
                        db.writer.execute("INSERT OR IGNORE INTO delivered_ids(source_id, memory_id, created_at)"
                                          " VALUES (?, ?, ?)", (p.memory.source_id, same[0][0], now))
                    results.append(WriteResult(int(same[0][0]), bool(same[0][1]), duplicate=True,
                                               redacted=p.redacted))
                    continue
                results.append(self._insert(p, now))
                db.rows_written += 1
            db.generation += 1
        return results

    def _insert(self, p: PreparedWrite, now: float) -> WriteResult:
        """Insert one prepared memory (inside ``remember_many``'s transaction) and link its entities."""
        m, writer = p.memory, self._db.writer
        created = m.created_at if m.created_at is not None else now
        writer.execute(
            "INSERT INTO memories(id, content, kind, project, session_id, created_at, updated_at, pinned,"
            " bookkeeping, source, source_id, embedded, metadata, content_sha1, valid_from, valid_to)"
            " VALUES ((SELECT max(coalesce(max(id), 0), ?) + 1 FROM memories), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
            " ?, ?)",
            (self._db.id_floor, p.content, p.kind, p.project, p.session_id, created, created, int(m.pinned),
             int(p.bookkeeping), p.source, m.source_id, SKIPPED if p.bookkeeping else PENDING,
             json.dumps(p.metadata, ensure_ascii=False), p.digest, m.valid_from, m.valid_to),
        )
        new_id = writer.last_insert_rowid()
        _tag(writer, new_id, p.tags)
        if not p.bookkeeping:
            link_entities(writer, new_id, list(p.entities))
        return WriteResult(new_id, p.bookkeeping, redacted=p.redacted)

    def reinforce(self, memory_id: int, tags: Sequence[str] = ()) -> None:
        """Count one more sighting of ``memory_id`` (``seen_count`` + 1, ``updated_at`` now) and add ``tags``
        (normalised), as writing the same text again does; used for near-duplicates (``sidecar.dedup``)."""
        db = self._db
        with db.write_lock, db.writer:
            db.writer.execute("UPDATE memories SET seen_count = seen_count + 1, updated_at = ? WHERE id = ?",
                              (time.time(), int(memory_id)))
            _tag(db.writer, int(memory_id), tags)
            db.generation += 1

    def update(self, memory_id: int, memory: NewMemory, *, carry_source_id: bool = False) -> WriteResult:
        """Write ``memory`` as a new version of ``memory_id``: the old row gets ``superseded_by`` (the new id),
        ``superseded_at`` (now) and, if open, ``valid_to`` (now); the new row is valid from now unless
        ``memory.valid_from`` says otherwise. Superseded rows are served only under an earlier ``as_of``.
        ``carry_source_id``: the new version takes ``memory.source_id`` over from whichever row held it (an
        imported line's new text: the line's id then finds its newest version); else it has none.

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
        if not memory.tags:  # a new version keeps the tags of the one it replaces
            memory.tags = tuple(old["tags"])
        source_id = memory.source_id if carry_source_id else None
        memory.source_id = source_id
        db = self._db
        with db.write_lock, db.writer:
            # The new text may equal an older version's: skip the exact-duplicate reinforcement by hashing
            # the old row out of the way first.
            db.writer.execute("UPDATE memories SET content_sha1 = NULL WHERE id = ?", (memory_id,))
            if source_id:
                db.writer.execute("UPDATE memories SET source_id = NULL WHERE source_id = ?", (source_id,))
                db.writer.execute("DELETE FROM delivered_ids WHERE source_id = ?", (source_id,))
        new = self.remember_many([memory])[0]
        with db.write_lock, db.writer:
            db.writer.execute(
                "UPDATE memories SET superseded_by = ?, superseded_at = ?, valid_to = coalesce(valid_to, ?)"
                " WHERE id = ?", (new.id, now, now, memory_id))
            db.generation += 1
        db.vector_journal.record([int(memory_id)])
        return new

    # -- reads -------------------------------------------------------------------------------
    def by_source_id(self, source_id: str) -> dict[str, Any] | None:
        """The memory ``source_id`` was written as (``COLUMNS``, any state): the row carrying it, else the row its
        delivery was counted on as a duplicate (``delivered_ids``); None when the id was never delivered."""
        reader = self._db.reader()
        rows = reader.execute(f"SELECT {COLUMNS} FROM memories WHERE source_id = ?", (source_id,)).fetchall()
        if not rows:
            rows = reader.execute(f"SELECT {COLUMNS} FROM memories WHERE id ="
                                  " (SELECT memory_id FROM delivered_ids WHERE source_id = ?)", (source_id,)).fetchall()
        return row_dict(rows[0]) if rows else None

    def fetch(self, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """Rows by id as dicts (columns of ``COLUMNS``); unknown ids are absent."""
        ids = list(dict.fromkeys(int(i) for i in ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self._db.reader().execute(f"SELECT {COLUMNS} FROM memories WHERE id IN ({marks})", ids).fetchall()
        return {int(r[0]): row_dict(r) for r in rows}

    def list_memories(
        self, *, project: str | None = None, limit: int = 50, include_bookkeeping: bool = True,
        kinds_excluded: Sequence[str] = (), pinned_only: bool = False, kind: str | None = None,
        include_forgotten: bool = False, tags: Sequence[str] = (),
    ) -> list[dict[str, Any]]:
        """Newest first. ``project`` None means every project; a project also gets global ("") rows; ``kind``
        keeps only rows of that kind, ``tags`` (normalised) only rows carrying every one of them. Forgotten rows
        only with ``include_forgotten``."""
        where, args = scope_conditions(project=project, exclude_kinds=kinds_excluded,
                                       include_bookkeeping=include_bookkeeping, include_forgotten=include_forgotten)
        if pinned_only:
            where.append("pinned = 1")
        if kind is not None:
            where.append("kind = ?")
            args.append(kind)
        if tags:
            condition, tag_args = tags_condition(tags)
            where.append(condition)
            args.extend(tag_args)
        sql = f"SELECT {COLUMNS} FROM memories WHERE {' AND '.join(where)} ORDER BY created_at DESC, id DESC LIMIT ?"
        return [row_dict(r) for r in self._db.reader().execute(sql, [*args, limit]).fetchall()]

    def counts(self) -> dict[str, int]:
        """Row counts: total, bookkeeping, pending embeddings, embedded; and a partition of the total: ``answering``
        (current memories that can answer: not bookkeeping, not captured, not forgotten or replaced), ``captured``
        (prompts, agent answers and session events the hooks kept: ``CAPTURED_KINDS``, bookkeeping or not),
        ``other_bookkeeping`` (bookkeeping rows of other kinds) and ``inactive`` (forgotten or replaced memories)."""
        marks = ",".join("?" * len(CAPTURED_KINDS))
        row = self._db.reader().execute(
            "SELECT count(*), coalesce(sum(bookkeeping), 0), coalesce(sum(embedded = 0), 0),"
            f" coalesce(sum(embedded = 1), 0), coalesce(sum(bookkeeping = 0 AND kind NOT IN ({marks})"
            " AND forgotten_at IS NULL AND superseded_by IS NULL), 0),"
            f" coalesce(sum(kind IN ({marks})), 0), coalesce(sum(bookkeeping = 1 AND kind NOT IN ({marks})), 0)"
            " FROM memories", [*CAPTURED_KINDS, *CAPTURED_KINDS, *CAPTURED_KINDS]
        ).fetchall()[0]
        inactive = row[0] - row[4] - row[5] - row[6]
        return {"memories": row[0], "bookkeeping": row[1], "pending_embeddings": row[2], "embedded": row[3],
                "answering": row[4], "captured": row[5], "other_bookkeeping": row[6], "inactive": inactive}
