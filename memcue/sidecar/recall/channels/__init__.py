"""Recall channels: one interface (``Channel``: a name and ``run(ctx) -> ChannelResult``), a registry
(``CHANNELS``), one module per channel (bm25, semantic, temporal, graph, hopfield) and the runner that
alone times them and reports ``error`` / ``timeout``. The in-memory vector index the semantic and Hopfield
channels search lives here too."""

from memcue.sidecar.recall.channels.base import (
    ALL_CHANNELS,
    BM25,
    GRAPH,
    HOPFIELD,
    SEMANTIC,
    TEMPORAL,
    Channel,
    ChannelContext,
    ChannelResult,
)
from memcue.sidecar.recall.channels.graph import query_entity_ids, shared_entities
from memcue.sidecar.recall.channels.registry import CHANNELS
from memcue.sidecar.recall.channels.runner import run_channel, run_channels
from memcue.sidecar.recall.channels.vector_index import VectorIndex

__all__ = [
    "ALL_CHANNELS", "BM25", "CHANNELS", "Channel", "ChannelContext", "ChannelResult", "GRAPH", "HOPFIELD",
    "SEMANTIC", "TEMPORAL", "VectorIndex", "query_entity_ids", "run_channel", "run_channels", "shared_entities",
]
