"""The temporal channel: memories inside the time window a query names, ranked by content and time.

``recall.time`` reads the query's time expressions into a ``TimeIntent`` (window and/or order,
relative to the asking time); this channel takes the memories inside the window (``Store.in_window``),
plus keyword matches of the query's remaining words inside it, and ranks them by content and by
closeness in time. For "before/after the migration" it finds the event (best BM25 match of the anchor
words) and uses its ``created_at`` as the bound. The table of granularities is in ``recall.time.intent``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from memcue.sidecar.recall.channels.base import TEMPORAL, ChannelContext, ChannelResult
from memcue.sidecar.recall.query import stem, words
from memcue.sidecar.recall.time import TimeIntent, parse_time, topic_terms

#: Candidates read from the window at most (newest first); the query's keyword matches in the window are
#: added on top (``KEYWORD_DEPTH``), so a large window cannot hide the memory that names the topic.
CANDIDATE_CAP = 500
#: Keyword (BM25) matches of the query's content words looked up and kept if inside the window.
KEYWORD_DEPTH = 200
#: Score weights when the query has content words besides its time words: content decides, time orders.
CONTENT_WEIGHT, TIME_WEIGHT = 0.65, 0.35
#: Time score range: the closest candidate gets 1.0, the farthest ``TIME_FLOOR``; every score stays > 0.
TIME_FLOOR = 0.5

def _matched(terms: list[str], stems: list[str], content: str) -> int:
    """How many ``terms`` ``content`` carries: same light stem, or one stem extending the other by at
    most three letters ("caching" -> "cach" matches "cache")."""
    low = content.lower()
    if not any(s in low for s in stems):
        return 0
    have = {stem(w) for w in words(content)}
    count = 0
    for s in stems:
        if s in have or (len(s) >= 4 and any(h.startswith(s) and len(h) - len(s) <= 3 for h in have)):
            count += 1
    return count


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat()


def _fts_or(terms: list[str]) -> str:
    """An FTS5 MATCH expression: each word double-quoted (so no operator survives), joined with OR."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _oldest_rows(ctx: ChannelContext, start: float | None, end: float | None, first_batch: list[dict[str, Any]]
                 ) -> list[dict[str, Any]]:
    """The oldest memories of a window holding more than ``CANDIDATE_CAP``: ``in_window`` reads newest first,
    so bisect the end bound until one read returns fewer than the cap (at most 40 reads)."""
    lo = start if start is not None else 0.0
    hi = min(r["created_at"] for r in first_batch)
    best = first_batch
    for _ in range(40):
        mid = (lo + hi) / 2
        rows = ctx.store.in_window(start, mid, project=ctx.project, limit=CANDIDATE_CAP,
                                   exclude_kinds=ctx.exclude_kinds, include_superseded=ctx.include_superseded)
        if len(rows) >= CANDIDATE_CAP:
            hi, best = mid, rows
        elif rows:
            return rows
        else:
            lo = mid
        if hi - lo < 1.0:
            break
    return best


@dataclass
class _Window:
    """The window being searched: ``start``/``end`` (Unix s, None = open), ``order``, the response's
    ``detail`` and the anchor event's id (left out of the candidates)."""

    start: float | None
    end: float | None
    order: str | None
    detail: dict[str, Any]
    skip_ids: set[int] = field(default_factory=set)

    def inside(self, t: float) -> bool:
        """True when ``t`` (Unix s) is inside the window."""
        return (self.start is None or t >= self.start) and (self.end is None or t < self.end)


class TemporalChannel:
    """Rank memories by the query's time window/order and its other words.

    Status: "empty" (no time expression), "no_candidates" (nothing in the window, or the anchor event is
    not in memory), "ok". Items: ``(memory_id, score)`` best first, score in (0, 1], at most ``ctx.k``.
    Score = ``CONTENT_WEIGHT`` × content + ``TIME_WEIGHT`` × time when the query has topic words, else time
    alone. Content = share of topic words carried (plus, with ``ctx.vector``, the cosine similarity,
    averaged). Time in [``TIME_FLOOR``, 1]: 1 for the candidate closest to the window's centre (or the
    newest/oldest for an order), linear down to the farthest. ``evidence``: every candidate for a pure time
    question, else those carrying a topic word. ``detail``: the expression, window, order and anchor read.
    """

    name = TEMPORAL

    def run(self, ctx: ChannelContext) -> ChannelResult:
        """Read the query's time intent and rank the memories of its window (see the class docstring)."""
        intent = parse_time(ctx.query, ctx.now)
        if intent is None:
            return ChannelResult(TEMPORAL, "empty", note="the query names no time window or order")
        window = _Window(intent.start, intent.end, intent.order,
                         {"expression": intent.expression, "window": [_iso(intent.start), _iso(intent.end)],
                          "order": intent.order, "anchor": intent.anchor, "relation": intent.relation})
        if intent.anchor:
            stop = _bound_by_anchor(ctx, intent, window)
            if stop is not None:
                return stop
        topic = topic_terms(ctx.query, intent)
        by_id = _candidates(ctx, window, topic)
        if not by_id:
            return ChannelResult(TEMPORAL, "no_candidates", note=f"no memory in the window ({intent.expression})",
                                 detail=window.detail)
        return _rank(ctx, window, topic, by_id)


