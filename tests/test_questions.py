"""Serving questions through the real sidecar with real concurrent clients: slots and RECALL_BUSY (exit 75
in the CLI), single flight, the answer cache and its store generation, and the query-embedding LRU."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import start_sidecar

from memcue.client import Client, SidecarBusy
from memcue.sidecar.runtime.embedding import Embedder

ROWS = [{"content": "We pinned httpx to 0.27.2 because 0.28 broke proxy settings", "project": "p"},
        {"content": "Webhook retries use exponential backoff, 5 attempts", "project": "p"}]


def _ask_together(client_factory, queries: list[str]) -> list[object]:
    """Ask every query at the same moment from its own client and thread; answers or exceptions, in order."""
    out: list[object] = [None] * len(queries)
    barrier = threading.Barrier(len(queries))

    def one(i: int, q: str) -> None:
        with client_factory() as c:
            barrier.wait()
            try:
                out[i] = c.recall(q, project="p")
            except Exception as exc:  # noqa: BLE001 - the test inspects it
                out[i] = exc

    threads = [threading.Thread(target=one, args=(i, q)) for i, q in enumerate(queries)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def test_busy_slots_answer_503_recall_busy_and_the_cli_exits_75(home: Path) -> None:
    sc = start_sidecar(home, MEMCUE_RECALL_SLOTS="1", MEMCUE_RECALL_WAIT_S="0.2", MEMCUE_RECALL_DELAY_S="1.0")
    try:
        sc.client.remember_batch(ROWS)
        answers = _ask_together(lambda: Client(sc.loc, timeout_s=30), ["httpx pin", "webhook retries", "proxy"])
        busy = [a for a in answers if isinstance(a, SidecarBusy)]
        done = [a for a in answers if isinstance(a, dict)]
        assert len(done) == 1 and len(busy) == 2, answers
        assert "Ask again in about" in str(busy[0]) and "nothing was lost" in str(busy[0])
        assert busy[0].retry_after_s and busy[0].retry_after_s >= 1
        # The CLI prints the sentence and exits 75 while a slow question holds the only slot.
        holder = threading.Thread(target=lambda: Client(sc.loc, timeout_s=30).recall("holding", project="p"))
        holder.start()
        time.sleep(0.3)
        cli = subprocess.run([sys.executable, "-m", "memcue", "recall", "proxy settings", "--project", "p"],
                             env={**os.environ, "MEMCUE_HOME": str(home)}, capture_output=True, text=True, timeout=60)
        holder.join(30)
        assert cli.returncode == 75, (cli.stdout, cli.stderr)
        assert "memcue is answering other questions right now" in cli.stderr
        assert sc.client.health()["questions"]["busy"] >= 3
    finally:
        sc.stop()


def test_identical_questions_share_one_run_and_the_answer_is_cached_until_a_write(home: Path) -> None:
    sc = start_sidecar(home, MEMCUE_RECALL_DELAY_S="0.5")
    try:
        sc.client.remember_batch(ROWS)
        sc.client.wait_idle(timeout_s=120)  # vectors in place: answers are complete, so cacheable
        answers = _ask_together(lambda: Client(sc.loc, timeout_s=30), ["why is httpx pinned?"] * 4)
        assert all(isinstance(a, dict) for a in answers), answers
        sources = sorted(a["answer_source"] for a in answers)  # type: ignore[index]
        stats = sc.client.health()["questions"]
        assert stats["runs"] == 1 and sources.count("run") == 1, (stats, sources)
        assert sources.count("shared") + sources.count("cache") == 3
        again = sc.client.recall("why is httpx pinned?", project="p")
        assert again["answer_source"] == "cache"
        sc.client.remember("httpx is pinned in the billing client only", project="p")  # a write drops the cache
        fresh = sc.client.recall("why is httpx pinned?", project="p")
        assert fresh["answer_source"] == "run"
        assert sc.client.health()["questions"]["runs"] == 2
    finally:
        sc.stop()


def test_answer_cache_expires(home: Path) -> None:
    sc = start_sidecar(home, MEMCUE_ANSWER_CACHE_TTL_S="0.3")
    try:
        sc.client.remember_batch(ROWS)
        sc.client.wait_idle(timeout_s=120)
        assert sc.client.recall("webhook retries", project="p")["answer_source"] == "run"
        assert sc.client.recall("webhook retries", project="p")["answer_source"] == "cache"
        time.sleep(0.5)
        assert sc.client.recall("webhook retries", project="p")["answer_source"] == "run"
    finally:
        sc.stop()


def test_query_embedding_lru(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder) -> None:
    first = embedder.embed_query("a question asked twice")
    hits = embedder.cache_hits
    second = embedder.embed_query("a question asked twice")
    assert embedder.cache_hits == hits + 1 and second is first and not second.flags.writeable
    monkeypatch.setenv("MEMCUE_EMBEDDING_CACHE_SIZE", "0")
    off = Embedder(embedder._models_dir)
    off.load()
    assert off.cache_size == 0
    off.embed_query("x")
    off.embed_query("x")
    assert off.cache_hits == 0 and off.cache_stats()["entries"] == 0
    monkeypatch.setenv("MEMCUE_EMBEDDING_CACHE_SIZE", "2")
    small = Embedder(embedder._models_dir)
    small.load()
    for text in ("a", "b", "c", "a"):
        small.embed_query(text)
    assert small.cache_stats()["entries"] == 2 and small.cache_hits == 0  # "a" was evicted by "c"


def test_background_embedding_steps_aside_while_a_question_runs(home: Path) -> None:
    sc = start_sidecar(home, MEMCUE_RECALL_DELAY_S="2.0")
    try:
        sc.client.remember_batch(ROWS)
        sc.client.wait_idle(timeout_s=120)
        holder = threading.Thread(target=lambda: Client(sc.loc, timeout_s=30).recall("httpx", project="p"))
        holder.start()
        time.sleep(0.3)  # the question holds its slot for 2 s
        sc.client.remember_batch([{"content": f"note {i} about the billing export format", "project": "p"}
                                  for i in range(40)])
        time.sleep(0.8)
        during = sc.client.health()
        assert during["counts"]["pending_embeddings"] == 40  # nothing embedded while the question runs
        assert during["background_yields"] >= 1
        holder.join(30)
        after = sc.client.wait_idle(timeout_s=120)
        assert after["counts"]["pending_embeddings"] == 0
    finally:
        sc.stop()


def test_background_embedding_waits_for_a_gap_in_a_stream_of_questions(home: Path) -> None:
    """Questions one after another (as sessions prompting, one of them pasting logs back to back): the new
    rows are not embedded in the moments between two questions, only once none came for ``QUIET_GAP_S``
    (issue 13: embedding in those moments slowed the next prompt)."""
    sc = start_sidecar(home)
    try:
        sc.client.remember_batch(ROWS)
        sc.client.wait_idle(timeout_s=120)
        stop = threading.Event()

        def stream() -> None:
            asking = Client(sc.loc, timeout_s=30)
            n = 0
            while not stop.is_set():  # a new question each time: a repeated one is answered from the cache
                n += 1
                asking.recall(f"which http client do we use for service {n}", project="p")
                time.sleep(0.02)

        asker = threading.Thread(target=stream)
        asker.start()
        try:
            time.sleep(0.5)
            sc.client.remember_batch([{"content": f"note {i} about the billing export format", "project": "p"}
                                      for i in range(5)])
            time.sleep(1.5)
            assert sc.client.health()["counts"]["pending_embeddings"] == 5
        finally:
            stop.set()
            asker.join(30)
        assert sc.client.wait_idle(timeout_s=60)["counts"]["pending_embeddings"] == 0
    finally:
        sc.stop()
