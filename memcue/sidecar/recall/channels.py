"""Recall channels: each turns a query into ranked candidates and reports its ``channel_status``.

Statuses (DESIGN.md section 4): ok | empty | no_candidates | disabled | not_configured | error |
timeout | no_embedding | warming. A channel never raises; failures become a status and a note.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memcue.sidecar.recall.query import KeywordQuery
from memcue.sidecar.recall.vector_index import VectorIndex
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import Store

log = logging.getLogger("memcue.recall")

SEMANTIC, BM25, TEMPORAL, GRAPH, HOPFIELD = "semantic", "bm25", "temporal", "graph", "hopfield"
#: Every channel, in the order the response lists them.
ALL_CHANNELS = (SEMANTIC, BM25, TEMPORAL, GRAPH, HOPFIELD)


@dataclass
class ChannelResult:
    """One channel's answer: ``items`` as ``(memory_id, score)`` best first, plus status and note.

    ``evidence`` holds the ids whose score counts as evidence for the floor (channels whose every hit is
    evidence leave it None; spreading activation lists only direct entity matches, Hopfield none).
    ``detail`` carries what the channel understood (e.g. the time window it parsed) for the response.
    """

    name: str
    status: str
    items: list[tuple[int, float]] = field(default_factory=list)
    note: str = ""
    elapsed_ms: float = 0.0
    evidence: set[int] | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class ChannelContext:
    """What every channel gets: the ``store``; the ``query`` text and its ``keywords``; ``project`` scope
    (None = every project); ``k`` candidates at most; ``exclude_kinds`` (captured prompts unless asked);
    ``now`` the asking time (Unix s) for relative dates; ``vector`` the query embedding (unit length) or
    None; ``include_superseded`` for an ``as_of`` recall; ``vectors`` the sidecar's in-memory index (None:
    channels read vectors from the store)."""

    store: Store
    query: str
    keywords: KeywordQuery
    project: str | None
    k: int
    exclude_kinds: tuple[str, ...]
    now: float
    vector: np.ndarray | None = None
    embedder: Embedder | None = None
    include_superseded: bool = False
    vectors: VectorIndex | None = None


def bm25_channel(
    store: Store, query: KeywordQuery, *, project: str | None, k: int, exclude_kinds: tuple[str, ...],
    include_superseded: bool = False,
) -> ChannelResult:
    """FTS5 ``bm25()`` over memory text. Score: -bm25 (> 0 for any match)."""
    if not query.match:
        return ChannelResult(BM25, "empty", note=query.note)
    try:
        items = store.bm25(query.match, project=project, limit=k, exclude_kinds=exclude_kinds,
                           include_superseded=include_superseded)
    except Exception as exc:  # noqa: BLE001
        log.exception("bm25 channel failed")
        return ChannelResult(BM25, "error", note=f"{type(exc).__name__}: {exc}")
    if not items:
        return ChannelResult(BM25, "no_candidates", note="no memory contains any of: " + ", ".join(query.terms))
    return ChannelResult(BM25, "ok", items)


def semantic_channel(
    store: Store,
    embedder: Embedder | None,
    text: str,
    *,
    project: str | None,
    k: int,
    exclude_kinds: tuple[str, ...],
    vector: np.ndarray | None = None,
    include_superseded: bool = False,
    index: VectorIndex,
) -> ChannelResult:
    """Nearest memories by cosine similarity to the query's embedding, from the sidecar's in-memory
    ``index`` (one matrix product). Score: cosine similarity."""
    if store.vector_dim is None:
        status = "disabled" if not store.vec.available else "warming"
        if embedder is not None and embedder.state == "error":
            status = "no_embedding"
        note = store.vector_note or (embedder.error if embedder else "") or "the embedding model is loading"
        return ChannelResult(SEMANTIC, status, note=note)
    if embedder is None or embedder.state != "ready":
        state = embedder.state if embedder else "not_configured"
        status = {"warming": "warming", "error": "no_embedding"}.get(state, "not_configured")
        return ChannelResult(SEMANTIC, status, note=(embedder.error if embedder else "") or "model loading")
    if not text.strip():
        return ChannelResult(SEMANTIC, "empty", note="the query is empty")
    try:
        if vector is None:
            vector = embedder.embed_query(text)
        rows = index.search(store, vector, project=project, k=k, exclude_kinds=exclude_kinds,
                            include_superseded=include_superseded)
    except Exception as exc:  # noqa: BLE001
        log.exception("semantic channel failed")
        return ChannelResult(SEMANTIC, "error", note=f"{type(exc).__name__}: {exc}")
    if not rows:
        return ChannelResult(SEMANTIC, "no_candidates", note="no embedded memories in scope")
    return ChannelResult(SEMANTIC, "ok", rows[:k])
