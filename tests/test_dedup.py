"""Near-duplicates on ``remember`` reinforce the stored memory (issue 6, item 5), with the real model."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memcue.sidecar.dedup import NEAR_DUPLICATE_COSINE, find_near_duplicate, same_specifics, specifics
from memcue.sidecar.recall import VectorIndex
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import NewMemory, Store
from tests.conftest import embed_pending, start_sidecar


def test_specifics() -> None:
    s = specifics("Call load_config() in memcue/sidecar/config.py; getUserById uses `db.users` v2.1, not 3")
    assert s.numbers == ("2.1", "3")
    assert "memcue/sidecar/config.py;" not in s.names and "memcue/sidecar/config.py" in s.names
    assert {"load_config", "getUserById", "db.users"} <= set(s.names)
    assert s.negations == ("not",)
    assert same_specifics("Retry 3 times on port 5432.", "retry 3 times, on port 5432")
    assert not same_specifics("3 retries, 5 s apart", "5 retries, 3 s apart")  # numbers compare in order
    assert not same_specifics("retry 3 times", "retry 5 times")
    assert not same_specifics("the cache is invalidated", "the cache is not invalidated")
    assert not same_specifics("use getUserById", "use getUserByName")
    assert same_specifics("see e.g. the docs", "for example see the docs")
    assert same_specifics("cron builds it every 15 min", "cron builds it every 15 minutes")  # a unit, not "minimum"
    assert not same_specifics("keep the min pool size", "keep the max pool size")


@pytest.fixture
def store(tmp_path: Path, embedder: Embedder) -> Iterator[Store]:
    s = Store(tmp_path / "m.db")
    assert s.bind_model(embedder.model_id, embedder.dim)
    yield s
    s.close()


def _check(store: Store, embedder: Embedder, text: str, project: str = "p", kind: str = "note") -> int | None:
    return find_near_duplicate(store, VectorIndex(), embedder, NewMemory(content=text, project=project,
                                                                         kind=kind)).memory_id


STORED = [
    "Decided to store vectors in sqlite-vec instead of FAISS.",
    "The sidecar retries the embed call 3 times before giving up.",
    "We use Postgres on port 5432 for the staging database.",
    "Use OPENBLAS_NUM_THREADS=1 when numpy and onnxruntime share a process.",
    "The build uses python 3.11",
    "Call load_config() to read the settings.",
    "The config file lives at memcue/sidecar/config.py",
    "The cache is invalidated on every write.",
    "Alice owns the billing service.",
]


@pytest.fixture
def filled(store: Store, embedder: Embedder) -> dict[str, int]:
    ids = {text: store.remember(NewMemory(content=text, project="p")).id for text in STORED}
    embed_pending(store, embedder)
    return ids


@pytest.mark.parametrize(("new", "old"), [
    ("We decided to store the vectors in sqlite-vec rather than FAISS.", STORED[0]),
    ("The billing service is owned by Alice.", STORED[8]),
    ("the build uses Python 3.11.", STORED[4]),
])
def test_paraphrase_with_the_same_specifics_merges(store: Store, embedder: Embedder, filled: dict[str, int],
                                                   new: str, old: str) -> None:
    assert _check(store, embedder, new) == filled[old]


@pytest.mark.parametrize("new", [
    "The sidecar retries the embed call 5 times before giving up.",
    "We use Postgres on port 5433 for the staging database.",
    "The build uses python 3.12",
    "Call load_settings() to read the settings.",
    "The config file lives at memcue/hooks/config.py",
    "The cache is not invalidated on every write.",
])
def test_different_numbers_identifiers_paths_or_negation_never_merge(store: Store, embedder: Embedder,
                                                                     filled: dict[str, int], new: str) -> None:
    assert _check(store, embedder, new) is None


def test_cosine_alone_would_have_merged_digit_differences(store: Store, embedder: Embedder,
                                                          filled: dict[str, int]) -> None:
    a, b = embedder.embed(["We use Postgres on port 5432 for the staging database.",
                           "We use Postgres on port 5433 for the staging database."])
    assert float(a @ b) >= NEAR_DUPLICATE_COSINE, "the specifics check is what keeps them apart"


def test_other_project_or_kind_does_not_merge(store: Store, embedder: Embedder, filled: dict[str, int]) -> None:
    text = "We decided to store the vectors in sqlite-vec rather than FAISS."
    assert _check(store, embedder, text, project="other") is None
    assert _check(store, embedder, text, kind="decision") is None


def test_warming_model_skips_the_check(store: Store, filled: dict[str, int], tmp_path: Path) -> None:
    cold = Embedder(tmp_path / "models")  # never loaded: state "warming"
    check = find_near_duplicate(store, VectorIndex(), cold, NewMemory(content=STORED[0], project="p"))
    assert check.memory_id is None and check.vector is None


def _wait_ready(sc, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        health = sc.client.health()
        if health["model"]["state"] == "ready" and health["vector_search"]:
            return
        time.sleep(0.2)
    raise AssertionError("model not ready")


def test_real_sidecar_reinforces_near_duplicates(home: Path) -> None:
    sc = start_sidecar(home)
    try:
        _wait_ready(sc)
        first = sc.client.remember("Decided to store vectors in sqlite-vec instead of FAISS.", project="proj")
        assert first["duplicate"] is False
        again = sc.client.remember("We decided to store the vectors in sqlite-vec rather than FAISS.",
                                   project="proj", tags=["vectors"])
        assert again == {**first, "duplicate": True}
        assert sc.client.fetch([first["id"]])["results"][0]["tags"] == ["vectors"], "its tags join the memory's"
        other = sc.client.remember("We decided to store the vectors in sqlite-vec rather than FAISS.",
                                   project="elsewhere")
        assert other["duplicate"] is False and other["id"] != first["id"]
        port = sc.client.remember("Staging Postgres listens on port 5432.", project="proj")
        port2 = sc.client.remember("Staging Postgres listens on port 5433.", project="proj")
        assert not port2["duplicate"] and port2["id"] != port["id"]
        exact = sc.client.remember("Decided to store vectors in sqlite-vec instead of FAISS.", project="proj")
        assert exact["duplicate"] and exact["id"] == first["id"]
        rows = sc.client.expand([first["id"]])["items"]
        assert len(rows) == 1
        store = Store(sc.loc.database, want_vec=False)
        try:
            row = store.fetch([first["id"]])[first["id"]]
            assert row["seen_count"] == 3
            assert row["updated_at"] > row["created_at"]
        finally:
            store.close()
    finally:
        sc.stop()
