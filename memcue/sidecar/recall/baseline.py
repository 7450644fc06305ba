"""Per-memory cosine baselines: how close a memory sits to *any* question.

Some memories (full of ids, hashes, code or boilerplate) are close to every query for a small embedding
model; judging them by raw cosine gives them a free pass. A memory's baseline is its mean cosine
similarity to ``PROBE_QUESTIONS``, generic questions that share no topic with it; support then asks how
far the query's cosine rises above that baseline (``recall.support``). Baselines are computed by the
sidecar's background worker right after a memory is embedded and stored in ``memories.baseline``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Generic, topic-free questions of the kind users ask a coding memory. Their mean cosine with a memory is
#: that memory's baseline.
PROBE_QUESTIONS = (
    "what did we decide?",
    "how do I fix this?",
    "what is the status of the project?",
    "why did we change it?",
    "what was the problem last time?",
    "which option did we choose?",
    "what should I remember about this?",
    "when did this happen?",
    "who was involved?",
    "what are the next steps?",
    "is there anything important here?",
    "what did you say about that?",
)
#: Baseline assumed for a memory whose baseline is not computed yet: the median cosine of unrelated
#: question/turn pairs on LoCoMo for the default model (0.133, benchmarks/results/calibrate_floor.json).
DEFAULT_BASELINE = 0.13


def baselines(memory_vectors: np.ndarray, probe_vectors: np.ndarray) -> np.ndarray:
    """Mean cosine of each memory (rows of ``memory_vectors``, shape (n, d), unit length) with the probes
    (shape (p, d), unit length): shape (n,)."""
    if memory_vectors.size == 0:
        return np.zeros(0, dtype=np.float32)
    return (memory_vectors @ probe_vectors.T).mean(axis=1)


def probe_vectors(embed: object) -> np.ndarray:
    """Embed ``PROBE_QUESTIONS`` with ``embed`` (a callable taking a list of texts and returning vectors):
    shape (p, d) float32."""
    vectors: Sequence[np.ndarray] = embed(list(PROBE_QUESTIONS))  # type: ignore[operator]
    return np.vstack([np.asarray(v, dtype=np.float32) for v in vectors])
