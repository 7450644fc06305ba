"""The in-memory vector index against sqlite-vec on a real store with the real model (issue 4's KNN speed-up
must not change what the semantic channel finds)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import embed_pending

from memcue.sidecar.recall import VectorIndex
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import NewMemory, Store
from memcue.sidecar.store.write import journal

TEXTS = [
    "Pinned httpx to 0.27 because 0.28 removed the proxies argument",
    "The retry policy uses exponential backoff with jitter, capped at 30 seconds",
    "We lint with ruff at line length 120",
    "Database migrations run through alembic before every deploy",
    "The CI pipeline caches pip wheels keyed on the requirements hash",
    "Auth tokens live in the OS keyring, never in plain files",
    "The frontend bundle is built with Vite",
    "Deploys to staging happen from the main branch after CI passes",
]
QUERIES = ["which httpx version is pinned?", "how do we retry failed calls?", "where do tokens live?",
           "how is the frontend built?", "what runs before a deploy?"]




@pytest.fixture
def store(tmp_path: Path, embedder: Embedder) -> Iterator[Store]:
    s = Store(tmp_path / "v.db")
    assert s.bind_model(embedder.model_id, embedder.dim)
    s.remember_many([NewMemory(t, project="api" if i % 3 else "web") for i, t in enumerate(TEXTS)])
    s.remember(NewMemory("Always write commit messages in the imperative mood", project=""))
    s.remember(NewMemory("please bump httpx and rerun the tests", kind="request", project="api"))
    embed_pending(s, embedder)
    yield s
    s.close()


@pytest.mark.parametrize("project,exclude", [("api", ("request",)), ("web", ()), (None, ("request",)), (None, ())])
def test_same_neighbours_as_sqlite_vec(store: Store, embedder: Embedder, project: str | None,
                                       exclude: tuple[str, ...]) -> None:
    index = VectorIndex()
    for query in QUERIES:
        vector = embedder.embed_query(query)
        ours = index.search(store, vector, project=project, k=5, exclude_kinds=exclude)
        theirs = store.knn(vector.tobytes(), project=project, k=5, exclude_kinds=exclude)
        assert [mid for mid, _ in ours] == [mid for mid, _ in theirs], query
        assert [s for _, s in ours] == pytest.approx([s for _, s in theirs], abs=1e-5)


def test_superseded_rows_only_when_asked(store: Store, embedder: Embedder) -> None:
    index = VectorIndex()
    old = next(r["id"] for r in store.list_memories(limit=50) if r["content"] == TEXTS[0])
    new = store.update(old, NewMemory("Pinned httpx to 0.28 now that the proxies argument is gone"))
    embed_pending(store, embedder)
    vector = embedder.embed_query("httpx pin")
    current = [mid for mid, _ in index.search(store, vector, project="web", k=20)]
    history = [mid for mid, _ in index.search(store, vector, project="web", k=20, include_superseded=True)]
    assert old not in current and new.id in current
    assert old in history and new.id in history


def test_rebinding_or_a_new_journal_epoch_reloads(store: Store, embedder: Embedder,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    index = VectorIndex()
    vector = embedder.embed_query("retry policy")
    index.search(store, vector, project=None, k=3)
    assert index.loads == 1
    assert store.bind_model(embedder.model_id, embedder.dim)  # the vector table bound again
    index.search(store, vector, project=None, k=3)
    assert index.loads == 2
    monkeypatch.setattr(journal, "MAX_ENTRIES", 2)
    store.remember_many([NewMemory(f"note {i} about the retry policy") for i in range(3)])
    embed_pending(store, embedder)  # three ids overflow a log of two: a new epoch
    got = index.search(store, vector, project=None, k=20)
    assert index.loads == 3
    assert len(got) == len(TEXTS) + 2 + 3


def test_wrong_dimension_is_a_clear_error(store: Store) -> None:
    with pytest.raises(ValueError, match="dimensions"):
        VectorIndex().search(store, np.ones(7, dtype=np.float32), project=None, k=3)


def test_empty_store_finds_nothing(tmp_path: Path, embedder: Embedder) -> None:
    s = Store(tmp_path / "empty.db")
    try:
        assert s.bind_model(embedder.model_id, embedder.dim)
        assert VectorIndex().search(s, embedder.embed_query("anything"), project=None, k=5) == []
    finally:
        s.close()