def _bound_by_anchor(ctx: ChannelContext, intent: TimeIntent, window: _Window) -> ChannelResult | None:
    """Find the anchor event (best BM25 match of its words) and bound ``window`` by its time; a
    ``no_candidates`` result when the event is not in memory or the window comes out empty, else None."""
    hits = ctx.store.bm25(_fts_or(intent.anchor.split()), project=ctx.project, limit=1,
                          exclude_kinds=ctx.exclude_kinds, include_superseded=ctx.include_superseded)
    if not hits:
        return ChannelResult(TEMPORAL, "no_candidates", note=f"no memory mentions the event: {intent.anchor}",
                             detail=window.detail)
    event_id = hits[0][0]
    at = float(ctx.store.fetch([event_id])[event_id]["created_at"])
    window.skip_ids.add(event_id)
    if intent.relation in ("before", "until"):
        window.end = at if window.end is None else min(window.end, at)
    else:
        window.start = at if window.start is None else max(window.start, at)
    window.detail.update(window=[_iso(window.start), _iso(window.end)], anchor_memory_id=event_id,
                         anchor_at=_iso(at))
    if window.start is not None and window.end is not None and window.start >= window.end:
        return ChannelResult(TEMPORAL, "no_candidates", note="the window is empty", detail=window.detail)
    return None


def _candidates(ctx: ChannelContext, window: _Window, topic: list[str]) -> dict[int, dict[str, Any]]:
    """The window's memories (at most ``CANDIDATE_CAP``, the oldest ones for an oldest-first order) plus
    the keyword matches of ``topic`` inside it, by id; the anchor event left out."""
    start, end = window.start, window.end
    rows = ctx.store.in_window(start, end, project=ctx.project, limit=CANDIDATE_CAP,
                               exclude_kinds=ctx.exclude_kinds, include_superseded=ctx.include_superseded)
    if window.order == "oldest" and len(rows) >= CANDIDATE_CAP:
        rows = _oldest_rows(ctx, start, end, rows)
    by_id = {int(r["id"]): r for r in rows}
    if topic:
        hits = ctx.store.bm25(_fts_or(topic), project=ctx.project, limit=KEYWORD_DEPTH,
                              exclude_kinds=ctx.exclude_kinds, include_superseded=ctx.include_superseded)
        extra = [mid for mid, _ in hits if mid not in by_id]
        for mid, row in ctx.store.fetch(extra).items():
            if not row["bookkeeping"] and window.inside(float(row["created_at"])):
                by_id[mid] = row
    for mid in window.skip_ids:
        by_id.pop(mid, None)
    return by_id


def _cosines(ctx: ChannelContext, ids: list[int]) -> dict[int, float]:
    """Cosine similarity (negative clipped to 0) of each of ``ids`` to ``ctx.vector``: from the in-memory
    index when there is one, else from the store's vectors (rows of another dimension left out)."""
    query_vec = np.asarray(ctx.vector, dtype=np.float32)
    if ctx.vectors is not None:
        return {mid: max(0.0, c) for mid, c in ctx.vectors.cosines(ctx.store, ids, query_vec).items()}
    cosines = {}
    for mid, blob in ctx.store.vectors(ids).items():
        vec = np.frombuffer(blob, dtype=np.float32)
        if vec.shape == query_vec.shape:
            cosines[mid] = max(0.0, float(vec @ query_vec))
    return cosines


def _rank(ctx: ChannelContext, window: _Window, topic: list[str], by_id: dict[int, dict[str, Any]]
          ) -> ChannelResult:
    """Score the candidates by content and time (see ``TemporalChannel``) and keep the best ``ctx.k``."""
    times = {mid: float(r["created_at"]) for mid, r in by_id.items()}
    time_score = _time_scores(times, window.start, window.end, window.order)
    stems = [stem(t) for t in topic]
    content: dict[int, float] = {}
    evidence: set[int] = set()
    cosines = _cosines(ctx, list(by_id)) if topic and ctx.vector is not None else {}
    for mid, row in by_id.items():
        if not topic:
            evidence.add(mid)
            continue
        share = _matched(topic, stems, row["content"]) / len(topic)
        if share > 0:
            evidence.add(mid)
        content[mid] = (share + cosines[mid]) / 2 if mid in cosines else share
    scored = []
    for mid in by_id:
        ts = time_score[mid]
        score = CONTENT_WEIGHT * content[mid] + TIME_WEIGHT * ts if topic else ts
        scored.append((mid, round(min(1.0, max(score, 1e-6)), 6)))
    scored.sort(key=lambda x: (-x[1], -time_score[x[0]], x[0]))
    items = scored[: max(1, ctx.k)]
    window.detail["topic_terms"] = topic
    window.detail["candidates"] = len(scored)
    return ChannelResult(TEMPORAL, "ok", items, evidence={mid for mid, _ in items} & evidence, detail=window.detail)


def _time_scores(times: dict[int, float], start: float | None, end: float | None, order: str | None
                 ) -> dict[int, float]:
    """Closeness in time, in [TIME_FLOOR, 1]: to the window's centre, or newest/oldest first for an order
    (a half-open window without an order ranks by closeness to its one bound)."""
    if order is None and start is not None and end is not None:
        centre = (start + end) / 2
        dist = {mid: abs(t - centre) for mid, t in times.items()}
    elif order == "oldest" or (order is None and start is not None):
        first = min(times.values())
        dist = {mid: t - first for mid, t in times.items()}
    else:
        last = max(times.values())
        dist = {mid: last - t for mid, t in times.items()}
    far = max(dist.values()) or 1.0
    return {mid: 1.0 - (1.0 - TIME_FLOOR) * d / far for mid, d in dist.items()}
