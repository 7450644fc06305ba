"""Recording recall usage off the hook's critical path.

A recall served is handed to ``UsageRecorder.record`` (an append under a lock: microseconds); the sidecar's
background worker (``sidecar/worker.py``) writes what is pending through the store's single writer
(``Store.log_recalls``) on its next wake, and every reader of the log (``mark_used``, ``stats``) writes what is
pending first, so a fetch arriving right after a hook still finds its recall. At most ``MAX_PENDING`` recalls
wait; past that the oldest are dropped (a worker stuck that long has bigger problems than statistics).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from memcue.sidecar.store import ServedRecall, Store

log = logging.getLogger("memcue.usage")
#: Recalls waiting to be written, at most.
MAX_PENDING = 2000
DAY_S = 86400.0


def served_recall(query_id: str, session_id: str, served_by: str, results: Sequence[dict[str, Any]],
                  block: str = "", *, tokens: int = 0, skipped: str = "", project: str = "") -> ServedRecall:
    """A ``ServedRecall`` for ``results`` (recall contract results: ``memory_id``, ``memory_kind``,
    ``channel_scores``); ``tokens``: the block's size, ``skipped``: why a hook injected nothing, ``project``:
    where it was served."""
    items = tuple((int(r["memory_id"]), str(r.get("memory_kind") or ""), tuple(r.get("channel_scores") or ()))
                  for r in results)
    return ServedRecall(query_id=query_id, session_id=session_id, served_by=served_by, block=block, items=items,
                        tokens=tokens, skipped=skipped, project=project)


class UsageRecorder:
    """Pending recalls for ``store`` (see the module docstring); ``on_record`` wakes the writer."""

    def __init__(self, store: Store, on_record: Callable[[], None] | None = None) -> None:
        self.store = store
        self.on_record = on_record
        self._pending: collections.deque[ServedRecall] = collections.deque(maxlen=MAX_PENDING)
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()

    def record(self, served: ServedRecall) -> None:
        """Queue one recall served (nothing is written here). One that showed no memory is kept only with a
        session and why (``skipped``) or a size (``tokens``: a session-start note alone), for the session's
        receipt."""
        if not served.query_id or not (served.items or ((served.skipped or served.tokens) and served.session_id)):
            return
        with self._lock:
            self._pending.append(served)
        if self.on_record is not None:
            self.on_record()

    def flush(self) -> int:
        """Write every pending recall; returns how many. Never raises (a failed write is logged, dropped)."""
        with self._flush_lock:
            with self._lock:
                batch = list(self._pending)
                self._pending.clear()
            if not batch:
                return 0
            try:
                self.store.log_recalls(batch)
            except Exception:  # noqa: BLE001 - statistics must never take a request or the worker down
                log.exception("could not write %d recall usage rows", len(batch))
                return 0
            return len(batch)

    def mark_used(self, memory_ids: Iterable[int], *, query_id: str = "", session_id: str = "") -> int:
        """Mark memories opened by ``fetch``/``expand`` as used in the recall named (``Store.mark_used``)."""
        if not (query_id or session_id):
            return 0
        self.flush()
        try:
            return self.store.mark_used(memory_ids, query_id=query_id, session_id=session_id)
        except Exception:  # noqa: BLE001 - opening a memory must not fail for its statistics
            log.exception("could not mark recall usage")
            return 0

    def stats(self, days: float) -> dict[str, Any]:
        """``Store.usage_stats`` over the last ``days`` days, with ``days`` in the answer."""
        self.flush()
        return {"days": days, **self.store.usage_stats(time.time() - days * DAY_S)}
