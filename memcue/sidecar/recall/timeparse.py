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
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from memcue.sidecar.recall.query import STOP_WORDS, words

log = logging.getLogger("memcue.recall")

__all__ = ["TimeIntent", "mentions_time", "parse_time", "topic_terms", "warm_up"]

#: Text analysed at most: the first and last ``TEXT_CAP // 2`` characters of a long prompt (the question
#: is usually at one end), so a pasted log cannot make the regexes or the cache expensive.
TEXT_CAP = 4000
#: Years dateparser may return; anything else is a misreading (a version number, an id).
MIN_YEAR, MAX_YEARS_AHEAD = 1970, 5
_DAY = 86400.0
_UNIT_SECONDS = {"minute": 60.0, "hour": 3600.0, "day": _DAY, "week": 7 * _DAY, "month": 30 * _DAY,
                 "year": 365 * _DAY}

# -- patterns ---------------------------------------------------------------------------------------
_MONTHS_FULL = "january|february|march|april|may|june|july|august|september|october|november|december"
_MONTHS_ABBR = r"jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec"
_MONTH = rf"(?:{_MONTHS_FULL}|(?:{_MONTHS_ABBR})\.?)"
#: Month names that are also everyday words; they count only with date context (a preposition, a day, a
#: year), never alone: "May I ask", "march on".
_SAFE_MONTHS = "january|february|april|june|july|august|september|october|november|december"
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_NUM_WORD = (r"(?:\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
             r"(?:a\s+)?few|(?:a\s+)?couple(?:\s+of)?|several)")
_UNIT = r"(?:minute|hour|day|week|month|year)s?"
_ORD = r"\d{1,2}(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d{2}"
#: Words that put a month or year in time ("in March", "since 2023", "end of May").
_PREP = (r"(?:in|during|since|before|after|until|till|through|throughout|by|of|from|between|early|late|"
         r"end\s+of|beginning\s+of|start\s+of|middle\s+of)\s+(?:the\s+)?|mid-?\s*")

#: Span patterns in priority order, each with the name of its rule in ``_resolve_span``. Case-insensitive
#: except the bare "March" (a capital letter makes the verb unlikely); spans never overlap (earlier wins).
_SPAN_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("iso_day", re.compile(r"\b\d{4}-(?:0?[1-9]|1[0-2])-(?:0?[1-9]|[12]\d|3[01])\b")),
    ("iso_month", re.compile(r"\b\d{4}-(?:0[1-9]|1[0-2])\b(?!-)")),
    ("numeric_day", re.compile(r"\b\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})\b")),
    ("month_day", re.compile(
        rf"\b(?:(?:the\s+)?{_ORD}\s+(?:of\s+)?{_MONTH}|{_MONTH}\s+(?:the\s+)?{_ORD}(?![\d:.]))"
        rf"(?:,?\s+{_YEAR})?\b", re.I)),
    ("month_year", re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.I)),
    ("quarter", re.compile(rf"\bq[1-4](?:\s+{_YEAR})?\b", re.I)),
    ("month", re.compile(rf"\b(?:{_PREP}){_MONTH}\b", re.I)),
    ("month", re.compile(rf"\b(?:{_SAFE_MONTHS})\b", re.I)),
    ("month", re.compile(r"\bMarch\b|(?<=\bto\s)May\b|(?<=\band\s)May\b")),
    ("year", re.compile(rf"\b(?:{_PREP})({_YEAR})\b(?![.\d])", re.I)),
    ("weekend", re.compile(r"\b(?:(?:last|this|past|previous)\s+weekend|(?:over|on|during)\s+the\s+weekend)\b",
                           re.I)),
    ("weekday", re.compile(rf"\b(?:(?:last|this|past|previous|next|on)\s+)?{_WEEKDAY}"
                           r"(?:\s+(?:morning|afternoon|evening|night))?\b", re.I)),
    ("relative_day", re.compile(
        r"\b(?:(?:the\s+)?day\s+before\s+yesterday|yesterday|today|tonight|tomorrow|earlier\s+today|"
        r"this\s+(?:morning|afternoon|evening)|last\s+night)\b", re.I)),
    ("rolling", re.compile(
        rf"\b(?:(?:in|over|during|within)\s+)?(?:the\s+)?(?:past|last|previous)\s+{_NUM_WORD}\s+{_UNIT}\b|"
        rf"\b(?:(?:in|over|during|within)\s+)?(?:the\s+)?past\s+(?:minute|hour|day|week|month|year)\b", re.I)),
    ("calendar", re.compile(r"\b(?:last|this|previous|next|(?:the\s+)?current)\s+(?:week|month|year|quarter)\b",
                            re.I)),
    ("ago", re.compile(rf"\b{_NUM_WORD}\s+{_UNIT}\s+ago\b", re.I)),
]
#: Month names that are everyday words; written in lower case next to a bare number they are not dates
#: ("retry 3 may fail", "it may 2x the load") unless an ordinal, "of" or a year makes them one.
_AMBIGUOUS_MONTH = re.compile(r"\b(?:may|march|mar)\b")
_DATE_MARKERS = re.compile(rf"\d(?:st|nd|rd|th)\b|\bof\b|{_YEAR}", re.I)
#: A span that starts with its own bound word ("since March", "before 2024").
_SPAN_BOUND = re.compile(r"^(since|after|before|until|till|through|by|from|between)\b", re.I)

