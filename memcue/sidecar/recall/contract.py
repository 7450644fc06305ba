"""The recall contract (DESIGN.md section 4): one result per memory, the whole response, the notes an
answer carries, and the answer when the budget ran out before any recall finished."""

from __future__ import annotations

import math
import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memcue.sidecar.recall.channels import ALL_CHANNELS, ChannelResult
from memcue.sidecar.recall.classify import QueryClass, classify
from memcue.sidecar.recall.query import keyword_query

if TYPE_CHECKING:
    from memcue.sidecar.recall.request import RecallRequest

NOTE_RELATED = "I don't have this exactly — here are the closest memories."
NOTE_NONE = "That isn't in memcue."
NOTE_NO_CANDIDATES = "Nothing in memory matched this question."
NOTE_EMPTY_QUERY = "The question is empty: there is nothing to recall."
NOTE_NOTHING_THEN = "Nothing in memcue was written {expression}."
NOTE_WARMING = "memcue is still warming up — results may be incomplete."
NOTE_BUDGET = "The search did not finish within the budget."


def age_label(created_at: float, now: float) -> str:
    """Human age of a memory: "today", "yesterday", "5 days ago", "3 weeks ago", "4 months ago"; "at an unknown
    time" when the stored time is not a finite number (a row written before times were checked). ``created_at`` and
    ``now`` are Unix times (s); days are counted between UTC calendar dates, the dates an injected block shows as
    ``created``, so one date always has one age."""
    if not (math.isfinite(created_at) and math.isfinite(now)):
        return "at an unknown time"
    try:
        days = max(0, (datetime.fromtimestamp(now, UTC).date() - datetime.fromtimestamp(created_at, UTC).date()).days)
    except (ValueError, OverflowError, OSError):  # a time beyond the calendar
        return "at an unknown time"
    if days < 1:
        return "today"
    if days < 2:
        return "yesterday"
    if days < 14:
        return f"{int(days)} days ago"
    if days < 60:
        return f"{int(days // 7)} weeks ago"
    if days < 365:
        return f"{int(days // 30)} months ago"
    years = int(days // 365)
    return "1 year ago" if years == 1 else f"{years} years ago"


def result_item(row: dict[str, Any], score: float, tier: str, now: float, channel_scores: dict[str, float],
                cues: list[str]) -> dict[str, Any]:
    """One result of the recall contract for the memory ``row`` (a ``Store.fetch`` dict)."""
    return {
        "fact_id": row["id"],
        "memory_id": row["id"],
        "content": row["content"],
        "score": round(score, 5),
        "tier": tier,
        "memory_kind": row["kind"],
        "project": row["project"],
        "pinned": row["pinned"],
        "source": row.get("source") or "",
        "session_id": row.get("session_id") or "",
        "created_at": row["created_at"],
        "age_label": age_label(row["created_at"], now),
        "seen_count": row.get("seen_count", 1),
        "superseded_by": row.get("superseded_by"),
        "tags": row.get("tags") or [],
        "channel_scores": channel_scores,
        "cue_terms": cues,
    }


def contract_response(req: RecallRequest, results: list[dict[str, Any]], tier: str, note: str,
                      reason: str | None, qc: QueryClass, channels: dict[str, ChannelResult],
                      incomplete: list[str], started: float, warming: bool, *, keys: list[str],
                      reranker_status: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The whole recall contract (DESIGN.md section 4) for one answer; ``started`` is the
    ``time.perf_counter()`` at the start of the recall."""
    keyword_only = req.keyword_only
    out = {
        "query": req.query,
        "results": results,
        "tier": tier,
        "note": note,
        "query_type": qc.query_type,
        "query_terms": list(keyword_query(req.query).terms),
        "key_terms": keys,
        "channel_weights": {name: qc.weights.get(name, 0.0) for name in ALL_CHANNELS},
        "channel_status": {name: r.status for name, r in channels.items()},
        "channel_notes": {name: r.note for name, r in channels.items() if r.note},
        "channel_details": {name: r.detail for name, r in channels.items() if r.detail},
        "channel_ms": {name: round(r.elapsed_ms, 2) for name, r in channels.items()},
        "incomplete_channels": incomplete,
        "retrieval_time_ms": round((time.perf_counter() - started) * 1000, 2),
        "retrieval_mode": "keyword" if keyword_only else "full",
        "query_id": uuid.uuid4().hex[:16],
        "abstained": tier == "none",
        "abstention_reason": reason,
        "warming_up": warming,
        "reranker_status": reranker_status,
        "filters": req.filters.describe(),
        "calibration_status": "uncalibrated",
        "answer_check_status": "off",
        "answer_confidence": None,
        "answerability": "unjudged",
        "answerability_reason": "no answer check is configured",
        "layers": {},
    }
    out.update(extra or {})
    return out


def budget_timeout_answer(request: RecallRequest, elapsed_ms: float) -> dict[str, Any]:
    """What /recall returns when its budget ran out before any recall answered: every contract field, tier
    ``none``, no results, every channel ``timeout`` and every requested channel incomplete, abstained with
    reason ``no_candidates``, ``retrieval_mode`` "none", ``retrieval_time_ms`` = ``elapsed_ms`` (ms, rounded
    to 0.01). ``query_type`` and ``channel_weights`` are the query's class with the request's own weights
    (the config's per-type overrides are not known here). Raises ``ValueError`` for a negative request
    weight (as the recall itself would)."""
    qc = classify(request.query, None, request.weights)
    channels = {name: ChannelResult(name, "timeout") for name in ALL_CHANNELS}
    out = contract_response(request, [], "none", NOTE_BUDGET, "no_candidates", qc, channels, list(request.channels),
                            time.perf_counter(), False, keys=[], reranker_status="off")
    out.update(retrieval_mode="none", retrieval_time_ms=round(float(elapsed_ms), 2))
    return out
