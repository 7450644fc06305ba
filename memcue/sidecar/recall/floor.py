"""The evidence floor: a candidate stays only with real evidence, checked before the limit is applied.

Evidence is a cosine similarity at or above the model's own floor, a non-zero BM25 score, or a pinned
memory. ``COSINE_FLOOR`` for the default model (all-MiniLM-L6-v2 int8) is measured by
``benchmarks/calibrate_floor.py`` on LoCoMo: the 99th percentile of cosine between a question and
turns of *other* conversations (pairs that cannot be evidence), rounded up. See that script's output
in ``benchmarks/results/calibrate_floor.json``.
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
    """What one candidate has going for it: ``cosine`` (None without a vector), ``bm25`` (0 when the
    keyword channel did not match it), ``pinned``, the query's ``cue_terms`` it carries, the query's
    ``key_terms`` (see ``recall.query.key_terms``) and whether the query looks like ``gibberish``."""

    cosine: float | None
    bm25: float
    pinned: bool
    cue_terms: list[str]
    key_terms: list[str]
    gibberish: bool

    @property
    def key_coverage(self) -> float:
        """Share of the query's key terms (its rarest words found in memory) the memory carries (0..1)."""
        if not self.key_terms:
            return 0.0
        return sum(1 for t in self.key_terms if t in self.cue_terms) / len(self.key_terms)


def passes_floor(ev: Evidence, cosine_floor: float = COSINE_FLOOR) -> bool:
    """True when the candidate has evidence (see module docstring)."""
    return ev.pinned or ev.bm25 > 0 or (ev.cosine is not None and ev.cosine >= cosine_floor)
