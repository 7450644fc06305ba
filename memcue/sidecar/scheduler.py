"""Scheduling recall: question slots, single flight and the answer cache for questions, and the keyword race
for callers with a budget.

Questions (``POST /recall`` without a budget, the CLI, MCP) go through ``Questions``:

- **Slots**: at most ``slots`` full recalls run at once (``RECALL_SLOTS`` by default). A question that finds
  every slot busy waits up to ``wait_s`` for one, then gets ``Busy`` (HTTP 503, ``code: RECALL_BUSY``, a
  ``Retry-After``). Hook loads never come here: they keep their own deadline and keyword race.
- **Single flight**: identical questions asked at the same moment share one run.
- **Answer cache**: a complete answer (no channel left incomplete, not warming up) is reused for
  ``ttl_s`` while nothing is written: the key carries the store's state (write generation and
  vector journal position), so any remember, update or forget, and any new vector, drops it at once.

A caller with a budget (a hook, ``budget_s`` on the API) runs ``race_recall``: the full pipeline starts at
once; if it has not answered after ``keyword_after_s`` (1.0 s by default) a keyword-only search starts beside
it; the first complete answer wins; at ``budget_s`` the answer is ``None`` (the prompt goes on with nothing
added). Work still running at the budget is abandoned: its thread finishes in the background and its result
is dropped.

``QuestionGate`` counts questions running, so background work (embedding backfill, baselines) can step
aside for them. The values come from the sidecar's ``Settings`` (``MEMCUE_RECALL_SLOTS``,
``MEMCUE_RECALL_WAIT_S``, ``MEMCUE_ANSWER_CACHE_TTL_S``; ``MEMCUE_RECALL_DELAY_S`` adds a pause inside each
run, for tests and benchmarks of a busy sidecar only).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread

from memcue.sidecar.recall import KEYWORD_CHANNELS, RecallRequest

#: Full recalls at once (issue 4: three slots by default).
RECALL_SLOTS = 3
#: How long a question waits for a slot before it is told to come back (s; issue 4).
RECALL_WAIT_S = 12.0
#: How long a complete answer is reused while nothing is written (s; issue 4).
ANSWER_TTL_S = 8.0
#: Answers kept at most.
ANSWER_CACHE_SIZE = 256
BUSY_MESSAGE = "memcue is answering other questions right now. Ask again in about {n} seconds; nothing was lost."


class Busy(Exception):
    """Every slot stayed busy for the whole wait. ``retry_after_s``: a suggested wait (s, >= 1)."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(BUSY_MESSAGE.format(n=retry_after_s))
        self.retry_after_s = retry_after_s


@dataclass
class _Flight:
    done: anyio.Event = field(default_factory=anyio.Event)
    answer: dict[str, Any] | None = None
    error: BaseException | None = None


def fingerprint(request: RecallRequest) -> tuple[Any, ...]:
    """What makes two questions the same: every field of the request (the session too: its working set
    biases the order)."""
    return (request.query, request.project, request.limit, request.session_id, request.channels,
            request.include_requests, tuple(sorted((request.weights or {}).items())), request.filters, request.now,
            request.channel_timeout_s, request.depth, request.max_tokens)


