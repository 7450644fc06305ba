"""Answers that skip the ranking: a present-tense question that names no topic ("what am I working on?"), a
question about the user's own requests that names no topic ("what did I ask for?") and one about what was done
that names neither a topic nor a time ("what did we do?") are answered from the newest memories, prompts or
episodes; when the first two name a day ("what was I doing yesterday?", "what did I ask you on Monday?"), from
the newest of that day (the question's time window, ``recall.time.parse_time``). One that names a topic ("what
was I doing yesterday on the importer?") goes through the ranking, which weighs its time window. While the
embedding model warms up, keyword evidence is shown unjudged, as related."""

from __future__ import annotations

from typing import Any

from memcue.sidecar.recall.channels import ALL_CHANNELS, SEMANTIC, ChannelResult
from memcue.sidecar.recall.classify import (
    ASKED_KINDS,
    PRESENT_TENSE,
    PRESENT_WORDS,
    REQUEST_RECALL,
    REQUEST_WORDS,
    WORK_RECALL,
    WORK_WORDS,
    QueryClass,
)
from memcue.sidecar.recall.contract import NOTE_NO_CANDIDATES, NOTE_WARMING, contract_response, result_item
from memcue.sidecar.recall.query import TIME_WORDS, keyword_query
from memcue.sidecar.recall.request import RecallRequest
from memcue.sidecar.recall.support import RELATED, SUPPORTED
from memcue.sidecar.recall.time import parse_time
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import Store

#: Results of a present-tense question ("what am I working on?"): the project's newest real memories, at
#: most ``PRESENT_LIMIT``, written within ``PRESENT_SPAN_S`` (s) of the newest one (the current stretch
#: of work, not last month's).
PRESENT_LIMIT = 5
PRESENT_SPAN_S = 36 * 3600.0
#: Keyword results a recall shows while the model loads (issue 4: up to five, labelled related).
WARMING_LIMIT = 5
def is_warming(store: Store, embedder: Embedder | None) -> bool:
    """True while vector search is still coming: the model loads, or it loaded and vectors are not bound yet.

    False when vectors will not come at all (no sqlite-vec, a model error, a model mismatch).
    """
    if embedder is None or embedder.state == "error" or not store.vec.available or store.vector_note:
        return False
    return embedder.state == "warming" or store.vector_dim is None


def names_no_topic(query: str, words: frozenset[str] = REQUEST_WORDS) -> bool:
    """True when ``query`` has no word beyond stop, time and ``words`` (request words by default)."""
    return not [t for t in keyword_query(query).terms if t not in words and t not in TIME_WORDS]


def early_answer(store: Store, req: RecallRequest, qc: QueryClass, now: float, started: float
                 ) -> dict[str, Any] | None:
    """The contract response for a present-tense question (when the semantic channel is asked for), a
    request question naming no topic, or a "what was done" question naming neither a topic nor a time; None
    for every other question. ``now``: asking time (Unix s); ``started``: ``time.perf_counter()`` at the
    start of the recall."""
    if qc.query_type == PRESENT_TENSE and SEMANTIC in req.channels and names_no_topic(req.query, PRESENT_WORDS):
        return _newest(store, req, qc, now, started, kind=None, window=_window(req.query, now, qc))
    if qc.query_type == REQUEST_RECALL and names_no_topic(req.query):
        return _newest(store, req, qc, now, started, kind="request", window=_window(req.query, now, qc))
    if qc.query_type == WORK_RECALL and not qc.timed and names_no_topic(req.query, WORK_WORDS):
        return _newest(store, req, qc, now, started, kind="episode")
    return None


#: What ``_newest`` answers from, per kind asked: the response's ``answered_from`` and the channels' note.
_NEWEST = {None: ("newest_memories", "present-tense question: newest memories answer it"),
           "request": ("newest_requests", "a question about your last requests: the newest prompts answer it"),
           "episode": ("newest_episodes", "a question about what was done lately: the newest episodes answer it")}


def _window(query: str, now: float, qc: QueryClass) -> tuple[float, float] | None:
    """The time window ``(start, end)`` (Unix s, open sides infinite) ``query`` names, None when it names none."""
    intent = parse_time(query, now) if qc.timed else None
    if intent is None or (intent.start is None and intent.end is None):
        return None
    return (float("-inf") if intent.start is None else intent.start,
            float("inf") if intent.end is None else intent.end)


#: Rows ``_newest`` reads before its filters; a window reaches further back.
_NEWEST_READ, _NEWEST_READ_WINDOW = PRESENT_LIMIT * 4, 500


def _newest(store: Store, req: RecallRequest, qc: QueryClass, now: float, started: float, *,
            kind: str | None, window: tuple[float, float] | None = None) -> dict[str, Any]:
    """Answer "what am I working on?" (``kind`` None) from the project's newest real memories (no bookkeeping,
    no prompts, no episodes); "what did I ask for?" (``kind`` "request") or "what did we do?" ("episode"),
    naming no topic, from the newest rows of that kind; only rows written in ``window`` (Unix s) when given,
    never the question's own captured copy (unless the request asks for captured prompts)."""
    read = _NEWEST_READ if window is None else _NEWEST_READ_WINDOW
    if kind:
        rows = store.list_memories(project=req.project, limit=read, include_bookkeeping=False, kind=kind)
    else:
        rows = store.list_memories(project=req.project, limit=read, include_bookkeeping=False,
                                   kinds_excluded=tuple(ASKED_KINDS.values()))
    rows = [r for r in rows if req.filters.keeps(r) and not req.own_copy(r["kind"], r["content"])
            and (window is None or window[0] <= r["created_at"] < window[1])][:min(PRESENT_LIMIT, req.limit)]
    if rows:
        rows = [r for r in rows if r["created_at"] >= rows[0]["created_at"] - PRESENT_SPAN_S]
    results = [result_item(r, 1.0 / (i + 1), SUPPORTED, now, {}, []) for i, r in enumerate(rows)]
    answered_from, why = _NEWEST[kind]
    statuses = {name: ChannelResult(name, "disabled", note=why) for name in ALL_CHANNELS}
    tier = SUPPORTED if results else "none"
    return contract_response(req, results, tier, "" if results else NOTE_NO_CANDIDATES,
                             None if results else "no_candidates", qc, statuses, [], started, False, keys=[],
                             reranker_status="off", extra={"answered_from": answered_from})


def warming_answer(req: RecallRequest, qc: QueryClass, shown: list[dict[str, Any]],
                   channels: dict[str, ChannelResult], incomplete: list[str], started: float, *,
                   keys: list[str], reranker_status: str) -> dict[str, Any]:
    """While the model loads only keyword evidence exists: the first ``WARMING_LIMIT`` of ``shown``
    (result items), unjudged, as related (never as an answer, and never "That isn't in memcue.")."""
    out = [{**r, "tier": RELATED} for r in shown][:WARMING_LIMIT]
    return contract_response(req, out, "related", NOTE_WARMING, None, qc, channels, incomplete, started, True,
                             keys=keys, reranker_status=reranker_status)
