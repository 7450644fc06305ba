"""Filters of a recall: time and version (``window``, ``as_of`` and ``valid_at``, all Unix seconds), ``kind`` and
``tags``.

- ``window`` (``start``, ``end``): memories created in ``[start, end)``; either side may be open.
- ``as_of``: what memcue knew at that time: memories created by then, in the version current then (a row
  superseded later is served; one superseded before is not).
- ``valid_at``: facts valid at that time: ``valid_from`` (or ``created_at``) <= t < ``valid_to``.
- ``kind``: memories of that kind only; ``tags``: memories carrying every tag given.

Without ``as_of`` or ``valid_at``, superseded rows are never served; under ``valid_at`` alone an old version
is served when it was the one valid then (its ``valid_to`` is when the update replaced it).

A question never answers itself: the hook captures a prompt before it recalls, so "what did I ask you about
the importer?" is already stored as a captured prompt when it is asked (``own_prompt``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_SPACE = re.compile(r"\s+")


def _plain(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def own_prompt(kind: str, content: str, query: str) -> bool:
    """True when a memory of ``kind`` with ``content`` is the question ``query`` itself, captured: a captured
    prompt (kind ``request``) with the same text (whitespace and case aside)."""
    return kind == "request" and _plain(content) == _plain(query)


@dataclass(frozen=True)
class Filters:
    """The filters of one recall; None (or no tags) means not set. ``kind``: only memories of that kind; ``tags``
    (normalised): only memories carrying every one of them."""

    window_start: float | None = None
    window_end: float | None = None
    as_of: float | None = None
    valid_at: float | None = None
    kind: str | None = None
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.window_start is not None and self.window_end is not None and self.window_end <= self.window_start:
            raise ValueError("window: 'to' must be later than 'from'")

    @property
    def include_superseded(self) -> bool:
        """Superseded rows may be served only under an ``as_of`` or a ``valid_at``."""
        return self.as_of is not None or self.valid_at is not None

    @property
    def active(self) -> bool:
        """True when any filter is set."""
        return bool(self.tags) or any(v is not None for v in (self.window_start, self.window_end, self.as_of,
                                                               self.valid_at, self.kind))

    def keeps(self, row: dict[str, Any]) -> bool:
        """True when the memory ``row`` (a ``Store.fetch`` dict, ``tags`` included) passes every filter. A
        forgotten row never does (not even under ``as_of``)."""
        if row.get("forgotten_at") is not None:
            return False
        if (self.kind is not None and row["kind"] != self.kind) or not set(self.tags) <= set(row.get("tags") or ()):
            return False
        created = float(row["created_at"])
        if self.window_start is not None and created < self.window_start:
            return False
        if self.window_end is not None and created >= self.window_end:
            return False
        if self.as_of is None:
            if row["superseded_by"] is not None and self.valid_at is None:
                return False
        else:
            if created > self.as_of:
                return False
            superseded_at = row.get("superseded_at")
            if row["superseded_by"] is not None and (superseded_at is None or superseded_at <= self.as_of):
                return False
        if self.valid_at is not None:
            start = row.get("valid_from")
            start = created if start is None else float(start)
            end = row.get("valid_to")
            if start > self.valid_at or (end is not None and float(end) <= self.valid_at):
                return False
        return True

    def describe(self) -> dict[str, float | None]:
        """The filters as the response's ``filters`` field."""
        return {"window_from": self.window_start, "window_to": self.window_end, "as_of": self.as_of,
                "valid_at": self.valid_at, "kind": self.kind, "tags": list(self.tags)}
