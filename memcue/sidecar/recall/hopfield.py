"""The Hopfield channel: modern Hopfield retrieval over the embedding matrix held in memory.

Method (Ramsauer et al. 2020, "Hopfield Networks is All You Need", eq. 3 / the update rule of Theorem 1):
the stored patterns are the rows of ``X`` (n memories × d dims, unit length, float32) and the state
starts at the query embedding ``ξ₀`` (unit length). One update is

    ξ ← Xᵀ softmax(β X ξ)

i.e. attention of the query over every memory, then the attention-weighted mix of those memories. The
retrieved state is re-normalised to unit length after each step, and each memory is scored by its cosine
with the retrieved state, ``X ξ̂`` (the next step's attention weights rank the same, being a monotone
function of it). Memories that sit next to the query's strongest matches rise: these are *associative*
candidates, never evidence on their own (``ChannelResult.evidence`` is always the empty set; DESIGN.md
section 4, issue 3 stage 4).

Choice of β and steps (measured, all-MiniLM-L6-v2 int8, LoCoMo: 10 conversations, 5,882 turns embedded as
"speaker: text", 1,540 answerable questions of categories 1–4; a one-off script: embed turns and questions,
then for each β compute the attention spread and the channel's recall@10 against the questions' evidence turns):

- query–memory cosines are compressed for this model: median 0.245, 90th percentile 0.43, 99th 0.57;
- spread of the first attention ``softmax(β X ξ₀)`` (median over questions, conversation scope ≈ 663 rows;
  whole corpus 5,882 rows in brackets): effective patterns ``exp(entropy)`` / mass on the top 10 —
  β 8: 375 / 0.12 (near uniform); β 12: 216 / 0.23; β 16: 112 / 0.38; β 20: 56 / 0.54 (115 / 0.45);
  **β 30: 13 / 0.83 (16 / 0.80)**; β 50: 3 / 0.98 (near one-hot);
- recall@10 of the channel alone (conversation scope), 1 step: β 12 0.15, β 20 0.30, β 30 0.36, β 50 0.38
  (cosine 0.455); 2 steps is lower at every β (β 30: 0.32) because the state drifts toward dense clusters.
- gold turns in the channel's top 10 that cosine's top 10 misses: β 20 63, β 30 84, β 50 104 of 1,540
  questions; fused with cosine by RRF (k = 15) at weight 0.3 the channel moves recall@10 per category by at
  most ~0.02 (β 30: multi-hop 0.267 → 0.260, single-hop 0.524 → 0.505): it is a source of associative
  candidates, not a ranking gain on LoCoMo, so give it a small weight.

So ``BETA = 30`` with ``STEPS = 1``: the smallest β of the grid (8, 12, 16, 20, 30, 50) that keeps ~80 % of
the attention on about a dozen memories at 663 and at 5,882 rows alike; below it the state blurs toward
the mean of the store (β 20 at 5,882 rows: 115 effective patterns, recall 0.29). β 50 scored 0.02 higher
alone but puts a median 0.62 of the weight on one memory (near one-hot), so a wrong top match drags the
whole list after it. The range 8–20 often quoted for unit vectors assumes cosines spread over ~[0, 0.8];
this model's are compressed into ~[0.1, 0.6], which needs a larger β for the same spread.

Cost (measured on this 2-core machine, OPENBLAS_NUM_THREADS=1 as the sidecar sets it, 384-dim float32,
real SQLite store holding random unit vectors, medians of 5 loads and 200 queries):

=========  ==========================  ==================================  ===============
rows       compute (1 step + top 40)   matrix load (``vector_matrix``)     cached lookup
=========  ==========================  ==================================  ===============
6,000      0.3 ms                      ~60 ms                              < 0.01 ms
27,000     4.0–4.4 ms                  ~380–470 ms                         < 0.01 ms
=========  ==========================  ==================================  ===============

The load is almost all ``Store.vectors`` (vec0 rowid lookups, ~340 ms at 27k); it is paid on the first
recall after any write, because every write bumps ``Store.generation``.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from memcue.sidecar.recall.channels import HOPFIELD, ChannelContext, ChannelResult
from memcue.sidecar.store.memories import Store

log = logging.getLogger("memcue.recall")

#: Inverse temperature β of the softmax (dimensionless; cosines are in [-1, 1]). Measured, see module doc.
BETA = 30.0
#: Update steps from the query state. One measured best; a second drifts toward dense clusters.
STEPS = 1
#: Scopes (project × excluded kinds) whose matrices stay cached; each costs rows × dim × 4 bytes
#: (27,000 × 384 float32 ≈ 41 MB), so at most ~166 MB for four full-store scopes.
MAX_SCOPES = 4


@dataclass
class _Entry:
    """One cached scope: memory ``ids`` (int64, shape (n,)) and ``matrix`` (float32, shape (n, d), unit rows),
    valid while the store's ``signature`` is unchanged."""

    store_ref: weakref.ref[Store]
    signature: tuple[Any, ...]
    ids: np.ndarray
    matrix: np.ndarray


