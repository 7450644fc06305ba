"""The budget-timeout answer carries every field of the recall contract (DESIGN.md section 4)."""

from __future__ import annotations

from pathlib import Path

from memcue.sidecar.recall import ALL_CHANNELS, KEYWORD_CHANNELS, RecallRequest, budget_timeout_answer, recall
from memcue.sidecar.store import Store


def test_budget_timeout_answer_has_every_contract_field(tmp_path: Path) -> None:
    request = RecallRequest("what did we decide about httpx?", channels=KEYWORD_CHANNELS)
    answer = budget_timeout_answer(request, 812.3456)
    store = Store(tmp_path / "m.db")
    full = recall(store, None, request)
    store.close()
    assert set(answer) == set(full)
    assert answer["tier"] == "none" and answer["results"] == [] and answer["abstained"] is True
    assert answer["abstention_reason"] == "no_candidates" and answer["retrieval_mode"] == "none"
    assert answer["note"] == "The search did not finish within the budget."
    assert answer["channel_status"] == {name: "timeout" for name in ALL_CHANNELS}
    assert answer["incomplete_channels"] == list(KEYWORD_CHANNELS)
    assert answer["retrieval_time_ms"] == 812.35 and len(answer["query_id"]) == 16
