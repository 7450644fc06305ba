"""Reading time expressions in a query: a window and/or an order, relative to the asking time.

``mentions_time(text)`` is one precompiled regex (10–30 µs per query) saying whether the query may name a
time; ``parse_time(text, now)`` then finds each time expression with our own span patterns, decides its
granularity (day, week, month, ...) and lets **dateparser** resolve each span against ``now``
(``RELATIVE_BASE``, ``PREFER_DATES_FROM="past"``). dateparser never sees the whole query: its
``search_dates`` reads "we" as Wednesday and "May I ask" as May, so only spans our patterns recognise are
passed to it, and its answer is checked (year range, start < end). The temporal channel
(``recall.channels.temporal``) turns the result into ranked memories.

Granularities (all windows are ``[start, end)`` in Unix seconds, calendar days in UTC, weeks start Monday):

=====================================  ==========================================================
expression                             window
=====================================  ==========================================================
"yesterday", "today", "this morning"   that day
"last Friday", "on Monday", "Friday"   that day (dateparser: the most recent past one; on a Friday,
                                       "Friday" and "last Friday" mean a week ago)
"3 days ago"                           that day
"two weeks ago", "a month ago",        a window one unit wide centred on the point (7 d, 30 d, 365 d):
"a year ago"                           "N weeks ago" is approximate, and snapping to a calendar week
                                       would put a point near a week's edge beside a day it excludes
"5 hours ago"                          centred on the point, half width max(1 h, half the amount)
"last/this week|month|year"            that calendar period ("next week", "tomorrow": a plan, no window;
                                       a period around now, "today", "this week", only in a question about
                                       the past: "what did we decide today?", not "ship today's fixes"; a
                                       period that qualifies a thing, "last night's import", sets none, nor
                                       one in a sentence that tells what happened beside the one that asks:
                                       "Mira dropped a file on Friday. Why wasn't it imported?")
"in March", "March", "March 2024"      the whole month (the most recent March not in the future)
"March 3", "2024-03-03", "3/4/2024"    that day (numeric dates month-first, dateparser's English default)
"in 2024", "Q3 2024"                   that year / quarter
"past week", "last 3 days"             rolling: from that long ago, open end, newest first
"since X" / "from X"                   start of X, open end, newest first
"after X"                              end of X, open end, oldest first (closest to X)
"before X"                             open start, end = start of X, newest first (closest to X)
"until/till/by/through X"              open start, end = end of X, newest first
"between X and Y", "from X to Y"       start of X to end of Y
"before/after/since the migration"     ``anchor`` words; the channel finds the event (best BM25 match)
                                       and uses its ``created_at`` as the bound (in a question only: "see it
                                       still works after the retry changes" is a task about now)
"earliest", "first time", "originally" order oldest (no window)
"latest", "most recent", "recently"    order newest (no window)
=====================================  ==========================================================

Several plain periods in one query ("in March and April") are joined into one window from the earliest
start to the latest end; bounds ("since", "before") then narrow it. An explicit order word overrides the
order a bound implies.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from re import Match

from memcue.sidecar.recall.query import STOP_WORDS, is_question, sentence_spans, words
from memcue.sidecar.recall.time.anchor import find_anchor
from memcue.sidecar.recall.time.patterns import (
    BOUND_BEFORE_SPAN,
    GENERIC,
    MENTIONS,
    MONTHS_FULL,
    ORDER_NEWEST,
    ORDER_OLDEST,
    SPAN_BOUND,
    WEEKDAY,
)
from memcue.sidecar.recall.time.resolvers import resolve_span
from memcue.sidecar.recall.time.spans import Span, cap_text, find_spans

log = logging.getLogger("memcue.recall")

#: A bound word before a span -> the bound it sets ("between X and Y" reads as "from X until Y").
BOUND_WORDS = {"prior": "before", "following": "after", "till": "until", "through": "until", "by": "until",
               "between": "from", "and": "until", "to": "until"}
#: Topic words kept at most.
MAX_TOPIC_TERMS = 16

#: ``(start, end, order)``: a window in Unix seconds (None = open) and an order.
Window = tuple[float | None, float | None, str | None]


@dataclass(frozen=True)
class TimeIntent:
    """What a query asks of time.

    ``start``/``end``: the window in Unix seconds (UTC), ``end`` exclusive, None = open on that side.
    ``order``: "newest" | "oldest" | None (None = rank by closeness to the window's centre).
    ``expression``: the matched text (several joined with ", ").
    ``anchor``: event words for "before/after the migration" (else ""), with ``relation`` "before" |
    "after" | "since" | "until"; the caller finds the event and bounds the window with its time.
    """

    start: float | None = None
    end: float | None = None
    order: str | None = None
    expression: str = ""
    anchor: str = ""
    relation: str = ""


def mentions_time(text: str) -> bool:
    """Whether ``text`` may contain a time expression (month or weekday names, "yesterday", "last week",
    "3 days ago", ISO dates, "since", "before the ...", "when did", "recently", "earliest" ...).

    A regex prefilter (µs per query): it may say yes to text ``parse_time`` then finds nothing in, but a
    bare "may", "second", "now", "sun" or a number never count. Never raises; non-text gives False."""
    if not isinstance(text, str) or not text:
        return False
    return MENTIONS.search(cap_text(text)) is not None


def parse_time(text: str, now: float) -> TimeIntent | None:
    """The window and/or order the time expressions in ``text`` ask for, relative to ``now`` (Unix s, UTC).

    Returns None when there is no usable time expression (or on any bad input: never raises). Results are
    cached per (text, minute of ``now``): windows are computed from ``now`` rounded down to the minute.
    See the module docstring for each expression's granularity.
    """
    try:
        if not isinstance(text, str) or not text.strip() or not mentions_time(text):
            return None
        return _parse_cached(cap_text(text), int(float(now) // 60 * 60))
    except Exception:  # noqa: BLE001 - a parse failure means "no time", never a failed recall
        log.debug("parse_time failed for %r", text[:200] if isinstance(text, str) else text, exc_info=True)
        return None


def _mark_bounds(text: str, spans: list[Span]) -> None:
    """Set each span's ``bound`` from the bound word right before it (since/after/before/until/between ...
    and/to). "from" bounds only with a "to": "notes from March" names a period, not a start."""
    opened = False
    for s in spans:
        m = SPAN_BOUND.match(s.text) or BOUND_BEFORE_SPAN.search(text[max(0, s.begin - 24): s.begin])
        word = m.group(1).lower().split()[0] if m else ""
        if word in ("and", "to") and not opened:
            word = ""
        if word in ("between", "from"):
            opened = True
        s.bound = BOUND_WORDS.get(word, word)
    if not any(s.bound == "until" for s in spans):
        for s in spans:
            if s.bound == "from":
                s.bound = ""


def _later(a: float | None, b: float | None) -> float | None:
    return b if a is None or b is None else max(a, b)


def _earlier(a: float | None, b: float | None) -> float | None:
    return b if a is None or b is None else min(a, b)


#: Bound -> how a span with it narrows the window (and the order it implies, unless one is set).
BOUNDS: dict[str, Callable[[Window, Span], Window]] = {
    "since": lambda w, s: (_later(w[0], s.start), w[1], w[2] or "newest"),
    "from": lambda w, s: (_later(w[0], s.start), w[1], w[2]),
    "after": lambda w, s: (_later(w[0], s.end), w[1], w[2] or "oldest"),
    "before": lambda w, s: (w[0], _earlier(w[1], s.start), w[2] or "newest"),
    "until": lambda w, s: (w[0], _earlier(w[1], s.end), w[2] or "newest"),
}


def _window(spans: list[Span]) -> Window:
    """The plain periods joined (earliest start to latest end; any open side stays open), then narrowed by
    each bound in text order. A closed "from X to Y" range ranks by its centre (no order)."""
    plain = [s for s in spans if not s.bound]
    window: Window = (None, None, None)
    if plain:
        starts = [s.start for s in plain]
        ends = [s.end for s in plain]
        window = (None if any(v is None for v in starts) else min(v for v in starts if v is not None),
                  None if any(v is None for v in ends) else max(v for v in ends if v is not None),
                  next((s.order for s in plain if s.order), None))
    for s in spans:
        if s.bound in BOUNDS:
            window = BOUNDS[s.bound](window, s)
    if any(s.bound == "from" for s in spans) and any(s.bound == "until" for s in spans):
        window = (window[0], window[1], next((s.order for s in plain if s.order), None))
    return window


def _order_words(text: str, spans: list[Span]) -> tuple[Match[str] | None, Match[str] | None]:
    """The first oldest-order and newest-order words ("earliest", "most recent") outside the spans."""
    masked = text
    for s in reversed(spans):
        masked = masked[: s.begin] + " | " + masked[s.finish:]
    return ORDER_OLDEST.search(masked), ORDER_NEWEST.search(masked)


def _order(order: str | None, oldest: Match[str] | None, newest: Match[str] | None, anchor: str,
           relation: str) -> str | None:
    """An explicit order word overrides the order the bounds imply (the first one wins when both kinds
    appear); an anchor with no order word ranks away from the event ("after": oldest first)."""
    if oldest and not newest:
        order = "oldest"
    elif newest and not oldest:
        order = "newest"
    elif oldest and newest:
        order = "oldest" if oldest.start() < newest.start() else "newest"
    if anchor and not (oldest or newest):
        order = "oldest" if relation == "after" else "newest"
    return order


def _future(span: Span, now: float) -> bool:
    """A period that starts after ``now`` ("tomorrow", "next week", "next month"): the question is about a plan,
    and no memory was written then, so it sets no window."""
    return span.start is not None and span.start > now and not span.bound


#: A question about what was done, said or going on: a past auxiliary ("did", "was", "have we"), a past verb after
#: its subject ("what we decided"), or "am I / are we …ing" ("what am I working on today?").
_ASKS_PAST = re.compile(
    r"\b(?:did|was|were|had)\b|\b(?:have|has)\s+(?:we|i|you|they|he|she|it)\b|"
    r"\b(?:we|i|you|they)\s+(?:\w*[^\We]ed|agreed|said|told|wrote|made|found|saw|got|took|ran|did|thought|spoke|chose)\b|"
    r"\b(?:am|are)\s+(?:we|i|you)\s+\w+ing\b", re.IGNORECASE)


def _current(span: Span, now: float, text: str) -> bool:
    """A period around ``now`` ("today", "this morning", "this week") in a prompt that does not ask about the past
    (``_ASKS_PAST``): "ship today's fixes", "we're cutting 0.5.0 today" name the moment of the task, not when the
    memories it needs were written, so it sets no window."""
    return (span.start is not None and span.end is not None and span.start <= now < span.end and not span.bound
            and not _ASKS_PAST.search(text))


_POSSESSIVE = re.compile(r"['’]s\b", re.IGNORECASE)


def _possessive(span: Span, text: str) -> bool:
    """A period that qualifies a thing ("last night's failed import", "Monday's inventory", "today's export"):
    it says when that thing happened, not when the memories about it were written, so it sets no window."""
    return bool(_POSSESSIVE.match(text, span.finish)) and not span.bound


def _narrative(span: Span, text: str) -> bool:
    """A period in a sentence that tells what happened, before or after the sentence that asks ("Mira dropped a
    file into the share on Friday and it never got imported. Why not?"): it says when that event happened, not
    when the memories that explain it were written (the rule behind it may be months older), so it sets no
    window. A period in the asking sentence itself ("what did we change on Friday?") does."""
    sentences = sentence_spans(text)
    if len(sentences) < 2:
        return False
    asking = [is_question(text[a:b]) for a, b in sentences]
    if not any(asking):
        return False
    return any(a <= span.begin < b and not asks for (a, b), asks in zip(sentences, asking, strict=True))


@lru_cache(maxsize=4096)
def _parse_cached(text: str, base_minute: int) -> TimeIntent | None:
    spans = [s for s in find_spans(text) if resolve_span(s, base_minute) and not _future(s, base_minute)
             and not _current(s, base_minute, text) and not _possessive(s, text) and not _narrative(s, text)]
    _mark_bounds(text, spans)
    start, end, order = _window(spans)
    # "check it still works after the retry changes" is a task about now, not a question about what came after
    anchor, relation, anchor_text = find_anchor(text, spans) if is_question(text) else ("", "", "")
    oldest, newest = _order_words(text, spans)
    order = _order(order, oldest, newest, anchor, relation)
    if start is not None and end is not None and start >= end:
        return None
    if not spans and not anchor and order is None:
        return None
    parts = [s.text.strip() for s in spans]
    if anchor_text:
        parts.append(anchor_text)
    for m in (oldest, newest):
        if m:
            parts.append(m.group(0))
    return TimeIntent(start, end, order, ", ".join(dict.fromkeys(parts)), anchor, relation if anchor else "")


_CALENDAR_NAME = re.compile(rf"{MONTHS_FULL}|{WEEKDAY}")


def topic_terms(query: str, intent: TimeIntent) -> list[str]:
    """The query's words other than stop words, its time expression, the anchor, and generic question
    verbs ("did", "happened", "changed"): what the question is about. Empty for a pure time question;
    at most ``MAX_TOPIC_TERMS``."""
    skip = set(words(intent.expression)) | set(words(intent.anchor))
    out = []
    for w in words(cap_text(query)):
        if w in STOP_WORDS or w in skip or w in GENERIC or (len(w) < 2 and not w.isdigit()):
            continue
        if _CALENDAR_NAME.fullmatch(w):
            continue
        out.append(w)
    return list(dict.fromkeys(out))[:MAX_TOPIC_TERMS]
