"""The outcome of a recall: order the judged results, pick the answer's one tier (``supported`` results,
``related`` closest memories, or ``none``) with its note, cut to the limit, and offer the best results to
the session's working set."""

from __future__ import annotations

from typing import Any

from memcue.core.session_ids import is_synthetic
from memcue.sidecar.recall.boosts import Boosted
from memcue.sidecar.recall.candidates import Candidates
from memcue.sidecar.recall.channels import SEMANTIC, TEMPORAL
from memcue.sidecar.recall.classify import ASKED_KINDS, QueryClass
from memcue.sidecar.recall.contract import (
    NOTE_EMPTY_QUERY,
    NOTE_NO_CANDIDATES,
    NOTE_NONE,
    NOTE_NOTHING_THEN,
    NOTE_RELATED,
    NOTE_WARMING,
    contract_response,
    result_item,
)
from memcue.sidecar.recall.ranking import ranking_on, rerank_by_ranking
from memcue.sidecar.recall.request import RecallRequest, RecallServices
from memcue.sidecar.recall.rerank import Reranked
from memcue.sidecar.recall.shortcuts import warming_answer
from memcue.sidecar.recall.support import RELATED, SUPPORTED, WEAK, Judged
from memcue.sidecar.store import Store

#: How many closest memories a ``related`` answer shows.
RELATED_LIMIT = 3
#: Best results a recall offers to the session's working set.
WORKING_SET_OFFER = 5

#: ``(tier, results, note, abstention reason)``
Choice = tuple[str, list[dict[str, Any]], str, str | None]


def _supported(judged: list[dict[str, Any]], now: float, ranking: bool) -> list[dict[str, Any]]:
    """The supported and weak results, re-ordered by the ranking mode (similarity, age, reinforcement)
    when ``ranking`` is on."""
    supported = [r for r in judged if r["tier"] in (SUPPORTED, WEAK)]
    if supported and ranking:
        for r in supported:
            r["similarity"] = r["channel_scores"].get(SEMANTIC, r["score"])
        supported = rerank_by_ranking([{**r, "score": r["similarity"], "fused_score": r["score"]}
                                       for r in supported], now)
        for r in supported:
            r["score"] = r.pop("fused_score")
    return supported


def _pinned(store: Store, req: RecallRequest, now: float, judged: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scope's pinned memories not already among ``judged``, newest first, as related results."""
    seen = {r["memory_id"] for r in judged}
    rows = store.list_memories(project=req.project, limit=RELATED_LIMIT * 2, include_bookkeeping=False,
                               pinned_only=True, kinds_excluded=tuple(ASKED_KINDS.values()))
    out = []
    for row in rows:
        if row["id"] not in seen and req.filters.keeps(row):
            item = result_item(row, 0.0, RELATED, now, {}, [])
            item["support"] = "pinned"
            out.append(item)
    return out[:RELATED_LIMIT]


def _choose(req: RecallRequest, supported: list[dict[str, Any]], judged: list[dict[str, Any]],
            pinned: list[dict[str, Any]], found: Candidates) -> Choice:
    """The answer's tier, results, note and abstention reason. Pinned memories return when nothing else
    does: in a related answer, labelled, after the closest memories (issue 15: the closest come first)."""
    if supported:
        return SUPPORTED, supported[:req.result_limit], "", None
    if judged or pinned:
        related = (judged + pinned)[:RELATED_LIMIT]
        for r in related:
            r["tier"] = RELATED
        return "related", related, NOTE_RELATED, None
    if found.evidence:
        return "none", [], NOTE_NONE, "evidence_floor"
    if not req.query.strip():
        return "none", [], NOTE_EMPTY_QUERY, "no_candidates"
    return "none", [], NOTE_NO_CANDIDATES, "no_candidates"


def finish(store: Store, req: RecallRequest, services: RecallServices, qc: QueryClass, found: Candidates,
           boosted: Boosted, reranked: Reranked, judged: Judged, now: float, started: float, warming: bool
           ) -> dict[str, Any]:
    """The contract response from the judged results. Captured prompts answer "what did I ask…" first;
    otherwise they, and episodes (for "what did we do…"), rank below saved memories (``QueryClass.rank_group``).
    While ``warming``, the results are shown unjudged
    (``shortcuts.warming_answer``). A supported answer is offered to the session's working set (not for
    synthetic sessions). The question's own captured copy is left out (``RecallRequest.own_copy``). ``now``: asking
    time (Unix s); ``started``: ``time.perf_counter()`` at the start."""
    items = [r for r in judged.items if not req.own_copy(r["memory_kind"], r["content"])]
    items.sort(key=lambda r: qc.rank_group(r["memory_kind"]))
    supported = _supported(items, now, ranking_on(services.config.ranking))
    if warming and (supported or items):
        return warming_answer(req, qc, supported or items, found.channels, found.incomplete, started,
                              keys=judged.keys, reranker_status=reranked.status)
    # A keyword search (``search``: a known exact term) gets no pinned stand-ins: nothing found is the answer.
    pinned = [] if supported or req.keyword_only or not req.query.strip() else _pinned(store, req, now, items)
    tier, out, note, reason = _choose(req, supported, items, pinned, found)
    temporal = found.channels[TEMPORAL]
    if tier == "none" and boosted.window is not None and temporal.status == "no_candidates":
        note = NOTE_NOTHING_THEN.format(expression=temporal.detail.get("expression") or "then")
    if warming and tier != SUPPORTED:
        note = NOTE_WARMING
    if tier == SUPPORTED and not is_synthetic(req.session_id):
        services.working_sets.offer(req.session_id, [r["memory_id"] for r in out[:WORKING_SET_OFFER]])
    return contract_response(req, out, tier, note, reason, qc, found.channels, found.incomplete, started, warming,
                             keys=judged.keys, reranker_status=reranked.status)
