"""What a recall is asked: the request, the long-lived services it runs with, and the sidecar's options."""

from __future__ import annotations

from dataclasses import dataclass, field

from memcue.sidecar.recall.channels import ALL_CHANNELS, BM25, SEMANTIC, VectorIndex
from memcue.sidecar.recall.filters import Filters, own_prompt
from memcue.sidecar.recall.rerank import Reranker
from memcue.sidecar.recall.working_set import WorkingSets

#: Time limit of one channel (s) unless the request sets one; the hook race answers at 1 s with keywords.
CHANNEL_TIMEOUT_S = 2.0
#: Channels of a full recall and of a keyword-only one.
FULL_CHANNELS = ALL_CHANNELS
KEYWORD_CHANNELS = (BM25,)
#: Results a recall returns at most, whatever its ``limit`` asks.
MAX_LIMIT = 100


@dataclass(frozen=True)
class RecallOptions:
    """What the sidecar's settings decide for every recall: ``support_gate`` on/off, per query type channel
    ``weights`` overrides (query type -> channel -> weight; ``classify.CHANNEL_WEIGHTS`` otherwise), and the
    ``ranking`` mode (``recall.ranking``; None: ``MEMCUE_RANKING`` decides, read at each recall, for callers
    without settings)."""

    support_gate: bool = True
    weights: dict[str, dict[str, float]] = field(default_factory=dict)
    ranking: bool | None = None


@dataclass
class RecallServices:
    """Long-lived helpers one sidecar shares between recalls: the in-memory vector index, the optional
    reranker, the session working sets and the config."""

    vectors: VectorIndex = field(default_factory=VectorIndex)
    reranker: Reranker | None = None
    working_sets: WorkingSets = field(default_factory=WorkingSets)
    config: RecallOptions = field(default_factory=RecallOptions)


@dataclass
class RecallRequest:
    """A recall: ``query`` text; ``project`` None for every project; ``limit`` results at most; ``channels``
    to run (a subset of ``ALL_CHANNELS``); ``include_requests`` to let captured prompts answer; ``weights``
    overriding the query type's channel weights; ``filters`` (window / as_of / valid_at); ``now`` the asking
    time (Unix s, default the clock) for relative dates; ``channel_timeout_s`` per channel (s); ``depth``
    (0, 1, 2) and ``max_tokens`` shape the results (``recall.layers``, applied by the engine)."""

    query: str
    project: str | None = None
    limit: int = 10
    session_id: str = ""
    channels: tuple[str, ...] = FULL_CHANNELS
    include_requests: bool = False
    weights: dict[str, float] | None = None
    filters: Filters = field(default_factory=Filters)
    now: float | None = None
    channel_timeout_s: float = CHANNEL_TIMEOUT_S
    depth: int = 1
    max_tokens: int | None = None

    @property
    def keyword_only(self) -> bool:
        """True when the semantic channel is not asked for (``mode`` keyword: ``memcue search``)."""
        return SEMANTIC not in self.channels

    def own_copy(self, kind: str, content: str) -> bool:
        """True when a memory of ``kind`` with ``content`` is this question's own captured copy and must not
        answer it (``filters.own_prompt``); a request that asks for captured prompts (``include_requests``: a
        search for a prompt) finds it."""
        return not self.include_requests and own_prompt(kind, content, self.query)

    @property
    def result_limit(self) -> int:
        """``limit`` clamped to 1..``MAX_LIMIT``."""
        return max(1, min(int(self.limit), MAX_LIMIT))
