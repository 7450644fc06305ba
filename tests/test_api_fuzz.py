"""Issue 16, finding 4 (API robustness): no input to the sidecar's HTTP API gives a server error, and a failure
inside a route is logged with its traceback in ``logs/sidecar.log``.

A real sidecar (real SQLite, ``MEMCUE_NO_MODEL=1``) is fuzzed by schemathesis over its unix socket
(``benchmarks/api_fuzz.py``), and each kind of input the audit found a 500 for is sent on purpose: ids beyond
64 bits, NaN / infinite / far-off times, 40,000 ids to ``/expand``, an empty ``source_id`` twice, hook events
whose fields have unexpected types. Bodies go as raw bytes, so JSON's NaN and ``-1e999`` reach the server as a
client would send them. A route failing inside (its table dropped under it) and a malformed HTTP request both
end up in ``logs/sidecar.log``.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import apsw
import httpx
import pytest
from conftest import Sidecar, context_of, run_hook, start_sidecar, wait_until

from memcue.core.paths import Locations
from memcue.sidecar.store import NewMemory, Store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from api_fuzz import fuzz  # noqa: E402

#: Cases per operation and generation mode in the suite's fuzz run (about a minute on 2 cores).
FUZZ_EXAMPLES = 60
BIG_IDS = [2**63, 2**64 + 1, 10**40]


@pytest.fixture
def http(keyword_sidecar: Sidecar) -> Iterator[httpx.Client]:
    """An httpx client on the sidecar's unix socket (no proxies)."""
    transport = httpx.HTTPTransport(uds=str(keyword_sidecar.loc.socket))
    with httpx.Client(transport=transport, base_url="http://memcue", timeout=60, trust_env=False) as client:
        yield client


def post(http: httpx.Client, path: str, body: str | dict) -> httpx.Response:
    """POST ``body`` (raw JSON text, or an object to encode) to ``path``."""
    raw = body if isinstance(body, str) else json.dumps(body)
    return http.post(path, content=raw.encode(), headers={"content-type": "application/json"})


def refused(response: httpx.Response, *loc: str | int) -> None:
    """``response`` is a 422 whose errors name the field at ``loc`` (under ``body``)."""
    assert response.status_code == 422, (response.status_code, response.text)
    locs = [tuple(e.get("loc", ())) for e in response.json()["detail"]]
    assert ("body", *loc) in locs, (loc, response.text)


@pytest.mark.slow
def test_fuzzing_every_operation_gives_no_server_error(keyword_sidecar: Sidecar) -> None:
    report = fuzz(keyword_sidecar.loc.socket, FUZZ_EXAMPLES, seed=16)
    assert report.requests > 1000
    assert report.statuses[200] > 100  # valid requests got through, not only refusals
    assert (report.server_errors, report.no_answer) == (0, 0), json.dumps(report.samples, indent=1)[:4000]


def test_ids_beyond_64_bits_are_refused(http: httpx.Client) -> None:
    for big in BIG_IDS:
        refused(post(http, "/forget", {"ids": [big]}), "ids", 0)
        refused(post(http, "/fetch", {"ids": [1, big]}), "ids", 1)
        refused(post(http, "/expand", {"ids": [big]}), "ids", 0)
        refused(post(http, "/forget", {"ids": str(big)}), "ids", 0)
        refused(post(http, "/update", {"memory_id": big, "content": "x"}), "memory_id")
        refused(post(http, "/candidates/accept", {"id": big}), "id")
        refused(post(http, "/candidates/reject", {"id": big}), "id")
    top = 2**63 - 1
    assert post(http, "/fetch", {"ids": [top]}).json()["not_found"] == [top]
    assert post(http, "/forget", {"ids": [top]}).json()["not_found"] == [top]
    assert post(http, "/update", {"memory_id": top, "content": "x"}).status_code == 404
    assert post(http, "/candidates/accept", {"id": top}).status_code == 404


BAD_TIMES = ["NaN", "-1e999", "1e999", "Infinity", "-1", "1e20"]


def test_non_finite_and_far_times_are_refused_and_reads_still_work(keyword_sidecar: Sidecar,
                                                                     http: httpx.Client) -> None:
    project = str(keyword_sidecar.root / "proj")
    assert post(http, "/remember", {"content": "deploys go out on Tuesdays", "project": project}).status_code == 200
    for bad in BAD_TIMES:
        refused(post(http, "/remember", f'{{"content": "bad time {bad}", "created_at": {bad}}}'), "created_at")
        refused(post(http, "/remember/batch", f'{{"memories": [{{"content": "b", "created_at": {bad}}}]}}'),
                "memories", 0, "created_at")
        refused(post(http, "/update", f'{{"memory_id": 1, "content": "c", "valid_from": {bad}}}'), "valid_from")
        for field in ("as_of", "valid_at", "now"):
            refused(post(http, "/recall", f'{{"query": "deploys", "{field}": {bad}}}'), field)
        for side in ("from", "to"):
            refused(post(http, "/recall", f'{{"query": "deploys", "window": {{"{side}": {bad}}}}}'), "window", side)
    refused(post(http, "/recall", '{"query": "deploys", "weights": {"bm25": NaN}}'), "weights", "bm25")
    refused(post(http, "/remember", '{"content": "m", "metadata": {"score": -1e999}}'), "metadata")
    assert post(http, "/recall", {"query": "deploys", "as_of": "2999-12-31T00:00:00Z"}).status_code == 200

    listed = post(http, "/list", {"all_projects": True})
    assert listed.status_code == 200
    assert [m["content"] for m in listed.json()["results"]] == ["deploys go out on Tuesdays"]
    assert post(http, "/session_context", {"project": project}).status_code == 200
    start = run_hook({"session_id": "5e55-1", "transcript_path": "/tmp/t.jsonl", "cwd": project,
                      "hook_event_name": "SessionStart", "source": "startup"}, "session-start")
    assert start.returncode == 0, start.stderr
    assert "deploys go out on Tuesdays" in context_of(start)


