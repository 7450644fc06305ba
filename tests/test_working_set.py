"""Session ids (session.py) and the per-session working set (working_set.py)."""

from __future__ import annotations

import sys
import threading

import pytest

from memcue.core.session_ids import SYNTHETIC_PREFIXES, is_synthetic, resolve_session_id
from memcue.sidecar.recall import working_set as ws
from memcue.sidecar.recall.fusion import RRF_K, weighted_rrf
from memcue.sidecar.recall.working_set import MAX_BIAS, WorkingSets

# ---------------------------------------------------------------- session ids


def test_resolution_order_env_before_request() -> None:
    env = {"MEMCUE_SESSION_ID": "m", "CLAUDE_SESSION_ID": "c", "CLAUDE_CODE_SESSION_ID": "cc"}
    assert resolve_session_id("req", env) == "m"
    del env["MEMCUE_SESSION_ID"]
    assert resolve_session_id("req", env) == "c"
    del env["CLAUDE_SESSION_ID"]
    assert resolve_session_id("req", env) == "cc"
    del env["CLAUDE_CODE_SESSION_ID"]
    assert resolve_session_id("req", env) == "req"
    assert resolve_session_id("", env) == ""
    assert resolve_session_id(None, env) == ""


def test_blank_env_values_are_skipped() -> None:
    env = {"MEMCUE_SESSION_ID": "  ", "CLAUDE_SESSION_ID": "", "CLAUDE_CODE_SESSION_ID": " cc "}
    assert resolve_session_id("req", env) == "cc"
    assert resolve_session_id("  req ", {"MEMCUE_SESSION_ID": ""}) == "req"


@pytest.mark.parametrize("prefix", SYNTHETIC_PREFIXES)
def test_every_synthetic_prefix(prefix: str) -> None:
    assert is_synthetic(prefix + "abc")
    assert is_synthetic(prefix.upper() + "abc")
    # the prefix only counts at the start
    assert not is_synthetic("abc" + prefix)


def test_synthetic_prefix_list_is_the_issue_list() -> None:
    assert SYNTHETIC_PREFIXES == ("http:", "mcp:", "cli:", "probe:", "engine:", "agent:", "api:", "view:")


def test_real_ids_are_not_synthetic() -> None:
    for sid in ("3f2a-uuid", "session-1", "httpx", "cli", "", "mcp"):
        assert not is_synthetic(sid)


# ---------------------------------------------------------------- working set


def test_seven_slots() -> None:
    sets = WorkingSets()
    sets.offer("s", [1, 2, 3, 4, 5])
    sets.offer("s", [6, 7, 8, 9, 10])
    held = sets.held("s")
    assert len(held) == 7 == ws.SLOTS
    # all of the latest offer are held
    assert {6, 7, 8, 9, 10} <= {mid for mid, _ in held}


def test_only_five_best_are_offered() -> None:
    sets = WorkingSets()
    sets.offer("s", [1, 2, 3, 4, 5, 6, 7])
    assert sorted(mid for mid, _ in sets.held("s")) == [1, 2, 3, 4, 5]


def test_eviction_of_least_activated() -> None:
    sets = WorkingSets()
    sets.offer("s", [1, 2, 3, 4, 5])
    sets.offer("s", [1, 2, 3, 4, 6])  # 5 not reinforced: lowest activation
    sets.offer("s", [1, 2, 3, 4, 7])  # 7 slots now: 1..7, 5 lowest (decayed twice), then 6
    assert len(sets.held("s")) == 7
    sets.offer("s", [8])  # one new one: evicts 5, the least activated
    ids = {mid for mid, _ in sets.held("s")}
    assert 5 not in ids
    assert {1, 2, 3, 4, 6, 7, 8} == ids
    sets.offer("s", [9])  # next least activated is 6
    ids = {mid for mid, _ in sets.held("s")}
    assert 6 not in ids and 9 in ids


