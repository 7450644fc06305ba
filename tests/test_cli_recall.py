"""``memcue recall`` flags against the real sidecar (keyword-only, for speed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import start_sidecar


def _recall(home: Path, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "memcue", "recall", *args, "--project", "p", "--json"],
                          env={**os.environ, "MEMCUE_HOME": str(home)}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_include_requests_lets_captured_prompts_answer(home: Path) -> None:
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        sc.client.remember("please make the billing retry loop give up after five attempts", kind="request",
                           project="p")
        plain = _recall(home, "billing retry loop")
        asked = _recall(home, "billing retry loop", "--include-requests")
    finally:
        sc.stop()
    results = lambda answer: [r["content"] for r in answer.get("data", answer)["results"]]  # noqa: E731
    assert results(plain) == [], "captured prompts stay out of ordinary recall"
    assert results(asked) == ["please make the billing retry loop give up after five attempts"]


def test_what_did_i_ask_for_lists_the_newest_prompts(home: Path) -> None:
    """A request question that names no topic ("what did I ask for?") answers with the newest prompts."""
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        for i, text in enumerate(["add a retry to the Taxly client", "rename amount to amount_minor"]):
            sc.client.remember(text, kind="request", project="p", created_at=1_700_000_000 + i)
        sc.client.remember("we use Postgres advisory locks for the scheduler", project="p")
        answer = _recall(home, "what did I ask for?")
        topic = _recall(home, "what did I ask about the Taxly client?")
    finally:
        sc.stop()
    data = answer.get("data", answer)
    assert data["tier"] == "supported" and data["answered_from"] == "newest_requests"
    assert [r["content"] for r in data["results"]] == ["rename amount to amount_minor",
                                                        "add a retry to the Taxly client"]
    assert topic.get("data", topic)["results"][0]["content"] == "add a retry to the Taxly client"


def test_what_did_i_ask_for_finds_prompts_behind_many_newer_memories(home: Path) -> None:
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        sc.client.remember("add a retry to the Taxly client", kind="request", project="p", created_at=1_700_000_000)
        sc.client.remember_batch([{"content": f"imported note {i} about the ledger", "project": "p",
                                   "created_at": 1_700_000_100 + i} for i in range(150)])
        answer = _recall(home, "what did I ask for?")
    finally:
        sc.stop()
    data = answer.get("data", answer)
    assert [r["content"] for r in data["results"]] == ["add a retry to the Taxly client"]


def test_weak_matches_are_hidden_unless_asked_and_labelled_after_the_score(home: Path) -> None:
    sc = start_sidecar(home)  # the real model: the weak tier needs the semantic channel
    try:
        sc.client.remember("use jwt middleware v8 with clock-skew 30s", project="p", kind="decision")
        sc.client.wait_idle(timeout_s=120)
        env = {**os.environ, "MEMCUE_HOME": str(home)}
        run = [sys.executable, "-m", "memcue", "recall", "how do we handle jwt here?", "--project", "p"]
        plain = subprocess.run(run, env=env, capture_output=True, text=True, timeout=60)
        weak = subprocess.run([*run, "--show-weak"], env=env, capture_output=True, text=True, timeout=60)
        answer = _recall(home, "how do we handle jwt here?")["data"]
    finally:
        sc.stop()
    assert [r["tier"] for r in answer["results"]] == ["weak"], "the case this test is about: one weak match"
    assert plain.returncode == weak.returncode == 0
    assert "clock-skew" not in plain.stdout and "1 weak match not shown: --show-weak lists them" in plain.stdout
    line = next(line for line in weak.stdout.splitlines() if line.startswith("1. #"))
    assert re.match(r"1\. #\d+ \d\.\d\d \[weak\] \(decision, ", line), line
    assert "clock-skew" in weak.stdout


def test_times_are_iso_8601_or_unix_seconds(home: Path) -> None:
    """``--as-of`` / ``--since`` take Unix seconds as the API does; a typo is a usage error naming both forms."""
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        written = sc.client.remember("we pin httpx to 0.28 because 0.29 broke unix sockets", kind="decision",
                                     project="p")["id"]
        before = _recall(home, "httpx pin", "--as-of", "1700000000", "--show-weak")
        after = _recall(home, "httpx pin", "--since", "1700000000", "--show-weak")
    finally:
        sc.stop()
    ids = lambda answer: [r["memory_id"] for r in answer["data"]["results"]]  # noqa: E731
    assert ids(before) == [] and ids(after) == [written]
    typo = subprocess.run([sys.executable, "-m", "memcue", "recall", "httpx", "--as-of", "17x"],
                          env={**os.environ, "MEMCUE_HOME": str(home)}, capture_output=True, text=True, timeout=60)
    assert typo.returncode == 2 and "nor Unix seconds" in typo.stderr
