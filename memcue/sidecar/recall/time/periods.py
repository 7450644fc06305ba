"""Calendar arithmetic for time windows: naive UTC datetimes to Unix seconds, day/month starts, the calendar
period holding a date, and "two weeks"-style amounts. All windows are ``[start, end)`` in Unix seconds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

#: Seconds in a day, and in each unit a relative expression ("3 weeks ago") may name (a month = 30 days,
#: a year = 365 days: "N months ago" is approximate anyway).
DAY = 86400.0
UNIT_SECONDS = {"minute": 60.0, "hour": 3600.0, "day": DAY, "week": 7 * DAY, "month": 30 * DAY, "year": 365 * DAY}
#: Counts written as words ("a few days": 3, "a couple of weeks": 2).
NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "few": 3, "couple": 2,
                "several": 3}


def ts(dt: datetime) -> float:
    """Unix seconds of ``dt``, a naive datetime read as UTC."""
    return dt.replace(tzinfo=UTC).timestamp()


def day_start(dt: datetime) -> datetime:
    """Midnight at the start of ``dt``'s day (same tzinfo)."""
    return dt.replace(hour=0, minute=0, second=0, microsecond=0)


def month_start(year: int, month: int) -> datetime:
    """The first day of ``month`` of ``year`` (naive); months past 12 or below 1 roll into the next or
    previous years (``month_start(2024, 13)`` is 2025-01-01)."""
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    return datetime(year, month, 1)


def period_window(dt: datetime, period: str) -> tuple[float, float]:
    """The calendar ``period`` (day, week from Monday, month, year; anything else = day) holding ``dt``."""
    if period == "week":
        start = day_start(dt) - timedelta(days=dt.weekday())
        return ts(start), ts(start + timedelta(days=7))
    if period == "month":
        return ts(month_start(dt.year, dt.month)), ts(month_start(dt.year, dt.month + 1))
    if period == "year":
        return ts(datetime(dt.year, 1, 1)), ts(datetime(dt.year + 1, 1, 1))
    start = day_start(dt)
    return ts(start), ts(start + timedelta(days=1))


def amount(text: str) -> tuple[int, str]:
    """``(count, unit)`` of "two weeks", "a few days", "3 months" (unit singular)."""
    tokens = text.lower().split()
    unit = tokens[-1].rstrip("s") if tokens else "day"
    count = 1
    for tok in tokens[:-1]:
        if tok.isdigit():
            count = max(1, min(int(tok), 5000))
            break
        if tok in NUMBER_WORDS and tok not in ("a", "an", "of"):
            count = NUMBER_WORDS[tok]
            break
        if tok in ("a", "an"):
            count = 1
    return count, unit
