"""Hard delete: ``purge`` removes memories for good, everywhere memcue keeps their text (DESIGN.md section 8:
``purge`` removes a memory everywhere), for a secret or a private detail that got stored.

Unlike ``forget`` (soft: the row stays, fetchable), a purge deletes, in one transaction: every version of each
memory (the rows its ``superseded_by`` chain links, older and newer, since each may hold the same text), their
keyword index entries (the FTS delete trigger), vectors, entity links (and the entities no memory names any more:
an entity's name is text of the memory), the capture candidates written as them, their usage-log items and
delivered source ids; no later memory is given a purged id (``Database.id_floor``). The writer connection runs
with ``secure_delete`` (freed pages are zeroed); afterwards the keyword index is rewritten (FTS5 ``optimize``, so
no old segment keeps the words) and the WAL is checkpointed and truncated, so the text is left in neither the
database file nor its WAL.
"""

from __future__ import annotations

from collections.abc import Iterable

import apsw

from memcue.sidecar.store.sqlite.db import Database
from memcue.sidecar.store.sqlite.graph import unlink_entities
from memcue.sidecar.store.write import PurgeResult


class Purging:
    """The hard delete over ``db``; see the module docstring."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def purge(self, ids: Iterable[int]) -> PurgeResult:
        """Delete memories ``ids`` and all their versions for good (see the module docstring). Unknown ids are
        reported in ``not_found``. Raises ``apsw.Error`` on a database failure (nothing is deleted then)."""
        wanted = list(dict.fromkeys(int(i) for i in ids))
        if not wanted:
            return PurgeResult()
        db = self._db
        with db.write_lock:
            db.writer.execute("PRAGMA secure_delete = ON")
            with db.writer:
                found = {int(r[0]) for r in db.writer.execute(
                    f"SELECT id FROM memories WHERE id IN ({','.join('?' * len(wanted))})", wanted).fetchall()}
                chain = _versions(db.writer, found)
                if chain:
                    _delete(db.writer, sorted(chain), vec=db.vec.available)
                    db.raise_id_floor(max(chain))  # a purged id is never given to another memory
                    db.generation += 1
            truncated = _compact(db.writer) if chain else True
        if chain:
            db.vector_journal.record(sorted(chain))
        return PurgeResult(purged=sorted(chain), not_found=[i for i in wanted if i not in found],
                           wal_truncated=truncated)


def _versions(conn: apsw.Connection, ids: set[int]) -> set[int]:
    """``ids`` with every row linked to them by ``superseded_by``, in either direction, transitively."""
    chain, frontier = set(ids), set(ids)
    while frontier:
        marks = ",".join("?" * len(frontier))
        rows = conn.execute(f"SELECT id, superseded_by FROM memories WHERE id IN ({marks}) OR superseded_by IN "
                            f"({marks})", [*frontier, *frontier]).fetchall()
        linked = {int(i) for row in rows for i in row if i is not None}
        frontier = linked - chain
        chain |= linked
    return chain


def _delete(conn: apsw.Connection, ids: list[int], *, vec: bool) -> None:
    """Every trace of ``ids`` inside the caller's transaction (see the module docstring)."""
    marks = ",".join("?" * len(ids))
    for mid in ids:
        unlink_entities(conn, mid)
    conn.execute("DELETE FROM entities WHERE df <= 0 AND id NOT IN (SELECT entity_id FROM memory_entities)")
    conn.execute(f"UPDATE memories SET superseded_by = NULL WHERE superseded_by IN ({marks})", ids)
    if vec and conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memories_vec'").fetchall():
        conn.execute(f"DELETE FROM memories_vec WHERE rowid IN ({marks})", ids)
    conn.execute(f"DELETE FROM candidates WHERE memory_id IN ({marks})", ids)
    conn.execute(f"DELETE FROM recall_items WHERE memory_id IN ({marks})", ids)
    conn.execute(f"DELETE FROM delivered_ids WHERE memory_id IN ({marks})", ids)
    conn.execute(f"DELETE FROM memory_tags WHERE memory_id IN ({marks})", ids)
    conn.execute(f"DELETE FROM memories WHERE id IN ({marks})", ids)


def _compact(conn: apsw.Connection) -> bool:
    """Rewrite the keyword index and checkpoint the WAL to empty; True when the WAL was truncated."""
    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")
    busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()[0][0]
    return not busy
