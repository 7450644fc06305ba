"""Time understanding for recall: the window and/or order a query's time expressions ask for.

``parse_time(text, now)`` -> ``TimeIntent`` (``intent``), from spans (``spans``, ``patterns``) resolved per
kind (``resolvers``, dateparser through ``dateparse``), bounds and event anchors (``anchor``).
"""

from memcue.sidecar.recall.time.dateparse import warm_up
from memcue.sidecar.recall.time.intent import TimeIntent, mentions_time, parse_time, topic_terms

__all__ = ["TimeIntent", "mentions_time", "parse_time", "topic_terms", "warm_up"]