def test_every_offered_memory_is_held_after_the_offer() -> None:
    # a full set of well-activated memories; five new ones must not evict each other
    sets = WorkingSets()
    for _ in range(10):
        sets.offer("s", [1, 2, 3, 4, 5])
        sets.offer("s", [3, 4, 5, 6, 7])
    assert min(a for _, a in sets.held("s")) > ws.GAIN
    sets.offer("s", [10, 11, 12, 13, 14])
    # evicted: 1 and 2 (least activated), then 6 and 7, then 3 (ties with 4 and 5; entered earliest)
    assert {mid for mid, _ in sets.held("s")} == {4, 5, 10, 11, 12, 13, 14}


def test_returning_memory_is_reinforced_and_kept() -> None:
    sets = WorkingSets()
    sets.offer("s", [100])
    first = dict(sets.held("s"))[100]
    # 100 comes back in every recall while 40 other memories pass through
    for start in range(0, 40, 4):
        sets.offer("s", [100, start + 1, start + 2, start + 3, start + 4])
    held = dict(sets.held("s"))
    assert 100 in held
    assert held[100] > first
    assert sets.held("s")[0][0] == 100  # most activated
    # without reinforcement it would have been evicted
    other = WorkingSets()
    other.offer("s", [100])
    for start in range(0, 40, 4):
        other.offer("s", [start + 1, start + 2, start + 3, start + 4])
    assert 100 not in dict(other.held("s"))


def test_activation_decays_on_each_offer() -> None:
    sets = WorkingSets()
    sets.offer("s", [1])
    sets.offer("s", [2])
    sets.offer("s", [3])
    held = dict(sets.held("s"))
    assert held[3] == pytest.approx(ws.GAIN)
    assert held[2] == pytest.approx(ws.GAIN * ws.DECAY)
    assert held[1] == pytest.approx(ws.GAIN * ws.DECAY**2)


def test_synthetic_and_empty_sessions_never_stored() -> None:
    sets = WorkingSets()
    for prefix in SYNTHETIC_PREFIXES:
        sets.offer(prefix + "x", [1, 2, 3])
        assert sets.held(prefix + "x") == []
        assert sets.bias(prefix + "x") == {}
    sets.offer("", [1, 2, 3])
    sets.offer("   ", [1, 2, 3])
    assert sets.session_count() == 0


def test_forget_removes_from_every_set() -> None:
    sets = WorkingSets()
    sets.offer("a", [1, 2])
    sets.offer("b", [2, 3])
    sets.offer("c", [2])
    sets.forget(2)
    assert [m for m, _ in sets.held("a")] == [1]
    assert [m for m, _ in sets.held("b")] == [3]
    assert sets.held("c") == []
    assert sets.session_count() == 2  # "c" became empty and was dropped
    assert 2 not in sets.bias("a")


def test_bias_scaled_by_activation_and_bounded() -> None:
    sets = WorkingSets()
    sets.offer("s", [1, 2])
    for _ in range(200):
        sets.offer("s", [1])
    bias = sets.bias("s")
    assert 0 < bias[2] < bias[1] <= MAX_BIAS
    assert bias[1] == pytest.approx(MAX_BIAS, rel=1e-6)


def _biased(fused: list[tuple[int, float]], bias: dict[int, float]) -> list[tuple[int, float]]:
    out = [(mid, score + bias.get(mid, 0.0)) for mid, score in fused]
    return sorted(out, key=lambda item: (-item[1], item[0]))


@pytest.mark.parametrize("weights", [(0.5, 0.5), (1.0, 0.5), (0.5, 1.0), (1.0, 1.0)])
def test_bias_never_overrides_exact_match(weights: tuple[float, float]) -> None:
    exact, held_id = 50, 7  # held id is lower, so it would also win a score tie
    sets = WorkingSets()
    for _ in range(500):  # drive the held memory to its largest activation
        sets.offer("s", [held_id])
    bias = sets.bias("s")
    assert bias[held_id] == pytest.approx(MAX_BIAS, rel=1e-9)
    rankings = {"bm25": [exact, held_id, 3, 4], "semantic": [exact, held_id, 4, 3]}
    fused = weighted_rrf(rankings, {"bm25": weights[0], "semantic": weights[1]})
    assert fused[0][0] == exact
    gap = dict(fused)[exact] - dict(fused)[held_id]
    assert gap == pytest.approx(sum(weights) * (1 / (RRF_K + 1) - 1 / (RRF_K + 2)))
    assert bias[held_id] < gap
    assert _biased(fused, bias)[0][0] == exact


