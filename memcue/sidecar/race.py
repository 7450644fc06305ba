"""The hook race: full recall, with a keyword search started beside it if it is slow, under one budget.

The full pipeline starts at once; if it has not answered after ``keyword_after_s`` (1.0 s by default)
a keyword-only search starts beside it; the first complete answer wins; at ``budget_s`` the answer is
``None`` (the prompt goes on with nothing added). Work still running at the budget is abandoned: its
thread finishes in the background and its result is dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

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
    """Return ``(answer, answered_by)`` with answered_by "full", "keyword" or "none" (budget reached).

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
