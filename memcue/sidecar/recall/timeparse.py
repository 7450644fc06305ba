"""Reading time expressions in a query: a window and/or an order, relative to the asking time.

``mentions_time(text)`` is one precompiled regex (10–30 µs per query) saying whether the query may name a
time; ``parse_time(text, now)`` then finds each time expression with our own span patterns, decides its
granularity (day, week, month, ...) and lets **dateparser** resolve each span against ``now``
(``RELATIVE_BASE``, ``PREFER_DATES_FROM="past"``). dateparser never sees the whole query: its
``search_dates`` reads "we" as Wednesday and "May I ask" as May, so only spans our patterns recognise are
passed to it, and its answer is checked (year range, start < end). The temporal channel
(``recall.temporal``) turns the result into ranked memories.

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
"last/this/next week|month|year"       that calendar period
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
                                       and uses its ``created_at`` as the bound
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
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from memcue.sidecar.recall.dateparse import MAX_YEARS_AHEAD, MIN_YEAR, warm_up
from memcue.sidecar.recall.dateparse import resolve as _resolve
from memcue.sidecar.recall.query import STOP_WORDS, words
from memcue.sidecar.recall.time_patterns import (
    _AMBIGUOUS_MONTH,
    _ANCHOR,
    _ANCHOR_STOP,
    _AUXILIARY,
    _BOUND_BEFORE_SPAN,
    _DATE_MARKERS,
    _DETERMINERS,
    _GENERIC,
    _MENTIONS,
    _MONTHS_FULL,
    _NOT_TEMPORAL_BEFORE_AFTER,
    _ORDER_NEWEST,
    _ORDER_OLDEST,
    _PREP,
    _SPAN_BOUND,
    _SPAN_PATTERNS,
    _WEEKDAY,
    _YEAR,
    _amount,
    _day_start,
    _month_start,
    _period_window,
    _ts,
)

log = logging.getLogger("memcue.recall")

__all__ = ["TimeIntent", "mentions_time", "parse_time", "topic_terms", "warm_up"]

#: Text analysed at most: the first and last ``TEXT_CAP // 2`` characters of a long prompt (the question
#: is usually at one end), so a pasted log cannot make the regexes or the cache expensive.
TEXT_CAP = 4000
_DAY = 86400.0
_UNIT_SECONDS = {"minute": 60.0, "hour": 3600.0, "day": _DAY, "week": 7 * _DAY, "month": 30 * _DAY,
                 "year": 365 * _DAY}

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


# -- parsing -----------------------------------------------------------------------------------------
@dataclass
class _Span:
    kind: str
    begin: int
    finish: int
    text: str
    start: float | None = None
    end: float | None = None
    bound: str = ""  # since|after|from|before|until|between|to|""
    order: str | None = None


def _cap(text: str) -> str:
    if len(text) <= TEXT_CAP:
        return text
    half = TEXT_CAP // 2
    return text[:half] + " | " + text[-half:]


def mentions_time(text: str) -> bool:
    """Whether ``text`` may contain a time expression (month or weekday names, "yesterday", "last week",
    "3 days ago", ISO dates, "since", "before the ...", "when did", "recently", "earliest" ...).

    A regex prefilter (µs per query): it may say yes to text ``parse_time`` then finds nothing in, but a
    bare "may", "second", "now", "sun" or a number never count. Never raises; non-text gives False."""
    if not isinstance(text, str) or not text:
        return False
    return _MENTIONS.search(_cap(text)) is not None


def parse_time(text: str, now: float) -> TimeIntent | None:
    """The window and/or order the time expressions in ``text`` ask for, relative to ``now`` (Unix s, UTC).

    Returns None when there is no usable time expression (or on any bad input: never raises). Results are
    cached per (text, minute of ``now``): windows are computed from ``now`` rounded down to the minute.
    See the module docstring for each expression's granularity.
    """
    try:
        if not isinstance(text, str) or not text.strip() or not mentions_time(text):
            return None
        return _parse_cached(_cap(text), int(float(now) // 60 * 60))
    except Exception:  # noqa: BLE001 - a parse failure means "no time", never a failed recall
        log.debug("parse_time failed for %r", text[:200] if isinstance(text, str) else text, exc_info=True)
        return None


def _find_spans(text: str) -> list[_Span]:
    taken: list[tuple[int, int]] = []
    spans: list[_Span] = []
    for kind, pattern in _SPAN_PATTERNS:
        for m in pattern.finditer(text):
            b, f = m.span()
            if f <= b or any(b < tf and tb < f for tb, tf in taken):
                continue
            found = m.group(0)
            if kind in ("month_day", "month_year") and _AMBIGUOUS_MONTH.search(found) \
                    and not _DATE_MARKERS.search(found):
                continue
            taken.append((b, f))
            spans.append(_Span(kind, b, f, m.group(0)))
    spans.sort(key=lambda s: s.begin)
    return spans


_PREP_HEAD = re.compile(rf"^(?:{_PREP})", re.I)


def _resolve_span(span: _Span, base_minute: int) -> bool:
    """Fill ``span.start``/``end``/``order``; False when the span does not resolve to a sane date."""
    now_dt = datetime.fromtimestamp(base_minute, UTC).replace(tzinfo=None)
    text = " ".join(span.text.split())
    kind = span.kind
    if kind == "quarter":
        m = re.match(rf"q([1-4])(?:\s+({_YEAR}))?", text, re.I)
        if not m:
            return False
        q = int(m.group(1))
        year = int(m.group(2)) if m.group(2) else now_dt.year
        if not m.group(2) and _month_start(year, 3 * q - 2) > now_dt:
            year -= 1  # "Q4" asked in May: last year's
        span.start, span.end = _ts(_month_start(year, 3 * q - 2)), _ts(_month_start(year, 3 * q + 1))
        return True
    if kind == "weekend":
        # The most recent Saturday on or before today ("this weekend" on a weekday: the coming one).
        days_back = (now_dt.weekday() - 5) % 7
        sat = _day_start(now_dt) - timedelta(days=days_back)
        if text.lower().startswith("this") and now_dt.weekday() < 5:
            sat += timedelta(days=7)
        span.start, span.end = _ts(sat), _ts(sat + timedelta(days=2))
        return True
    if kind == "rolling":
        count, unit = _amount(re.sub(r"^(?:(?:in|over|during|within)\s+)?(?:the\s+)?(?:past|last|previous)\s+", "",
                                     text, flags=re.I))
        if unit not in _UNIT_SECONDS:
            return False
        got = _resolve(f"{count} {unit}s ago", base_minute)
        if got is None:
            return False
        span.start, span.end, span.order = _ts(got[0]), None, "newest"
        return True
    if kind == "ago":
        count, unit = _amount(text[: -len("ago")].strip())
        if unit not in _UNIT_SECONDS:
            return False
        got = _resolve(f"{count} {unit}s ago", base_minute)
        if got is None:
            return False
        point = _ts(got[0])
        if unit == "day":
            span.start, span.end = _period_window(got[0], "day")
        elif unit in ("minute", "hour"):
            half = max(3600.0, 0.5 * count * _UNIT_SECONDS[unit])
            span.start, span.end = point - half, point + half
        else:
            half = 0.5 * _UNIT_SECONDS[unit]
            span.start, span.end = point - half, point + half
        return True
    if kind in ("relative_day", "weekday"):  # one day, named in a form dateparser reads
        low = text.lower()
        if kind == "weekday":
            low = re.sub(r"\s+(?:morning|afternoon|evening|night)$", "", low)
            low = re.sub(r"^(?:past|previous)\s+", "last ", low)
        elif low == "last night":
            low = "yesterday"
        elif low == "earlier today" or low == "tonight" or low.startswith("this "):
            low = "today"
        got = _resolve(low, base_minute)
        if got is None:
            return False
        span.start, span.end = _period_window(got[0], "day")
        return True
    if kind == "calendar":
        low = re.sub(r"^(?:the\s+)?current\s+", "this ", text.lower()).replace("previous", "last")
        if low.endswith("quarter"):
            q0 = (now_dt.month - 1) // 3 * 3 + 1
            shift = {"last": -3, "this": 0, "next": 3}[low.split()[0]]
            first = _month_start(now_dt.year, q0 + shift)
            span.start, span.end = _ts(first), _ts(_month_start(first.year, first.month + 3))
            return True
        got = _resolve(low, base_minute)
        if got is None:
            return False
        span.start, span.end = _period_window(got[0], low.split()[-1])
        return True
    if kind == "year":
        year = int(re.search(_YEAR, text).group(0))  # type: ignore[union-attr]
        if not MIN_YEAR <= year <= now_dt.year + MAX_YEARS_AHEAD:
            return False
        span.start, span.end = _ts(datetime(year, 1, 1)), _ts(datetime(year + 1, 1, 1))
        return True
    # Dates and months: dateparser reads the date, the kind fixes the granularity.
    target = _PREP_HEAD.sub("", text) if kind == "month" else text
    target = re.sub(r"(\d)(?:st|nd|rd|th)\b", r"\1", target)
    got = _resolve(target, base_minute)
    if got is None:
        return False
    period = {"iso_day": "day", "numeric_day": "day", "month_day": "day", "iso_month": "month",
              "month_year": "month", "month": "month"}[kind]
    if kind in ("iso_day", "iso_month", "numeric_day") and got[1] not in ("day", "month", "time"):
        return False
    span.start, span.end = _period_window(got[0], period)
    return True


def _anchor(text: str, spans: list[_Span]) -> tuple[str, str, str]:
    """``(anchor words, relation, matched phrase)`` for "before/after/since the <event>", or ("", "", "")."""
    masked = list(text)
    for s in spans:
        masked[s.begin:s.finish] = "|" * (s.finish - s.begin)
    masked_text = "".join(masked)
    for m in _ANCHOR.finditer(masked_text):
        head = m.group(1).lower().split()[0]
        prev = words(masked_text[: m.start()])[-1:] or [""]
        if prev[0] in _NOT_TEMPORAL_BEFORE_AFTER:
            continue
        phrase_words = []
        for w in words(m.group(2)):
            if w in _ANCHOR_STOP:
                break
            phrase_words.append(w)
        if head in ("since", "after") and any(w in _AUXILIARY for w in phrase_words[:3]):
            continue
        while phrase_words and phrase_words[0] in _DETERMINERS:
            phrase_words.pop(0)
        kept = [w for w in phrase_words if w not in STOP_WORDS and w not in _GENERIC and (len(w) > 1 or w.isdigit())]
        if not kept:
            continue
        relation = {"before": "before", "prior": "before", "ahead": "before", "until": "until", "till": "until",
                    "after": "after", "following": "after", "since": "since"}[head]
        return " ".join(kept[:4]), relation, m.group(0).strip()
    return "", "", ""


@lru_cache(maxsize=4096)
def _parse_cached(text: str, base_minute: int) -> TimeIntent | None:
    spans = [s for s in _find_spans(text) if _resolve_span(s, base_minute)]
    # A bound word right before a span: since/after/before/until/between ... and/to.
    opened = False
    for s in spans:
        m = _SPAN_BOUND.match(s.text) or _BOUND_BEFORE_SPAN.search(text[max(0, s.begin - 24): s.begin])
        word = m.group(1).lower().split()[0] if m else ""
        if word in ("and", "to") and not opened:
            word = ""
        if word in ("between", "from"):
            opened = True
        s.bound = {"prior": "before", "following": "after", "till": "until", "through": "until", "by": "until",
                   "between": "from", "and": "until", "to": "until"}.get(word, word)
    if not any(s.bound == "until" for s in spans):
        for s in spans:  # "notes from March" names a period, not a start: "from" bounds only with a "to"
            if s.bound == "from":
                s.bound = ""
    start: float | None = None
    end: float | None = None
    order: str | None = None
    plain = [s for s in spans if not s.bound]
    if plain:
        starts = [s.start for s in plain]
        ends = [s.end for s in plain]
        start = None if any(v is None for v in starts) else min(v for v in starts if v is not None)
        end = None if any(v is None for v in ends) else max(v for v in ends if v is not None)
        order = next((s.order for s in plain if s.order), None)
    for s in spans:
        if s.bound in ("since", "from"):
            start = s.start if start is None or s.start is None else max(start, s.start)
            order = order or ("newest" if s.bound == "since" else None)
        elif s.bound == "after":
            start = s.end if start is None or s.end is None else max(start, s.end)
            order = order or "oldest"
        elif s.bound == "before":
            end = s.start if end is None or s.start is None else min(end, s.start)
            order = order or "newest"
        elif s.bound == "until":
            end = s.end if end is None or s.end is None else min(end, s.end)
            order = order or "newest"
    if any(s.bound in ("from",) for s in spans) and any(s.bound == "until" for s in spans):
        order = next((s.order for s in plain if s.order), None)  # a closed range: rank by its centre
    anchor, relation, anchor_text = _anchor(text, spans)
    masked = text
    for s in reversed(spans):
        masked = masked[: s.begin] + " | " + masked[s.finish:]
    oldest, newest = _ORDER_OLDEST.search(masked), _ORDER_NEWEST.search(masked)
    if oldest and not newest:
        order = "oldest"
    elif newest and not oldest:
        order = "newest"
    elif oldest and newest:
        order = "oldest" if oldest.start() < newest.start() else "newest"
    if anchor and not (oldest or newest):
        order = "oldest" if relation == "after" else "newest"
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


_CALENDAR_NAME = re.compile(rf"{_MONTHS_FULL}|{_WEEKDAY}")


def _time_words(intent: TimeIntent) -> set[str]:
    return set(words(intent.expression)) | set(words(intent.anchor))


def topic_terms(query: str, intent: TimeIntent) -> list[str]:
    """The query's words other than stop words, its time expression, the anchor, and generic question
    verbs ("did", "happened", "changed"): what the question is about. Empty for a pure time question."""
    skip = _time_words(intent)
    out = []
    for w in words(_cap(query)):
        if w in STOP_WORDS or w in skip or w in _GENERIC or (len(w) < 2 and not w.isdigit()):
            continue
        if _CALENDAR_NAME.fullmatch(w):
            continue
        out.append(w)
    return list(dict.fromkeys(out))[:16]
