"""The evidence floor: a candidate stays only with real evidence, checked before the limit is applied.

Evidence is a cosine similarity at or above the model's own floor, a non-zero BM25 score, a direct entity
match (the memory names an entity of the query), a temporal match (the temporal channel counted it), or a
pinned memory. Spreading activation beyond the query's own entities and Hopfield candidates never count
alone. ``COSINE_FLOOR`` for the default model (all-MiniLM-L6-v2 int8) is measured by
``benchmarks/calibrate_floor.py`` on LoCoMo: the 99th percentile of cosine between a question and turns of
*other* conversations (pairs that cannot be evidence), rounded up. See
``benchmarks/results/calibrate_floor.json``.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Cosine floor for all-MiniLM-L6-v2 (int8): p99 of unrelated question/turn pairs on LoCoMo (0.376),
#: rounded up to 0.05. 68% of gold evidence pairs are at or above it (benchmarks/results/calibrate_floor.json).
COSINE_FLOOR = 0.40
#: Cosine at which closeness alone supports a memory: median of question/gold-evidence pairs on LoCoMo
#: (0.464), rounded down to 0.05.
SUPPORT_COSINE = 0.45


@dataclass
class Evidence:
    """What one candidate has going for it: ``cosine`` (None without a vector), ``bm25`` (0 when the keyword
    channel did not match it), ``entity`` (it names a query entity directly), ``temporal`` (the temporal
    channel counted it as evidence), ``pinned``."""

    cosine: float | None
    bm25: float = 0.0
    entity: bool = False
    temporal: bool = False
    pinned: bool = False

    @property
    def channels(self) -> int:
        """How many evidence channels found the memory (cosine above the floor, BM25, entity, temporal)."""
        close = self.cosine is not None and self.cosine >= COSINE_FLOOR
        return int(close) + int(self.bm25 > 0) + int(self.entity) + int(self.temporal)


def passes_floor(ev: Evidence, cosine_floor: float = COSINE_FLOOR) -> bool:
    """True when the candidate has evidence (see module docstring)."""
    return ev.pinned or ev.bm25 > 0 or ev.entity or ev.temporal or (ev.cosine is not None and ev.cosine >= cosine_floor)


def apply_floor(fused: list[tuple[int, float]], evidence: dict[int, Evidence]) -> list[tuple[int, float]]:
    """The ``(memory_id, score)`` pairs of ``fused`` whose ``evidence`` passes the floor, order kept; every id
    of ``fused`` must be in ``evidence``. Applied before any limit."""
    return [(mid, score) for mid, score in fused if passes_floor(evidence[mid])]