#: A bound word right before a span: ("since", "March") -> start of March.
_BOUND_BEFORE_SPAN = re.compile(
    r"\b(since|after|from|before|until|till|through|by|between|and|to|prior\s+to|following)\s+(?:the\s+)?$", re.I)
_ORDER_OLDEST = re.compile(
    r"\b(?:earliest|oldest|first\s+time|at\s+first|(?:we|i|you|they|it)\s+first|originally|"
    r"initially|in\s+the\s+beginning|to\s+begin\s+with)\b", re.I)
_ORDER_NEWEST = re.compile(
    r"\b(?:latest|newest|most\s+recent(?:ly)?|recently|lately|last\s+time|just\s+now)\b", re.I)
#: "before the migration", "after we deployed the cache": the event phrase that follows.
_ANCHOR = re.compile(r"\b(before|after|since|until|till|prior\s+to|following|ahead\s+of)\s+([^.;:!?|()\[\]\n]{1,80})",
                     re.I)
#: Words that end an anchor phrase (a new clause starts).
_ANCHOR_STOP = frozenset("and but or so when where what which who why how then while because if".split())
#: An auxiliary soon after "since"/"after" marks a clause of reason or state, not an event ("since it is slow").
_AUXILIARY = frozenset(
    "is are was were isn't aren't wasn't weren't has have hasn't haven't can can't does doesn't do don't will "
    "won't would should must".split())
#: Verbs with which "after" is not about time ("look after the cache", "named after the ticket").
_NOT_TEMPORAL_BEFORE_AFTER = frozenset(
    "look looks looked looking name named take takes took taking ask asks asked asking seek seeks chase "
    "chased".split())
#: Leading words skipped in an anchor phrase.
_DETERMINERS = frozenset("the a an our my your their his her its this that these those we i you they he she it"
                         .split())

#: Fast prefilter: anything that may be a time expression. A superset of the span, order and anchor
#: patterns, plus question forms ("when did", "how long ago").
_MENTIONS = re.compile(
    rf"\b(?:{_SAFE_MONTHS}|{_WEEKDAY})\b"
    rf"|\b(?:{_PREP})(?:{_MONTH}|{_YEAR})\b"
    rf"|\b{_MONTH}\s+(?:the\s+)?{_ORD}\b|\b{_ORD}\s+(?:of\s+)?{_MONTH}\b|\b{_MONTH},?\s+{_YEAR}\b"
    r"|\bMarch\b"
    r"|\b(?:yesterday|today|tonight|tomorrow|ago|recently|lately|earliest|latest|oldest|newest|originally|"
    r"initially|weekend|earlier|since)\b"
    r"|\b(?:last|this|next|past|previous|current)\s+(?:\w+\s+)?(?:week|month|year|quarter|time|night|morning|"
    r"afternoon|evening|days?|weeks|months|years|hours?)\b"
    r"|\b(?:most\s+recent|first\s+time|at\s+first|(?:we|i|you|they|it)\s+first)\b"
    r"|\b(?:before|after|until|till|prior\s+to|following)\s+\w"
    r"|\bwhen\s+(?:did|was|were|have|had|do|does|is|will)\b|\bwhat\s+(?:time|day|date)\b|\bhow\s+long\b"
    r"|\b\d{4}-\d{1,2}(?:-\d{1,2})?\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\bq[1-4]\s+(?:19|20)\d{2}\b",
    re.I,
)

_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "few": 3, "couple": 2,
                 "several": 3}
