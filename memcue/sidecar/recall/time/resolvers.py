"""Resolving a time span to its window: one resolver per span kind (``RESOLVERS``).

Each resolver gets the span, its text with whitespace collapsed, the asking time as a naive UTC datetime
and the same time as whole-minute Unix seconds (dateparser's base); it fills ``span.start``/``end`` (and
``order`` for a rolling window) and returns False when the span does not resolve to a sane date. The table
of granularities is in ``recall.time.intent``'s docstring.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from memcue.sidecar.recall.time.dateparse import MAX_YEARS_AHEAD, MIN_YEAR, resolve
from memcue.sidecar.recall.time.patterns import PREP, YEAR
from memcue.sidecar.recall.time.periods import UNIT_SECONDS, amount, day_start, month_start, period_window, ts
from memcue.sidecar.recall.time.spans import Span

#: ``(span, text, now, base_minute) -> resolved?``
Resolver = Callable[[Span, str, datetime, int], bool]

_PREP_HEAD = re.compile(rf"^(?:{PREP})", re.I)
_ROLLING_HEAD = re.compile(r"^(?:(?:in|over|during|within)\s+)?(?:the\s+)?(?:past|last|previous)\s+", re.I)
#: The period a date-like span names: a day or a whole month.
DATE_PERIODS = {"iso_day": "day", "numeric_day": "day", "month_day": "day", "iso_month": "month",
                "month_year": "month", "month": "month"}


def _quarter(span: Span, text: str, now: datetime, base_minute: int) -> bool:
    """"Q3 2024", or "Q4" alone: this year's, or last year's when it has not begun yet."""
    m = re.match(rf"q([1-4])(?:\s+({YEAR}))?", text, re.I)
    if not m:
        return False
    q = int(m.group(1))
    year = int(m.group(2)) if m.group(2) else now.year
    if not m.group(2) and month_start(year, 3 * q - 2) > now:
        year -= 1  # "Q4" asked in May: last year's
    span.start, span.end = ts(month_start(year, 3 * q - 2)), ts(month_start(year, 3 * q + 1))
    return True


def _weekend(span: Span, text: str, now: datetime, base_minute: int) -> bool:
    """The most recent Saturday on or before today and its Sunday ("this weekend" on a weekday: the
    coming one)."""
    days_back = (now.weekday() - 5) % 7
    sat = day_start(now) - timedelta(days=days_back)
    if text.lower().startswith("this") and now.weekday() < 5:
        sat += timedelta(days=7)
    span.start, span.end = ts(sat), ts(sat + timedelta(days=2))
    return True


def _rolling(span: Span, text: str, now: datetime, base_minute: int) -> bool:
    """"past week", "last 3 days": from that long ago, open end, newest first."""
    count, unit = amount(_ROLLING_HEAD.sub("", text))
    if unit not in UNIT_SECONDS:
        return False
    got = resolve(f"{count} {unit}s ago", base_minute)
    if got is None:
        return False
    span.start, span.end, span.order = ts(got[0]), None, "newest"
    return True


def _ago(span: Span, text: str, now: datetime, base_minute: int) -> bool:
    """"3 days ago": that day; "two weeks ago": one unit wide, centred on the point; "5 hours ago": centred,
    half width max(1 h, half the amount)."""
    count, unit = amount(text[: -len("ago")].strip())
    if unit not in UNIT_SECONDS:
        return False
    got = resolve(f"{count} {unit}s ago", base_minute)
    if got is None:
        return False
    point = ts(got[0])
    if unit == "day":
        span.start, span.end = period_window(got[0], "day")
        return True
    if unit in ("minute", "hour"):
        half = max(3600.0, 0.5 * count * UNIT_SECONDS[unit])
    else:
        half = 0.5 * UNIT_SECONDS[unit]
    span.start, span.end = point - half, point + half
    return True


def _one_day(span: Span, text: str, now: datetime, base_minute: int) -> bool:
    """"yesterday", "last Friday", "this morning": that day, named in a form dateparser reads."""
    low = text.lower()
    if span.kind == "weekday":
        low = re.sub(r"\s+(?:morning|afternoon|evening|night)$", "", low)
        low = re.sub(r"^(?:past|previous)\s+", "last ", low)
    elif low == "last night":
        low = "yesterday"
    elif low == "earlier today" or low == "tonight" or low.startswith("this "):
        low = "today"
    got = resolve(low, base_minute)
    if got is None:
        return False
    span.start, span.end = period_window(got[0], "day")
    return True


def _calendar(span: Span, text: str, now: datetime, base_minute: int) -> bool:
    """"last/this/next week|month|year|quarter": that calendar period."""
    low = re.sub(r"^(?:the\s+)?current\s+", "this ", text.lower()).replace("previous", "last")
    if low.endswith("quarter"):
        q0 = (now.month - 1) // 3 * 3 + 1
        shift = {"last": -3, "this": 0, "next": 3}[low.split()[0]]
        first = month_start(now.year, q0 + shift)
        span.start, span.end = ts(first), ts(month_start(first.year, first.month + 3))
        return True
    got = resolve(low, base_minute)
    if got is None:
        return False
    span.start, span.end = period_window(got[0], low.split()[-1])
    return True


def _year(span: Span, text: str, now: datetime, base_minute: int) -> bool:
    """"in 2024": that year, when between ``MIN_YEAR`` and ``MAX_YEARS_AHEAD`` years from now."""
    year = int(re.search(YEAR, text).group(0))  # type: ignore[union-attr]
    if not MIN_YEAR <= year <= now.year + MAX_YEARS_AHEAD:
        return False
    span.start, span.end = ts(datetime(year, 1, 1)), ts(datetime(year + 1, 1, 1))
    return True


def _date(span: Span, text: str, now: datetime, base_minute: int) -> bool:
    """Dates and months: dateparser reads the date, the kind fixes the granularity (``DATE_PERIODS``)."""
    target = _PREP_HEAD.sub("", text) if span.kind == "month" else text
    target = re.sub(r"(\d)(?:st|nd|rd|th)\b", r"\1", target)
    got = resolve(target, base_minute)
    if got is None:
        return False
    if span.kind in ("iso_day", "iso_month", "numeric_day") and got[1] not in ("day", "month", "time"):
        return False
    span.start, span.end = period_window(got[0], DATE_PERIODS[span.kind])
    return True


#: Span kind (``patterns.SPAN_PATTERNS``) -> its resolver.
RESOLVERS: dict[str, Resolver] = {
    "quarter": _quarter, "weekend": _weekend, "rolling": _rolling, "ago": _ago, "relative_day": _one_day,
    "weekday": _one_day, "calendar": _calendar, "year": _year, **{kind: _date for kind in DATE_PERIODS},
}


def resolve_span(span: Span, base_minute: int) -> bool:
    """Fill ``span.start``/``end``/``order`` relative to ``base_minute`` (Unix s, whole minutes, UTC) with
    its kind's resolver; False when the span does not resolve to a sane date."""
    now = datetime.fromtimestamp(base_minute, UTC).replace(tzinfo=None)
    return RESOLVERS[span.kind](span, " ".join(span.text.split()), now, base_minute)
