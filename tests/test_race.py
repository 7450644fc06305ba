"""The hook race with real threads and real time: full recall, keyword after 1 s, nothing at the budget."""

from __future__ import annotations

import time

import anyio

from memcue.sidecar.scheduler import race


def _after(seconds: float, value: str):
    def fn() -> dict:
        time.sleep(seconds)
        return {"v": value}
    return fn


def _run(full, keyword, budget_s: float, keyword_after_s: float = 0.2):
    started = time.perf_counter()
    answer, by = anyio.run(lambda: race(full, keyword, budget_s=budget_s, keyword_after_s=keyword_after_s))
    return answer, by, time.perf_counter() - started


def test_fast_full_recall_wins_and_keyword_never_starts() -> None:
    calls = []

    def keyword() -> dict:
        calls.append(1)
        return {"v": "kw"}

    answer, by, took = _run(_after(0.01, "full"), keyword, budget_s=2)
    assert (answer, by) == ({"v": "full"}, "full") and took < 0.5
    time.sleep(0.3)
    assert calls == []


def test_slow_full_recall_loses_to_keyword() -> None:
    answer, by, took = _run(_after(1.5, "full"), _after(0.01, "kw"), budget_s=2)
    assert (answer, by) == ({"v": "kw"}, "keyword") and 0.2 <= took < 1.0


def test_nothing_at_the_budget() -> None:
    answer, by, took = _run(_after(3, "full"), _after(3, "kw"), budget_s=0.6)
    assert (answer, by) == (None, "none") and 0.6 <= took < 1.2


def test_a_failing_full_recall_lets_keyword_answer() -> None:
    def broken() -> dict:
        raise RuntimeError("boom")

    answer, by, _ = _run(broken, _after(0.01, "kw"), budget_s=2)
    assert by == "keyword"
