"""The one interface of recall channels: a channel has a ``name`` and ``run(ctx) -> ChannelResult``.

A channel turns the query in its ``ChannelContext`` into ranked candidates and a ``channel_status``
(DESIGN.md section 4): ok | empty | no_candidates | disabled | not_configured | no_embedding | warming.
The runner (``channels.runner``) alone times channels and gives the statuses ``error`` (the channel
raised) and ``timeout`` (it missed the time limit); channel code raises instead of catching.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from memcue.sidecar.recall.channels.vector_index import VectorIndex
from memcue.sidecar.recall.query import KeywordQuery
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import Store

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


class Channel(Protocol):
    """A recall channel: ``name`` (one of ``ALL_CHANNELS``) and ``run(ctx)``, which returns the channel's
    ``ChannelResult`` (``elapsed_ms`` left 0: the runner sets it) and may raise (the runner reports
    ``error``)."""

    name: str

    def run(self, ctx: ChannelContext) -> ChannelResult:
        """The channel's candidates and status for ``ctx``."""
        ...
