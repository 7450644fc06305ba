"""An in-process log of the memory ids whose vector or currency changed, for in-memory vector indexes.

``Store`` records an id when its vector is written (``set_embeddings``) or when it is superseded
(``update``); a ``VectorIndex`` reads the ids logged since its last look and refreshes only those rows,
instead of reloading every vector after every write. The log keeps at most ``MAX_ENTRIES`` ids: past that
(or when the vector table is rebound) it starts a new ``epoch``, and a reader holding an older epoch
reloads in full.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

#: Ids kept before the log starts over (a reader then reloads: about 0.25 s at 27,000 vectors).
MAX_ENTRIES = 100_000


class VectorJournal:
    """Thread-safe append-only list of memory ids, with an ``epoch`` that changes when it is cleared."""

    def __init__(self) -> None:
        self.epoch = 0
        self._ids: list[int] = []
        self._lock = threading.Lock()

    def position(self) -> tuple[int, int]:
        """``(epoch, position)`` now: pass it to ``since`` later to get what was logged after it."""
        with self._lock:
            return self.epoch, len(self._ids)

    def record(self, ids: Iterable[int]) -> None:
        """Log ``ids`` as changed (vector written, row superseded)."""
        with self._lock:
            self._ids.extend(int(i) for i in ids)
            if len(self._ids) > MAX_ENTRIES:
                self._ids = []
                self.epoch += 1

    def reset(self) -> None:
        """Start a new epoch: every reader reloads (the vector table was bound or rebuilt)."""
        with self._lock:
            self._ids = []
            self.epoch += 1

    def since(self, epoch: int, position: int) -> tuple[list[int], int] | None:
        """Ids logged after ``(epoch, position)`` (de-duplicated) and the new position; None when that epoch
        is over and the reader must reload in full."""
        with self._lock:
            if epoch != self.epoch or position > len(self._ids):
                return None
            return list(dict.fromkeys(self._ids[position:])), len(self._ids)
