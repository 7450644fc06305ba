"""Ranking mode (ranking.py): similarity x decay x reinforcement, off unless MEMCUE_RANKING is set."""

from __future__ import annotations

import math

import pytest

from memcue.sidecar.recall import ranking
from memcue.sidecar.recall.ranking import (
    HALF_LIFE_DAYS,
    decay,
    memory_class,
    rank_score,
    ranking_enabled,
    reinforcement,
    rerank_by_ranking,
)

DAY = 86400.0
NOW = 1_750_000_000.0


def test_half_lives_from_the_issue() -> None:
    assert HALF_LIFE_DAYS == {"episodic": 14, "semantic": 90, "procedural": 180}


@pytest.mark.parametrize(("kind", "half_life"), [("event", 14), ("bug", 14), ("note", 14), ("request", 14),
                                                  ("decision", 90), ("preference", 90), ("fact", 90),
                                                  ("howto", 180), ("runbook", 180), ("procedure", 180)])
def test_decay_is_one_half_at_the_half_life(kind: str, half_life: int) -> None:
    assert decay(half_life, kind) == pytest.approx(0.5)
    assert decay(2 * half_life, kind) == pytest.approx(0.25)
    assert decay(0, kind) == 1.0


def test_fourteen_day_old_episodic_memory_decays_to_half() -> None:
    assert decay(14, "episodic-kind-is-not-a-kind") == pytest.approx(0.5 ** (14 / 90))  # unknown -> semantic
    assert decay(14, "event") == pytest.approx(0.5)
    row = rerank_by_ranking([{"memory_id": 1, "score": 0.8, "created_at": NOW - 14 * DAY,
                              "memory_kind": "event", "seen_count": 0}], NOW)[0]
    assert row["ranking_score"] == pytest.approx(0.4)


def test_negative_age_does_not_boost() -> None:
    assert decay(-10, "event") == 1.0


def test_memory_classes() -> None:
    for kind in ("note", "event", "session", "request", "bug", "observation"):
        assert memory_class(kind) == "episodic"
    for kind in ("decision", "fact", "preference", "convention", "architecture"):
        assert memory_class(kind) == "semantic"
    for kind in ("procedure", "howto", "command", "workflow", "runbook"):
        assert memory_class(kind) == "procedural"
    assert memory_class("Decision") == "semantic"
    assert memory_class("HowTo") == "procedural"
    assert memory_class("something-new") == "semantic"
    assert memory_class("") == "semantic"


def test_reinforcement_formula() -> None:
    assert reinforcement(0) == 1.0
    assert reinforcement(math.e - 1) == pytest.approx(2.0)
    assert reinforcement(10) == pytest.approx(1 + math.log(11))
    assert reinforcement(-5) == 1.0
    assert reinforcement(100) > reinforcement(10) > reinforcement(1) > reinforcement(0)


def test_rank_score_is_the_product() -> None:
    assert rank_score(0.7, 45, "decision", 3) == pytest.approx(0.7 * 0.5 ** (45 / 90) * (1 + math.log(4)))
    assert rank_score(-0.3, 0, "note", 50) == 0.0


@pytest.mark.parametrize("value", ["1", "true", "yes", "on", "TRUE", " On ", "Yes"])
def test_env_switch_on(value: str) -> None:
    assert ranking_enabled({"MEMCUE_RANKING": value})


@pytest.mark.parametrize("value", ["", "0", "false", "no", "off", "2", "enabled"])
def test_env_switch_off(value: str) -> None:
    assert not ranking_enabled({"MEMCUE_RANKING": value})


def test_off_when_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not ranking_enabled({})
    monkeypatch.delenv("MEMCUE_RANKING", raising=False)
    assert not ranking_enabled()
    monkeypatch.setenv("MEMCUE_RANKING", "1")
    assert ranking_enabled()


def test_fresh_memory_ranks_above_old_one_of_equal_similarity() -> None:
    items = [
        {"memory_id": 1, "score": 0.6, "created_at": NOW - 60 * DAY, "memory_kind": "bug", "seen_count": 0},
        {"memory_id": 2, "score": 0.6, "created_at": NOW - 1 * DAY, "memory_kind": "bug", "seen_count": 0},
    ]
    out = rerank_by_ranking(items, NOW)
    assert [r["memory_id"] for r in out] == [2, 1]
    assert out[0]["ranking_score"] > out[1]["ranking_score"]
    assert "ranking_score" not in items[0]  # inputs untouched


def test_kind_changes_how_fast_age_counts() -> None:
    # same age (60 days) and similarity: a procedure outlasts a bug note
    items = [
        {"memory_id": 1, "score": 0.6, "created_at": NOW - 60 * DAY, "memory_kind": "bug", "seen_count": 0},
        {"memory_id": 2, "score": 0.6, "created_at": NOW - 60 * DAY, "memory_kind": "runbook", "seen_count": 0},
    ]
    assert [r["memory_id"] for r in rerank_by_ranking(items, NOW)] == [2, 1]


def test_much_more_similar_old_memory_can_still_win() -> None:
    items = [
        {"memory_id": 1, "score": 0.9, "created_at": NOW - 30 * DAY, "memory_kind": "decision", "seen_count": 0},
        {"memory_id": 2, "score": 0.3, "created_at": NOW, "memory_kind": "decision", "seen_count": 0},
    ]
    assert [r["memory_id"] for r in rerank_by_ranking(items, NOW)] == [1, 2]


def test_reinforcement_lifts_a_used_memory() -> None:
    items = [
        {"memory_id": 1, "score": 0.5, "created_at": NOW, "memory_kind": "fact", "seen_count": 0},
        {"memory_id": 2, "score": 0.5, "created_at": NOW, "memory_kind": "fact", "seen_count": 5},
    ]
    assert [r["memory_id"] for r in rerank_by_ranking(items, NOW)] == [2, 1]


def test_ties_break_by_memory_id_and_missing_fields_default() -> None:
    row = {"score": 0.5, "created_at": NOW, "memory_kind": "fact", "seen_count": 0}
    items = [{**row, "memory_id": 9}, {**row, "memory_id": 3}, {**row}, {**row, "memory_id": 5}]
    assert [r.get("memory_id") for r in rerank_by_ranking(items, NOW)] == [3, 5, 9, None]
    bare = rerank_by_ranking([{"memory_id": 1, "score": 0.4}], NOW)[0]
    assert bare["ranking_score"] == pytest.approx(0.4)
    with pytest.raises(KeyError):
        rerank_by_ranking([{"memory_id": 1}], NOW)


def test_module_constants() -> None:
    assert ranking.TRUE_VALUES == {"1", "true", "yes", "on"}
