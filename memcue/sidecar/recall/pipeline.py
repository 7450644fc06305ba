"""The recall pipeline, first version: channels -> weighted RRF -> evidence floor -> support tiers.

``recall(store, embedder, request)`` returns a ``RecallResult`` carrying every field of the recall
contract (DESIGN.md section 4). Bookkeeping rows are never candidates (they are not indexed), and
captured prompts (kind ``request``) are left out unless asked for.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memcue.sidecar.embedding import Embedder
from memcue.sidecar.recall import tiers
from memcue.sidecar.recall.channels import BM25, SEMANTIC, ChannelResult, bm25_channel, semantic_channel
from memcue.sidecar.recall.floor import Evidence, passes_floor
from memcue.sidecar.recall.fusion import weighted_rrf
from memcue.sidecar.recall.query import compounds, cue_terms, key_terms, keyword_query
from memcue.sidecar.store.memories import Store

#: Channel weights for weighted RRF; one table, overridable per request.
#: Semantic at 0.5: on LoCoMo, equal weights ranked below BM25 alone (MRR 0.435 vs 0.477) because the
#: small default model is the weaker channel; 0.5 gave R@10 0.653 and MRR 0.459 (benchmarks/results).
DEFAULT_WEIGHTS = {SEMANTIC: 0.5, BM25: 1.0}
#: Candidates each channel contributes before fusion.
CHANNEL_DEPTH = 40
#: How many closest memories a ``related`` answer shows.
RELATED_LIMIT = 3


@dataclass
class RecallRequest:
    """A recall: ``query`` text; ``project`` None for every project; ``limit`` results at most;
    ``channels`` to run (a subset of semantic, bm25); ``include_requests`` to let captured prompts answer."""

    query: str
    project: str | None = None
    limit: int = 10
    session_id: str = ""
    channels: tuple[str, ...] = (SEMANTIC, BM25)
    include_requests: bool = False
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))


def age_label(created_at: float, now: float) -> str:
    """Human age of a memory: "today", "yesterday", "5 days ago", "3 weeks ago", "4 months ago"."""
    days = max(0.0, now - created_at) / 86400
    if days < 1:
        return "today"
    if days < 2:
        return "yesterday"
    if days < 14:
        return f"{int(days)} days ago"
    if days < 60:
        return f"{int(days // 7)} weeks ago"
    if days < 730:
        return f"{int(days // 30)} months ago"
    return f"{int(days // 365)} years ago"


def is_warming(store: Store, embedder: Embedder | None) -> bool:
    """True while vector search is still coming: the model loads, or it loaded and vectors are not bound yet.

    False when vectors will not come at all (no sqlite-vec, a model error, a model mismatch).
    """
    if embedder is None or embedder.state == "error" or not store.vec.available or store.vector_note:
        return False
    return embedder.state == "warming" or store.vector_dim is None


def _query_type(terms: tuple[str, ...], text: str) -> str:
    """"exact_term" for a short query naming an identifier (digits, paths, snake_case, dotted names),
    else "meaning". Informational for now: both types use the same channel weights."""
    has_identifier = bool(compounds(text)) or any(ch.isdigit() for ch in text) or "_" in text
    return "exact_term" if has_identifier and len(terms) <= 6 else "meaning"


def recall(store: Store, embedder: Embedder | None, req: RecallRequest) -> dict[str, Any]:
    """Run the pipeline and return the contract response as a dict."""
    started = time.perf_counter()
    now = time.time()
    exclude = () if req.include_requests else ("request",)
    kq = keyword_query(req.query)
    limit = max(1, min(int(req.limit), 100))
    results: dict[str, ChannelResult] = {}
    vector: np.ndarray | None = None
    if SEMANTIC in req.channels:
        t0 = time.perf_counter()
        if embedder is not None and embedder.state == "ready" and store.vector_dim is not None and req.query.strip():
            try:
                vector = embedder.embed_query(req.query)
            except Exception:  # noqa: BLE001 - the channel reports it
                vector = None
        results[SEMANTIC] = semantic_channel(
            store, embedder, req.query, project=req.project, k=CHANNEL_DEPTH, exclude_kinds=exclude, vector=vector
        )
        results[SEMANTIC].elapsed_ms = (time.perf_counter() - t0) * 1000
    else:
        results[SEMANTIC] = ChannelResult(SEMANTIC, "disabled", note="not run in keyword mode")
    if BM25 in req.channels:
        t0 = time.perf_counter()
        results[BM25] = bm25_channel(store, kq, project=req.project, k=CHANNEL_DEPTH, exclude_kinds=exclude)
        results[BM25].elapsed_ms = (time.perf_counter() - t0) * 1000
    else:
        results[BM25] = ChannelResult(BM25, "disabled")

    rankings = {name: [mid for mid, _ in r.items] for name, r in results.items() if r.items}
    fused = weighted_rrf(rankings, req.weights)
    scores = {name: dict(r.items) for name, r in results.items()}
    rows = store.fetch([mid for mid, _ in fused])
    cosines = dict(scores.get(SEMANTIC, {}))
    if vector is not None:
        missing = [mid for mid, _ in fused if mid not in cosines]
        for mid, blob in store.vectors(missing).items():
            cosines[mid] = float(np.frombuffer(blob, dtype=np.float32) @ vector)

    keys, gibberish = key_terms(store.doc_frequencies(kq.terms), kq.terms) if fused else ([], False)
    judged: list[dict[str, Any]] = []
    candidates = 0
    for mid, fused_score in fused:
        row = rows.get(mid)
        if row is None or row["bookkeeping"] or row["superseded_by"] is not None:
            continue
        candidates += 1
        ev = Evidence(
            cosine=cosines.get(mid),
            bm25=scores.get(BM25, {}).get(mid, 0.0),
            pinned=row["pinned"],
            cue_terms=cue_terms(kq.terms, row["content"]),
            key_terms=keys,
            gibberish=gibberish,
        )
        if not passes_floor(ev):
            continue
        channel_scores = {name: round(s[mid], 4) for name, s in scores.items() if mid in s}
        if ev.cosine is not None:
            channel_scores.setdefault(SEMANTIC, round(ev.cosine, 4))
        judged.append({
            "fact_id": mid,
            "memory_id": mid,
            "content": row["content"],
            "score": round(fused_score, 5),
            "tier": tiers.support_label(ev),
            "memory_kind": row["kind"],
            "project": row["project"],
            "pinned": row["pinned"],
            "created_at": row["created_at"],
            "age_label": age_label(row["created_at"], now),
            "channel_scores": channel_scores,
            "cue_terms": ev.cue_terms,
        })

    supported = [r for r in judged if r["tier"] in (tiers.SUPPORTED, tiers.WEAK)]
    warming = SEMANTIC in req.channels and is_warming(store, embedder)
    if supported:
        tier, out, note, reason = tiers.SUPPORTED, supported[:limit], "", None
    elif judged:
        tier, out, note, reason = "related", judged[:RELATED_LIMIT], tiers.NOTE_RELATED, None
        for r in out:
            r["tier"] = tiers.RELATED
    elif candidates:
        tier, out, note, reason = "none", [], tiers.NOTE_NONE, "evidence_floor"
    elif not req.query.strip():
        tier, out, note, reason = "none", [], tiers.NOTE_EMPTY_QUERY, "no_candidates"
    else:
        tier, out, note, reason = "none", [], tiers.NOTE_NO_CANDIDATES, "no_candidates"
    if warming and tier != tiers.SUPPORTED:
        note = tiers.NOTE_WARMING
    mode = "full" if SEMANTIC in req.channels else "keyword"
    return {
        "query": req.query,
        "results": out,
        "tier": tier,
        "note": note,
        "query_type": _query_type(kq.terms, req.query),
        "query_terms": list(kq.terms),
        "key_terms": keys,
        "channel_weights": {name: req.weights.get(name, 1.0) for name in results},
        "channel_status": {name: r.status for name, r in results.items()},
        "channel_notes": {name: r.note for name, r in results.items() if r.note},
        "channel_ms": {name: round(r.elapsed_ms, 2) for name, r in results.items()},
        "incomplete_channels": [],
        "retrieval_time_ms": round((time.perf_counter() - started) * 1000, 2),
        "retrieval_mode": mode,
        "query_id": uuid.uuid4().hex[:16],
        "abstained": tier == "none",
        "abstention_reason": reason,
        "warming_up": warming,
        "calibration_status": "uncalibrated",
        "answer_confidence": None,
        "answerability": "unjudged",
        "answerability_reason": "no answer check is configured",
        "layers": {},
    }
