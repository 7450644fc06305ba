"""The hook service over a stand-in ``HookBackend``: inject/ needs nothing from the sidecar root."""

from __future__ import annotations

import contextlib
import time
from typing import Any

import anyio

from memcue.core.blocks import SHORTENED_LINES, left_out_line
from memcue.sidecar.inject import PROMPT_HEADER, HookService
from memcue.sidecar.inject.service import SKIP_SHOWN, SKIP_WARMING
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

    def session_recalls(self, session_id: str) -> list[dict[str, Any]]:
        return []

    def list_memories(self, **filters: Any) -> list[dict[str, Any]]:
        return []

    def record_served(self, query_id: str, session_id: str, served_by: str, results: Any, block: str = "", *,
                      tokens: int = 0, skipped: str = "", project: str = "") -> None:
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


class ProjectBackend(Backend):
    """A project of 40 memories: #7 (the one recalls find) too long for a brief, #8 short; 38 older ones."""

    LONG = "We retry webhooks with backoff. " + "The delays are 1, 2, 4 and 8 minutes, then a dead letter. " * 12

    def recall(self, request: RecallRequest) -> dict[str, Any]:
        answer = super().recall(request)
        if request.query == "webhooks":
            answer["results"][0]["content"] = self.LONG
        return answer

    def doc_count(self, project: str) -> int:
        return 40

    def list_memories(self, **filters: Any) -> list[dict[str, Any]]:
        if filters.get("pinned_only") or filters.get("kind"):
            return []
        rows = [{"id": 7, "content": self.LONG, "kind": "note", "source": "cli", "created_at": 1.8e9},
                {"id": 8, "content": "Deploys go out on Tuesdays.", "kind": "note", "source": "cli",
                 "created_at": 1.8e9}]
        return rows[:filters.get("limit", 2)]


def test_a_shortened_memory_says_so_and_can_still_come_whole_with_a_prompt() -> None:
    """The session-start block shows #7 as a brief ending in "…", says how to get it whole, counts all 40 of
    the project's memories in its left-out line, and does not mark #7 as shown: a prompt that needs it gets it
    whole. #8, shown whole, is not repeated."""
    backend = ProjectBackend()
    hooks = HookService(backend)

    async def session_then_prompts() -> tuple[Any, Any, Any]:
        kwargs = {"budget_s": 2.0, "max_chars": 9500}
        start = await hooks.handle("claude-code", "session-start", {"project": "/p", "session_id": "s2",
                                                                    "source": "startup"}, max_tokens=2200, **kwargs)
        whole = await hooks.handle("claude-code", "user-prompt-submit", {"prompt": "webhooks", "project": "/p",
                                                                         "session_id": "s2"}, max_tokens=600, **kwargs)
        backend.recall = lambda request: {"tier": "supported", "query_id": "q2", "query_type": "meaning", "results": [
            {"memory_id": 8, "content": "Deploys go out on Tuesdays.", "memory_kind": "note", "tier": "supported",
             "channel_scores": {"semantic": 0.8}, "age_label": "today"}]}
        again = await hooks.handle("claude-code", "user-prompt-submit", {"prompt": "deploy day", "project": "/p",
                                                                         "session_id": "s2"}, max_tokens=600, **kwargs)
        return start, whole, again

    start, whole, again = anyio.run(session_then_prompts)
    assert " …</memory>" in start.context and start.context.endswith(SHORTENED_LINES["mcp"])
    assert left_out_line(38) in start.context and start.included == 2
    assert "then a dead letter. The delays" in whole.context and whole.included == 1
    assert again.context == "" and again.included == 0


def test_a_prompt_during_warm_up_says_why_it_got_nothing() -> None:
    """While the embedding model loads, recall answers from keywords (``warming_up``): a prompt that gets nothing
    then says so in the receipt, not "only weak matches" (found by a fresh-clone trial)."""
    backend = Backend()
    backend.recall = lambda request: {"tier": "related", "query_id": "q3", "query_type": "meaning",
                                      "warming_up": True, "results": [
                                          {"memory_id": 7, "content": "We retry webhooks with backoff.",
                                           "memory_kind": "decision", "tier": "related", "channel_scores": {},
                                           "age_label": "today"}]}
    hooks = HookService(backend)
    event = {"prompt": "how do webhooks retry?", "project": "/p", "session_id": "s3"}
    result = anyio.run(lambda: hooks.handle("claude-code", "user-prompt-submit", event, budget_s=2.0,
                                            max_tokens=600, max_chars=9500))
    assert result.context == "" and backend.skipped == [SKIP_WARMING]


def test_a_session_block_cut_to_the_note_by_the_budget_is_not_the_sessions_one_block() -> None:
    """Fresh-user finding: a cold start under load gave a session the standing note alone, and that counted as
    its one full block, so a second start of the session got a pointer and never the memories."""
    backend = ProjectBackend()
    hooks = HookService(backend)
    start = {"project": "/p", "session_id": "s3", "source": "startup"}

    async def cut_then_whole() -> tuple[Any, Any, Any]:
        kwargs = {"max_tokens": 2200, "max_chars": 9500}
        cut = await hooks.handle("claude-code", "session-start", start, budget_s=0.0, **kwargs)
        whole = await hooks.handle("claude-code", "session-start", start, budget_s=2.0, **kwargs)
        again = await hooks.handle("claude-code", "session-start", start, budget_s=2.0, **kwargs)
        return cut, whole, again

    cut, whole, again = anyio.run(cut_then_whole)
    assert cut.context and cut.included == 0  # the note alone
    assert whole.included == 2 and "Deploys go out on Tuesdays." in whole.context
    assert again.included == 0 and "Deploys go out" not in again.context  # one full block per session (C15)


class OwnWorkBackend(Backend):
    """Every recall finds #7, a commit the session "s3" itself wrote a moment ago (its own turn's work)."""

    def __init__(self) -> None:
        super().__init__()
        self.written_at = time.time()

    def recall(self, request: RecallRequest) -> dict[str, Any]:
        answer = super().recall(request)
        answer["results"][0].update(session_id="s3", created_at=self.written_at)
        return answer


def test_a_session_is_not_told_back_what_it_wrote_itself_until_its_conversation_is_cleared() -> None:
    """Found by the dev2 week: a commit that landed in the session's last turn was injected into its next prompt,
    which had nothing to do with it; the turn that made it is in the conversation. Another session gets it, and so
    does the same session once a /clear emptied its conversation."""
    backend = OwnWorkBackend()
    hooks = HookService(backend)
    kwargs = {"budget_s": 2.0, "max_tokens": 600, "max_chars": 9500}

    async def prompt(session: str) -> Any:
        return await hooks.handle("claude-code", "user-prompt-submit",
                                  {"prompt": "rename the loop variable", "project": "/p", "session_id": session},
                                  **kwargs)

    async def scenario() -> tuple[Any, Any, Any, Any]:
        own = await prompt("s3")
        other = await prompt("s4")
        start = await hooks.handle("claude-code", "session-start", {"project": "/p", "session_id": "s3",
                                                                    "source": "clear"}, **kwargs)
        return own, other, start, await prompt("s3")

    own, other, start, cleared = anyio.run(scenario)
    assert own.context == "" and backend.skipped[0] == SKIP_SHOWN and other.included == 1
    assert start.memory_ids == (7,) and cleared.included == 0, "the block after the clear holds it again"
    hooks.ledger.forget_injected(hooks.ledger.key("claude-code", "s3"))  # a compaction after the block
    assert anyio.run(prompt, "s3").included == 1
