"""Answers that skip the ranking: a present-tense question ("what am I working on?") and a question about
the user's own requests that names no topic ("what did I ask for?") are answered from the newest memories;
while the embedding model warms up, keyword evidence is shown unjudged, as related."""

from __future__ import annotations

from typing import Any

from memcue.sidecar.recall.channels import ALL_CHANNELS, SEMANTIC, ChannelResult
from memcue.sidecar.recall.classify import ASKED_KINDS, PRESENT_TENSE, REQUEST_RECALL, QueryClass
from memcue.sidecar.recall.contract import NOTE_NO_CANDIDATES, NOTE_WARMING, contract_response, result_item
from memcue.sidecar.recall.query import TIME_WORDS, keyword_query
from memcue.sidecar.recall.request import RecallRequest
from memcue.sidecar.recall.support import RELATED, SUPPORTED
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import Store

#: Results of a present-tense question ("what am I working on?"): the project's newest real memories, at
#: most ``PRESENT_LIMIT``, written within ``PRESENT_SPAN_S`` (s) of the newest one (the current stretch
#: of work, not last month's).
PRESENT_LIMIT = 5
PRESENT_SPAN_S = 36 * 3600.0
#: Keyword results a recall shows while the model loads (issue 4: up to five, labelled related).
WARMING_LIMIT = 5
#: Words that only say "what I asked" (with stop and time words, what a request question has when it names
#: no topic: "what did I ask for?", "what was my last prompt?").
REQUEST_WORDS = frozenset("ask asked asking request requested requests tell told say said prompt prompts "
                          "question questions typed wanted ever last previous earlier first".split())


def is_warming(store: Store, embedder: Embedder | None) -> bool:
    """True while vector search is still coming: the model loads, or it loaded and vectors are not bound yet.

    False when vectors will not come at all (no sqlite-vec, a model error, a model mismatch).
    """
    if embedder is None or embedder.state == "error" or not store.vec.available or store.vector_note:
        return False
    return embedder.state == "warming" or store.vector_dim is None


def names_no_topic(query: str) -> bool:
    """True when ``query`` has no word beyond stop, time and request words."""
    return not [t for t in keyword_query(query).terms if t not in REQUEST_WORDS and t not in TIME_WORDS]


def early_answer(store: Store, req: RecallRequest, qc: QueryClass, now: float, started: float
                 ) -> dict[str, Any] | None:
    """The contract response for a present-tense question (when the semantic channel is asked for) or a
    request question naming no topic; None for every other question. ``now``: asking time (Unix s);
    ``started``: ``time.perf_counter()`` at the start of the recall."""
    if qc.query_type == PRESENT_TENSE and SEMANTIC in req.channels:
        return _newest(store, req, qc, now, started, requests=False)
    if qc.query_type == REQUEST_RECALL and names_no_topic(req.query):
        return _newest(store, req, qc, now, started, requests=True)
    return None


def _newest(store: Store, req: RecallRequest, qc: QueryClass, now: float, started: float, *,
            requests: bool) -> dict[str, Any]:
    """Answer "what am I working on?" from the project's newest real memories (no bookkeeping, no prompts, no
    episodes),
    or, with ``requests``, "what did I ask for?" (no topic) from the newest captured prompts."""
    if requests:
        rows = store.list_memories(project=req.project, limit=PRESENT_LIMIT * 4, include_bookkeeping=False,
                                   kind="request")
    else:
        rows = store.list_memories(project=req.project, limit=PRESENT_LIMIT * 4, include_bookkeeping=False,
                                   kinds_excluded=tuple(ASKED_KINDS.values()))
    rows = [r for r in rows if req.filters.keeps(r)][:min(PRESENT_LIMIT, req.limit)]
    if rows:
        rows = [r for r in rows if r["created_at"] >= rows[0]["created_at"] - PRESENT_SPAN_S]
    results = [result_item(r, 1.0 / (i + 1), SUPPORTED, now, {}, []) for i, r in enumerate(rows)]
    why = "a question about your last requests: the newest prompts answer it" if requests else \
        "present-tense question: newest memories answer it"
    statuses = {name: ChannelResult(name, "disabled", note=why) for name in ALL_CHANNELS}
    tier = SUPPORTED if results else "none"
    return contract_response(req, results, tier, "" if results else NOTE_NO_CANDIDATES,
                             None if results else "no_candidates", qc, statuses, [], started, False, keys=[],
                             reranker_status="off",
                             extra={"answered_from": "newest_requests" if requests else "newest_memories"})


def warming_answer(req: RecallRequest, qc: QueryClass, shown: list[dict[str, Any]],
                   channels: dict[str, ChannelResult], incomplete: list[str], started: float, *,
                   keys: list[str], reranker_status: str) -> dict[str, Any]:
    """While the model loads only keyword evidence exists: the first ``WARMING_LIMIT`` of ``shown``
    (result items), unjudged, as related (never as an answer, and never "That isn't in memcue.")."""
    out = [{**r, "tier": RELATED} for r in shown][:WARMING_LIMIT]
    return contract_response(req, out, "related", NOTE_WARMING, None, qc, channels, incomplete, started, True,
                             keys=keys, reranker_status=reranker_status)
