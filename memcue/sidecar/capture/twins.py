"""Twin deliveries: one hook event delivered by two hook processes (case C23).

A hook registered twice for one event (two interpreter paths, user and project settings) runs twice for every
firing, and each run sends its own request id, live or through the spool. The store makes a write idempotent by
its id (``source_id``), so the sidecar gives the second run the first run's id: a capture with the same source
(``hook:<harness>``), session, kind and text as one delivered within ``TWIN_WINDOW_S`` seconds, under another
id, is that delivery again. The hook service (live prompts) and the spool reader (spooled prompts, agent
answers, session ends) share one ``TwinDeliveries``, so a live copy and a spooled copy are matched too.

A person sending the same prompt again is a new event: a harness takes a session's next prompt only after the
last one's turn, far more than ``TWIN_WINDOW_S`` later, so it still counts as a second sighting; a session start
between the two (``session_started``: the conversation compacted or cleared) always makes it a new event. Captures
without a session id are never matched (nothing tells their sessions apart). Kept in memory (a restart between
the two copies counts them twice, as before); thread-safe.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

#: Seconds within which the same capture under another id is the same event. The twins of one firing start
#: together (the harness runs an event's hooks at once), so they arrive milliseconds apart, or up to about a
#: second apart on a machine starved of CPU; a person's next prompt in a session comes a whole turn later.
TWIN_WINDOW_S = 2.0
#: Recent deliveries remembered (least recently seen out first): far more than arrive within the window.
KEPT = 4096


class TwinDeliveries:
    """Recent hook captures by ``(source, session, kind, text)``, each with its time and first id."""

    def __init__(self, window_s: float = TWIN_WINDOW_S, kept: int = KEPT) -> None:
        self._window_s = window_s
        self._kept = kept
        self._seen: OrderedDict[tuple[str, str, str, bytes], tuple[float, str]] = OrderedDict()
        #: The latest session start per (source, session id), Unix s: nothing before it has a twin after it.
        self._starts: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._lock = threading.Lock()

    def session_started(self, source: str, session_id: str, at: float) -> None:
        """The session ``session_id`` of ``source`` started (or was compacted, cleared, resumed) at ``at`` (Unix
        s): a capture after it is never the twin of one before it."""
        if session_id:
            with self._lock:
                self._starts[(source, session_id)] = at
                self._starts.move_to_end((source, session_id))
                while len(self._starts) > self._kept:
                    self._starts.popitem(last=False)

    def first_id(self, *, source: str, session_id: str, kind: str, content: str, source_id: str | None,
                 at: float) -> str | None:
        """The id of an earlier delivery of this capture (delivered at ``at``, Unix s, under ``source_id``)
        within the window under another id: write under that id instead. None for a capture seen first (it is
        remembered), one without a session id or source id, or the same id again (the store knows it)."""
        if not session_id or not source_id:
            return None
        key = (source, session_id, kind, hashlib.sha1(content.encode("utf-8", "replace")).digest())
        with self._lock:
            prev = self._seen.get(key)
            started = self._starts.get((source, session_id), float("-inf"))
            if (prev is not None and abs(at - prev[0]) <= self._window_s
                    and (at >= started) == (prev[0] >= started)):  # not parted by a session start
                self._seen.move_to_end(key)
                return prev[1] if prev[1] != source_id else None
            self._seen[key] = (at, source_id)
            self._seen.move_to_end(key)
            while len(self._seen) > self._kept:
                self._seen.popitem(last=False)
            return None
