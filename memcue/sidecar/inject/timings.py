"""The latest hook calls served, for ``/health`` (``hooks.recent``) and ``memcue doctor``."""

from __future__ import annotations

import collections
import threading
from typing import Any

#: Hook calls kept (the oldest out first).
HOOK_TIMES_KEPT = 20


class HookTimings:
    """The last ``kept`` hook calls: harness, event, ms in the sidecar, answered_by, memories included."""

    def __init__(self, kept: int = HOOK_TIMES_KEPT) -> None:
        self._calls: collections.deque[dict[str, Any]] = collections.deque(maxlen=kept)
        self._lock = threading.Lock()

    def record(self, harness: str, event: str, ms: float, answered_by: str, included: int) -> None:
        """Keep one call: ``ms`` is its time in the sidecar (ms)."""
        with self._lock:
            self._calls.append({"harness": harness, "event": event, "ms": ms, "answered_by": answered_by,
                                "included": included})

    def recent(self) -> list[dict[str, Any]]:
        """The kept calls, oldest first."""
        with self._lock:
            return list(self._calls)
