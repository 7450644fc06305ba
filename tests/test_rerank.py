"""The optional cross-encoder reranker: off by default, never downloads, never blocks a recall.

No cross-encoder ships offline, so the error paths run fastembed's real ``TextCrossEncoder`` (with the network
cut at the socket, every attempt recorded, caches in tmp), while the loading and ready paths use ``FakeCrossEncoder``, a
small stand-in for ``TextCrossEncoder`` at the edge: it has the same ``rerank(query, documents, batch_size)``
shape and records the keyword arguments the reranker builds it with.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memcue.sidecar.recall import Reranker
from memcue.sidecar.recall.rerank import ENV_MODEL, ENV_MODEL_PATH

MODEL = "Xenova/ms-marco-MiniLM-L-6-v2"


class FakeCrossEncoder:
    """Stands in for ``TextCrossEncoder``: score = how many query words a document carries (ties possible)."""

    def __init__(self, model_name: str, *, gate: threading.Event | None = None, fail_scoring: bool = False,
                 **kwargs: Any) -> None:
        if gate is not None:
            assert gate.wait(10), "the test never released the load"
        self.model_name, self.kwargs, self.fail_scoring = model_name, kwargs, fail_scoring
        self.calls = 0

    def rerank(self, query: str, documents: Iterable[str], batch_size: int = 64) -> Iterator[float]:
        self.calls += 1
        if self.fail_scoring and self.calls > 1:  # the warm-up call passes
            raise RuntimeError("onnx session died")
        words = set(query.lower().split())
        for doc in documents:
            yield float(len(words & set(doc.lower().split())))


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Any]:
    """Cut the network at the socket and DNS (every attempt is recorded and refused) and point every cache
    at an empty folder under tmp."""
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError("network disabled in this test")

    def no_dns(host: Any, *args: Any, **kwargs: Any) -> Any:
        attempts.append(host)
        raise socket.gaierror("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    # HF_HUB_OFFLINE stays unset on purpose: fastembed would turn it into local_files_only by itself, and
    # then this test could not tell whether the reranker asks for local files only.
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "fastembed"))
    return attempts


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def test_off_without_configuration() -> None:
    r = Reranker(env={})
    assert r.status == "off" and ENV_MODEL in r.note
    assert r.start() is None
    assert r.scores("q", ["a"]) is None and r.rerank("q", [(1, "a")]) is None
    assert Reranker("", env={ENV_MODEL: MODEL}).status == "off"  # an explicit "" (config says off) wins


def test_reads_the_environment() -> None:
    r = Reranker(env={ENV_MODEL: f" {MODEL} ", ENV_MODEL_PATH: "/somewhere/model"})
    assert (r.status, r.model_name, r.model_path) == ("warming", MODEL, "/somewhere/model")


def test_a_model_not_on_disk_is_an_error_and_nothing_is_downloaded(no_network: list[Any], tmp_path: Path) -> None:
    cache = tmp_path / "models"
    r = Reranker(MODEL, cache, env={})
    thread = r.start()
    assert thread is not None
    thread.join(60)
    assert r.status == "error", r.note
    assert "Could not load model" in r.note and "never downloads" in r.note
    assert no_network == []  # not even an attempt to connect
    assert _files(cache) == [] and _files(tmp_path / "hf") == [] and _files(tmp_path / "fastembed") == []
    assert r.scores("q", ["a"]) is None


def test_an_unknown_model_name_is_an_error(no_network: list[Any], tmp_path: Path) -> None:
    r = Reranker("nobody/no-such-reranker", tmp_path, env={})
    r.load()
    assert r.status == "error" and "not supported" in r.note and no_network == []


def test_a_model_path_that_is_not_a_folder_is_an_error(no_network: list[Any], tmp_path: Path) -> None:
    r = Reranker(MODEL, tmp_path, model_path=str(tmp_path / "missing"), env={})
    r.load()
    assert r.status == "error" and ENV_MODEL_PATH in r.note and no_network == []


def test_an_empty_model_folder_is_an_error(no_network: list[Any], tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    r = Reranker(MODEL, tmp_path, model_path=str(folder), env={})
    r.load()
    assert r.status == "error" and "model.onnx" in r.note and no_network == []


def test_scores_return_none_at_once_while_loading() -> None:
    gate = threading.Event()
    r = Reranker(MODEL, "/tmp/x", env={}, factory=lambda name, **kw: FakeCrossEncoder(name, gate=gate, **kw))
    r.start()
    try:
        assert r.status == "warming"
        t0 = time.perf_counter()
        assert r.scores("httpx pin", ["pinned httpx"]) is None
        assert r.rerank("httpx pin", [(1, "pinned httpx")]) is None
        assert time.perf_counter() - t0 < 0.05  # never waits for the load
    finally:
        gate.set()
    assert r.ready.wait(10) and r.status == "ready"
    assert r.scores("httpx pin", ["pinned httpx"]) == [1.0]


def test_ready_path_builds_an_offline_single_thread_model_and_reorders() -> None:
    built: list[FakeCrossEncoder] = []

    def factory(name: str, **kw: Any) -> FakeCrossEncoder:
        built.append(FakeCrossEncoder(name, **kw))
        return built[-1]

    r = Reranker(MODEL, "/data/models", model_path=None, env={}, factory=factory)
    r.load()
    assert r.status == "ready", r.note
    assert built[0].model_name == MODEL
    assert built[0].kwargs == {"threads": 1, "local_files_only": True, "lazy_load": False,
                               "enable_cpu_mem_arena": False, "cache_dir": "/data/models"}
    items = [(7, "the retry policy"), (3, "retry policy uses exponential backoff"), (5, "pinned httpx"),
             (2, "backoff retry policy")]
    assert r.scores("retry policy backoff", [t for _, t in items]) == [2.0, 3.0, 0.0, 3.0]
    # best first; the 3.0 tie between ids 3 and 2 goes to the lower id
    assert r.rerank("retry policy backoff", items) == [(2, 3.0), (3, 3.0), (7, 2.0), (5, 0.0)]
    assert r.scores("q", []) == []


def test_model_path_is_passed_as_specific_model_path(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def factory(name: str, **kw: Any) -> FakeCrossEncoder:
        seen.update(kw)
        return FakeCrossEncoder(name, **kw)

    Reranker(MODEL, None, model_path=str(tmp_path), env={}, factory=factory).load()
    assert seen["specific_model_path"] == str(tmp_path) and seen["local_files_only"] is True
    assert "cache_dir" not in seen


def test_a_scoring_failure_gives_none_and_a_note_then_recovers() -> None:
    holder: list[FakeCrossEncoder] = []

    def factory(name: str, **kw: Any) -> FakeCrossEncoder:
        holder.append(FakeCrossEncoder(name, fail_scoring=True, **kw))
        return holder[-1]

    r = Reranker(MODEL, None, env={}, factory=factory)
    r.load()
    assert r.status == "ready"
    assert r.scores("q", ["a"]) is None
    assert "scoring failed" in r.note and "onnx session died" in r.note
    holder[0].fail_scoring = False
    assert r.scores("a", ["a"]) == [1.0] and "scoring failed" not in r.note


def test_a_load_failure_in_the_factory_is_an_error() -> None:
    def factory(name: str, **kw: Any) -> FakeCrossEncoder:
        raise OSError("disk gone")

    r = Reranker(MODEL, None, env={}, factory=factory)
    r.start().join(10)  # type: ignore[union-attr]
    assert r.status == "error" and "OSError: disk gone" in r.note and r.ready.is_set()


def test_start_is_idempotent() -> None:
    r = Reranker(MODEL, None, env={}, factory=FakeCrossEncoder)
    first = r.start()
    assert first is not None and r.start() is first
    first.join(10)
    assert r.status == "ready"


def test_close_waits_for_a_load_in_progress_bounded() -> None:
    """Stopping the sidecar while the reranker loads waits for the load (bounded), so the interpreter never
    exits under a thread inside onnxruntime."""
    gate = threading.Event()
    r = Reranker(MODEL, "/tmp/x", env={}, factory=lambda name, **kw: FakeCrossEncoder(name, gate=gate, **kw))
    assert r.close(0.01)  # never started: nothing to wait for
    r.start()
    assert not r.close(0.05)  # still loading: says so after the bound
    threading.Timer(0.2, gate.set).start()
    assert r.close(10) and r.status == "ready"
