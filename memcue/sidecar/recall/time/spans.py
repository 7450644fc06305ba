"""Finding the time expressions of a query: where each span is and which kind it is
(``patterns.SPAN_PATTERNS``). ``resolvers`` then turns each span into a window."""

from __future__ import annotations

from dataclasses import dataclass

from memcue.core.limits import QUERY_MAX_CHARS, cap_query
from memcue.sidecar.recall.time.patterns import AMBIGUOUS_MONTH, DATE_MARKERS, SPAN_PATTERNS

#: Text analysed at most (``core.limits.cap_query``): the two ends of a long prompt (the question is usually
#: at one end), so a pasted log cannot make the regexes or the cache expensive.
TEXT_CAP = QUERY_MAX_CHARS


@dataclass
class Span:
    """One time expression of a query: ``kind`` (a ``SPAN_PATTERNS`` name), ``begin``/``finish`` (character
    offsets, finish exclusive) and ``text``. A resolver fills ``start``/``end`` (Unix s, UTC, end exclusive,
    None = open) and ``order`` ("newest" | "oldest" | None); the intent fills ``bound`` (since | after | from |
    before | until | "")."""

    kind: str
    begin: int
    finish: int
    text: str
    start: float | None = None
    end: float | None = None
    bound: str = ""
    order: str | None = None


def cap_text(text: str) -> str:
    """``text`` itself when it has at most ``TEXT_CAP`` characters, else its two ends (``core.limits.
    cap_query``)."""
    return cap_query(text, TEXT_CAP)


def find_spans(text: str) -> list[Span]:
    """The time expressions of ``text``, in text order, never overlapping (an earlier pattern of
    ``SPAN_PATTERNS`` wins). A lower-case "may"/"march" next to a bare number is not a date."""
    taken: list[tuple[int, int]] = []
    spans: list[Span] = []
    for kind, pattern in SPAN_PATTERNS:
        for m in pattern.finditer(text):
            b, f = m.span()
            if f <= b or any(b < tf and tb < f for tb, tf in taken):
                continue
            found = m.group(0)
            if kind in ("month_day", "month_year") and AMBIGUOUS_MONTH.search(found) \
                    and not DATE_MARKERS.search(found):
                continue
            taken.append((b, f))
            spans.append(Span(kind, b, f, m.group(0)))
    spans.sort(key=lambda s: s.begin)
    return spans