def _signature(store: Store, exclude_kinds: tuple[str, ...]) -> tuple[Any, ...]:
    """What tells a cached matrix it is stale: ``Store.vector_signature`` for the scope's kinds (a vector
    written, a row superseded, the table bound). A captured prompt written by the prompt hook does not
    make a scope that excludes requests reload."""
    return store.vector_signature(exclude_kinds)


class HopfieldIndex:
    """The embedding matrix per scope, held in memory and reloaded when the store changed.

    A scope is ``(store, project, excluded kinds)``; at most ``max_scopes`` stay cached (least recently used
    goes first). Thread-safe: lookups take a short lock; a load holds only its scope's lock, so a second
    recall for the same stale scope waits for the first load and reuses it, while other scopes answer.
    ``beta`` and ``steps`` are the retrieval constants the channel uses (defaults ``BETA``, ``STEPS``).
    ``loads`` counts matrix loads and ``last_load_ms`` is the duration of the latest one (ms).
    """

    def __init__(self, *, beta: float = BETA, steps: int = STEPS, max_scopes: int = MAX_SCOPES) -> None:
        if beta <= 0 or steps < 1 or max_scopes < 1:
            raise ValueError("beta must be > 0, steps >= 1 and max_scopes >= 1")
        self.beta = float(beta)
        self.steps = int(steps)
        self.max_scopes = int(max_scopes)
        self.loads = 0
        self.last_load_ms = 0.0
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[Any, ...], _Entry] = OrderedDict()
        self._loading: dict[tuple[Any, ...], threading.Lock] = {}

    @property
    def cached_scopes(self) -> int:
        """How many scopes hold a matrix now (at most ``max_scopes``)."""
        with self._lock:
            return len(self._cache)

    def clear(self) -> None:
        """Drop every cached matrix."""
        with self._lock:
            self._cache.clear()

    def matrix(
        self, store: Store, *, project: str | None, exclude_kinds: tuple[str, ...] | list[str] = ()
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, X)`` for a scope: ids int64 shape (n,), X float32 shape (n, d) with unit rows, in id order.

        Current (not superseded), non-bookkeeping, embedded rows of ``project`` plus global rows (every
        project when ``project`` is None), without ``exclude_kinds``. Empty store or no bound vector table:
        shapes (0,) and (0, 0). Raises what ``Store.vector_matrix`` raises (``apsw.Error``).
        """
        key = (id(store), store.path, project, tuple(sorted(set(exclude_kinds))))
        hit = self._lookup(key, store, key[3])
        if hit is not None:
            return hit
        with self._lock:
            scope_lock = self._loading.setdefault(key, threading.Lock())
        with scope_lock:
            hit = self._lookup(key, store, key[3])  # another thread may have loaded it while we waited
            if hit is not None:
                return hit
            return self._load(key, store, project, tuple(exclude_kinds))

    def _lookup(self, key: tuple[Any, ...], store: Store,
                exclude_kinds: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray] | None:
        signature = _signature(store, exclude_kinds)
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None and entry.store_ref() is store and entry.signature == signature:
                self._cache.move_to_end(key)
                return entry.ids, entry.matrix
        return None

    def _load(
        self, key: tuple[Any, ...], store: Store, project: str | None, exclude_kinds: tuple[str, ...]
    ) -> tuple[np.ndarray, np.ndarray]:
        signature = _signature(store, key[3])  # read before loading: a write during the load makes the entry stale
        t0 = time.perf_counter()
        ids_list, blob = store.vector_matrix(project=project, exclude_kinds=exclude_kinds)
        ids = np.asarray(ids_list, dtype=np.int64)
        if not ids_list:
            matrix = np.zeros((0, 0), dtype=np.float32)
        else:
            matrix = np.frombuffer(blob, dtype=np.float32).reshape(len(ids_list), -1).copy()
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            np.divide(matrix, norms, out=matrix, where=norms > 0)  # stored vectors are unit already; be sure
        elapsed = (time.perf_counter() - t0) * 1000
        with self._lock:
            self.loads += 1
            self.last_load_ms = elapsed
            self._cache[key] = _Entry(weakref.ref(store), signature, ids, matrix)
            self._cache.move_to_end(key)
            while len(self._cache) > self.max_scopes:
                old, _ = self._cache.popitem(last=False)
                self._loading.pop(old, None)
        return ids, matrix


def retrieve(matrix: np.ndarray, query: np.ndarray, *, beta: float = BETA, steps: int = STEPS) -> np.ndarray:
    """Run ``steps`` modern-Hopfield updates ``ξ ← Xᵀ softmax(β X ξ)`` from ``query`` and score every row.

    ``matrix``: float32 (n, d), unit rows, n ≥ 1. ``query``: (d,), unit length. Returns float32 (n,): each
    row's cosine with the unit-normalised retrieved state (in [-1, 1]). Raises ``ValueError`` when the
    dimensions differ.
    """
    if matrix.ndim != 2 or query.shape != (matrix.shape[1],):
        raise ValueError(f"query has shape {query.shape}, the matrix {matrix.shape}: dimensions differ")
    xi = np.asarray(query, dtype=np.float32)
    for _ in range(steps):
        logits = matrix @ xi
        logits *= beta
        logits -= logits.max()
        weights = np.exp(logits)
        weights /= weights.sum()
        xi = weights @ matrix
        norm = float(np.linalg.norm(xi))
        if norm > 0:
            xi /= norm
    return np.clip(matrix @ xi, -1.0, 1.0)  # float32 rounding can overshoot a cosine of 1 by ~1e-7


def top_k(ids: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` best ``(memory_id, score)`` pairs, best first; equal scores by ascending id (deterministic)."""
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return []
    if k < n:
        # Include every row tied with the k-th score, then order by (score desc, id asc) and cut.
        kth = np.partition(scores, n - k)[n - k]
        pick = np.flatnonzero(scores >= kth)
    else:
        pick = np.arange(n)
    order = np.lexsort((ids[pick], -scores[pick]))[:k]
    return [(int(ids[pick[i]]), float(scores[pick[i]])) for i in order]


