"""The entity-graph channel: spreading activation from the query's entities over co-occurrence edges.

The graph is built at write time (``memcue.sidecar.store.entities``): a node per entity (file path,
identifier, version, ticket id, capitalised name), an edge between two entities each time one memory names
both. Recall spreads activation from the entities the query names, in the manner of Collins & Loftus
(1975, "A spreading-activation theory of semantic processing", Psychological Review 82(6)): the query's
own entities (hop 0) start with their weight, activation flows along weighted links and weakens with each
hop, and a memory scores the summed activation of the entities it carries. The retrieval-side details
follow the usual practice of spreading activation in information retrieval (Crestani 1997, "Application
of spreading activation techniques in information retrieval", AI Review 11): a decay per hop, a bounded
number of hops, a fan-out limit, and out-weight normalisation so a hub cannot flood the graph.

* **Seeds.** ``extract_entities(query)`` plus every query word, adjacent 2-4 word sequence and
  whitespace chunk, looked up in the ``entities`` table (so "what did caroline say about postgres"
  finds "Caroline" and "Postgres" though the question is lowercase). A stored ``maybe_name`` (a word
  only ever seen capitalised at a sentence start, like "Appreciate it!") matches only a name the query
  itself writes as one, never a plain query word.
* **Seed weight** = inverse document frequency in its Robertson–Spärck Jones form,
  ``max(0, ln((N - df + 0.5) / (df + 0.5)))`` (Robertson & Spärck Jones 1976; the idf of Okapi BM25),
  where ``N`` = current non-bookkeeping memories in scope and ``df`` = those carrying the entity. For a
  rare entity it equals ``ln(N/df)``; an entity carried by half the memories or more (the one speaker of a
  chat, the project's own name) weighs 0 and neither seeds nor relays. ``N`` is at least ``MIN_N``.
* **Spreading.** Activation ``a`` of a source sends ``a · DECAY · w / out`` along each of its
  ``MAX_FANOUT`` heaviest edges (``w`` = co-occurrence count, ``out`` = the source's total out-weight), for
  at most ``MAX_HOPS`` hops. What a reached entity passes on, and adds to memories, is damped by its own
  specificity (its weight over the largest weight possible), so hubs relay almost nothing.
* **Score** of a memory = sum of the activation of the entities it carries (seeds count with their full
  weight). Only memories carrying a seed of weight ``>= MIN_EVIDENCE_IDF`` are ``evidence``; memories
  reached only by spreading are candidates, never evidence (DESIGN.md section 4, issue 3 step 4).

Bounded work: at most ``MAX_SEEDS`` seeds, ``MAX_FANOUT`` edges per source, ``MAX_FRONTIER`` sources at
hop 2, ``MAX_REACHED`` reached entities per hop, ``SEED_LINKS`` + ``REACHED_LINKS`` memory links read; a
few ms on a 6,000-memory store (``tests/test_entity_graph.py`` checks a loose bound).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from memcue.sidecar.recall.channels.base import GRAPH, ChannelContext, ChannelResult
from memcue.sidecar.recall.query import STOP_WORDS, words
from memcue.sidecar.store import MAYBE_NAME, Store, extract_entities

log = logging.getLogger("memcue.recall")

#: Share of activation kept per hop. 0.5 is the customary middle value (Crestani 1997 reports decay
#: factors between 0.25 and 0.75); with it a two-hop neighbour can reach at most a quarter of its seed's
#: weight, so a memory that names the query's entity always outranks one merely related to it.
DECAY = 0.5
#: Hops spread beyond the seeds (issue 3: "at most two hops"). Past two, co-occurrence graphs connect
#: nearly everything to everything ("small world"), so more hops add noise, not recall.
MAX_HOPS = 2
#: Query entities kept (heaviest first). A question rarely names more than a handful.
MAX_SEEDS = 16
#: Edges followed per active entity, heaviest first: bounds one hop to MAX_FANOUT × sources lookups.
MAX_FANOUT = 16
#: Hop-1 entities that spread on to hop 2 (the most activated ones).
MAX_FRONTIER = 8
#: Reached (non-seed) entities per hop whose df in scope is counted and which may score memories.
MAX_REACHED = 16
#: Memory-entity links read for the seeds (heaviest seeds first; a seed past the budget is skipped unless
#: it is the first), about 1 µs per link. Also the most memories a seed may be in: df is counted up to
#: here, and a seed in more memories weighs 0 (on 6,000 memories that is a third of them, where the weight
#: would be below ln 2 anyway; on much larger stores it trades some recall for bounded time).
SEED_LINKS = 2000
#: Links read for reached entities; a reached entity in more memories than this is too common to score.
REACHED_LINKS = 500
#: Below this many memories frequencies say little; N is taken as at least this in the weight.
MIN_N = 20
#: A seed is evidence when its weight is at least ln 3 (RSJ idf; carried by at most about a quarter of
#: the memories in scope): naming it picks out a small part of memory, as a rare keyword does.
MIN_EVIDENCE_IDF = math.log(3)
#: Query n-grams (and chunks) looked up at most; queries are short, this only bounds hostile input.
MAX_QUERY_NAMES = 128
#: Longest query text read for entities (characters).
MAX_QUERY_CHARS = 4000


@dataclass(frozen=True)
class Seed:
    """A query entity found in the store: ``id``, ``name`` (lowercase), ``df`` (memories in scope
    carrying it) and ``weight`` (RSJ idf, >= 0)."""

    id: int
    name: str
    df: int
    weight: float


def rsj_idf(n: int, df: int) -> float:
    """``max(0, ln((N - df + 0.5) / (df + 0.5)))`` with ``N = max(n, MIN_N)``; 0 for ``df <= 0``."""
    if df <= 0:
        return 0.0
    big_n = max(n, MIN_N)
    return max(0.0, math.log((big_n - df + 0.5) / (df + 0.5)))


def query_names(text: str) -> list[str]:
    """Candidate entity names in ``text`` (lowercase): extracted entities, words that are not stop words,
    adjacent 2-4 word sequences that neither start nor end with a stop word, and whitespace chunks without
    their surrounding punctuation. De-duplicated, at most ``MAX_QUERY_NAMES``. Only the query's surely
    extracted entities may match a stored ``maybe_name``; the rest match confirmed entities only."""
    return _query_names(text)[0]


def _query_names(text: str) -> tuple[list[str], set[str]]:
    text = text[:MAX_QUERY_CHARS]
    found = extract_entities(text)
    names = [name for name, _ in found]
    extracted = {name for name, kind in found if kind != MAYBE_NAME}
    seq = [re.sub(r"['’]s$", "", w) for w in words(text)]
    content = [w for w in seq if len(w) > 1 and w not in STOP_WORDS]
    names.extend(content)
    for size in (2, 3, 4):
        for i in range(len(seq) - size + 1):
            gram = seq[i:i + size]
            if gram[0] in STOP_WORDS or gram[-1] in STOP_WORDS:
                continue
            names.append(" ".join(gram))
    for chunk in text.split():
        chunk = chunk.strip(".,;:!?()[]{}<>'\"`“”‘’").lower()
        if len(chunk) > 1 and chunk not in STOP_WORDS:
            names.append(re.sub(r"['’]s$", "", chunk))
    return list(dict.fromkeys(n for n in names if n))[:MAX_QUERY_NAMES], extracted


def _within_budget(dfs: Iterable[tuple[int, int]], budget: int) -> list[int]:
    """Entity ids, in the given order, while their summed df stays within ``budget`` (the first always)."""
    chosen, used = [], 0
    for eid, df in dfs:
        if chosen and used + df > budget:
            continue
        chosen.append(eid)
        used += df
    return chosen


# -- public API -----------------------------------------------------------------------------------------------

def query_seeds(
    store: Store, text: str, *, project: str | None = None, include_superseded: bool = False
) -> tuple[list[Seed], int]:
    """The query's entities known in scope, heaviest first (at most ``MAX_SEEDS``), and N.

    A name that is part of a longer matched name ("york" inside "new york") is dropped unless the query's
    own extraction produced it. Seeds with weight 0 are kept (they are named, just uninformative).
    Raises ``apsw.Error`` on a database failure."""
    names, confirmed = _query_names(text)
    found = {n: v for n, v in store.known_entities(names).items() if v[2] != MAYBE_NAME or n in confirmed}
    if not found:
        return [], 0
    multi = [n for n in found if " " in n]
    keep = {n: (eid, df) for n, (eid, df, _) in found.items()
            if n in confirmed or not any(n != m and f" {n} " in f" {m} " for m in multi)}
    n_scope = store.scope_size(project, include_superseded)
    cap = min(max(n_scope, MIN_N) // 2, SEED_LINKS) + 1
    dfs = store.dfs_in_scope(dict(keep.values()), project, include_superseded, cap, n_scope)
    seeds: dict[int, Seed] = {}
    for name, (eid, _) in keep.items():
        df = dfs.get(eid, 0)
        if df > 0 and eid not in seeds:
            seeds[eid] = Seed(eid, name, df, rsj_idf(n_scope, df) if df < cap else 0.0)
    ordered = sorted(seeds.values(), key=lambda s: (-s.weight, s.name))
    return ordered[:MAX_SEEDS], n_scope


def query_entity_ids(
    store: Store, text: str, *, project: str | None = None, include_superseded: bool = False
) -> dict[int, float]:
    """Seed entity id -> weight (RSJ idf, > 0) for the entities ``text`` names, in scope (``project`` None
    = every project). Entities in half the memories or more are left out (weight 0). Weights below
    ``MIN_EVIDENCE_IDF`` are not evidence on their own. Never raises: {} on any failure."""
    try:
        seeds, _ = query_seeds(store, text, project=project, include_superseded=include_superseded)
    except Exception:  # noqa: BLE001 - a boost input, never a reason to fail a recall
        log.exception("query_entity_ids failed")
        return {}
    return {s.id: s.weight for s in seeds if s.weight > 0}


def shared_entities(
    store: Store, seed_ids: Iterable[int] | Mapping[int, float], memory_ids: Iterable[int]
) -> dict[int, list[str]]:
    """Which of ``seed_ids`` each memory carries: memory id -> entity names (heaviest first when
    ``seed_ids`` is a mapping id -> weight, else by name). Memories sharing none are left out.
    Never raises: {} on any failure."""
    weights = dict(seed_ids) if isinstance(seed_ids, Mapping) else {int(i): 0.0 for i in seed_ids}
    mids = list(dict.fromkeys(int(m) for m in memory_ids))
    if not weights or not mids:
        return {}
    try:
        rows = store.entity_links(mids, weights)
    except Exception:  # noqa: BLE001
        log.exception("shared_entities failed")
        return {}
    out: dict[int, list[tuple[float, str]]] = {}
    for mid, eid, name in rows:
        out.setdefault(int(mid), []).append((weights.get(int(eid), 0.0), str(name)))
    return {mid: [name for _, name in sorted(pairs, key=lambda p: (-p[0], p[1]))] for mid, pairs in out.items()}


class GraphChannel:
    """Spreading activation from the query's entities (module docstring). Items: ``(memory_id, score)``,
    best first, at most ``ctx.k``; score = summed activation (> 0, unitless, comparable within one query
    only). ``evidence``: memories carrying a seed of weight >= ``MIN_EVIDENCE_IDF`` (all found, not only
    the top ``k``). ``detail``: ``{"entities": [seed names, heaviest first], "entity_ids": [ids of the seeds
    weighing at least MIN_EVIDENCE_IDF, heaviest first; for shared_entities], "weights": {name: weight},
    "hops": hops spread (0-2), "reached": reached entities scored}``.

    Status: ``empty`` when the query names no entity known in scope, ``no_candidates`` when its entities
    carry no weight or no memory in scope carries them, ``ok`` otherwise. Store errors propagate."""

    name = GRAPH

    def run(self, ctx: ChannelContext) -> ChannelResult:
        """Seed, spread and score memories (see the class docstring)."""
        store, sup = ctx.store, ctx.include_superseded
        seeds, n_scope = query_seeds(store, ctx.query, project=ctx.project, include_superseded=sup)
        if not seeds:
            return ChannelResult(GRAPH, "empty", note="the query names no entity known to memory in this scope")
        names = [s.name for s in seeds]
        detail: dict[str, object] = {
            "entities": names,
            "entity_ids": [s.id for s in seeds if s.weight >= MIN_EVIDENCE_IDF],
            "weights": {s.name: round(s.weight, 3) for s in seeds},
            "hops": 0,
            "reached": 0,
        }
        active = {s.id: s.weight for s in seeds if s.weight > 0}
        if not active:
            return ChannelResult(GRAPH, "no_candidates", detail=detail,
                                 note="the query's entities are in most memories: " + ", ".join(names))
        reached, reached_df, detail["hops"] = _spread(ctx, active, n_scope)
        scores, evidence, detail["reached"] = _score_memories(ctx, seeds, active, reached, reached_df)
        if not scores:
            return ChannelResult(GRAPH, "no_candidates", detail=detail,
                                 note="no memory in scope carries: " + ", ".join(names))
        items = sorted(scores.items(), key=lambda kv: (-kv[1], -kv[0]))[: max(0, ctx.k)]
        return ChannelResult(GRAPH, "ok", [(mid, round(score, 6)) for mid, score in items],
                             evidence=evidence, detail=detail)


def _spread(ctx: ChannelContext, active: dict[int, float], n_scope: int
            ) -> tuple[dict[int, float], dict[int, int], int]:
    """Spread activation hop by hop from the seeds ``active`` (id -> weight). Returns the reached entities'
    activation and df in scope, and the hops spread.

    Candidates are ranked by activation times their store-wide specificity (free with the edge), then their
    df in scope is counted (stopping at ``cap``): a reached entity's activation is damped by its specificity
    in scope (weight / max_weight) before it scores memories or spreads further; one in more than ``cap``
    memories is too common to score."""
    store, project, sup = ctx.store, ctx.project, ctx.include_superseded
    max_weight = rsj_idf(n_scope, 1) or 1.0
    n_store = store.scope_size(None, sup)
    cap = min(max(n_scope, MIN_N) // 2, REACHED_LINKS) + 1
    reached: dict[int, float] = {}
    reached_df: dict[int, int] = {}
    sources = dict(active)
    hops = 0
    for _ in range(MAX_HOPS):
        incoming, global_df = _incoming(store, sources, active)
        if not incoming:
            break
        hops += 1
        top = sorted(incoming, key=lambda e: (-incoming[e] * rsj_idf(n_store, global_df[e]), e))[:MAX_REACHED]
        dfs = store.dfs_in_scope({e: global_df[e] for e in top}, project, sup, cap, n_scope)
        damped = {}
        for eid in top:
            df = dfs.get(eid, 0)
            a = incoming[eid] * rsj_idf(n_scope, df) / max_weight if 0 < df < cap else 0.0
            if a > 0:
                damped[eid] = a
                reached[eid] = reached.get(eid, 0.0) + a
                reached_df[eid] = df
        sources = dict(sorted(damped.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_FRONTIER])
        if not sources:
            break
    return reached, reached_df, hops


def _incoming(store: Store, sources: dict[int, float], active: dict[int, float]
              ) -> tuple[dict[int, float], dict[int, int]]:
    """One hop: activation arriving at each non-seed entity along the ``MAX_FANOUT`` heaviest edges of each
    source (``a · DECAY · w / out``), and each such entity's store-wide df."""
    incoming: dict[int, float] = {}
    global_df: dict[int, int] = {}
    for src, (total, out) in store.heaviest_edges(list(sources), MAX_FANOUT).items():
        if total <= 0:
            continue
        for dst, weight, df in out:
            if dst not in active:
                incoming[dst] = incoming.get(dst, 0.0) + sources[src] * DECAY * weight / total
                global_df[dst] = df
    return incoming, global_df


