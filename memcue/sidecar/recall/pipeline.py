"""The recall pipeline, as named stages: classify -> shortcuts -> candidates (channels + weighted RRF) ->
boosts -> evidence floor -> rerank -> support -> outcome -> contract.

``recall(store, embedder, request, services)`` returns a dict carrying every field of the recall contract
(DESIGN.md section 4). Each stage is its own module; this one only calls them in order.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from memcue.core.limits import cap_query
from memcue.sidecar.recall.boosts import boost
from memcue.sidecar.recall.candidates import gather
from memcue.sidecar.recall.channels import SEMANTIC
from memcue.sidecar.recall.classify import classify
from memcue.sidecar.recall.floor import apply_floor
from memcue.sidecar.recall.outcome import finish
from memcue.sidecar.recall.ranking import ranking_on
from memcue.sidecar.recall.request import RecallRequest, RecallServices
from memcue.sidecar.recall.rerank import rerank_head
from memcue.sidecar.recall.shortcuts import early_answer, is_warming
from memcue.sidecar.recall.support import judge_all
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import Store


def recall(store: Store, embedder: Embedder | None, req: RecallRequest,
           services: RecallServices | None = None) -> dict[str, Any]:
    """Run the pipeline and return the contract response as a dict.

    A query longer than ``core.limits.QUERY_MAX_CHARS`` is read by its two ends (``cap_query``). Raises
    ``ValueError`` for a bad request (a negative channel weight, an empty window).
    """
    services = services or RecallServices()
    started = time.perf_counter()
    req = replace(req, query=cap_query(req.query))  # a pasted log: its two ends are read, not the whole
    now = time.time() if req.now is None else float(req.now)
    qc = classify(req.query, services.config.weights, req.weights)
    early = early_answer(store, req, qc, now, started)
    if early is not None:
        return early
    found = gather(store, embedder, req, services, qc, now)
    boosted = boost(store, req, services, found)
    reranked = rerank_head(services.reranker, req.query, apply_floor(boosted.fused, found.evidence), found.rows)
    warming = SEMANTIC in req.channels and is_warming(store, embedder)
    # Judge lazily (stop at ``limit`` answers) unless the ranking mode re-orders answers by similarity or
    # warming shows results unjudged.
    judged = judge_all(req.query, req.result_limit, services.config.support_gate, found, boosted, reranked, now,
                       qc=qc, lazy=not ranking_on(services.config.ranking) and not warming)
    return finish(store, req, services, qc, found, boosted, reranked, judged, now, started, warming)
