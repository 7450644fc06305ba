"""The recall pipeline through the real sidecar over its socket: contract fields, time filters, update and
as_of, the support-gate switch, the injection policy of the prompt hook, and the session-context boost."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import Sidecar, start_sidecar

from memcue.client import ClientError
from memcue.sidecar.inject import INJECT_COSINE_GAP, injectable
from memcue.sidecar.recall.boosts import SESSION_CONTEXT_GAMMA, session_context
from memcue.sidecar.store import NewMemory, Store

DAY = 86400.0
NOW = time.time()
ROWS = [
    {"content": "We pinned httpx to 0.27.2 because 0.28 broke proxy settings", "kind": "decision",
     "created_at": NOW - 40 * DAY},
    {"content": "Webhook sender retries: 5 attempts with exponential backoff from 2 s", "kind": "decision",
     "created_at": NOW - 30 * DAY},
    {"content": "Use ruff for linting and formatting", "kind": "convention", "created_at": NOW - 5 * DAY},
]


@pytest.fixture
def loaded(sidecar: Sidecar) -> Sidecar:
    sidecar.client.remember_batch([{**r, "project": "p"} for r in ROWS])
    sidecar.client.wait_idle(timeout_s=120)
    return sidecar


def test_recall_answers_with_every_channel_and_contract_field(loaded: Sidecar) -> None:
    answer = loaded.client.recall("why did we pin httpx?", project="p")
    assert set(answer["channel_status"]) == {"semantic", "bm25", "temporal", "graph", "hopfield"}
    assert answer["channel_status"]["semantic"] == "ok" and answer["tier"] == "supported"
    assert "httpx" in answer["results"][0]["content"]
    assert answer["reranker_status"] == "off" and answer["incomplete_channels"] == []


def test_window_as_iso_and_as_of_after_update_over_http(loaded: Sidecar) -> None:
    c = loaded.client
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - 35 * DAY))
    answer = c.recall("webhook retries httpx", project="p", window={"from": since})
    assert answer["results"] and all("httpx" not in r["content"] for r in answer["results"])
    old = c.recall("httpx pinned", project="p")["results"][0]["memory_id"]
    before_update = time.time()
    new = c.update({"memory_id": old, "content": "We pinned httpx to 0.28.1 once the proxy bug was fixed"})
    assert new["id"] != old
    now_ids = [r["memory_id"] for r in c.recall("httpx pinned", project="p")["results"]]
    assert new["id"] in now_ids and old not in now_ids
    then_ids = [r["memory_id"] for r in c.recall("httpx pinned", project="p", as_of=before_update)["results"]]
    assert old in then_ids and new["id"] not in then_ids
    with pytest.raises(ClientError):
        c.update({"memory_id": 999_999, "content": "x"})
    with pytest.raises(ClientError):  # an empty window is a usage error, not a crash
        c.recall("httpx", project="p", window={"from": "2026-01-02", "to": "2026-01-01"})


def test_support_gate_switch_by_environment(home: Path) -> None:
    sc = start_sidecar(home, MEMCUE_NO_SUPPORT_GATE="1")
    try:
        sc.client.remember_batch([{**r, "project": "p"} for r in ROWS])
        sc.client.wait_idle(timeout_s=120)
        answer = sc.client.recall("How do we deploy Kubernetes on Fridays with httpx?", project="p")
        assert answer["tier"] == "supported"
        assert all(r["tier"] == "supported" for r in answer["results"])
    finally:
        sc.stop()


def test_injection_policy_drops_weak_related_and_far_results() -> None:
    def result(mid: int, tier: str, cos: float | None, kind: str = "note") -> dict:
        return {"memory_id": mid, "tier": tier, "memory_kind": kind,
                "channel_scores": {} if cos is None else {"semantic": cos}}

    answer = {"tier": "supported", "query_type": "meaning", "results": [
        result(1, "supported", 0.70), result(2, "weak", 0.69), result(3, "supported", 0.70 - INJECT_COSINE_GAP / 2),
        result(4, "supported", 0.70 - INJECT_COSINE_GAP - 0.01), result(5, "supported", None)]}
    assert [r["memory_id"] for r in injectable(answer, 8)] == [1, 3, 5]
    assert injectable({**answer, "tier": "related"}, 8) == []
    asked = {"tier": "supported", "query_type": "request_recall",
             "results": [result(1, "supported", 0.7), result(2, "supported", 0.69, "request")]}
    assert [r["memory_id"] for r in injectable(asked, 8)] == [2]


def test_a_prompt_that_asks_what_was_done_gets_every_supported_piece_of_past_work() -> None:
    """"add a --check for roster.csv, flag the stuff that bit us before": the answer is a list of earlier fixes, so
    the cosine gap does not drop a supported episode, or a fix a commit confirmed, far below the closest result;
    a saved note that far below is still dropped, and for a task that does not ask what was done the gap holds."""
    def result(mid: int, cos: float, kind: str = "note", source: str = "mcp") -> dict:
        return {"memory_id": mid, "tier": "supported", "memory_kind": kind, "source": source,
                "support": "task", "channel_scores": {"semantic": cos}}

    far = 0.70 - INJECT_COSINE_GAP - 0.1
    results = [result(1, 0.70, "decision"), result(2, far, "change", "capture:episode-committed"),
               result(3, far, "note"), result(4, far, "episode", "hook:claude-code")]
    work = {"tier": "supported", "query_type": "work_recall", "results": results}
    assert [r["memory_id"] for r in injectable(work, 8)] == [1, 2, 4]
    task = {**work, "query_type": "meaning"}
    assert [r["memory_id"] for r in injectable(task, 8)] == [1]


def test_session_context_boost_lifts_the_neighbour_of_a_top_match(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db")
    ids = [w.id for w in store.remember_many([
        NewMemory("Melanie: what did you research last week?", project="p", session_id="s1", created_at=1.0),
        NewMemory("Caroline: adoption agencies, mostly in Oregon", project="p", session_id="s1", created_at=2.0),
        NewMemory("Caroline: I also went hiking", project="p", session_id="s1", created_at=3.0),
        NewMemory("Caroline: painting is my thing", project="p", session_id="s2", created_at=4.0),
    ])]
    neighbours = store.session_neighbours(ids)
    assert neighbours[ids[1]] == (ids[0], ids[2])
    assert neighbours[ids[3]] == (None, None)
    fused = [(ids[0], 0.06), (ids[3], 0.03), (ids[1], 0.02)]
    boost = session_context(fused, neighbours)
    # Each candidate passes a share of its score to its neighbours that are candidates too (ids[2] is not).
    assert boost == {ids[1]: pytest.approx(SESSION_CONTEXT_GAMMA * 0.06),
                     ids[0]: pytest.approx(SESSION_CONTEXT_GAMMA * 0.02)}
    store.close()


def test_layers_depth_and_token_cap_and_expand(loaded: Sidecar) -> None:
    from memcue.sidecar.runtime.tokenizer import TokenCounter

    c = loaded.client
    c.remember_batch([{"content": "httpx 0.28 broke the proxy settings of the billing client", "project": "p",
                       "session_id": "s-9"},
                      {"content": "We pinned httpx in the billing client until the proxy fix ships", "project": "p",
                       "session_id": "s-9", "kind": "decision"}])
    c.wait_idle(timeout_s=120)
    glance = c.recall("why did we pin httpx?", project="p", depth=0)
    top = glance["results"][0]
    assert set(top) >= {"memory_id", "tier", "score", "preview"} and "content" not in top
    assert len(top["preview"]) <= 120 and glance["layers"]["depth"] == 0
    deep = c.recall("why did we pin httpx?", project="p", depth=2)
    pinned = next(r for r in deep["results"] if r["content"].startswith("We pinned httpx in the billing"))
    assert pinned["context"]["session"] and pinned["context"]["session"][0]["content"].startswith("httpx 0.28")
    assert "source" in pinned["context"]
    counter = TokenCounter(loaded.loc.tiktoken_cache)  # the sidecar seeded o200k_base there
    full = c.recall("httpx proxy billing", project="p", depth=2)
    full_tokens = sum(counter.count(r["content"]) for r in full["results"])
    capped = c.recall("httpx proxy billing", project="p", depth=2, max_tokens=max(8, full_tokens // 3))
    layers = capped["layers"]
    assert layers["tokens"] <= layers["max_tokens"]
    assert layers["context_dropped"] or layers["shortened"] or layers["left_out"]
    assert sum(counter.count(r["content"]) for r in capped["results"]) <= layers["max_tokens"]
    expanded = c._call("POST", "/expand", json={"ids": f"{pinned['memory_id']},999999"})
    assert expanded["success"] and expanded["not_found"] == [999999]
    assert expanded["items"][0]["context"]["session"]
    assert c._call("POST", "/expand", json={"ids": [999998]})["success"] is False
