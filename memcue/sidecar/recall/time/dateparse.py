"""dateparser, imported on first use: a span of text read as a date relative to a base time (UTC).

Used by ``recall.time.resolvers``; ``warm_up`` runs on a sidecar thread at start so no query pays the import.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

log = logging.getLogger("memcue.recall")

#: Years dateparser may return; anything else is a misreading (a version number, an id).
MIN_YEAR, MAX_YEARS_AHEAD = 1970, 5
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
def resolve(span: str, base_minute: int) -> tuple[datetime, str] | None:
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
    """Import dateparser and parse twice, so the first real query does not pay for it. Returns ms taken.

    Never raises (a failure is logged; time parsing then finds no dated spans)."""
    t0 = time.perf_counter()
    try:
        now = time.time()
        resolve("last friday", int(now // 60 * 60))
        resolve("in march", int(now // 60 * 60))
    except Exception:  # noqa: BLE001
        log.exception("dateparser warm-up failed")
    return (time.perf_counter() - t0) * 1000
