"""The optional answer check (issue 6): a loopback OpenAI-compatible judge, a real sidecar, real recalls."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from conftest import context_of, prompt_payload, run_hook, start_sidecar
from model_stubs import ModelStub

from memcue.sidecar.answer_check import AnswerCheckConfig, AnswerChecker, parse_config, parse_verdict

FACT = "The billing queue retries a failed Stripe webhook five times, then parks it in the dead-letter table"
QUESTION = "how many times does the billing queue retry a failed stripe webhook?"


def _verdict(answerable: bool, confidence: float = 0.9) -> str:
    return json.dumps({"answerable": answerable, "confidence": confidence, "reason": "memory 1 states it"})


def _sidecar(home: Path, url: str, **env: str):
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1", MEMCUE_ANSWER_CHECK_URL=url,
                       MEMCUE_ANSWER_CHECK_MODEL="stub-model", **env)
    sc.client.remember(FACT, project="p", kind="decision")
    return sc


@pytest.mark.parametrize("answerable", [True, False])
def test_the_judge_labels_the_answer_and_never_hides_a_result(home: Path, answerable: bool) -> None:
    with ModelStub("chat", reply=_verdict(answerable)) as stub:
        sc = _sidecar(home, stub.url + "/v1")
        try:
            answer = sc.client.recall(QUESTION, project="p")
            again = sc.client.recall(QUESTION, project="p")  # the same answer from the cache: judged once
        finally:
            sc.stop()
    assert again["query_id"] == answer["query_id"] and again["answerability"] == answer["answerability"]
    assert answer["answer_check_status"] == "judged"
    assert answer["answerability"] == ("supported" if answerable else "unsupported")
    assert answer["answer_confidence"] == 0.9 and answer["answerability_reason"] == "memory 1 states it"
    assert answer["calibration_status"] == "uncalibrated"
    assert [r["content"] for r in answer["results"]][:1] == [FACT], "judged or not, the results stay"
    (asked,) = stub.requests
    assert QUESTION in asked.text and FACT in asked.text and asked.body["model"] == "stub-model"


def test_a_proxy_in_the_environment_does_not_reroute_the_loopback_judge(home: Path) -> None:
    """HTTP_PROXY/ALL_PROXY point at a closed port: a loopback judge must still be asked directly (issue 16)."""
    with ModelStub("chat", reply=_verdict(True)) as stub:
        dead = "http://127.0.0.1:9"
        sc = _sidecar(home, stub.url + "/v1", HTTP_PROXY=dead, http_proxy=dead, ALL_PROXY=dead, all_proxy=dead)
        try:
            answer = sc.client.recall(QUESTION, project="p")
        finally:
            sc.stop()
    assert answer["answer_check_status"] == "judged" and len(stub.requests) == 1


def test_off_by_default_and_a_remote_judge_needs_consent(home: Path) -> None:
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        sc.client.remember(FACT, project="p")
        off = sc.client.recall(QUESTION, project="p")
    finally:
        sc.stop()
    assert (off["answer_check_status"], off["answerability"]) == ("off", "unjudged")
    remote = AnswerChecker(AnswerCheckConfig(url="https://judge.example.com/v1", model="m"))
    assert not remote.enabled and "allow_remote" in remote.off_reason
    assert AnswerChecker(AnswerCheckConfig(url="https://judge.example.com/v1", model="m", allow_remote=True)).enabled


def test_a_slow_or_dead_judge_costs_no_more_than_the_budget(home: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    with ModelStub("chat", reply=_verdict(True), delay_s=3.0) as stub:
        sc = _sidecar(home, stub.url + "/v1")
        try:
            started = time.monotonic()
            slow = sc.client.recall(QUESTION, project="p", budget_s=0.8)
            took = time.monotonic() - started
        finally:
            sc.stop()
    sc = _sidecar(home, dead)
    try:
        down = sc.client.recall(QUESTION, project="p")
    finally:
        sc.stop()
    assert slow["answer_check_status"] == "unavailable" and slow["answerability"] == "unjudged"
    assert took < 2.5, "the judge's 3 s did not hold the answer past its 0.8 s budget"
    assert slow["results"] and down["results"]
    assert down["answer_check_status"] == "unavailable" and down["answer_confidence"] is None


def test_hooks_are_never_judged(home: Path, tmp_path: Path) -> None:
    with ModelStub("chat", reply=_verdict(True)) as stub:
        sc = _sidecar(home, stub.url + "/v1")
        try:
            sc.client.remember(FACT, project=str(tmp_path), kind="decision")
            env = {"MEMCUE_HOME": str(home), "MEMCUE_HOOK_SPAWN": "0", "PATH": "/usr/bin:/bin"}
            block = context_of(run_hook(prompt_payload(QUESTION, str(tmp_path)), env=env))
            start = context_of(run_hook({"session_id": "s", "cwd": str(tmp_path), "source": "startup",
                                         "hook_event_name": "SessionStart"}, "session-start", env=env))
        finally:
            sc.stop()
    assert FACT in block and FACT in start
    assert stub.requests == [], "neither a prompt hook nor session start waits for a judge"


def test_parse_verdict_and_config() -> None:
    assert parse_verdict('Sure. {"answerable": true, "confidence": 1.7, "reason": "x"}') == (True, 1.0, "x")
    assert parse_verdict('{"answerable": false}') == (False, None, "")
    for bad in ("no json here", '{"answerable": "yes"}'):
        with pytest.raises(ValueError):
            parse_verdict(bad)
    config, problems = parse_config({"url": "http://127.0.0.1:1/v1", "model": "m", "timeout_s": -1}, {})
    assert config.url.endswith("/v1") and config.timeout_s == 3.0 and problems == [
        "answer_check.timeout_s = -1 is not valid; ignored"]
    config, _ = parse_config(None, {"MEMCUE_ANSWER_CHECK_URL": "http://localhost:9/v1"})
    assert config.url == "http://localhost:9/v1"
