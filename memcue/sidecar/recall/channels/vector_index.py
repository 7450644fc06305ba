"""Every embedding of the store in memory, searched with one matrix product: the semantic channel's KNN
and the Hopfield channel's matrix.

Why (issue 4, measured on this 2-core machine at 27,000 memories, 384-dim float32): sqlite-vec's brute-force
KNN with the project and kind filters took 25 ms per query; the same search as ``X @ q`` plus a partial sort
over a matrix held in memory takes 2.3 ms. The matrix costs rows × dim × 4 bytes (27,000 × 384 ≈ 41 MB;
capacity grows by doubling, so up to twice that while it grows).

Rows are kept current incrementally: ``Store.vector_journal`` logs every id whose vector was written or
which was superseded or forgotten, and a search first re-reads just those rows (a captured prompt costs one row, not a
reload). A full load (``Store.all_vectors``, about 0.25 s at 27,000) happens on
first use, when the vector table is rebound, and when the journal started a new epoch. Scoping is a mask
over the whole matrix: project (and global rows), excluded kinds, and superseded rows unless asked for.

Thread-safe: refreshes hold a lock; a search works on the arrays it took under the lock, so a concurrent
append or resize never changes what it reads (a row re-embedded meanwhile is overwritten in place: the
search sees the old or the new vector).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memcue.sidecar.runtime.heap import trim_heap
from memcue.sidecar.store import Store

#: Rows the arrays hold at least; a full load sizes them to the store plus 1/16 for growth.
INITIAL_CAPACITY = 1024
#: Vectors read per step of a full load.
LOAD_BATCH = 4096
#: Page cache (KiB) of the connection during a full load (vec0 chunks are read whole).
LOAD_CACHE_KIB = 16384
#: Scope masks kept (project × excluded kinds × superseded); the cache starts over past this.
MAX_MASKS = 64


@dataclass
class Scope:
    """What a channel searches: ``ids`` int64 (n,), ``matrix`` float32 (n, d) with unit rows, and ``mask``
    bool (n,) of the rows in scope. Views of the index's arrays: read only."""

    ids: np.ndarray
    matrix: np.ndarray
    mask: np.ndarray

    @property
    def rows(self) -> int:
        """Rows in scope."""
        return int(self.mask.sum())


@dataclass
class _Arrays:
    dim: int
    ids: np.ndarray
    matrix: np.ndarray
    project: np.ndarray  # int32 codes into VectorIndex._projects
    kind: np.ndarray  # int32 codes into VectorIndex._kinds
    current: np.ndarray  # bool: not superseded, not forgotten and still embedded
    n: int = 0
    pos: dict[int, int] = field(default_factory=dict)


