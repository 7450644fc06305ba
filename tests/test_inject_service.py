"""The hook service over a stand-in ``HookBackend``: inject/ needs nothing from the sidecar root."""

from __future__ import annotations

import contextlib
from typing import Any

import anyio

from memcue.sidecar.inject import PROMPT_HEADER, HookService
from memcue.sidecar.inject.service import SKIP_SHOWN
from memcue.sidecar.recall import RecallRequest
from memcue.sidecar.store import NewMemory, WriteResult


class Backend:
    """Answers every recall with one supported memory; records what the service stores and serves."""

    def __init__(self) -> None:
        self.limiter = anyio.CapacityLimiter(2)
        self.prompts: list[NewMemory] = []
        self.served: list[str] = []
        self.skipped: list[str] = []
        self.tokens: list[int] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def question_running(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    async def race_recall(self, request: RecallRequest, budget_s: float) -> tuple[dict[str, Any] | None, str]:
        return self.recall(request), "full"

    def recall(self, request: RecallRequest) -> dict[str, Any]:
        result = {"memory_id": 7, "content": "We retry webhooks with backoff.", "memory_kind": "decision",
                  "tier": "supported", "channel_scores": {"semantic": 0.8}, "age_label": "today"}
        return {"tier": "supported", "query_id": "q1", "query_type": "meaning", "results": [result]}

    def remember_prompt(self, memory: NewMemory) -> WriteResult:
        self.prompts.append(memory)
        return WriteResult(1, False)

    def doc_count(self, project: str) -> int:
        return 1

    def list_memories(self, **filters: Any) -> list[dict[str, Any]]:
        return []

    def record_served(self, query_id: str, session_id: str, served_by: str, results: Any, block: str = "", *,
                      tokens: int = 0, skipped: str = "") -> None:
        if skipped:
            self.skipped.append(skipped)
        elif served_by == "hook":
            self.served.append(query_id)
            self.tokens.append(tokens)


def test_a_prompt_is_captured_answered_once_per_session_and_timed() -> None:
    backend = Backend()
    hooks = HookService(backend)
    event = {"prompt": "how do webhooks retry?", "project": "/p", "session_id": "s1"}

    async def twice() -> tuple[Any, Any]:
        kwargs = {"budget_s": 2.0, "max_tokens": 600, "max_chars": 9500}
        return (await hooks.handle("claude-code", "user-prompt-submit", event, **kwargs),
                await hooks.handle("claude-code", "user-prompt-submit", event, **kwargs))

    first, second = anyio.run(twice)
    assert first.context.startswith(PROMPT_HEADER) and first.included == 1 and first.answered_by == "full"
    assert second.context == "" and second.included == 0  # already in the conversation
    assert [m.content for m in backend.prompts] == [event["prompt"]] * 2 and backend.served == ["q1"]
    assert backend.skipped == [SKIP_SHOWN]  # the second prompt's receipt says why it got nothing
    assert backend.tokens == [first.tokens] and first.tokens > 0  # the block's size goes to the usage log
    assert [t["included"] for t in hooks.timings.recent()] == [1, 0]
