"""Recall: the public names the rest of memcue uses (``recall``, ``RecallRequest``, ``RecallServices``,
the channel names, filters, layers). Stages and channels are internal to this package."""

from memcue.sidecar.recall.answer import age_label
from memcue.sidecar.recall.baseline import baselines, probe_vectors
from memcue.sidecar.recall.channels import ALL_CHANNELS, BM25, GRAPH, HOPFIELD, SEMANTIC, TEMPORAL
from memcue.sidecar.recall.classify import QUERY_TYPES
from memcue.sidecar.recall.filters import Filters
from memcue.sidecar.recall.layers import apply_layers, context_for
from memcue.sidecar.recall.pipeline import (
    FULL_CHANNELS,
    KEYWORD_CHANNELS,
    RecallOptions,
    RecallRequest,
    RecallServices,
    is_warming,
    recall,
)
from memcue.sidecar.recall.rerank import Reranker
from memcue.sidecar.recall.vector_index import VectorIndex

__all__ = [
    "ALL_CHANNELS", "BM25", "FULL_CHANNELS", "Filters", "GRAPH", "HOPFIELD", "KEYWORD_CHANNELS", "QUERY_TYPES",
    "RecallOptions", "RecallRequest", "RecallServices", "Reranker", "SEMANTIC", "TEMPORAL", "VectorIndex", "age_label",
    "apply_layers", "baselines", "context_for", "is_warming", "probe_vectors", "recall",
]
