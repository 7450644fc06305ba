"""What the hook service needs from the sidecar, as a ``Protocol``: the sidecar's service implements it, so
``inject/`` depends on no module of the sidecar root."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, Protocol

import anyio

from memcue.sidecar.recall import RecallRequest
from memcue.sidecar.store import NewMemory, WriteResult


class HookBackend(Protocol):
    """Recall, the store's reads and writes a hook makes, the token counter and the usage log.

    Blocking methods are called from worker threads bounded by ``limiter``."""

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        """The worker threads recall and store work share."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` (the block budget's unit)."""
        ...

    def question_running(self) -> contextlib.AbstractContextManager[None]:
        """Mark a recall as running: background work steps aside meanwhile."""
        ...

    async def race_recall(self, request: RecallRequest, budget_s: float) -> tuple[dict[str, Any] | None, str]:
        """The keyword race for ``request`` within ``budget_s`` (s): ``(answer or None, answered_by)``."""
        ...

    def recall(self, request: RecallRequest) -> dict[str, Any]:
        """A full recall answer for ``request`` (blocking)."""
        ...

    def remember_prompt(self, memory: NewMemory) -> WriteResult:
        """Store a captured prompt (blocking)."""
        ...

    def doc_count(self, project: str) -> int:
        """Memories the session-start pointer counts for ``project`` (blocking)."""
        ...

    def keyword_rows(self, match: str, *, project: str, limit: int, exclude_kinds: Sequence[str] = ()
                     ) -> list[dict[str, Any]]:
        """Store rows (``Store.fetch``'s) of the keyword index's best ``limit`` matches of the FTS5 expression
        ``match`` in ``project`` and global rows, best first, without ``exclude_kinds`` (blocking)."""
        ...

    def list_memories(self, **filters: Any) -> list[dict[str, Any]]:
        """Store rows newest first (``Store.list_memories`` filters; blocking)."""
        ...

    def session_recalls(self, session_id: str) -> list[dict[str, Any]]:
        """What the usage log holds for ``session_id`` (``Store.session_recalls``; blocking)."""
        ...

    def record_served(self, query_id: str, session_id: str, served_by: str, results: Sequence[dict[str, Any]],
                      block: str = "", *, tokens: int = 0, skipped: str = "", project: str = "") -> None:
        """Queue a recall served for the usage log (nothing is written here): ``tokens`` the block's size,
        ``skipped`` why nothing was injected, ``project`` where it was served."""
        ...