#: Words a time question uses without naming a topic ("what did we do / what happened / what changed").
#: Without a topic word left, every memory in the window is evidence.
_GENERIC = frozenset(
    """do did done doing happen happened happening happens change changed changes changing work worked
    working works go went going decide decided decision decisions discuss discussed talk talked say said
    mention mentioned note notes time times day days week weeks month months year years stuff anything
    everything something remember recall ask asked event events going on around ago earlier latest
    earliest recent recently lately first last newest oldest originally initially since until till prior
    following ahead morning afternoon evening night tonight weekend""".split())


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


# -- dateparser, lazily ------------------------------------------------------------------------------
_dateparser: Any = None


def _date_data_parser(base: datetime) -> Any:
    """A dateparser ``DateDataParser`` for English relative to ``base`` (naive UTC). Imports on first use."""
    global _dateparser
    if _dateparser is None:
        from dateparser.date import DateDataParser

        _dateparser = DateDataParser
    settings = {
        "RELATIVE_BASE": base,
        "PREFER_DATES_FROM": "past",
        "RETURN_AS_TIMEZONE_AWARE": False,
        "TIMEZONE": "UTC",
        "TO_TIMEZONE": "UTC",
        "STRICT_PARSING": False,
    }
    return _dateparser(languages=["en"], settings=settings)


@lru_cache(maxsize=2048)
def _resolve(span: str, base_minute: int) -> tuple[datetime, str] | None:
    """dateparser's reading of ``span`` relative to ``base_minute`` (Unix s, whole minutes):
    ``(naive UTC datetime, period)`` with period day|week|month|year|time|quarter, or None."""
    base = datetime.fromtimestamp(base_minute, UTC).replace(tzinfo=None)
    data = _date_data_parser(base).get_date_data(span)
    if data is None or data.date_obj is None:
        return None
    dt = data.date_obj
    if dt.tzinfo is not None:
        dt = dt.astimezone(UTC).replace(tzinfo=None)
    if not MIN_YEAR <= dt.year <= base.year + MAX_YEARS_AHEAD:
        return None
    return dt, data.period or "day"


def warm_up() -> float:
    """Import dateparser and parse once, so the first real query does not pay for it. Returns ms taken.

    Never raises (a failure is logged; parse_time then returns None for dated spans)."""
    t0 = time.perf_counter()
    try:
        now = time.time()
        _resolve("last friday", int(now // 60 * 60))
        _resolve("in march", int(now // 60 * 60))
        parse_time("what did we do two weeks ago", now)
    except Exception:  # noqa: BLE001
        log.exception("dateparser warm-up failed")
    return (time.perf_counter() - t0) * 1000


# -- calendar helpers --------------------------------------------------------------------------------
def _ts(dt: datetime) -> float:
    return dt.replace(tzinfo=UTC).timestamp()


def _day_start(dt: datetime) -> datetime:
    return dt.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int) -> datetime:
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    return datetime(year, month, 1)


def _period_window(dt: datetime, period: str) -> tuple[float, float]:
    """The calendar ``period`` (day, week from Monday, month, year; anything else = day) holding ``dt``."""
    if period == "week":
        start = _day_start(dt) - timedelta(days=dt.weekday())
        return _ts(start), _ts(start + timedelta(days=7))
    if period == "month":
        return _ts(_month_start(dt.year, dt.month)), _ts(_month_start(dt.year, dt.month + 1))
    if period == "year":
        return _ts(datetime(dt.year, 1, 1)), _ts(datetime(dt.year + 1, 1, 1))
    start = _day_start(dt)
    return _ts(start), _ts(start + timedelta(days=1))


def _amount(text: str) -> tuple[int, str]:
    """``(count, unit)`` of "two weeks", "a few days", "3 months" (unit singular)."""
    tokens = text.lower().split()
    unit = tokens[-1].rstrip("s") if tokens else "day"
    count = 1
    for tok in tokens[:-1]:
        if tok.isdigit():
            count = max(1, min(int(tok), 5000))
            break
        if tok in _NUMBER_WORDS and tok not in ("a", "an", "of"):
            count = _NUMBER_WORDS[tok]
            break
        if tok in ("a", "an"):
            count = 1
    return count, unit


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
    if kind == "relative_day":
        low = text.lower()
        if low == "last night":
            low = "yesterday"
        elif low == "earlier today" or low == "tonight" or low.startswith("this "):
            low = "today"
        got = _resolve(low, base_minute)
        if got is None:
            return False
        span.start, span.end = _period_window(got[0], "day")
        return True
    if kind == "weekday":
        low = re.sub(r"\s+(?:morning|afternoon|evening|night)$", "", text.lower())
        low = re.sub(r"^(?:past|previous)\s+", "last ", low)
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
