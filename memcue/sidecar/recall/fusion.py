"""Weighted reciprocal rank fusion (RRF).

score(d) = sum over channels c of w_c / (k + rank_c(d)), rank from 1 (Cormack, Clarke and Büttcher,
"Reciprocal Rank Fusion outperforms Condorcet and individual Rank Learning Methods", SIGIR 2009, which
used k = 60). memcue uses k = 15: with few channels and short lists, a smaller k lets a channel's top
hit count for more. Ties break by memory id, so the order is deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

RRF_K = 15


def weighted_rrf(
    rankings: Mapping[str, Sequence[int]], weights: Mapping[str, float], k: int = RRF_K
) -> list[tuple[int, float]]:
    """Fuse ranked id lists into ``(memory_id, fused score)`` best first."""
    scores: dict[int, float] = {}
    for channel, ids in rankings.items():
        weight = weights.get(channel, 1.0)
        for rank, mid in enumerate(ids, start=1):
            scores[mid] = scores.get(mid, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
