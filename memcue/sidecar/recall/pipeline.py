"""The recall pipeline: classify -> channels -> weighted RRF -> boosts -> evidence floor -> rerank ->
support tiers -> order and limit.

``recall(store, embedder, request, services)`` returns a dict carrying every field of the recall contract
(DESIGN.md section 4). Channels run concurrently, each bounded by ``RecallRequest.channel_timeout_s``;
a channel that misses it is reported ``timeout`` and listed in ``incomplete_channels``, and the recall
goes on with the rest. Bookkeeping rows are never candidates (they are not indexed); captured prompts
(kind ``request``) are left out unless asked for, and always rank below saved memories unless the
question asks what the user requested.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memcue.core.session_ids import is_synthetic
from memcue.sidecar.recall import classify as qclass
from memcue.sidecar.recall import tiers
from memcue.sidecar.recall.answer import contract_response, result_item
from memcue.sidecar.recall.boosts import SESSION_CONTEXT_TOP, apply_boosts, session_context
from memcue.sidecar.recall.channel_runner import run_channels
from memcue.sidecar.recall.channels import (
    ALL_CHANNELS,
    BM25,
    GRAPH,
    HOPFIELD,
    SEMANTIC,
    TEMPORAL,
    ChannelContext,
    ChannelResult,
)
from memcue.sidecar.recall.filters import Filters
from memcue.sidecar.recall.floor import Evidence, passes_floor
from memcue.sidecar.recall.fusion import weighted_rrf
from memcue.sidecar.recall.graph import query_entity_ids, shared_entities
from memcue.sidecar.recall.query import TIME_WORDS, cue_terms, key_terms, keyword_query, words
from memcue.sidecar.recall.ranking import ranking_enabled, rerank_by_ranking
from memcue.sidecar.recall.rerank import Reranker
from memcue.sidecar.recall.vector_index import VectorIndex
from memcue.sidecar.recall.working_set import WorkingSets
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import DF_CAP, Store, extract_entities

#: Candidates each channel contributes before fusion. 60 rather than 40: the session-context boost can only
#: lift a memory some channel found (LoCoMo recall@10 +0.004 at 60; benchmarks/results/locomo_ablation.md).
CHANNEL_DEPTH = 60
#: How many closest memories a ``related`` answer shows.
RELATED_LIMIT = 3
#: Time limit of one channel (s) unless the request sets one; the hook race answers at 1 s with keywords.
CHANNEL_TIMEOUT_S = 2.0
#: How many fused candidates the cross-encoder rescores (when one is loaded).
RERANK_DEPTH = 30
#: Results of a present-tense question ("what am I working on?"): the project's newest real memories, at
#: most ``PRESENT_LIMIT``, written within ``PRESENT_SPAN_S`` (s) of the newest one (the current stretch
#: of work, not last month's).
PRESENT_LIMIT = 5
PRESENT_SPAN_S = 36 * 3600.0
#: Keyword results a recall shows while the model loads (issue 4: up to five, labelled related).
WARMING_LIMIT = 5
#: Best results a recall offers to the session's working set.
WORKING_SET_OFFER = 5
#: Channels of a full recall and of a keyword-only one.
FULL_CHANNELS = ALL_CHANNELS
KEYWORD_CHANNELS = (BM25,)

@dataclass(frozen=True)
class RecallOptions:
    """What the sidecar's settings decide for every recall: ``support_gate`` on/off, and per query type channel
    ``weights`` overrides (query type -> channel -> weight; ``classify.CHANNEL_WEIGHTS`` otherwise)."""

    support_gate: bool = True
    weights: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass
class RecallServices:
    """Long-lived helpers one sidecar shares between recalls: the in-memory vector index, the optional
    reranker, the session working sets and the config."""

    vectors: VectorIndex = field(default_factory=VectorIndex)
    reranker: Reranker | None = None
    working_sets: WorkingSets = field(default_factory=WorkingSets)
    config: RecallOptions = field(default_factory=RecallOptions)


@dataclass
class RecallRequest:
    """A recall: ``query`` text; ``project`` None for every project; ``limit`` results at most; ``channels``
    to run (a subset of ``ALL_CHANNELS``); ``include_requests`` to let captured prompts answer; ``weights``
    overriding the query type's channel weights; ``filters`` (window / as_of / valid_at); ``now`` the asking
    time (Unix s, default the clock) for relative dates; ``channel_timeout_s`` per channel (s); ``depth``
    (0, 1, 2) and ``max_tokens`` shape the results (``recall.layers``, applied by the engine)."""

    query: str
    project: str | None = None
    limit: int = 10
    session_id: str = ""
    channels: tuple[str, ...] = FULL_CHANNELS
    include_requests: bool = False
    weights: dict[str, float] | None = None
    filters: Filters = field(default_factory=Filters)
    now: float | None = None
    channel_timeout_s: float = CHANNEL_TIMEOUT_S
    depth: int = 1
    max_tokens: int | None = None


def is_warming(store: Store, embedder: Embedder | None) -> bool:
    """True while vector search is still coming: the model loads, or it loaded and vectors are not bound yet.

    False when vectors will not come at all (no sqlite-vec, a model error, a model mismatch).
    """
    if embedder is None or embedder.state == "error" or not store.vec.available or store.vector_note:
        return False
    return embedder.state == "warming" or store.vector_dim is None


def _embed(store: Store, embedder: Embedder | None, req: RecallRequest) -> np.ndarray | None:
    if SEMANTIC not in req.channels and HOPFIELD not in req.channels:
        return None
    if embedder is None or embedder.state != "ready" or store.vector_dim is None or not req.query.strip():
        return None
    try:
        return embedder.embed_query(req.query)
    except Exception:  # noqa: BLE001 - the semantic channel reports the failure itself
        return None


def _present_tense(store: Store, req: RecallRequest, now: float, started: float, qc: qclass.QueryClass,
                   filters: Filters, *, requests: bool = False) -> dict[str, Any]:
    """Answer "what am I working on?" from the project's newest real memories (no bookkeeping, no prompts),
    or, with ``requests``, "what did I ask for?" (no topic) from the newest captured prompts."""
    if requests:
        rows = store.list_memories(project=req.project, limit=PRESENT_LIMIT * 4, include_bookkeeping=False,
                                   kind="request")
    else:
        rows = store.list_memories(project=req.project, limit=PRESENT_LIMIT * 4, include_bookkeeping=False,
                                   kinds_excluded=("request",))
    rows = [r for r in rows if filters.keeps(r)][:min(PRESENT_LIMIT, req.limit)]
    if rows:
        rows = [r for r in rows if r["created_at"] >= rows[0]["created_at"] - PRESENT_SPAN_S]
    results = [result_item(r, 1.0 / (i + 1), tiers.SUPPORTED, now, {}, []) for i, r in enumerate(rows)]
    why = "a question about your last requests: the newest prompts answer it" if requests else \
        "present-tense question: newest memories answer it"
    statuses = {name: ChannelResult(name, "disabled", note=why) for name in ALL_CHANNELS}
    tier = tiers.SUPPORTED if results else "none"
    return contract_response(req, results, tier, "" if results else tiers.NOTE_NO_CANDIDATES,
                     None if results else "no_candidates", qc, statuses, [], started, False, keys=[],
                     reranker_status="off",
                     extra={"answered_from": "newest_requests" if requests else "newest_memories"})


#: Words that only say "what I asked" (with stop and time words, what a request question has when it names
#: no topic: "what did I ask for?", "what was my last prompt?").
REQUEST_WORDS = frozenset("ask asked asking request requested requests tell told say said prompt prompts "
                          "question questions typed wanted ever last previous earlier first".split())


def _names_no_topic(query: str) -> bool:
    """True when ``query`` has no word beyond stop, time and request words."""
    return not [t for t in keyword_query(query).terms if t not in REQUEST_WORDS and t not in TIME_WORDS]


def _unknown_names(store: Store, query: str, project: str | None) -> tuple[list[str], list[str]]:
    """Names the query mentions (people, products, files, identifiers): those no memory in scope carries,
    and the capitalised names that memory does know (the people the question is about)."""
    names = [(name, kind) for name, kind in extract_entities(query)]
    if not names:
        return [], []
    plain = {name: " ".join(words(name)) for name, _ in names}
    df = store.doc_frequencies([p for p in plain.values() if p], cap=1, project=project)
    unknown = [name for name, _ in names if plain[name] and df.get(plain[name], 0) == 0]
    people = [plain[name] for name, kind in names if kind == "name" and name not in unknown and plain[name]]
    return unknown, people


def _window(temporal: ChannelResult) -> tuple[float, float] | None:
    """The time window the temporal channel read in the question, as ``(start, end)`` Unix seconds (open
    sides infinite), or None when it read none."""
    bounds = temporal.detail.get("window") if temporal.status in ("ok", "no_candidates") else None
    if not bounds or all(b is None for b in bounds):
        return None
    start, end = (dt.datetime.fromisoformat(b).timestamp() if b else None for b in bounds)
    return (float("-inf") if start is None else start, float("inf") if end is None else end)


def _pinned(store: Store, req: RecallRequest, filters: Filters, now: float,
            judged: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scope's pinned memories not already among ``judged``, newest first, as related results."""
    seen = {r["memory_id"] for r in judged}
    rows = store.list_memories(project=req.project, limit=RELATED_LIMIT * 2, include_bookkeeping=False,
                               pinned_only=True, kinds_excluded=("request",))
    out = []
    for row in rows:
        if row["id"] not in seen and filters.keeps(row):
            item = result_item(row, 0.0, tiers.RELATED, now, {}, [])
            item["support"] = "pinned"
            out.append(item)
    return out[:RELATED_LIMIT]