class Questions:
    """Runs questions through ``recall`` (a blocking function of a ``RecallRequest``) under the rules in
    the module docstring; ``running`` marks a run (background work steps aside). ``generation`` reads the
    store's state (any hashable value that changes on a write). ``slots`` (>= 1), ``wait_s`` (s), ``ttl_s``
    (s) and ``delay_s`` (s, tests only) as in the module docstring. Counters (``runs``, ``cache_hits``,
    ``joined``, ``busy``) feed ``/health``."""

    def __init__(self, recall: Callable[[RecallRequest], dict[str, Any]], generation: Callable[[], Any],
                 limiter: anyio.CapacityLimiter,
                 running: Callable[[], contextlib.AbstractContextManager[None]] = contextlib.nullcontext, *,
                 slots: int = RECALL_SLOTS, wait_s: float = RECALL_WAIT_S, ttl_s: float = ANSWER_TTL_S,
                 delay_s: float = 0.0) -> None:
        self._recall = recall
        self._running = running
        self._generation = generation
        self._limiter = limiter
        self.slots = slots
        self.wait_s = wait_s
        self.ttl_s = ttl_s
        self._delay_s = delay_s
        self._semaphore: anyio.Semaphore | None = None
        self._flights: dict[tuple[Any, ...], _Flight] = {}
        self._cache: OrderedDict[tuple[Any, ...], tuple[float, dict[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()
        self._waiting = 0
        self._mean_run_s = 0.05
        self.runs = self.cache_hits = self.joined = self.busy = 0

    def stats(self) -> dict[str, Any]:
        """Settings and counters for ``/health``."""
        return {"slots": self.slots, "wait_s": self.wait_s, "answer_ttl_s": self.ttl_s, "runs": self.runs,
                "cache_hits": self.cache_hits, "joined": self.joined, "busy": self.busy,
                "cached_answers": len(self._cache)}

    async def ask(self, request: RecallRequest) -> dict[str, Any]:
        """The answer to ``request``: from the cache, from an identical question already running, or from a
        new run in a free slot. Raises ``Busy`` when no slot frees up in time, and what ``recall`` raises."""
        key = (fingerprint(request), self._generation())
        cached = self._cached(key)
        if cached is not None:
            self.cache_hits += 1
            return {**cached, "answer_source": "cache"}
        flight = self._flights.get(key)
        if flight is not None:
            self.joined += 1
            await flight.done.wait()
            if flight.error is not None:
                raise flight.error
            assert flight.answer is not None
            return {**flight.answer, "answer_source": "shared"}
        flight = self._flights[key] = _Flight()
        try:
            answer = await self._run(request)
            if not answer.get("incomplete_channels") and not answer.get("warming_up") and self.ttl_s > 0:
                self._store(key, answer)
            flight.answer = answer
            return {**answer, "answer_source": "run"}
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            flight.done.set()
            self._flights.pop(key, None)

    async def _run(self, request: RecallRequest) -> dict[str, Any]:
        if self._semaphore is None:
            self._semaphore = anyio.Semaphore(self.slots)
        self._waiting += 1
        try:
            with anyio.move_on_after(self.wait_s) as waited:
                await self._semaphore.acquire()
            if waited.cancelled_caught:
                self.busy += 1
                queued = self._waiting + self.slots
                raise Busy(max(1, math.ceil(self._mean_run_s * queued / self.slots)))
        finally:
            self._waiting -= 1
        try:
            started = time.perf_counter()
            with self._running():
                if self._delay_s:
                    await anyio.sleep(self._delay_s)
                answer = await anyio.to_thread.run_sync(self._recall, request, limiter=self._limiter)
            self.runs += 1
            self._mean_run_s = 0.8 * self._mean_run_s + 0.2 * (time.perf_counter() - started)
            return answer
        finally:
            self._semaphore.release()

    def _cached(self, key: tuple[Any, ...]) -> dict[str, Any] | None:
        with self._lock:
            hit = self._cache.get(key)
            if hit is None:
                return None
            if hit[0] < time.monotonic():
                del self._cache[key]
                return None
            self._cache.move_to_end(key)
            return hit[1]

    def _store(self, key: tuple[Any, ...], answer: dict[str, Any]) -> None:
        with self._lock:
            self._cache[key] = (time.monotonic() + self.ttl_s, answer)
            self._cache.move_to_end(key)
            now = time.monotonic()
            for old in [k for k, (expires, _) in self._cache.items() if expires < now or k[1] != key[1]]:
                del self._cache[old]
            while len(self._cache) > ANSWER_CACHE_SIZE:
                self._cache.popitem(last=False)


class QuestionGate:
    """Counts the questions running (``running``) and when the last one ended; background work waits
    (``wait_quiet``) while any runs or one ended less than a gap ago (``busy``), so questions get the CPU,
    and a stream of them (sessions prompting, one pasting logs) is not slowed by embedding work started in
    the moment between two of them. Thread-safe."""

    def __init__(self) -> None:
        self._questions = 0
        self._last_end = float("-inf")
        self._lock = threading.Lock()
        self._quiet = threading.Event()
        self._quiet.set()

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Mark a question as running for the ``with`` block."""
        with self._lock:
            self._questions += 1
            self._quiet.clear()
        try:
            yield
        finally:
            with self._lock:
                self._questions -= 1
                self._last_end = time.monotonic()
                if self._questions == 0:
                    self._quiet.set()

    def busy(self, gap_s: float = 0.0) -> bool:
        """True while a question runs, or one ended less than ``gap_s`` (s) ago."""
        return not self._quiet.is_set() or time.monotonic() - self._last_end < gap_s

    def wait_quiet(self, max_s: float, gap_s: float = 0.0) -> bool:
        """Wait (at most ``max_s`` s) until no question runs and none ended in the last ``gap_s`` s; True when
        that came, False at ``max_s``."""
        deadline = time.monotonic() + max_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self._quiet.wait(left):
                return False
            since = time.monotonic() - self._last_end
            if since >= gap_s and self._quiet.is_set():
                return True
            time.sleep(min(gap_s - since, max(deadline - time.monotonic(), 0.0)) if since < gap_s else 0.001)


#: When the keyword search joins the race (s), from the issue that specifies the hook path.
KEYWORD_AFTER_S = 1.0

Answer = dict[str, Any]


async def race(
    full: Callable[[], Answer],
    keyword: Callable[[], Answer],
    *,
    budget_s: float,
    keyword_after_s: float = KEYWORD_AFTER_S,
    limiter: anyio.CapacityLimiter | None = None,
) -> tuple[Answer | None, str]:
    """Run ``full`` at once and ``keyword`` after ``keyword_after_s`` (s) if ``full`` has not answered, each in a
    worker thread, within ``budget_s`` (s). Return ``(answer, answered_by)`` with answered_by "full",
    "keyword" or "none" (budget reached).

    Exceptions inside a contender count as no answer from it.
    """
    done = anyio.Event()
    winner: dict[str, Any] = {}

    async def run(name: str, fn: Callable[[], Answer]) -> None:
        try:
            answer = await anyio.to_thread.run_sync(fn, abandon_on_cancel=True, limiter=limiter)
        except Exception:  # noqa: BLE001 - a failed contender simply does not win
            return
        if not winner:
            winner["name"], winner["answer"] = name, answer
            done.set()

    async def keyword_later() -> None:
        await anyio.sleep(keyword_after_s)
        if not winner:
            await run("keyword", keyword)

    with anyio.move_on_after(max(0.0, budget_s)):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "full", full)
            tg.start_soon(keyword_later)
            await done.wait()
            tg.cancel_scope.cancel()
    if winner:
        return winner["answer"], winner["name"]
    return None, "none"


async def race_recall(recall: Callable[[RecallRequest], Answer], request: RecallRequest, budget_s: float,
                      limiter: anyio.CapacityLimiter) -> tuple[Answer | None, str]:
    """The keyword race for ``request`` through ``recall`` (blocking): the full request, the same request
    keyword-only (``KEYWORD_CHANNELS``) after 1 s, nothing at ``budget_s`` (s). Returns ``(answer or None,
    answered_by)`` ("full", "keyword" or "none")."""
    keyword = dataclasses.replace(request, channels=KEYWORD_CHANNELS)
    return await race(lambda: recall(request), lambda: recall(keyword), budget_s=budget_s, limiter=limiter)
