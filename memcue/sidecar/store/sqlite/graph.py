"""The entity graph in SQL: recording a memory's entities at write time, and the reads recall's graph channel
and boosts make.

Tables (migration m004): ``entities`` (one row per name, ``df`` = how many memories carry it),
``memory_entities`` (which memory carries which entity) and ``entity_edges`` (co-occurrence counts between
entities of the same memory, stored in both directions). ``link_entities``/``unlink_entities`` run inside the
caller's write transaction; ``EntityGraph`` reads: the scope size N (cached), entity document frequencies in
scope, known entities by name, each entity's heaviest edges, the memories carrying entities, and the entities
memories share.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Sequence

import apsw

from memcue.sidecar.store.sqlite.db import Database
from memcue.sidecar.store.sqlite.rows import scope_conditions
from memcue.sidecar.store.write import MAYBE_NAME

#: After a write, N is reused for this long (s) when it is at least ``SCOPE_SIZE_EXACT_BELOW`` (smaller
#: scopes are recounted at once: cheap, and there one memory moves the IDF).
SCOPE_SIZE_TTL_S = 10.0
SCOPE_SIZE_EXACT_BELOW = 2000


def link_entities(conn: apsw.Connection, memory_id: int, entities: list[tuple[str, str]]) -> None:
    """Record ``entities`` (from ``extract_entities``) for ``memory_id`` inside the caller's transaction:
    upsert each entity (``df`` + 1; the first kind seen is kept, except that a stored ``maybe_name`` takes
    the kind of a later, surer use), link it to the memory, and add 1 to the co-occurrence edge of every
    new pair, in both directions. Entities already linked to the memory are skipped, so linking twice does
    not count twice. Raises ``apsw.Error`` if the entity tables are missing (before migration m004)."""
    linked = {str(r[0]) for r in conn.execute(
        "SELECT e.name FROM memory_entities me JOIN entities e ON e.id = me.entity_id WHERE me.memory_id = ?",
        (memory_id,)).fetchall()}
    ids: list[int] = []
    for name, kind in entities:
        if name in linked:
            continue
        linked.add(name)
        eid = int(conn.execute(
            "INSERT INTO entities(name, kind, df) VALUES (?, ?, 1) ON CONFLICT(name) DO UPDATE SET df = df + 1,"
            " kind = CASE WHEN kind = ? THEN excluded.kind ELSE kind END RETURNING id",
            (name, kind, MAYBE_NAME)).fetchall()[0][0])
        conn.execute("INSERT INTO memory_entities(memory_id, entity_id) VALUES (?, ?)", (memory_id, eid))
        ids.append(eid)
    pairs = [p for a, b in itertools.combinations(sorted(set(ids)), 2) for p in ((a, b), (b, a))]
    if pairs:
        conn.executemany(
            "INSERT INTO entity_edges(src, dst, weight) VALUES (?, ?, 1)"
            " ON CONFLICT(src, dst) DO UPDATE SET weight = weight + 1", pairs)


def unlink_entities(conn: apsw.Connection, memory_id: int) -> None:
    """Forget ``memory_id``'s entity links inside the caller's transaction: its entities' ``df`` goes down by
    one, the co-occurrence edges between them lose one (an edge at zero is deleted) and its
    ``memory_entities`` rows go. Entity rows stay (``df`` 0 = no memory carries it now). Unknown ids are a
    no-op."""
    ids = sorted({int(r[0]) for r in conn.execute(
        "SELECT entity_id FROM memory_entities WHERE memory_id = ?", (memory_id,)).fetchall()})
    if not ids:
        return
    conn.executemany("UPDATE entities SET df = max(0, df - 1) WHERE id = ?", [(i,) for i in ids])
    pairs = [p for a, b in itertools.combinations(ids, 2) for p in ((a, b), (b, a))]
    if pairs:
        conn.executemany("UPDATE entity_edges SET weight = weight - 1 WHERE src = ? AND dst = ?", pairs)
        conn.executemany("DELETE FROM entity_edges WHERE src = ? AND dst = ? AND weight <= 0", pairs)
    conn.execute("DELETE FROM memory_entities WHERE memory_id = ?", (memory_id,))


def _scope_sql(project: str | None, include_superseded: bool) -> tuple[str, list[object]]:
    where, args = scope_conditions("m", project=project, include_superseded=include_superseded)
    return " AND ".join(where), args


class EntityGraph:
    """The entity graph's reads over ``db``; see the module docstring."""

    def __init__(self, db: Database) -> None:
        self._db = db
        #: (project, include_superseded) -> (N, generation counted at, monotonic time counted at).
        self._n_cache: dict[tuple[str | None, bool], tuple[int, int, float]] = {}

    def scope_size(self, project: str | None, include_superseded: bool = False) -> int:
        """N: non-bookkeeping (and, unless ``include_superseded``, current) memories in scope. After a write a
        large N is reused for ``SCOPE_SIZE_TTL_S`` (s): N only weighs the IDF, and a captured prompt on every
        turn would otherwise recount it on every recall."""
        key = (project, include_superseded)
        hit = self._n_cache.get(key)
        now = time.monotonic()
        generation = self._db.generation
        if hit is not None and (hit[1] == generation
                                or (hit[0] >= SCOPE_SIZE_EXACT_BELOW and now - hit[2] < SCOPE_SIZE_TTL_S)):
            return hit[0]
        where, args = _scope_sql(project, include_superseded)
        n = int(self._db.reader().execute(f"SELECT count(*) FROM memories m WHERE {where}", args).fetchall()[0][0])
        # Copy on write: channels run concurrently and may be reading the published dict.
        fresh = dict(self._n_cache)
        fresh[key] = (n, generation, now)
        self._n_cache = fresh
        return n

    def scoped_dfs(
        self, entity_ids: Sequence[int], *, project: str | None, include_superseded: bool = False, cap: int
    ) -> dict[int, int]:
        """df in scope per entity id, each count stopped at ``cap`` (past half the scope the weight is 0
        anyway, so a hub costs at most ``cap`` index lookups). Unknown ids are left out."""
        ids = list(dict.fromkeys(int(i) for i in entity_ids))
        if not ids:
            return {}
        where, args = _scope_sql(project, include_superseded)
        marks = ",".join("?" * len(ids))
        sql = (f"SELECT e.id, (SELECT count(*) FROM (SELECT 1 FROM memory_entities me CROSS JOIN memories m"
               f" ON m.id = me.memory_id WHERE me.entity_id = e.id AND {where} LIMIT ?))"
               f" FROM entities e WHERE e.id IN ({marks})")
        rows = self._db.reader().execute(sql, [*args, int(cap), *ids]).fetchall()
        return {int(a): int(b) for a, b in rows}

    def known_entities(self, names: Sequence[str]) -> dict[str, tuple[int, int, str]]:
        """Known entities among ``names`` (lowercase): name -> (id, store-wide df, kind)."""
        names = list(dict.fromkeys(names))
        if not names:
            return {}
        rows = self._db.reader().execute(
            f"SELECT name, id, df, kind FROM entities WHERE name IN ({','.join('?' * len(names))})", names).fetchall()
        return {str(n): (int(i), int(d), str(k)) for n, i, d, k in rows}

    def dfs_in_scope(self, global_df: dict[int, int], project: str | None, include_superseded: bool, cap: int,
                     n_scope: int) -> dict[int, int]:
        """df in scope, stopped at ``cap``, for the ids of ``global_df`` (id -> store-wide ``entities.df``);
        ``n_scope`` is the scope's ``scope_size``.

        When the scope holds every memory of the store (one project, or none asked) the store-wide df is used
        as is (it may also count superseded versions). Otherwise an entity whose store-wide df, less every
        memory outside the scope, still reaches ``cap`` is at ``cap`` without counting; the rest are counted
        (``scoped_dfs``)."""
        sup = include_superseded
        if n_scope == self.scope_size(None, sup):
            return {eid: min(df, cap) for eid, df in global_df.items()}
        outside = self.scope_size(None, True) - n_scope
        out = {eid: cap for eid, df in global_df.items() if df - outside >= cap}
        rest = [eid for eid in global_df if eid not in out]
        if rest:
            out.update(self.scoped_dfs(rest, project=project, include_superseded=sup, cap=cap))
        return out

    def heaviest_edges(self, sources: Sequence[int], fanout: int) -> dict[int, tuple[int, list[tuple[int, int, int]]]]:
        """Per source: (total out-weight, its ``fanout`` heaviest edges as (dst, weight, dst's store-wide df)),
        leaving out destinations still of kind ``maybe_name``. One query; its cost grows with the sources'
        degree (hubs weigh 0 and never become sources)."""
        ids = list(dict.fromkeys(int(i) for i in sources))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        sql = (f"SELECT x.src, x.dst, x.weight, x.total, e.df FROM (SELECT src, dst, weight,"
               f" sum(weight) OVER (PARTITION BY src) AS total,"
               f" row_number() OVER (PARTITION BY src ORDER BY weight DESC, dst) AS rn"
               f" FROM entity_edges WHERE src IN ({marks})) x JOIN entities e ON e.id = x.dst"
               f" WHERE x.rn <= ? AND e.kind != ?")
        out: dict[int, tuple[int, list[tuple[int, int, int]]]] = {}
        for src, dst, weight, total, df in self._db.reader().execute(
                sql, [*ids, int(fanout), MAYBE_NAME]).fetchall():
            out.setdefault(int(src), (int(total), []))[1].append((int(dst), int(weight), int(df)))
        return out

    def memories_with_entities(
        self, entity_ids: Sequence[int], *, project: str | None, limit: int, exclude_kinds: Sequence[str] = (),
        include_superseded: bool = False,
    ) -> list[tuple[int, int]]:
        """``(memory id, entity id)`` links for memories carrying any of ``entity_ids`` (in scope, not
        bookkeeping), newest memories first, at most ``limit`` links."""
        ids = list(dict.fromkeys(int(i) for i in entity_ids))
        if not ids:
            return []
        where, args = scope_conditions("m", project=project, exclude_kinds=exclude_kinds,
                                       include_superseded=include_superseded)
        where, args = [f"me.entity_id IN ({','.join('?' * len(ids))})", *where], [*ids, *args]
        sql = (f"SELECT me.memory_id, me.entity_id FROM memory_entities me CROSS JOIN memories m ON m.id = me.memory_id"
               f" WHERE {' AND '.join(where)} ORDER BY m.created_at DESC, m.id DESC LIMIT ?")
        return [(int(a), int(b)) for a, b in self._db.reader().execute(sql, [*args, limit]).fetchall()]

    def entity_links(self, memory_ids: Iterable[int], entity_ids: Iterable[int]) -> list[tuple[int, int, str]]:
        """Which of ``entity_ids`` each of ``memory_ids`` carries: ``(memory id, entity id, entity name)``,
        in no particular order."""
        mids = list(dict.fromkeys(int(m) for m in memory_ids))
        eids = list(dict.fromkeys(int(e) for e in entity_ids))
        if not mids or not eids:
            return []
        sql = (f"SELECT me.memory_id, e.id, e.name FROM memory_entities me JOIN entities e ON e.id = me.entity_id"
               f" WHERE me.memory_id IN ({','.join('?' * len(mids))})"
               f" AND me.entity_id IN ({','.join('?' * len(eids))})")
        return [(int(m), int(e), str(n)) for m, e, n in self._db.reader().execute(sql, [*mids, *eids]).fetchall()]

    def related_memories(self, memory_id: int, project: str, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` current, non-bookkeeping memories of ``project`` (and global rows) naming an entity
        ``memory_id`` names, those sharing the rarest entity first, then newest: ``(id, content)``."""
        rows = self._db.reader().execute(
            "SELECT m.id, m.content FROM memory_entities a JOIN memory_entities b ON b.entity_id = a.entity_id"
            " JOIN memories m ON m.id = b.memory_id JOIN entities e ON e.id = a.entity_id"
            " WHERE a.memory_id = ? AND b.memory_id != ? AND m.superseded_by IS NULL AND m.forgotten_at IS NULL"
            " AND m.bookkeeping = 0"
            " AND m.project IN (?, '') GROUP BY m.id ORDER BY min(e.df), m.created_at DESC LIMIT ?",
            (memory_id, memory_id, project, limit)).fetchall()
        return [(int(i), c) for i, c in rows]
