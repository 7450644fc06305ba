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
- ``IDENTIFIER_BOOST`` when the memory carries, as a whole token, an identifier the query names (a ticket id,
  env var, flag, dotted name, path, version: ``query.identifiers``), so ``PAY-219`` outranks ``PAY-21``;
- the working-set bias (``recall.working_set``), already capped so it only breaks near-ties.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memcue.core.session_ids import is_synthetic
from memcue.sidecar.recall.channels import GRAPH, TEMPORAL, ChannelResult, query_entity_ids, shared_entities
from memcue.sidecar.recall.query import STOP_WORDS, asking_words, carried, identifiers, siblings, words
from memcue.sidecar.recall.support import owner_of
from memcue.sidecar.store import Store, extract_entities

if TYPE_CHECKING:
    from memcue.sidecar.recall.candidates import Candidates
    from memcue.sidecar.recall.request import RecallRequest, RecallServices

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
#: Added when the memory carries one of the query's identifiers whole. Most of a rank-1 RRF contribution: an
#: exact identifier outranks memories that share only its parts ("pay", "219"), not those found every way.
IDENTIFIER_BOOST = 0.05
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
    identifier_match: set[int] | frozenset[int] = frozenset(),
) -> tuple[list[tuple[int, float]], dict[int, float]]:
    """Add the boosts to ``fused`` ``(memory_id, score)`` and re-sort (ties by id).

    ``shared_entities``: memory id -> number of query entities it names; ``evidence_channels``: memory id ->
    number of evidence channels that found it; ``working_set_bias``: memory id -> bias; ``owner_match``: ids
    of memories whose owner the query names; ``session_boost``: id -> session-context boost (see
    ``session_context``); ``in_window``: ids written inside the question's time window; ``identifier_match``:
    ids carrying one of the query's identifiers whole. Returns the new order and each memory's total boost.
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
        if mid in identifier_match:
            extra += IDENTIFIER_BOOST
        if extra:
            added[mid] = extra
        boosted.append((mid, score + extra))
    boosted.sort(key=lambda item: (-item[1], item[0]))
    return boosted, added


@dataclass
class Boosted:
    """The boost stage's result: ``fused`` ``(memory_id, score)`` best first (kept candidates only, boosts
    added) and ``added`` id -> total boost; what the support stage reuses: ``shared`` id -> the query's
    entity names it carries, ``owners`` id -> speaker (lowercase, "" for none), ``people`` the persons the
    query asks about known in scope, ``unknown`` the names it mentions that no memory in scope carries,
    ``window`` the question's time window ``(start, end)`` in Unix s (None when it names none),
    ``session_boost`` id -> session-context boost, ``identified`` id -> the query's identifiers it carries
    whole (only memories carrying one) and ``siblings`` id -> identifiers it carries of the same family as
    the query's but not the query's (``query.siblings``; only memories carrying one and none of the query's)."""

    fused: list[tuple[int, float]]
    added: dict[int, float]
    shared: dict[int, list[str]]
    owners: dict[int, str]
    people: list[str]
    unknown: list[str]
    window: tuple[float, float] | None
    session_boost: dict[int, float]
    identified: dict[int, list[str]]
    siblings: dict[int, list[str]]

    def in_window(self, created_at: float) -> bool | None:
        """Whether ``created_at`` (Unix s) is inside the question's window; None when it names none."""
        return None if self.window is None else self.window[0] <= created_at < self.window[1]


def names_in_query(store: Store, query: str, project: str | None) -> tuple[list[str], list[str]]:
    """Names the query mentions (people, products, files, identifiers): those no memory in scope carries,
    and the capitalised names that memory does know (the people the question is about). When the query also
    tells or pastes something beside the sentence that asks (``query.asking_words``), only the asking sentence's
    unknown names count: ``app.py`` in a pasted traceback is what the user saw, not what the memory must name."""
    names = [(name, kind) for name, kind in extract_entities(query)]
    if not names:
        return [], []
    plain = {name: " ".join(words(name)) for name, _ in names}
    df = store.doc_frequencies([p for p in plain.values() if p], cap=1, project=project)
    asking = asking_words(query)
    unknown = [name for name, _ in names if plain[name] and df.get(plain[name], 0) == 0
               and (asking is None or set(words(name)) <= asking | STOP_WORDS)]
    people = [plain[name] for name, kind in names if kind == "name" and name not in unknown and plain[name]]
    return unknown, people


def time_window(temporal: ChannelResult) -> tuple[float, float] | None:
    """The time window the temporal channel read in the question, as ``(start, end)`` Unix seconds (open
    sides infinite), or None when it read none."""
    bounds = temporal.detail.get("window") if temporal.status in ("ok", "no_candidates") else None
    if not bounds or all(b is None for b in bounds):
        return None
    start, end = (dt.datetime.fromisoformat(b).timestamp() if b else None for b in bounds)
    return (float("-inf") if start is None else start, float("inf") if end is None else end)


def boost(store: Store, req: RecallRequest, services: RecallServices, found: Candidates) -> Boosted:
    """Keep the candidates with evidence rows and add their boosts (entity, agreement, owner, time window,
    session context, working set); see the module docstring."""
    evidence, rows = found.evidence, found.rows
    sup = req.filters.include_superseded
    seeds = (query_entity_ids(store, req.query, project=req.project, include_superseded=sup)
             if found.channels[GRAPH].status == "ok" else {})
    shared = shared_entities(store, seeds, list(evidence)) if seeds else {}
    bias = {} if is_synthetic(req.session_id) else services.working_sets.bias(req.session_id)
    unknown, people = names_in_query(store, req.query, req.project) if evidence else ([], [])
    owners = {mid: owner_of(rows[mid]["content"], rows[mid]["metadata"]) for mid in evidence}
    fused = [(m, s) for m, s in found.fused if m in evidence]
    window = time_window(found.channels[TEMPORAL])
    in_window = set() if window is None else {m for m in evidence if window[0] <= rows[m]["created_at"] < window[1]}
    session_boost = session_context(fused, store.session_neighbours([m for m, _ in fused[:SESSION_CONTEXT_TOP]]))
    asked = identifiers(req.query)
    identified = {m: hits for m in evidence if (hits := carried(asked, rows[m]["content"]))} if asked else {}
    kin = {m: other for m in evidence if m not in identified and (other := siblings(asked, rows[m]["content"]))
           } if asked else {}
    fused, added = apply_boosts(fused,
                                shared_entities={m: len(v) for m, v in shared.items()},
                                evidence_channels={m: ev.channels for m, ev in evidence.items()},
                                working_set_bias=bias,
                                owner_match={m for m, o in owners.items() if o and o in people},
                                session_boost=session_boost, in_window=in_window,
                                identifier_match=set(identified))
    return Boosted(fused, added, shared, owners, people, unknown, window, session_boost, identified, kin)
