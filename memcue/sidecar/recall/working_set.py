"""The session working set: the few memories a conversation is currently "holding" (issue 3, item 9).

Each real session (see ``session.py``; synthetic and empty ids are never stored) keeps ``SLOTS = 7``
memories with an *activation* each. The number seven comes from G. A. Miller, "The Magical Number Seven,
Plus or Minus Two: Some Limits on Our Capacity for Processing Information", Psychological Review 63(2),
1956, pp. 81-97. It is borrowed as the origin of the slot count, not measured here: later work (Cowan,
2001) puts human working memory nearer four chunks, and nothing in memcue was tuned on it.

Dynamics, per ``offer(session_id, ranked_ids)`` (one call per recall):

1. every held activation decays: ``a <- a * DECAY`` (``DECAY = 0.8``, i.e. a memory not offered again
   loses 20% per recall and falls to about 11% of its value after ten);
2. the first ``OFFER_SIZE = 5`` distinct ids of ``ranked_ids`` (the recall's best) are taken in order;
   one already held is reinforced, ``a <- a + GAIN`` (``GAIN = 1.0``); a new one enters with ``a = GAIN``;
3. a new one entering a full set evicts the least-activated slot among those *not offered in this call*
   (ties: the slot that entered earliest, then the lower memory id). Since ``OFFER_SIZE < SLOTS`` there is
   always such a slot, so every offered memory is held after the call.

A memory offered on every recall converges to ``GAIN / (1 - DECAY) = 5.0`` (``ACTIVATION_CEILING``), the
largest activation reachable.

Bias. ``bias(session_id)`` gives each held memory ``MAX_BIAS * min(1, a / ACTIVATION_CEILING)``, to be
added to its fused score. Fusion is weighted RRF, ``score = sum_c w_c / (k + rank_c)`` with ``k = 15``
(``fusion.py``), channel weights about 0.5-1.0: one channel's rank 1 is worth ``w/16`` (0.0625 at w = 1)
and rank 2 ``w/17`` (0.0588). An *exact match* (rank 1 in BM25 and semantic both) leads a memory ranked
2 in both by ``(w_bm25 + w_sem) * (1/16 - 1/17) = (w_bm25 + w_sem) / 272``, which is at least
``1.0 / 272 = 0.00368`` for weights of at least 0.5 each (the defaults, 1.0 and 0.5, give 0.0055).
``MAX_BIAS = 0.003`` stays below that, so a held memory can never pass an exact match; it only reorders
near-ties (e.g. rank 1 vs rank 2 in a single channel of weight 0.5, a gap of 0.0018). The guarantee needs
``w_bm25 + w_sem >= MAX_BIAS * 272 = 0.816``; tests/test_working_set.py checks it with real fused scores.

Bounds. At most ``MAX_SESSIONS = 512`` sessions are kept; offering to a new session beyond that drops the
least recently *offered* session (LRU; ``bias`` and ``held`` do not refresh recency). Memory use is thus
at most 512 x 7 entries. State lives in process memory only and is lost on restart, by design.

All methods are thread-safe (one lock per ``WorkingSets``; every method is O(slots) or O(sessions)).
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from memcue.core.session_ids import is_synthetic

#: Slots per session (Miller's "seven plus or minus two", see module docstring).
SLOTS = 7
#: How many of a recall's best results are offered to the working set.
OFFER_SIZE = 5
#: Multiplicative decay of every activation on each offer.
DECAY = 0.8
#: Activation added when a memory is offered (new or returning).
GAIN = 1.0
#: Fixed point of repeated offers, GAIN / (1 - DECAY): the largest activation reachable.
ACTIVATION_CEILING = GAIN / (1.0 - DECAY)
#: Largest additive bias, in weighted-RRF score units; below (0.5 + 0.5) / 272 (see module docstring).
MAX_BIAS = 0.003
#: Sessions kept at once (least recently offered dropped first).
MAX_SESSIONS = 512


@dataclass
class _Slot:
    activation: float
    entered: int  # global entry counter, for deterministic eviction ties


class WorkingSets:
    """Working sets of every live session. See the module docstring for the dynamics and bounds.

    Raises ``ValueError`` at construction when ``slots < 1``, ``offer_size < 1``, ``offer_size >= slots``
    (an offer could then evict its own memories), ``decay`` outside ``(0, 1)``, ``gain <= 0``,
    ``max_sessions < 1``, or ``max_bias`` outside ``[0, MAX_BIAS]`` (a larger bias would void the
    exact-match guarantee).
    """

    def __init__(
        self,
        slots: int = SLOTS,
        offer_size: int = OFFER_SIZE,
        decay: float = DECAY,
        gain: float = GAIN,
        max_bias: float = MAX_BIAS,
        max_sessions: int = MAX_SESSIONS,
    ) -> None:
        if slots < 1:
            raise ValueError("slots must be at least 1")
        if not 1 <= offer_size < slots:
            raise ValueError("offer_size must be at least 1 and below slots")
        if not 0.0 < decay < 1.0:
            raise ValueError("decay must be in (0, 1)")
        if gain <= 0.0:
            raise ValueError("gain must be positive")
        if not 0.0 <= max_bias <= MAX_BIAS:
            raise ValueError(f"max_bias must be in [0, {MAX_BIAS}]")
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self.slots = slots
        self.offer_size = offer_size
        self.decay = decay
        self.gain = gain
        self.max_bias = max_bias
        self.max_sessions = max_sessions
        self.ceiling = gain / (1.0 - decay)
        self._sessions: OrderedDict[str, dict[int, _Slot]] = OrderedDict()
        self._counter = itertools.count()
        self._lock = threading.Lock()

    @staticmethod
    def _key(session_id: str) -> str | None:
        sid = (session_id or "").strip()
        if not sid or is_synthetic(sid):
            return None
        return sid

    def offer(self, session_id: str, ranked_ids: Sequence[int]) -> None:
        """Offer a recall's results, best first (memory ids); only the first ``offer_size`` distinct ids
        count. No-op for an empty or synthetic ``session_id`` or an empty ``ranked_ids``. Never raises for
        those; ids must be ints (hashable)."""
        key = self._key(session_id)
        if key is None:
            return
        offered = list(dict.fromkeys(ranked_ids))[: self.offer_size]
        if not offered:
            return
        with self._lock:
            held = self._sessions.get(key)
            if held is None:
                held = {}
                self._sessions[key] = held
                while len(self._sessions) > self.max_sessions:
                    self._sessions.popitem(last=False)
            else:
                self._sessions.move_to_end(key)
            for slot in held.values():
                slot.activation *= self.decay
            protected = set(offered)
            for mid in offered:
                slot = held.get(mid)
                if slot is not None:
                    slot.activation += self.gain
                    continue
                if len(held) >= self.slots:
                    victim = min(
                        (m for m in held if m not in protected),
                        key=lambda m: (held[m].activation, held[m].entered, m),
                    )
                    del held[victim]
                held[mid] = _Slot(self.gain, next(self._counter))

    def bias(self, session_id: str) -> dict[int, float]:
        """``{memory_id: bias}`` for the memories ``session_id`` holds; bias is
        ``max_bias * min(1, activation / ceiling)``, in (0, ``max_bias``], to add to a weighted-RRF score.
        ``{}`` for an unknown, empty or synthetic session."""
        key = self._key(session_id)
        if key is None:
            return {}
        with self._lock:
            held = self._sessions.get(key, {})
            return {mid: self.max_bias * min(1.0, s.activation / self.ceiling) for mid, s in held.items()}

    def held(self, session_id: str) -> list[tuple[int, float]]:
        """``[(memory_id, activation), ...]`` most activated first (ties by memory id), for inspection.
        ``[]`` for an unknown, empty or synthetic session."""
        key = self._key(session_id)
        if key is None:
            return []
        with self._lock:
            items = [(mid, s.activation) for mid, s in self._sessions.get(key, {}).items()]
        return sorted(items, key=lambda item: (-item[1], item[0]))

    def forget(self, memory_id: int) -> None:
        """Remove ``memory_id`` from every session (the memory was deleted or superseded). Sessions left
        empty are dropped. No-op when nothing holds it."""
        with self._lock:
            for key in list(self._sessions):
                held = self._sessions[key]
                if held.pop(memory_id, None) is not None and not held:
                    del self._sessions[key]

    def clear(self, session_id: str | None = None) -> None:
        """Drop one session's working set, or every session's when ``session_id`` is None."""
        with self._lock:
            if session_id is None:
                self._sessions.clear()
            else:
                self._sessions.pop((session_id or "").strip(), None)

    def session_count(self) -> int:
        """How many sessions currently hold a working set (at most ``max_sessions``)."""
        with self._lock:
            return len(self._sessions)
