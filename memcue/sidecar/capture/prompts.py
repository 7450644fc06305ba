"""Captured prompts -> statement candidates -> the gate: the prompt-statement signal, run off the hook path.

Whoever stores a captured prompt (the prompt hook through ``MemoryService.remember_prompt``, the spool reader for
prompts spooled while the sidecar was down) hands it to ``queue`` (a deque append and a wake: microseconds);
the worker's step calls ``run``, which reads each prompt as stored (sanitised, memcue blocks stripped, redacted),
finds its statements (``capture.statements``), holds each as a candidate (signal ``SIGNAL``, turn: the hook's
request id, else ``memory:<prompt row id>``, so a twin or spooled copy of one delivery is held once) and promotes
each new one at once with reason ``USER_STATEMENT`` (the user said it: that is the confirming signal), except one
``held`` as injection-like, which stays pending for review.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable

from memcue.sidecar.capture.gate import Gate
from memcue.sidecar.capture.statements import find_statements
from memcue.sidecar.store import NewCandidate, NewMemory, StoreProtocol, WriteResult

log = logging.getLogger("memcue.capture")

#: The signal name of candidates found in a captured prompt.
SIGNAL = "prompt-statement"
#: The reason recorded on a memory promoted because the user stated it.
USER_STATEMENT = "user-statement"
#: Most captured prompts waiting for the worker; past it the oldest are dropped (logged): a capture signal
#: must never grow memory without bound.
QUEUE_MAX = 1_000


class PromptStatements:
    """The prompt-statement signal over ``store`` and ``gate``; ``wake`` asks the worker for a step."""

    def __init__(self, store: StoreProtocol, gate: Gate, wake: Callable[[], None] = lambda: None) -> None:
        self._store = store
        self._gate = gate
        self._wake = wake
        self._queue: collections.deque[tuple[NewMemory, WriteResult]] = collections.deque()
        self._lock = threading.Lock()

    def queue(self, memory: NewMemory, result: WriteResult) -> None:
        """Queue a stored captured prompt (``memory`` as given, ``result`` of its write) for ``run``. Cheap:
        no text work here. Anything but a non-bookkeeping ``request`` is ignored."""
        if memory.kind != "request" or result.bookkeeping:
            return
        with self._lock:
            if len(self._queue) >= QUEUE_MAX:
                self._queue.popleft()
                log.warning("prompt-statement queue full: the oldest captured prompt was not read for statements")
            self._queue.append((memory, result))
        self._wake()

    @property
    def waiting(self) -> bool:
        """True when captured prompts wait for ``run``."""
        return bool(self._queue)

    def run(self) -> int:
        """Read every queued prompt for statements (see the module docstring); returns the candidates added.
        A failure on one prompt is logged and does not stop the others."""
        added = 0
        while True:
            with self._lock:
                if not self._queue:
                    return added
                memory, result = self._queue.popleft()
            try:
                added += self.capture(memory, result)
            except Exception:  # noqa: BLE001 - one bad prompt must not stop the signal
                log.exception("reading a captured prompt for statements failed")

    def capture(self, memory: NewMemory, result: WriteResult) -> int:
        """Hold and promote the statements of one stored prompt now (blocking); returns the candidates added."""
        row = self._store.fetch([result.id]).get(result.id)
        if row is None or row["bookkeeping"]:
            return 0
        statements = find_statements(row["content"])
        if not statements:
            return 0
        source = memory.source or row["source"]
        harness = source.split(":", 1)[1] if source.startswith("hook:") else source
        turn = memory.source_id or f"memory:{result.id}"
        news = [NewCandidate(content=s.text, signal=SIGNAL, kind=s.kind, project=row["project"],
                             session_id=row["session_id"], harness=harness, turn=turn,
                             evidence={"prompt_memory_id": result.id, "matched": s.pattern,
                                       **({"held": s.held} if s.held else {})})
                for s in statements]
        held = {s.text: s.held for s in statements}
        count = 0
        for new, got in zip(news, self._store.add_candidates(news), strict=True):
            if not got.added:
                continue  # the same delivery again (a twin, a spooled copy): decided the first time
            count += 1
            if held[new.content]:
                log.info("candidate %d held for review: %s", got.id, held[new.content])
                continue
            self._gate.confirm(got.id, USER_STATEMENT)
        return count