def hopfield_channel(ctx: ChannelContext, index: HopfieldIndex) -> ChannelResult:
    """Associative candidates for ``ctx.vector`` from the scope's embedding matrix (never raises).

    Statuses: ``empty`` (blank query), ``warming`` (model loading or vectors not bound yet; no query
    vector), ``no_embedding`` (model failed or no vector for this query), ``disabled`` (sqlite-vec
    unavailable or the store's model does not match), ``no_candidates`` (no embedded memory in scope),
    ``error`` (anything else, with the exception in ``note``), ``ok``. Items: ``(memory_id, cosine with the
    retrieved state)`` best first, at most ``ctx.k``. ``evidence`` is always ``set()``: Hopfield never counts
    as evidence alone. ``detail``: ``{"beta", "steps", "matrix_rows"}``.
    """
    store, embedder = ctx.store, ctx.embedder
    if not ctx.query.strip():
        return ChannelResult(HOPFIELD, "empty", note="the query is empty", evidence=set())
    if not store.vec.available or store.vector_note:
        note = store.vector_note or "sqlite-vec unavailable"
        return ChannelResult(HOPFIELD, "disabled", note=note, evidence=set())
    if ctx.vector is None:
        if embedder is not None and embedder.state == "error":
            return ChannelResult(HOPFIELD, "no_embedding", note=embedder.error or "the model failed", evidence=set())
        if (embedder is not None and embedder.state == "warming") or store.vector_dim is None:
            return ChannelResult(HOPFIELD, "warming", note="the embedding model is loading", evidence=set())
        return ChannelResult(HOPFIELD, "no_embedding", note="no embedding for this query", evidence=set())
    try:
        ids, matrix = index.matrix(store, project=ctx.project, exclude_kinds=ctx.exclude_kinds)
        detail = {"beta": index.beta, "steps": index.steps, "matrix_rows": int(ids.shape[0])}
        if ids.shape[0] == 0:
            return ChannelResult(HOPFIELD, "no_candidates", note="no embedded memories in scope",
                                 evidence=set(), detail=detail)
        query = np.asarray(ctx.vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(query))
        if norm > 0:
            query = query / norm
        scores = retrieve(matrix, query, beta=index.beta, steps=index.steps)
        items = top_k(ids, scores, ctx.k)
    except Exception as exc:  # noqa: BLE001 - a channel never raises
        log.exception("hopfield channel failed")
        return ChannelResult(HOPFIELD, "error", note=f"{type(exc).__name__}: {exc}", evidence=set())
    return ChannelResult(HOPFIELD, "ok", items, evidence=set(), detail=detail)
