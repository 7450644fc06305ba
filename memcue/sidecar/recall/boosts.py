"""Boosts applied after weighted RRF: entity overlap, cross-channel agreement, the session working set.

All are small additive terms on the fused score, sized against RRF scores (one channel's rank 1 is
w / (15 + 1), about 0.06 for weight 1), so they reorder near neighbours and never lift a candidate from
nowhere:

- ``ENTITY_BOOST`` per query entity a memory names directly (at most ``ENTITY_BOOST_MAX``);
- ``AGREEMENT_BOOST`` per extra *evidence* channel that found the memory (BM25, semantic above the floor,
  direct entity match, temporal window), so a memory found several ways outranks one found once;
- the working-set bias (``recall.working_set``), already capped so it only breaks near-ties.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Added per query entity the memory carries directly.
ENTITY_BOOST = 0.006
#: Cap on the entity boost of one memory.
ENTITY_BOOST_MAX = 0.015
#: Added per evidence channel beyond the first that found the memory.
AGREEMENT_BOOST = 0.004


def apply_boosts(
    fused: list[tuple[int, float]],
    *,
    shared_entities: Mapping[int, int],
    evidence_channels: Mapping[int, int],
    working_set_bias: Mapping[int, float],
) -> tuple[list[tuple[int, float]], dict[int, float]]:
    """Add the boosts to ``fused`` ``(memory_id, score)`` and re-sort (ties by id).

    ``shared_entities``: memory id -> number of query entities it names; ``evidence_channels``: memory id ->
    number of evidence channels that found it; ``working_set_bias``: memory id -> bias. Returns the new
    order and each memory's total boost.
    """
    boosted, added = [], {}
    for mid, score in fused:
        extra = min(ENTITY_BOOST_MAX, ENTITY_BOOST * shared_entities.get(mid, 0))
        extra += AGREEMENT_BOOST * max(0, evidence_channels.get(mid, 0) - 1)
        extra += working_set_bias.get(mid, 0.0)
        if extra:
            added[mid] = extra
        boosted.append((mid, score + extra))
    boosted.sort(key=lambda item: (-item[1], item[0]))
    return boosted, added
