"""Recall: the public names the rest of memcue uses (``recall``, ``RecallRequest``, ``RecallServices``,
the channel names, filters, layers, the budget-timeout answer, the time parser's warm-up). Stages,
channels and time understanding are internal to this package."""

from memcue.sidecar.recall.baseline import baselines, probe_vectors
from memcue.sidecar.recall.channels import ALL_CHANNELS, BM25, GRAPH, HOPFIELD, SEMANTIC, TEMPORAL, VectorIndex
from memcue.sidecar.recall.classify import QUERY_TYPES
from memcue.sidecar.recall.contract import age_label, budget_timeout_answer
from memcue.sidecar.recall.filters import Filters
from memcue.sidecar.recall.layers import apply_layers, context_for
from memcue.sidecar.recall.pipeline import recall
from memcue.sidecar.recall.request import FULL_CHANNELS, KEYWORD_CHANNELS, RecallOptions, RecallRequest, RecallServices
from memcue.sidecar.recall.rerank import Reranker
from memcue.sidecar.recall.shortcuts import is_warming
from memcue.sidecar.recall.time import warm_up

__all__ = [
    "ALL_CHANNELS", "BM25", "FULL_CHANNELS", "Filters", "GRAPH", "HOPFIELD", "KEYWORD_CHANNELS", "QUERY_TYPES",
    "RecallOptions", "RecallRequest", "RecallServices", "Reranker", "SEMANTIC", "TEMPORAL", "VectorIndex", "age_label",
    "apply_layers", "baselines", "budget_timeout_answer", "context_for", "is_warming", "probe_vectors", "recall",
    "warm_up",
]