def recall(store: Store, embedder: Embedder | None, req: RecallRequest,
           services: RecallServices | None = None) -> dict[str, Any]:
    """Run the pipeline and return the contract response as a dict.

    Raises ``ValueError`` for a bad request (a negative channel weight, an empty window).
    """
    services = services or RecallServices()
    started = time.perf_counter()
    # 1. Classify: the query type and its channel weights.
    now = time.time() if req.now is None else float(req.now)
    qc = qclass.classify(req.query, services.config.weights, req.weights)
    filters = req.filters
    if qc.query_type == qclass.PRESENT_TENSE and SEMANTIC in req.channels:
        return _present_tense(store, req, now, started, qc, filters)
    if qc.query_type == qclass.REQUEST_RECALL and _names_no_topic(req.query):
        return _present_tense(store, req, now, started, qc, filters, requests=True)
    # 2. Channels, concurrently, each bounded by the channel time limit.
    asks_requests = qc.query_type == qclass.REQUEST_RECALL
    exclude = () if (req.include_requests or asks_requests) else ("request",)
    limit = max(1, min(int(req.limit), 100))
    kq = keyword_query(req.query)
    doc_freq = store.doc_frequencies(kq.terms, project=req.project) if kq.terms else {}
    common = frozenset(t for t, n in doc_freq.items() if n >= DF_CAP)
    searched = keyword_query(req.query, common) if common else kq  # 10 ms -> 4 ms of BM25 at 27k (issue 4)
    vector = _embed(store, embedder, req)
    ctx = ChannelContext(store=store, query=req.query, keywords=searched, project=req.project,
                         k=CHANNEL_DEPTH * (3 if filters.active else 1), exclude_kinds=exclude, now=now,
                         vector=vector, embedder=embedder, include_superseded=filters.include_superseded,
                         vectors=services.vectors)
    names = tuple(n for n in ALL_CHANNELS if n in req.channels and (n in (SEMANTIC, BM25) or qc.weights.get(n, 0) > 0))
    channels, incomplete = run_channels(ctx, names, req.channel_timeout_s)

    # 3. Weighted RRF, then what each candidate has going for it (cosine, BM25, entity, time, pinned).
    rankings = {name: [mid for mid, _ in r.items] for name, r in channels.items() if r.items}
    fused = weighted_rrf(rankings, qc.weights)
    scores = {name: dict(r.items) for name, r in channels.items()}
    candidate_ids = [mid for mid, _ in fused]
    rows = store.fetch(candidate_ids)
    cosines = dict(scores.get(SEMANTIC, {}))
    if vector is not None:
        missing = [mid for mid in candidate_ids if mid not in cosines]
        cosines.update(services.vectors.cosines(store, missing, vector))
    entity_evidence = channels[GRAPH].evidence or set()
    temporal_evidence = channels[TEMPORAL].evidence
    if temporal_evidence is None:
        temporal_evidence = set(scores.get(TEMPORAL, {}))

    evidence: dict[int, Evidence] = {}
    for mid in candidate_ids:
        row = rows.get(mid)
        if row is None or row["bookkeeping"] or not filters.keeps(row):
            continue
        evidence[mid] = Evidence(cosine=cosines.get(mid), bm25=scores.get(BM25, {}).get(mid, 0.0),
                                 entity=mid in entity_evidence, temporal=mid in temporal_evidence,
                                 pinned=row["pinned"])
    # 4. Boosts (entity, agreement, owner, time window, session context, working set).
    seeds = (query_entity_ids(store, req.query, project=req.project, include_superseded=filters.include_superseded)
             if channels[GRAPH].status == "ok" else {})
    shared = shared_entities(store, seeds, list(evidence)) if seeds else {}
    bias = {} if is_synthetic(req.session_id) else services.working_sets.bias(req.session_id)
    unknown, people = _unknown_names(store, req.query, req.project) if evidence else ([], [])
    owners = {mid: tiers.owner_of(rows[mid]["content"], rows[mid]["metadata"]) for mid in evidence}
    fused = [(m, s) for m, s in fused if m in evidence]
    window = _window(channels[TEMPORAL])
    in_window = set() if window is None else {m for m in evidence if window[0] <= rows[m]["created_at"] < window[1]}
    session_boost = session_context(fused, store.session_neighbours([m for m, _ in fused[:SESSION_CONTEXT_TOP]]))
    fused, boosts = apply_boosts(fused,
                                 shared_entities={m: len(v) for m, v in shared.items()},
                                 evidence_channels={m: ev.channels for m, ev in evidence.items()},
                                 working_set_bias=bias,
                                 owner_match={m for m, o in owners.items() if o and o in people},
                                 session_boost=session_boost, in_window=in_window)
    # 5. The evidence floor, before any limit.
    survivors = [(mid, score) for mid, score in fused if passes_floor(evidence[mid])]

    # 6. Optional cross-encoder rerank of the head (never waits for a model).

    reranker = services.reranker
    rerank_scores: dict[int, float] = {}
    reranker_status = reranker.status if reranker is not None else "off"
    if reranker is not None and survivors:
        head = survivors[:RERANK_DEPTH]
        got = reranker.scores(req.query, [rows[mid]["content"] for mid, _ in head])
        if got is not None:
            rerank_scores = {mid: float(s) for (mid, _), s in zip(head, got, strict=True)}
            head = sorted(head, key=lambda item: (-rerank_scores[item[0]], item[0]))
            survivors = head + survivors[RERANK_DEPTH:]
        reranker_status = reranker.status

    # 7. Support tiers, each memory judged on its own.
    keys, gibberish = key_terms(doc_freq, kq.terms) if survivors else ([], False)
    question = tiers.is_question(req.query)
    warming = SEMANTIC in req.channels and is_warming(store, embedder)
    # Judge in rank order and stop once ``limit`` answers are found: what comes after could not be shown
    # (unless the ranking mode re-orders answers by similarity, or warming shows results unjudged).
    lazy = not ranking_enabled() and not warming
    answers = 0
    judged: list[dict[str, Any]] = []
    for mid, score in survivors:
        if lazy and answers >= limit:
            break
        row, ev = rows[mid], evidence[mid]
        cues = cue_terms(kq.terms, row["content"])
        support = tiers.Support(cosine=ev.cosine, baseline=row.get("baseline"), cue_terms=cues, key_terms=keys,
                                rerank=rerank_scores.get(mid),
                                shared_entity=bool(shared.get(mid)), gibberish=gibberish, unknown_names=unknown,
                                question=question, query_people=people, content=row["content"],
                                owner=owners.get(mid, ""), session_context=mid in session_boost,
                                temporal=ev.temporal, in_window=None if window is None else (
                                    window[0] <= row["created_at"] < window[1]))
        label, reason = tiers.judge(support) if services.config.support_gate else (tiers.SUPPORTED, "gate_off")
        channel_scores = {name: round(s[mid], 4) for name, s in scores.items() if mid in s}
        if ev.cosine is not None:
            channel_scores.setdefault(SEMANTIC, round(ev.cosine, 4))
        if mid in rerank_scores:
            channel_scores["rerank"] = round(rerank_scores[mid], 4)
        item = result_item(row, score, label, now, channel_scores, cues)
        item["support"] = reason
        if mid in boosts:
            item["boost"] = round(boosts[mid], 5)
        if unknown:
            item["unknown_names"] = unknown
        judged.append(item)
        if label in (tiers.SUPPORTED, tiers.WEAK) and (row["kind"] == "request") == asks_requests:
            answers += 1

    # 8. Order, ranking mode, the answer's tier and the session's working set.
    # Captured prompts answer "what did I ask…" first; otherwise they rank below saved memories.
    judged.sort(key=lambda r: (r["memory_kind"] == "request") != asks_requests)
    supported = [r for r in judged if r["tier"] in (tiers.SUPPORTED, tiers.WEAK)]
    if supported and ranking_enabled():
        for r in supported:
            r["similarity"] = r["channel_scores"].get(SEMANTIC, r["score"])
        supported = rerank_by_ranking([{**r, "score": r["similarity"], "fused_score": r["score"]}
                                       for r in supported], now)
        for r in supported:
            r["score"] = r.pop("fused_score")
    pinned = [] if supported or not req.query.strip() else _pinned(store, req, filters, now, judged)
    if warming and (supported or judged):
        # While the model loads, only keyword evidence exists: show it, unjudged, as related (never as an
        # answer, and never "That isn't in memcue.").
        out = [{**r, "tier": tiers.RELATED} for r in (supported or judged)][:WARMING_LIMIT]
        return contract_response(req, out, "related", tiers.NOTE_WARMING, None, qc, channels, incomplete,
                                 started, warming, keys=keys, reranker_status=reranker_status)
    if supported:
        tier, out, note, reason = tiers.SUPPORTED, supported[:limit], "", None
    elif judged or pinned:
        # Pinned memories return when nothing else does: first in a related answer, labelled.
        related = pinned + sorted(judged, key=lambda r: not r["pinned"])
        tier, out, note, reason = "related", related[:RELATED_LIMIT], tiers.NOTE_RELATED, None
        for r in out:
            r["tier"] = tiers.RELATED
    elif evidence:
        tier, out, note, reason = "none", [], tiers.NOTE_NONE, "evidence_floor"
    elif not req.query.strip():
        tier, out, note, reason = "none", [], tiers.NOTE_EMPTY_QUERY, "no_candidates"
    else:
        tier, out, note, reason = "none", [], tiers.NOTE_NO_CANDIDATES, "no_candidates"
    if tier == "none" and window is not None and channels[TEMPORAL].status == "no_candidates":
        note = tiers.NOTE_NOTHING_THEN.format(expression=channels[TEMPORAL].detail.get("expression") or "then")
    if warming and tier != tiers.SUPPORTED:
        note = tiers.NOTE_WARMING
    if tier == tiers.SUPPORTED and not is_synthetic(req.session_id):
        services.working_sets.offer(req.session_id, [r["memory_id"] for r in out[:WORKING_SET_OFFER]])
    return contract_response(req, out, tier, note, reason, qc, channels, incomplete, started, warming, keys=keys,
                     reranker_status=reranker_status)