class VectorIndex:
    """The store's vectors in memory (see module doc). One instance serves every recall of a sidecar.

    ``loads`` counts full loads, ``refreshed_rows`` the rows re-read from the journal, and ``last_load_ms``
    is the latest full load's duration (ms).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._store_ref: weakref.ref[Store] | None = None
        self._arrays: _Arrays | None = None
        self._journal_at: tuple[int, int] = (-1, 0)
        self._bound: tuple[str, int | None] = ("", None)
        self._projects: dict[str, int] = {}
        self._kinds: dict[str, int] = {}
        self._version = 0  # bumped by every change to the arrays: cached masks and products go stale
        self._masks: dict[tuple[object, ...], tuple[int, np.ndarray]] = {}
        self._product_lock = threading.Lock()
        self._product: tuple[tuple[object, ...], np.ndarray] | None = None
        self.loads = 0
        self.refreshed_rows = 0
        self.last_load_ms = 0.0

    def stats(self) -> dict[str, float | int]:
        """For ``/health``: rows held, full loads, rows refreshed from the journal, latest load (ms)."""
        arrays = self._arrays
        return {"rows": arrays.n if arrays else 0, "loads": self.loads, "refreshed_rows": self.refreshed_rows,
                "last_load_ms": round(self.last_load_ms, 1)}

    # -- keeping current -------------------------------------------------------------------------
    def refresh(self, store: Store) -> None:
        """Bring the index up to date with ``store`` (a full load the first time or after a rebind, else
        the journal's rows). Raises what the store's queries raise (``apsw.Error``)."""
        with self._lock:
            bound = (store.path, store.vector_dim)
            stale = (self._arrays is None or self._store_ref is None or self._store_ref() is not store
                     or self._bound != bound)
            changed = None if stale else store.vector_journal.since(*self._journal_at)
            if changed is None:
                self._load(store)
            elif changed[0]:
                self._apply(store, changed[0])
                self._journal_at = (self._journal_at[0], changed[1])
            else:
                self._journal_at = (self._journal_at[0], changed[1])

    def _load(self, store: Store) -> None:
        t0 = time.perf_counter()
        at = store.vector_journal.position()  # before reading: later changes are applied on the next refresh
        self._store_ref = weakref.ref(store)
        self._bound = (store.path, store.vector_dim)
        dim = store.vector_dim or 0
        meta = store.all_scope_fields() if dim else {}
        self._arrays = _empty(dim, max(INITIAL_CAPACITY, len(meta) + len(meta) // 16))
        if dim:
            # In batches: never every blob and the matrix at once. vec0 reads a whole chunk of vectors per
            # row, so the scan gets a larger page cache than a reader's (``Store.all_vectors``).
            for batch in store.all_vectors(LOAD_BATCH, LOAD_CACHE_KIB):
                self._put(store, batch, meta)
        self._journal_at = at
        self._version += 1
        trim_heap()  # the batches' and the metadata's temporaries
        self.loads += 1
        self.last_load_ms = (time.perf_counter() - t0) * 1000

    def _apply(self, store: Store, ids: list[int]) -> None:
        found = store.vectors(ids)
        arrays = self._arrays
        assert arrays is not None
        for mid in ids:
            if mid not in found and mid in arrays.pos:
                arrays.current[arrays.pos[mid]] = False  # its vector is gone
        self._put(store, list(found.items()))
        self.refreshed_rows += len(ids)
        self._version += 1

    def _put(self, store: Store, vectors: list[tuple[int, bytes]],
             meta: dict[int, tuple[str, str, bool]] | None = None) -> None:
        """Write rows (new ones appended, known ones overwritten) with their scope fields (``meta``: id ->
        (project, kind, current), read from the store when not given)."""
        arrays = self._arrays
        assert arrays is not None
        if not vectors:
            return
        if meta is None:
            meta = store.scope_fields([mid for mid, _ in vectors])
        size = arrays.dim * 4
        keep = [(mid, blob) for mid, blob in vectors if mid in meta and len(blob) == size]
        for mid, blob in vectors:  # bookkeeping now, or a vector of another size: out of every scope
            if (mid not in meta or len(blob) != size) and mid in arrays.pos:
                arrays.current[arrays.pos[mid]] = False
        if not keep:
            return
        need = arrays.n + sum(1 for mid, _ in keep if mid not in arrays.pos)
        if need > arrays.ids.shape[0]:
            arrays = self._arrays = _grow(arrays, max(need, 2 * arrays.ids.shape[0]))
        rows = np.empty(len(keep), dtype=np.int64)
        for j, (mid, _) in enumerate(keep):
            i = arrays.pos.get(mid)
            if i is None:
                i = arrays.pos[mid] = arrays.n
                arrays.n += 1
            rows[j] = i
        block = np.frombuffer(b"".join(blob for _, blob in keep), dtype=np.float32).reshape(len(keep), arrays.dim)
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        arrays.matrix[rows] = np.divide(block, norms, out=block.copy(), where=norms > 0)
        arrays.ids[rows] = [mid for mid, _ in keep]
        arrays.project[rows] = [self._projects.setdefault(meta[mid][0], len(self._projects)) for mid, _ in keep]
        arrays.kind[rows] = [self._kinds.setdefault(meta[mid][1], len(self._kinds)) for mid, _ in keep]
        arrays.current[rows] = [meta[mid][2] for mid, _ in keep]

    # -- searching -------------------------------------------------------------------------------
    def scope(self, store: Store, *, project: str | None, exclude_kinds: Sequence[str] = (),
              include_superseded: bool = False) -> Scope:
        """The rows a recall may search: ``project`` and global rows (all when None), without
        ``exclude_kinds``, without superseded rows unless ``include_superseded``. Refreshes first. The
        mask is cached until the index changes (read only)."""
        self.refresh(store)
        key = (project, tuple(sorted(set(exclude_kinds))), include_superseded)
        with self._lock:
            arrays = self._arrays
            assert arrays is not None
            n = arrays.n
            ids, matrix = arrays.ids[:n], arrays.matrix[:n]
            cached = self._masks.get(key)
            if cached is not None and cached[0] == self._version:
                return Scope(ids, matrix, cached[1])
            mask = np.ones(n, dtype=bool) if include_superseded else arrays.current[:n].copy()
            if project is not None:
                codes = [self._projects[p] for p in (project, "") if p in self._projects]
                mask &= np.isin(arrays.project[:n], codes)
            drop = [self._kinds[k] for k in exclude_kinds if k in self._kinds]
            if drop:
                mask &= ~np.isin(arrays.kind[:n], drop)
            mask.setflags(write=False)
            if len(self._masks) >= MAX_MASKS:
                self._masks.clear()
            self._masks[key] = (self._version, mask)
        return Scope(ids, matrix, mask)

    def products(self, scope: Scope, vector: np.ndarray) -> np.ndarray:
        """``scope.matrix @ q`` for the unit-normalised ``vector`` (float32, (n,)), computed once per query
        vector and index version: the semantic and Hopfield channels of one recall share it (read only).
        Raises ``ValueError`` when the dimensions differ."""
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != scope.matrix.shape[1]:
            raise ValueError(f"query has {query.shape[0]} dimensions, the index {scope.matrix.shape[1]}:"
                             " dimensions differ")
        key = (query.tobytes(), scope.matrix.shape[0], self._version)
        with self._product_lock:  # a second channel waits for the first's product instead of redoing it
            hit = self._product
            if hit is not None and hit[0] == key:
                return hit[1]
            norm = float(np.linalg.norm(query))
            scores = scope.matrix @ (query / norm if norm > 0 else query)
            scores.setflags(write=False)
            self._product = (key, scores)
            return scores

    def search(self, store: Store, vector: np.ndarray, *, project: str | None, k: int,
               exclude_kinds: Sequence[str] = (), include_superseded: bool = False) -> list[tuple[int, float]]:
        """The ``k`` nearest rows in scope by cosine: ``(memory id, cosine)`` best first, ties by ascending
        id. ``vector``: (d,) float32. Raises ``ValueError`` when its dimension differs from the index's."""
        scope = self.scope(store, project=project, exclude_kinds=exclude_kinds,
                           include_superseded=include_superseded)
        if not scope.mask.any() or k <= 0:
            return []
        scores = np.where(scope.mask, self.products(scope, vector), -np.inf)
        return best(scope.ids, scores, k)

    def cosines(self, store: Store, ids: Sequence[int], vector: np.ndarray) -> dict[int, float]:
        """Cosine of ``vector`` ((d,) float32, unit length) with each memory of ``ids`` that has a vector:
        ``{memory id: cosine}``. Rows the index holds come from memory; any other is read from the store."""
        self.refresh(store)
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._lock:
            arrays = self._arrays
            assert arrays is not None
            at = {int(mid): arrays.pos[int(mid)] for mid in ids if int(mid) in arrays.pos}
            matrix = arrays.matrix
        out: dict[int, float] = {}
        if at and matrix.shape[1] == query.shape[0]:
            rows = np.fromiter(at.values(), dtype=np.int64, count=len(at))
            out = dict(zip(at, (matrix[rows] @ query).tolist(), strict=True))
        rest = [int(mid) for mid in ids if int(mid) not in out]
        for mid, blob in store.vectors(rest).items():
            vec = np.frombuffer(blob, dtype=np.float32)
            if vec.shape == query.shape:
                out[mid] = float(vec @ query)
        return out


def best(ids: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` best finite ``(memory_id, score)`` pairs, best first; equal scores by ascending id."""
    finite = int(np.isfinite(scores).sum())
    k = min(k, finite)
    if k <= 0:
        return []
    n = scores.shape[0]
    if k < n:
        kth = np.partition(scores, n - k)[n - k]
        pick = np.flatnonzero(scores >= kth)  # every row tied with the k-th, then ordered and cut
    else:
        pick = np.flatnonzero(np.isfinite(scores))
    order = np.lexsort((ids[pick], -scores[pick]))[:k]
    return [(int(ids[pick[i]]), float(min(1.0, scores[pick[i]]))) for i in order]


def _empty(dim: int, capacity: int) -> _Arrays:
    return _Arrays(dim, np.zeros(capacity, dtype=np.int64), np.zeros((capacity, dim), dtype=np.float32),
                   np.zeros(capacity, dtype=np.int32), np.zeros(capacity, dtype=np.int32),
                   np.zeros(capacity, dtype=bool))


def _grow(old: _Arrays, capacity: int) -> _Arrays:
    """New arrays of ``capacity`` rows holding ``old``'s rows (searches in flight keep the old ones)."""
    new = _empty(old.dim, capacity)
    n = old.n
    new.ids[:n], new.matrix[:n] = old.ids[:n], old.matrix[:n]
    new.project[:n], new.kind[:n], new.current[:n] = old.project[:n], old.kind[:n], old.current[:n]
    new.n, new.pos = n, old.pos
    return new