def test_expand_takes_at_most_max_ids(http: httpx.Client) -> None:
    refused(post(http, "/expand", {"ids": list(range(1, 40_001))}), "ids")
    refused(post(http, "/expand", {"ids": ",".join(str(i) for i in range(1, 40_001))}), "ids")
    assert post(http, "/expand", {"ids": list(range(1, 1001))}).status_code == 200


def test_an_empty_source_id_twice_gives_two_memories(http: httpx.Client) -> None:
    first = post(http, "/remember", {"content": "the staging db is pg15", "source_id": ""})
    second = post(http, "/remember", {"content": "the prod db is pg16", "source_id": ""})
    assert (first.status_code, second.status_code) == (200, 200), second.text
    assert first.json()["id"] != second.json()["id"]
    batch = post(http, "/remember/batch", {"memories": [{"content": "queue is sqs", "source_id": ""},
                                                        {"content": "cache is redis", "source_id": ""}]})
    assert batch.status_code == 200, batch.text
    assert len({r["id"] for r in batch.json()}) == 2


WRONG_EVENTS = [
    ({"prompt": "why is the build slow", "extra": [1, 2]}, ("event", "extra")),
    ({"prompt": "why is the build slow", "extra": "req-1"}, ("event", "extra")),
    ({"prompt": ["why"]}, ("event", "prompt")),
    ({"prompt": "hi", "session_id": 7}, ("event", "session_id")),
    ({"prompt": "hi", "project": {"a": 1}}, ("event", "project")),
    ({"session_id": "s", "source": 5}, ("event", "source")),
]


@pytest.mark.parametrize("event", ["user-prompt-submit", "session-start"])
def test_hook_events_with_wrong_field_types_are_refused(http: httpx.Client, event: str) -> None:
    for body, loc in WRONG_EVENTS:
        refused(post(http, f"/hooks/claude-code/{event}", {"event": body}), *loc)
    refused(post(http, f"/hooks/claude-code/{event}", {"event": "not an object"}), "event")
    ok = post(http, f"/hooks/claude-code/{event}",
              {"event": {"prompt": "why is the build slow", "session_id": "s", "extra": {"request_id": "r1"},
                         "unknown_field": [1, {"x": None}]}})
    assert ok.status_code == 200, ok.text


def test_a_failure_inside_a_route_is_logged_with_its_traceback(keyword_sidecar: Sidecar,
                                                              http: httpx.Client) -> None:
    assert post(http, "/candidates", {}).status_code == 200
    con = apsw.Connection(str(keyword_sidecar.loc.database))
    con.setbusytimeout(10_000)
    con.execute("DROP TABLE candidates")  # a real fault under the route: its table is gone
    con.close()
    failed = post(http, "/candidates", {})
    assert failed.status_code == 500
    assert failed.headers["content-type"] == "application/json"
    assert failed.json()["code"] == "INTERNAL" and "SQLError" in failed.json()["detail"]
    log = keyword_sidecar.log()
    assert "POST /candidates failed" in log and "Traceback (most recent call last)" in log
    assert "no such table: candidates" in log
    assert post(http, "/list", {}).status_code == 200  # the same connection still answers


def test_a_malformed_request_is_answered_and_logged(keyword_sidecar: Sidecar) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(keyword_sidecar.loc.socket))
        sock.sendall(b"POST /remember HTTP/1.1\r\nHost: memcue\r\nContent-Length: x\r\n\r\n")
        assert sock.recv(1024).startswith(b"HTTP/1.1 400")
    assert wait_until(lambda: "Invalid HTTP request received" in keyword_sidecar.log(), 10)


def test_a_stored_infinite_time_does_not_break_reads(home: Path) -> None:
    """A row written with ``-1e999`` before times were checked (here straight into the store) is listed, fetched
    and recalled with an unknown age; the session-start block still opens."""
    project = str(home / "proj")
    store = Store(Locations(home).database)
    store.remember(NewMemory("the release branch is cut on Fridays", project=project, created_at=float("-inf")))
    store.remember(NewMemory("staging runs on port 8443", project=project))
    store.close()
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        listed = sc.client.list_recent(project=project)
        assert {m["age_label"] for m in listed["results"]} == {"today", "at an unknown time"}
        assert sc.client.fetch([1])["success"]
        assert sc.client.recall("when is the release branch cut", project=project, mode="keyword")["results"]
        start = run_hook({"session_id": "5e55-2", "transcript_path": "/tmp/t.jsonl", "cwd": project,
                          "hook_event_name": "SessionStart", "source": "startup"}, "session-start")
        assert start.returncode == 0, start.stderr
        assert "staging runs on port 8443" in context_of(start)
    finally:
        sc.stop()