def _score_memories(ctx: ChannelContext, seeds: list[Seed], active: dict[int, float], reached: dict[int, float],
                    reached_df: dict[int, int]) -> tuple[dict[int, float], set[int], int]:
    """Memory scores: seeds first (heaviest first, within ``SEED_LINKS`` links), then reached entities (most
    activated first, within ``REACHED_LINKS`` links). Returns the scores, the evidence ids (carrying a
    seed of weight >= ``MIN_EVIDENCE_IDF``) and how many reached entities scored."""
    store, project, sup = ctx.store, ctx.project, ctx.include_superseded
    scores: dict[int, float] = {}
    evidence: set[int] = set()
    strong = {eid for eid, w in active.items() if w >= MIN_EVIDENCE_IDF}
    seed_df = {s.id: s.df for s in seeds}
    chosen = _within_budget(((eid, seed_df[eid]) for eid in active), SEED_LINKS)
    links = store.memories_with_entities(chosen, project=project, limit=SEED_LINKS,
                                         exclude_kinds=ctx.exclude_kinds, include_superseded=sup)
    for mid, eid in links:
        scores[mid] = scores.get(mid, 0.0) + active[eid]
        if eid in strong:
            evidence.add(mid)
    order = sorted(reached, key=lambda e: (-reached[e], e))
    chosen = _within_budget(((eid, reached_df[eid]) for eid in order), REACHED_LINKS)
    if chosen:
        links = store.memories_with_entities(chosen, project=project, limit=REACHED_LINKS,
                                             exclude_kinds=ctx.exclude_kinds, include_superseded=sup)
        for mid, eid in links:
            scores[mid] = scores.get(mid, 0.0) + reached[eid]
    return scores, evidence, len(chosen)
