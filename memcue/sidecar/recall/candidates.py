"""Candidates: the channels run side by side, fused by weighted reciprocal rank fusion, and what each
candidate has going for it (the ``Evidence`` the floor checks).

Bookkeeping rows are never candidates (they are not indexed); captured prompts (kind ``request``) and the
agent's captured answers (kind ``episode``) are left out unless the question asks for them
(``QueryClass.excluded_kinds``). A channel that misses ``RecallRequest.channel_timeout_s`` is reported ``timeout``
and listed in ``incomplete_channels``; the recall goes on with the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from memcue.sidecar.recall.channels import (
    ALL_CHANNELS,
    BM25,
    GRAPH,
    HOPFIELD,
    SEMANTIC,
    TEMPORAL,
    ChannelContext,
    ChannelResult,
    run_channels,
)
from memcue.sidecar.recall.classify import QueryClass
from memcue.sidecar.recall.floor import Evidence
from memcue.sidecar.recall.fusion import weighted_rrf
from memcue.sidecar.recall.query import KeywordQuery, keyword_query
from memcue.sidecar.recall.request import RecallRequest, RecallServices
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import DF_CAP, Store

#: Candidates each channel contributes before fusion. 60 rather than 40: the session-context boost can only
#: lift a memory some channel found (LoCoMo recall@10 +0.004 at 60; benchmarks/results/locomo_ablation.md).
CHANNEL_DEPTH = 60


@dataclass
class Candidates:
    """What the channels found: every channel's result and the incomplete ones; ``fused`` ``(memory_id,
    score)`` best first (every id found); ``scores`` channel -> id -> channel score; ``rows`` the fused ids'
    ``Store.fetch`` rows; ``evidence`` per candidate that is not bookkeeping and passes the request's
    filters (the only ids later stages consider); the query's keyword ``terms`` and their document
    frequencies ``doc_freq`` in scope; the query's embedding ``vector`` (None without one)."""

    channels: dict[str, ChannelResult]
    incomplete: list[str]
    fused: list[tuple[int, float]]
    scores: dict[str, dict[int, float]]
    rows: dict[int, dict[str, Any]]
    evidence: dict[int, Evidence]
    terms: tuple[str, ...]
    doc_freq: dict[str, int]
    vector: np.ndarray | None


def _embed(store: Store, embedder: Embedder | None, req: RecallRequest) -> np.ndarray | None:
    """The query's embedding when a vector channel is asked for and the model and vectors are ready."""
    if SEMANTIC not in req.channels and HOPFIELD not in req.channels:
        return None
    if embedder is None or embedder.state != "ready" or store.vector_dim is None or not req.query.strip():
        return None
    try:
        return embedder.embed_query(req.query)
    except Exception:  # noqa: BLE001 - the semantic channel reports the failure itself
        return None


def _keywords(store: Store, req: RecallRequest) -> tuple[KeywordQuery, dict[str, int], KeywordQuery]:
    """The query's keyword query, its terms' document frequencies in scope, and the query searched: the
    terms in ``DF_CAP`` memories or more left out (10 ms -> 4 ms of BM25 at 27k memories, issue 4)."""
    kq = keyword_query(req.query)
    doc_freq = store.doc_frequencies(kq.terms, project=req.project) if kq.terms else {}
    common = frozenset(t for t, n in doc_freq.items() if n >= DF_CAP)
    return kq, doc_freq, (keyword_query(req.query, common) if common else kq)


def gather(store: Store, embedder: Embedder | None, req: RecallRequest, services: RecallServices,
           qc: QueryClass, now: float) -> Candidates:
    """Run the request's channels (those with a weight, and always semantic and BM25) for ``qc`` at asking
    time ``now`` (Unix s), fuse them and collect each candidate's evidence."""
    filters = req.filters
    kq, doc_freq, searched = _keywords(store, req)
    vector = _embed(store, embedder, req)
    ctx = ChannelContext(store=store, query=req.query, keywords=searched, project=req.project,
                         k=CHANNEL_DEPTH * (3 if filters.active else 1),
                         exclude_kinds=tuple(k for k in qc.excluded_kinds(req.include_requests)
                                             if k != filters.kind),  # a kind asked for by name is searched
                         now=now, vector=vector, embedder=embedder, include_superseded=filters.include_superseded,
                         vectors=services.vectors)
    names = tuple(n for n in ALL_CHANNELS
                  if n in req.channels and (n in (SEMANTIC, BM25) or qc.weights.get(n, 0) > 0))
    channels, incomplete = run_channels(ctx, names, req.channel_timeout_s)
    fused = weighted_rrf({name: [mid for mid, _ in r.items] for name, r in channels.items() if r.items}, qc.weights)
    scores = {name: dict(r.items) for name, r in channels.items()}
    rows = store.fetch([mid for mid, _ in fused])
    found = Candidates(channels, incomplete, fused, scores, rows, {}, kq.terms, doc_freq, vector)
    found.evidence = _evidence(store, req, services, found)
    return found


def _evidence(store: Store, req: RecallRequest, services: RecallServices, found: Candidates) -> dict[int, Evidence]:
    """Each kept candidate's evidence: cosine (the semantic channel's, else computed from the index), BM25,
    direct entity match, temporal evidence, pinned."""
    ids = [mid for mid, _ in found.fused]
    cosines = dict(found.scores.get(SEMANTIC, {}))
    if found.vector is not None:
        missing = [mid for mid in ids if mid not in cosines]
        cosines.update(services.vectors.cosines(store, missing, found.vector))
    entity_evidence = found.channels[GRAPH].evidence or set()
    temporal_evidence = found.channels[TEMPORAL].evidence
    if temporal_evidence is None:
        temporal_evidence = set(found.scores.get(TEMPORAL, {}))
    evidence: dict[int, Evidence] = {}
    for mid in ids:
        row = found.rows.get(mid)
        if row is None or row["bookkeeping"] or not req.filters.keeps(row):
            continue
        evidence[mid] = Evidence(cosine=cosines.get(mid), bm25=found.scores.get(BM25, {}).get(mid, 0.0),
                                 entity=mid in entity_evidence, temporal=mid in temporal_evidence,
                                 pinned=row["pinned"])
    return evidence
