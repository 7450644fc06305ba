"""Export and restore (``memcue export`` / ``memcue import`` of an export, ``sidecar.export``): the store's rows
read in a fixed order, and written back with their ids, times, flags and links as they were.

Reads page by id (or source id) so an export of any size streams: ``memories_after`` (every column of
``rows.COLUMNS``), ``version_links`` (old version -> newer one), ``candidates_after`` and ``deliveries_after``
(``delivered_ids``: a source id counted as a duplicate sighting of a memory). Scope: ``project`` None is every
project, a project is its rows and the global ("") ones.

Restores run in one transaction per batch. A memory keeps its id when no row holds it and it lies above
``Database.id_floor`` (a purged id is never given out again); else it gets the next id (``renumbered``). Its text
comes prepared (``store.write.prepare_write``: an edited export is cleaned and redacted like any write); the
keyword index (triggers), the entity graph (``graph.link_entities``) and the tags are rebuilt; its vector and
baseline are computed again by the worker (``embedded`` 0), since they depend on the model. With ``merge`` a
record the store holds already is ``present`` and nothing is written: a memory whose ``source_id`` was delivered
(``MemoryRows.by_source_id``), whose id holds the same kind, text and creation time, or (current ones) whose text
is a current memory of its project already; a candidate of the same signal, turn and text.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import apsw

from memcue.sidecar.store.sqlite.db import Database
from memcue.sidecar.store.sqlite.graph import link_entities
from memcue.sidecar.store.sqlite.rows import COLUMNS, row_dict
from memcue.sidecar.store.write import (
    NewMemory,
    PreparedWrite,
    Restored,
    RestoredCandidate,
    RestoredMemory,
    prepare_write,
)

#: ``embedded`` of a restored row: 0 waiting for a vector, 2 never embedded (bookkeeping).
_PENDING, _SKIPPED = 0, 2
#: The columns of an exported candidate (its vector is left out: the recurrence signal computes it again).
_CANDIDATE_COLUMNS = ("id, content, kind, project, session_id, harness, turn, signal, evidence, created_at, "
                      "expires_at, state, memory_id, reason, decided_at")


def _scope(project: str | None, column: str = "project") -> tuple[str, list[Any]]:
    """The scope condition of an export read (``project`` None: every row)."""
    if project is None:
        return "1", []
    return f"{column} IN (?, '')", [project]


class Transfer:
    """Export reads and restore writes over ``db``; see the module docstring."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # -- export reads ----------------------------------------------------------------------------
    def memories_after(self, after_id: int, limit: int, project: str | None) -> list[dict[str, Any]]:
        """Memory rows in scope with an id above ``after_id``, ascending, at most ``limit`` (``rows.row_dict``)."""
        where, args = _scope(project)
        rows = self._db.reader().execute(f"SELECT {COLUMNS} FROM memories WHERE id > ? AND {where} ORDER BY id"
                                         " LIMIT ?", [after_id, *args, limit]).fetchall()
        return [row_dict(r) for r in rows]

    def version_links(self, project: str | None) -> dict[int, int]:
        """Old version id -> the id of the version that replaced it, for every superseded row in scope."""
        where, args = _scope(project)
        rows = self._db.reader().execute(
            f"SELECT id, superseded_by FROM memories WHERE superseded_by IS NOT NULL AND {where}", args).fetchall()
        return {int(a): int(b) for a, b in rows}

    def candidates_after(self, after_id: int, limit: int, project: str | None) -> list[dict[str, Any]]:
        """Candidates in scope with an id above ``after_id``, ascending, at most ``limit``; ``evidence`` decoded."""
        where, args = _scope(project)
        rows = self._db.reader().execute(
            f"SELECT {_CANDIDATE_COLUMNS} FROM candidates WHERE id > ? AND {where} ORDER BY id LIMIT ?",
            [after_id, *args, limit]).fetchall()
        keys = [c.strip() for c in _CANDIDATE_COLUMNS.split(",")]
        out = [dict(zip(keys, r, strict=True)) for r in rows]
        for row in out:
            row["evidence"] = json.loads(row["evidence"] or "{}")
        return out

    def deliveries_after(self, after: str, limit: int, project: str | None) -> list[dict[str, Any]]:
        """``delivered_ids`` rows (``source_id``, ``memory_id``, ``created_at``) of memories in scope with a source
        id above ``after``, ascending (by code point), at most ``limit``."""
        where, args = _scope(project, "m.project")
        rows = self._db.reader().execute(
            "SELECT d.source_id, d.memory_id, d.created_at FROM delivered_ids d JOIN memories m ON m.id = d.memory_id"
            f" WHERE d.source_id > ? AND {where} ORDER BY d.source_id LIMIT ?", [after, *args, limit]).fetchall()
        return [{"source_id": s, "memory_id": int(m), "created_at": c} for s, m, c in rows]

    # -- restore writes --------------------------------------------------------------------------
    def restore_memories(self, items: Sequence[RestoredMemory], *, merge: bool,
                         known: Mapping[int, int]) -> list[Restored]:
        """Write ``items`` back (see the module docstring), in order, in one transaction; one outcome each.
        ``superseded_by`` is an id of the export: ``known`` (export id -> id here) or an earlier item of the batch
        must say what it became, so newer versions come first. A memory whose text is empty after preparation, or
        whose newer version is not restored, is ``bad``. Raises ``ValueError`` for a bad tag."""
        prepared = [prepare_write(NewMemory(content=m.content, kind=m.kind, project=m.project, session_id=m.session_id,
                                            source=m.source, metadata=m.metadata, tags=m.tags)) for m in items]
        ids = dict(known)
        db = self._db
        out: list[Restored] = []
        with db.write_lock, db.writer:
            for m, p in zip(items, prepared, strict=True):
                result = self._restore_memory(m, p, merge, ids)
                if result.id is not None:
                    ids[m.id] = result.id
                out.append(result)
            db.generation += 1
        return out

    def _restore_memory(self, m: RestoredMemory, p: PreparedWrite, merge: bool, ids: dict[int, int]) -> Restored:
        """One memory of ``restore_memories`` (inside its transaction); ``ids`` maps export ids to ids here."""
        writer = self._db.writer
        if not p.content.strip():
            return Restored("bad", error="the text is empty after cleaning")
        newer = None if m.superseded_by is None else ids.get(m.superseded_by)
        if m.superseded_by is not None and newer is None:
            return Restored("bad", error=f"its newer version #{m.superseded_by} was not restored before it")
        m = dataclasses.replace(m, superseded_by=newer)
        found = self._present(m, p, merge)
        if found is not None:
            return Restored("present", id=found)
        if m.source_id and _exists(writer, "memories", m.source_id, "source_id"):
            return Restored("bad", error=f"source_id {m.source_id!r} belongs to another memory")
        new_id = self._free_id(writer, "memories", m.id)
        writer.execute(
            "INSERT INTO memories(id, content, kind, project, session_id, created_at, updated_at, pinned, bookkeeping,"
            " superseded_by, source, source_id, embedded, metadata, content_sha1, seen_count, valid_from, valid_to,"
            " superseded_at, forgotten_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (new_id, p.content, p.kind, p.project, p.session_id, m.created_at, m.updated_at, int(m.pinned),
             int(m.bookkeeping), m.superseded_by, p.source, m.source_id, _SKIPPED if m.bookkeeping else _PENDING,
             json.dumps(p.metadata, ensure_ascii=False), None if m.superseded_by is not None else p.digest,
             m.seen_count, m.valid_from, m.valid_to, m.superseded_at, m.forgotten_at))
        writer.executemany("INSERT INTO memory_tags(memory_id, tag) VALUES (?, ?)", [(new_id, t) for t in p.tags])
        if not m.bookkeeping:
            link_entities(writer, new_id, list(p.entities))
        self._db.rows_written += 1
        return Restored("restored", id=new_id, renumbered=new_id != m.id)

    def _present(self, m: RestoredMemory, p: PreparedWrite, merge: bool) -> int | None:
        """The id of the row that already is ``m`` (with ``merge`` only; see the module docstring), else None."""
        if not merge:
            return None
        writer = self._db.writer
        if m.source_id:
            rows = writer.execute("SELECT id FROM memories WHERE source_id = ? UNION ALL SELECT memory_id FROM"
                                  " delivered_ids WHERE source_id = ?", (m.source_id, m.source_id)).fetchall()
            if rows:
                return int(rows[0][0])
        rows = writer.execute("SELECT id FROM memories WHERE id = ? AND kind = ? AND content = ? AND created_at = ?",
                              (m.id, p.kind, p.content, m.created_at)).fetchall()
        if not rows and m.superseded_by is None and m.forgotten_at is None:
            rows = writer.execute("SELECT id FROM memories WHERE project = ? AND content_sha1 = ? AND superseded_by IS"
                                  " NULL AND forgotten_at IS NULL LIMIT 1", (p.project, p.digest)).fetchall()
        return int(rows[0][0]) if rows else None

    def _free_id(self, writer: apsw.Connection, table: str, wanted: int) -> int:
        """``wanted`` when no row of ``table`` holds it (and, for memories, it lies above the id floor), else the
        next id above every row (and the floor)."""
        floor = self._db.id_floor if table == "memories" else 0
        if wanted > floor and not _exists(writer, table, wanted):
            return wanted
        top = writer.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchall()[0][0]
        return max(int(top), floor) + 1

    def restore_candidates(self, items: Sequence[RestoredCandidate], *, merge: bool) -> list[Restored]:
        """Write capture candidates back with their review state, in one transaction; one outcome each. With
        ``merge`` one held already (same signal, turn and text) is ``present``; without, it is ``bad``."""
        texts = [(c, prepare_write(NewMemory(content=c.content, kind="request")).content) for c in items]
        out: list[Restored] = []
        db = self._db
        with db.write_lock, db.writer:
            for c, text in texts:
                out.append(self._restore_candidate(c, text, merge))
        return out

    def _restore_candidate(self, c: RestoredCandidate, text: str, merge: bool) -> Restored:
        """One candidate of ``restore_candidates`` (inside its transaction)."""
        writer = self._db.writer
        if not text.strip():
            return Restored("bad", error="the text is empty after cleaning")
        digest = hashlib.sha1(text.encode()).hexdigest()
        held = writer.execute("SELECT id FROM candidates WHERE signal = ? AND turn = ? AND content_sha1 = ?",
                              (c.signal, c.turn, digest)).fetchall()
        if held:
            return (Restored("present", id=int(held[0][0])) if merge
                    else Restored("bad", error=f"held already as candidate #{held[0][0]}"))
        new_id = self._free_id(writer, "candidates", c.id)
        writer.execute(
            "INSERT INTO candidates(id, content, kind, project, session_id, harness, turn, signal, evidence,"
            " content_sha1, created_at, expires_at, state, memory_id, reason, decided_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (new_id, text, c.kind, c.project, c.session_id, c.harness, c.turn, c.signal,
             json.dumps(c.evidence, ensure_ascii=False), digest, c.created_at, c.expires_at, c.state, c.memory_id,
             c.reason, c.decided_at))
        return Restored("restored", id=new_id, renumbered=new_id != c.id)

    def restore_deliveries(self, items: Sequence[tuple[str, int, float]]) -> list[Restored]:
        """Record delivered source ids ``(source_id, memory id, created_at)`` again; one known already (as a
        delivery or a memory's own ``source_id``) is ``present``, one naming no memory ``bad``."""
        out: list[Restored] = []
        db = self._db
        with db.write_lock, db.writer:
            for source_id, memory_id, created in items:
                if (_exists(db.writer, "delivered_ids", source_id, "source_id")
                        or _exists(db.writer, "memories", source_id, "source_id")):
                    out.append(Restored("present", id=memory_id))
                elif not _exists(db.writer, "memories", memory_id):
                    out.append(Restored("bad", error=f"memory #{memory_id} is not in the store"))
                else:
                    db.writer.execute("INSERT INTO delivered_ids(source_id, memory_id, created_at) VALUES (?, ?, ?)",
                                      (source_id, memory_id, created))
                    out.append(Restored("restored", id=memory_id))
        return out

    def raise_id_floor(self, memory_id: int) -> None:
        """Keep the id floor at least ``memory_id`` (an export's: ids purged there are not given out here)."""
        db = self._db
        with db.write_lock, db.writer:
            db.raise_id_floor(memory_id)


def _exists(conn: apsw.Connection, table: str, value: Any, column: str = "id") -> bool:
    """True when a row of ``table`` has ``value`` in ``column`` (both names are this module's own)."""
    return bool(conn.execute(f"SELECT 1 FROM {table} WHERE {column} = ? LIMIT 1", (value,)).fetchall())
