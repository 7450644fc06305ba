"""The entity graph's reads over the store: scope size N (cached), entity document frequencies in scope,
known entities by name, and each entity's heaviest co-occurrence edges. Used by ``recall.graph``.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence

from memcue.sidecar.store import MAYBE_NAME, Store
from memcue.sidecar.store.rows import scope_conditions

_N_CACHE: weakref.WeakKeyDictionary[Store, dict[tuple[str | None, bool], tuple[int, int, float]]] = (
    weakref.WeakKeyDictionary())
#: After a write, N is reused for this long (s) when it is at least ``SCOPE_SIZE_EXACT_BELOW`` (smaller
#: scopes are recounted at once: cheap, and there one memory moves the IDF).
SCOPE_SIZE_TTL_S = 10.0
SCOPE_SIZE_EXACT_BELOW = 2000


def scope_sql(project: str | None, include_superseded: bool) -> tuple[str, list[object]]:
    where, args = scope_conditions("m", project=project, include_superseded=include_superseded)
    return " AND ".join(where), args


def scope_size(store: Store, project: str | None, include_superseded: bool = False) -> int:
    """N: non-bookkeeping (and, unless ``include_superseded``, current) memories in scope. After a write a
    large N is reused for ``SCOPE_SIZE_TTL_S`` (s): N only weighs the IDF, and a captured prompt on every
    turn would otherwise recount it on every recall."""
    key = (project, include_superseded)
    cache = _N_CACHE.get(store)
    hit = None if cache is None else cache.get(key)
    now = time.monotonic()
    if hit is not None and (hit[1] == store.generation
                            or (hit[0] >= SCOPE_SIZE_EXACT_BELOW and now - hit[2] < SCOPE_SIZE_TTL_S)):
        return hit[0]
    where, args = scope_sql(project, include_superseded)
    n = int(store._reader().execute(f"SELECT count(*) FROM memories m WHERE {where}", args).fetchall()[0][0])
    # Copy on write: channels run concurrently and may be reading the published dict.
    fresh = {} if cache is None else dict(cache)
    fresh[key] = (n, store.generation, now)
    _N_CACHE[store] = fresh
    return n


def scoped_dfs(
    store: Store, entity_ids: Sequence[int], *, project: str | None, include_superseded: bool = False, cap: int
) -> dict[int, int]:
    """df in scope per entity id, each count stopped at ``cap`` (past half the scope the weight is 0
    anyway, so a hub costs at most ``cap`` index lookups). Unknown ids are left out."""
    ids = list(dict.fromkeys(int(i) for i in entity_ids))
    if not ids:
        return {}
    where, args = scope_sql(project, include_superseded)
    marks = ",".join("?" * len(ids))
    sql = (f"SELECT e.id, (SELECT count(*) FROM (SELECT 1 FROM memory_entities me CROSS JOIN memories m"
           f" ON m.id = me.memory_id WHERE me.entity_id = e.id AND {where} LIMIT ?))"
           f" FROM entities e WHERE e.id IN ({marks})")
    rows = store._reader().execute(sql, [*args, int(cap), *ids]).fetchall()
    return {int(a): int(b) for a, b in rows}


def known_entities(store: Store, names: Sequence[str]) -> dict[str, tuple[int, int, str]]:
    """Known entities among ``names``: name -> (id, store-wide df, kind)."""
    names = list(dict.fromkeys(names))
    if not names:
        return {}
    rows = store._reader().execute(
        f"SELECT name, id, df, kind FROM entities WHERE name IN ({','.join('?' * len(names))})", names).fetchall()
    return {str(n): (int(i), int(d), str(k)) for n, i, d, k in rows}


def dfs_in_scope(store: Store, global_df: dict[int, int], project: str | None, sup: bool, cap: int, n_scope: int
         ) -> dict[int, int]:
    """df in scope, stopped at ``cap``, for the ids of ``global_df`` (id -> store-wide ``entities.df``).

    When the scope holds every memory of the store (one project, or none asked) the store-wide df is used
    as is (it may also count superseded versions). Otherwise an entity whose store-wide df, less every
    memory outside the scope, still reaches ``cap`` is at ``cap`` without counting; the rest are counted
    (``scoped_dfs``)."""
    if n_scope == scope_size(store, None, sup):
        return {eid: min(df, cap) for eid, df in global_df.items()}
    outside = scope_size(store, None, True) - n_scope
    out = {eid: cap for eid, df in global_df.items() if df - outside >= cap}
    rest = [eid for eid in global_df if eid not in out]
    if rest:
        out.update(scoped_dfs(store, rest, project=project, include_superseded=sup, cap=cap))
    return out


def heaviest_edges(store: Store, sources: Sequence[int], fanout: int
                   ) -> dict[int, tuple[int, list[tuple[int, int, int]]]]:
    """Per source: (total out-weight, its ``fanout`` heaviest edges as (dst, weight, dst's store-wide df)).
    One query; its cost grows with the sources' degree (hubs weigh 0 and never become sources)."""
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
    for src, dst, weight, total, df in store._reader().execute(sql, [*ids, int(fanout), MAYBE_NAME]).fetchall():
        out.setdefault(int(src), (int(total), []))[1].append((int(dst), int(weight), int(df)))
    return out
