"""Boosts applied after weighted RRF: entity overlap, cross-channel agreement, the session working set.

All are small additive terms on the fused score, sized against RRF scores (one channel's rank 1 is
w / (15 + 1), about 0.06 for weight 1), so they reorder near neighbours and never lift a candidate from
nowhere:

- ``ENTITY_BOOST`` per query entity a memory names directly (at most ``ENTITY_BOOST_MAX``);
- ``AGREEMENT_BOOST`` per extra *evidence* channel that found the memory (BM25, semantic above the floor,
  direct entity match, temporal window), so a memory found several ways outranks one found once;
- ``OWNER_BOOST`` when the memory's owner (the speaker it is attributed to: ``metadata.speaker`` or a
  leading "Name:") is a person the query names: "what did Caroline research?" is answered by Caroline's
  own words far more often than by others' (95% of LoCoMo's answerable questions; see
  benchmarks/results/locomo_ablation.md);
- session context: a candidate right before or after one of the ``SESSION_CONTEXT_TOP`` best candidates
  in the same session gets ``SESSION_CONTEXT_GAMMA`` times that candidate's score: an answer often sits
  in the turn next to the one that matched the words (a question and its reply). On LoCoMo it lifted
  recall@10 by 0.03 and MRR by 0.02 (benchmarks/results/locomo_ablation.md). Only memories already
  found by a channel get it, so it reorders evidence and never adds a memory without any;
- ``TIME_WINDOW_BOOST`` when the question names a time ("last week") and the memory was written then;
- the working-set bias (``recall.working_set``), already capped so it only breaks near-ties.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Added per query entity the memory carries directly.
ENTITY_BOOST = 0.006
#: Cap on the entity boost of one memory.
ENTITY_BOOST_MAX = 0.015
#: Added per evidence channel beyond the first that found the memory. Small: RRF already rewards a memory
#: found by several channels, and 0.004 cost LoCoMo 0.006 recall@10 (benchmarks/results/locomo_ablation.md).
AGREEMENT_BOOST = 0.002
#: Added when the memory's owner is a person the query names.
OWNER_BOOST = 0.02
#: Added when the memory was written inside the time window the question names. A third of a rank-1 RRF
#: contribution: it lifts memories of that time over equal matches from other times, not over much better
#: ones (a hard in-window-first order cost LoCoMo 0.9 points of recall@10: its relative dates refer to the
#: conversation, not the asking time).
TIME_WINDOW_BOOST = 0.02
#: Share of a top candidate's score passed to its session neighbours, and how many top candidates pass it.
SESSION_CONTEXT_GAMMA = 0.3
SESSION_CONTEXT_TOP = 20


def session_context(fused: list[tuple[int, float]],
                    neighbours: Mapping[int, tuple[int | None, int | None]]) -> dict[int, float]:
    """The session-context boost per candidate: ``fused`` ``(memory_id, score)`` best first; ``neighbours``
    id -> (previous, next) in its session. Only ids in ``fused`` receive a boost (the largest one offered)."""
    present = {mid for mid, _ in fused}
    out: dict[int, float] = {}
    for mid, score in fused[:SESSION_CONTEXT_TOP]:
        for other in neighbours.get(mid, (None, None)):
            if other is not None and other in present:
                out[other] = max(out.get(other, 0.0), SESSION_CONTEXT_GAMMA * score)
    return out


def apply_boosts(
    fused: list[tuple[int, float]],
    *,
    shared_entities: Mapping[int, int],
    evidence_channels: Mapping[int, int],
    working_set_bias: Mapping[int, float],
    owner_match: set[int] | frozenset[int] = frozenset(),
    session_boost: Mapping[int, float] | None = None,
    in_window: set[int] | frozenset[int] = frozenset(),
) -> tuple[list[tuple[int, float]], dict[int, float]]:
    """Add the boosts to ``fused`` ``(memory_id, score)`` and re-sort (ties by id).

    ``shared_entities``: memory id -> number of query entities it names; ``evidence_channels``: memory id ->
    number of evidence channels that found it; ``working_set_bias``: memory id -> bias; ``owner_match``: ids
    of memories whose owner the query names; ``session_boost``: id -> session-context boost (see
    ``session_context``); ``in_window``: ids written inside the question's time window. Returns the new
    order and each memory's total boost.
    """
    boosted, added = [], {}
    for mid, score in fused:
        extra = min(ENTITY_BOOST_MAX, ENTITY_BOOST * shared_entities.get(mid, 0))
        extra += AGREEMENT_BOOST * max(0, evidence_channels.get(mid, 0) - 1)
        extra += working_set_bias.get(mid, 0.0)
        if mid in owner_match:
            extra += OWNER_BOOST
        extra += (session_boost or {}).get(mid, 0.0)
        if mid in in_window:
            extra += TIME_WINDOW_BOOST
        if extra:
            added[mid] = extra
        boosted.append((mid, score + extra))
    boosted.sort(key=lambda item: (-item[1], item[0]))
    return boosted, added
