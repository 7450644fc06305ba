"""Ranking mode: similarity x decay x reinforcement (issue 3, item 10). Off unless ``MEMCUE_RANKING`` is set.

    rank_score = similarity * decay(age_days, kind) * reinforcement(seen_count)
    decay      = 0.5 ** (age_days / half_life_days(kind))
    reinforcement = 1 + ln(1 + seen_count)

The half-lives are the ones issue 3 specifies (item 10): episodic 14 days, semantic 90 days, procedural
180 days. They are a product choice, not fitted to data here: what happened (a bug seen, a request made)
goes stale in weeks, what is true (a decision, a preference) in months, and how to do things (a runbook)
lasts longest. Reinforcement grows with the logarithm of how often a memory was served, so repeated use
helps but cannot swamp similarity (10 uses give x3.4, 100 give x5.6).

Units: ages in days, timestamps in Unix seconds. Scores rank; they are not probabilities.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

EPISODIC, SEMANTIC, PROCEDURAL = "episodic", "semantic", "procedural"
#: Half-life in days per memory class (issue 3, item 10).
HALF_LIFE_DAYS = {EPISODIC: 14, SEMANTIC: 90, PROCEDURAL: 180}
#: Values of ``MEMCUE_RANKING`` that turn ranking mode on (case-insensitive, whitespace ignored).
TRUE_VALUES = frozenset({"1", "true", "yes", "on"})
#: memcue kinds -> memory class. Any kind not listed is ``semantic`` (the middle half-life).
KIND_CLASS = {
    # what happened: events, observations, captured prompts
    "note": EPISODIC, "event": EPISODIC, "session": EPISODIC, "request": EPISODIC, "prompt": EPISODIC,
    "episode": EPISODIC,
    "bug": EPISODIC, "observation": EPISODIC, "todo": EPISODIC, "task": EPISODIC,
    # what is true: decisions, facts, preferences
    "decision": SEMANTIC, "fact": SEMANTIC, "preference": SEMANTIC, "convention": SEMANTIC,
    "architecture": SEMANTIC, "lesson": SEMANTIC,
    # how to do things
    "procedure": PROCEDURAL, "howto": PROCEDURAL, "command": PROCEDURAL, "workflow": PROCEDURAL,
    "runbook": PROCEDURAL,
}
SECONDS_PER_DAY = 86400.0


def ranking_on(setting: bool | None) -> bool:
    """The ranking mode for one recall: ``setting`` (the sidecar's, read once at start) when given, else
    ``ranking_enabled()``."""
    return ranking_enabled() if setting is None else setting


def ranking_enabled(env: Mapping[str, str] = os.environ) -> bool:
    """True when ``env["MEMCUE_RANKING"]`` is one of "1", "true", "yes", "on" (any case, stripped).
    Unset, empty or any other value (e.g. "0", "false", "off") is off."""
    return (env.get("MEMCUE_RANKING") or "").strip().lower() in TRUE_VALUES


def memory_class(kind: str) -> str:
    """The class (``episodic``, ``semantic`` or ``procedural``) of a memcue ``kind`` (case-insensitive, see
    ``KIND_CLASS``). Unknown or empty kinds are ``semantic``."""
    return KIND_CLASS.get((kind or "").strip().lower(), SEMANTIC)


def decay(age_days: float, kind: str) -> float:
    """``0.5 ** (age_days / HALF_LIFE_DAYS[memory_class(kind)])``, in (0, 1]. A negative age (a clock
    that moved back, a timestamp from the future) counts as 0, so decay never exceeds 1."""
    half_life = HALF_LIFE_DAYS[memory_class(kind)]
    return 0.5 ** (max(0.0, float(age_days)) / half_life)


def reinforcement(count: float) -> float:
    """``1 + ln(1 + count)``, >= 1; ``count`` is how often the memory was served (``seen_count``). A
    negative or missing count counts as 0."""
    return 1.0 + math.log1p(max(0.0, float(count or 0)))


def rank_score(similarity: float, age_days: float, kind: str, count: float) -> float:
    """``similarity * decay(age_days, kind) * reinforcement(count)``. A negative similarity counts as 0, so
    age and use can never lift a dissimilar memory above a similar one."""
    return max(0.0, float(similarity)) * decay(age_days, kind) * reinforcement(count)


def rerank_by_ranking(items: Iterable[Mapping[str, Any]], now: float) -> list[dict[str, Any]]:
    """Order results by ``rank_score``, best first.

    ``items``: mappings with ``score`` (the similarity to use; required, ``KeyError`` if missing),
    ``created_at`` (Unix seconds; missing or None counts as age 0), ``memory_kind`` (missing counts as
    semantic), ``seen_count`` (missing counts as 0) and usually ``memory_id``. ``now``: Unix seconds.
    Returns new dicts (inputs untouched) with ``ranking_score`` added, sorted by ``-ranking_score`` then
    ``memory_id`` (items without one after those with one, in input order), so the order is deterministic.
    """
    out: list[tuple[float, float, int, dict[str, Any]]] = []
    for index, item in enumerate(items):
        row = dict(item)
        created = row.get("created_at")
        age_days = 0.0 if created is None else (now - float(created)) / SECONDS_PER_DAY
        kind = row.get("memory_kind") or ""
        row["ranking_score"] = rank_score(row["score"], age_days, kind, row.get("seen_count") or 0)
        mid = row.get("memory_id")
        out.append((-row["ranking_score"], math.inf if mid is None else float(mid), index, row))
    out.sort(key=lambda entry: entry[:3])
    return [entry[3] for entry in out]
