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

Cost: the matrix is the sidecar's ``VectorIndex`` (shared with the semantic channel, kept current
incrementally), scoped by a mask; one step over 27,000 rows × 384 dims is two matrix-vector products,
about 4 ms on this 2-core machine (OPENBLAS_NUM_THREADS=1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memcue.sidecar.recall.channels.base import HOPFIELD, ChannelContext, ChannelResult
from memcue.sidecar.recall.channels.vector_index import VectorIndex, best

#: Inverse temperature β of the softmax (dimensionless; cosines are in [-1, 1]). Measured, see module doc.
BETA = 30.0
#: Update steps from the query state. One measured best; a second drifts toward dense clusters.
STEPS = 1


def retrieve(matrix: np.ndarray, query: np.ndarray, *, beta: float = BETA, steps: int = STEPS,
             mask: np.ndarray | None = None, first: np.ndarray | None = None) -> np.ndarray:
    """Run ``steps`` modern-Hopfield updates ``ξ ← Xᵀ softmax(β X ξ)`` from ``query`` and score every row.

    ``matrix``: float32 (n, d), unit rows, n ≥ 1. ``query``: (d,), unit length. ``mask``: bool (n,), the rows
    that are stored patterns (all when None; at least one True); the others get no attention and score -inf.
    ``first``: ``matrix @ query`` when already computed (float32 (n,); not modified). Returns float32 (n,):
    each row's cosine with the unit-normalised retrieved state (in [-1, 1]). Raises
    ``ValueError`` when the dimensions differ.
    """
    if matrix.ndim != 2 or query.shape != (matrix.shape[1],):
        raise ValueError(f"query has shape {query.shape}, the matrix {matrix.shape}: dimensions differ")
    xi = np.asarray(query, dtype=np.float32)
    for step in range(steps):
        logits = (first if step == 0 and first is not None else matrix @ xi) * beta
        if mask is not None:
            logits[~mask] = -np.inf
        logits -= logits.max()
        weights = np.exp(logits)
        weights /= weights.sum()
        xi = weights @ matrix
        norm = float(np.linalg.norm(xi))
        if norm > 0:
            xi /= norm
    scores = np.clip(matrix @ xi, -1.0, 1.0)  # float32 rounding can overshoot a cosine of 1 by ~1e-7
    if mask is not None:
        scores[~mask] = -np.inf
    return scores


def top_k(ids: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` best ``(memory_id, score)`` pairs, best first; equal scores by ascending id (deterministic)."""
    return best(ids, scores, k)


@dataclass(frozen=True)
class HopfieldChannel:
    """Associative candidates for ``ctx.vector`` from the scope's embedding matrix, held by the sidecar's
    ``ctx.vectors`` (a fresh index read from the store when None); ``beta`` and ``steps`` as in ``retrieve``.

    Statuses: ``empty`` (blank query), ``warming`` (model loading or vectors not bound yet; no query
    vector), ``no_embedding`` (model failed or no vector for this query), ``disabled`` (sqlite-vec
    unavailable or the store's model does not match), ``no_candidates`` (no embedded memory in scope),
    ``ok``. Items: ``(memory_id, cosine with the retrieved state)`` best first, at most ``ctx.k``.
    ``evidence`` is always ``set()``: Hopfield never counts as evidence alone. ``detail``:
    ``{"beta", "steps", "matrix_rows"}``. Raises ``ValueError`` when the query's dimension differs from
    the matrix's.
    """

    beta: float = BETA
    steps: int = STEPS
    name: str = HOPFIELD

    def run(self, ctx: ChannelContext) -> ChannelResult:
        """Run the update from the query's embedding and score the scope (see the class docstring)."""
        store, embedder = ctx.store, ctx.embedder
        if not ctx.query.strip():
            return ChannelResult(HOPFIELD, "empty", note="the query is empty", evidence=set())
        if not store.vec.available or store.vector_note:
            note = store.vector_note or "sqlite-vec unavailable"
            return ChannelResult(HOPFIELD, "disabled", note=note, evidence=set())
        if ctx.vector is None:
            if embedder is not None and embedder.state == "error":
                return ChannelResult(HOPFIELD, "no_embedding", note=embedder.error or "the model failed",
                                     evidence=set())
            if (embedder is not None and embedder.state == "warming") or store.vector_dim is None:
                return ChannelResult(HOPFIELD, "warming", note="the embedding model is loading", evidence=set())
            return ChannelResult(HOPFIELD, "no_embedding", note="no embedding for this query", evidence=set())
        index = ctx.vectors if ctx.vectors is not None else VectorIndex()
        scope = index.scope(store, project=ctx.project, exclude_kinds=ctx.exclude_kinds,
                            include_superseded=ctx.include_superseded)
        detail = {"beta": self.beta, "steps": self.steps, "matrix_rows": scope.rows}
        if scope.rows == 0:
            return ChannelResult(HOPFIELD, "no_candidates", note="no embedded memories in scope",
                                 evidence=set(), detail=detail)
        first = index.products(scope, ctx.vector)  # the raw vector: the semantic channel's product is shared
        query = np.asarray(ctx.vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(query))
        if norm > 0:
            query = query / norm
        scores = retrieve(scope.matrix, query, beta=self.beta, steps=self.steps, mask=scope.mask, first=first)
        return ChannelResult(HOPFIELD, "ok", top_k(scope.ids, scores, ctx.k), evidence=set(), detail=detail)