def test_max_bias_below_smallest_exact_match_gap() -> None:
    # the weakest weights in use (0.5 each) give the smallest gap: 1.0 * (1/16 - 1/17)
    assert RRF_K == 15
    assert MAX_BIAS < 1.0 * (1 / 16 - 1 / 17)
    with pytest.raises(ValueError):
        WorkingSets(max_bias=MAX_BIAS * 2)


def test_bias_breaks_a_near_tie() -> None:
    # a and b tie exactly (rank 1 in one channel, rank 2 in the other, equal weights); held b wins
    a, b = 1, 2
    fused = weighted_rrf({"bm25": [a, b], "semantic": [b, a]}, {"bm25": 0.5, "semantic": 0.5})
    assert fused[0][0] == a  # the tie goes to the lower id without a bias
    sets = WorkingSets()
    sets.offer("s", [b])
    assert _biased(fused, sets.bias("s"))[0][0] == b
    # and a single-channel rank-1 vs rank-2 gap at weight 0.5 is also a near-tie it can break
    fused = weighted_rrf({"semantic": [a, b]}, {"semantic": 0.5})
    for _ in range(20):
        sets.offer("s", [b])
    assert _biased(fused, sets.bias("s"))[0][0] == b


def test_lru_bound_on_sessions() -> None:
    sets = WorkingSets(max_sessions=3)
    sets.offer("a", [1])
    sets.offer("b", [1])
    sets.offer("c", [1])
    sets.offer("a", [2])  # a is now the most recent
    sets.offer("d", [1])  # evicts b, the least recently offered
    assert sets.session_count() == 3
    assert sets.held("b") == []
    assert sets.held("a") and sets.held("c") and sets.held("d")
    sets.bias("c")  # reads do not refresh recency
    sets.offer("e", [1])
    assert sets.held("c") == []
    assert ws.MAX_SESSIONS == 512 and WorkingSets().max_sessions == 512


def test_invalid_configuration() -> None:
    for kwargs in ({"slots": 0}, {"offer_size": 7}, {"offer_size": 0}, {"decay": 1.0}, {"decay": 0.0},
                   {"gain": 0.0}, {"max_sessions": 0}, {"max_bias": -0.001}):
        with pytest.raises(ValueError):
            WorkingSets(**kwargs)


def test_thread_safety_under_concurrent_offers() -> None:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible to expose races
    try:
        # identical offers to one session from many threads; slow decay so a lost update would show
        shared = WorkingSets(decay=0.999)
        bounded = WorkingSets(max_sessions=10)  # churn over 40 sessions: LRU eviction under contention
        errors: list[BaseException] = []
        rounds = 1500

        def same_offer() -> None:
            try:
                for i in range(rounds):
                    shared.offer("shared", [1, 2, 3, 4, 5])
                    shared.offer(f"other{i % 50}", [i, i + 1])
                    shared.forget(10_000)  # held by nobody: must not disturb anything
            except BaseException as exc:  # reported by the assertion below
                errors.append(exc)

        def churn(seed: int) -> None:
            try:
                for i in range(rounds):
                    base = seed * 1000 + i
                    bounded.offer(f"s{(seed + i) % 40}", [base, base + 1, base + 2, base + 3, base + 4])
                    bounded.bias(f"s{i % 40}")
                    bounded.forget(base - 3)
                    bounded.held(f"s{seed}")
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=same_offer) for _ in range(4)]
        threads += [threading.Thread(target=churn, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errors == []
    assert bounded.session_count() <= 10
    for n in range(40):
        assert len(bounded.held(f"s{n}")) <= 7
    # identical offers commute, so if no update was lost each of the five has the activation of
    # 4 x 1500 sequential offers: GAIN * (1 - decay**n) / (1 - decay), about 997 here
    n = 4 * rounds
    expected = ws.GAIN * (1 - 0.999**n) / (1 - 0.999)
    held = dict(shared.held("shared"))
    assert set(held) == {1, 2, 3, 4, 5}
    for activation in held.values():
        assert activation == pytest.approx(expected)
