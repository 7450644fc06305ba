"""The Hopfield channel on a real SQLite store with the real embedding model (all-MiniLM-L6-v2 int8, offline).

The math is checked on hand-built matrices; ranking, scope, cache reloads and statuses on real memories.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import embed_pending

from memcue.sidecar.recall import HOPFIELD, VectorIndex
from memcue.sidecar.recall.channels import ChannelContext, ChannelResult, run_channel
from memcue.sidecar.recall.channels.hopfield import BETA, STEPS, HopfieldChannel, retrieve, top_k
from memcue.sidecar.recall.query import keyword_query
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import NewMemory, Store


def hopfield_channel(ctx: ChannelContext, index: VectorIndex) -> ChannelResult:
    """The Hopfield channel over ``index``, run as the pipeline runs it (timed, failures as ``error``)."""
    return run_channel(HopfieldChannel(), dataclasses.replace(ctx, vectors=index))

API = [
    "Pinned httpx to 0.27 because 0.28 removed the proxies argument our client passes",
    "The retry policy uses exponential backoff with jitter, capped at 30 seconds between attempts",
    "We lint with ruff at line length 120 and format with ruff format",
    "Database migrations run through alembic before every deploy",
    "The CI pipeline caches pip wheels keyed on the hash of requirements.txt",
    "Prefer pytest fixtures over unittest setUp methods in new tests",
    "Auth tokens live in the OS keyring, never in plain files on disk",
    "The frontend bundle is built with Vite and written to dist/",
]
WEB = ["Pinned react to 18.2 until the router upgrade lands"]
GLOBAL = ["Always write commit messages in the imperative mood"]




@pytest.fixture
def store(tmp_path: Path, embedder: Embedder) -> Iterator[Store]:
    s = Store(tmp_path / "m.db")
    assert s.bind_model(embedder.model_id, embedder.dim)
    s.remember_many([NewMemory(t, project="api") for t in API])
    s.remember_many([NewMemory(t, project="web") for t in WEB])
    s.remember_many([NewMemory(t, project="") for t in GLOBAL])
    s.remember(NewMemory("please bump httpx again and rerun the tests", kind="request", project="api"))
    embed_pending(s, embedder)
    yield s
    s.close()


def _ids(store: Store) -> dict[str, int]:
    return {row["content"]: row["id"] for row in store.list_memories(limit=1000)}


def _ctx(store: Store, embedder: Embedder | None, query: str, *, project: str | None = "api", k: int = 10,
         exclude_kinds: tuple[str, ...] = ("request",), vector: np.ndarray | None | str = "embed") -> ChannelContext:
    if isinstance(vector, str):
        assert embedder is not None
        vector = embedder.embed_query(query)
    return ChannelContext(store=store, query=query, keywords=keyword_query(query), project=project, k=k,
                          exclude_kinds=exclude_kinds, now=time.time(), vector=vector, embedder=embedder)


def _run(store: Store, embedder: Embedder | None, query: str, index: VectorIndex | None = None,
         **kw: object) -> ChannelResult:
    return hopfield_channel(_ctx(store, embedder, query, **kw), index or VectorIndex())  # type: ignore[arg-type]


# -- the update rule itself -----------------------------------------------------------------------

def test_one_step_matches_the_update_rule_by_hand() -> None:
    """ξ₁ = Xᵀ softmax(β X ξ₀), normalised; scores = X ξ̂₁. Computed here independently of the module."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((50, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = x[3] + 0.3 * rng.standard_normal(16).astype(np.float32)
    q /= np.linalg.norm(q)
    a = np.exp(BETA * (x.astype(np.float64) @ q) - (BETA * (x.astype(np.float64) @ q)).max())
    xi = (a / a.sum()) @ x.astype(np.float64)
    expected = x.astype(np.float64) @ (xi / np.linalg.norm(xi))
    got = retrieve(x, q, beta=BETA, steps=1)
    assert got.dtype == np.float32 and got.shape == (50,)
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_retrieval_is_associative_not_a_copy_of_cosine() -> None:
    """A memory close to the query's best match outranks one that is slightly closer to the query itself."""
    q = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    best = np.array([0.9, 0.436, 0.0, 0.0], dtype=np.float32)  # cos(q) 0.90
    partner = np.array([0.3, 0.954, 0.0, 0.0], dtype=np.float32)  # cos(q) 0.30, cos(best) 0.69
    loner = np.array([0.35, 0.0, 0.937, 0.0], dtype=np.float32)  # cos(q) 0.35, cos(best) 0.32
    x = np.stack([best, partner, loner])
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    cosine = x @ q
    assert cosine[2] > cosine[1]  # plain cosine prefers the loner
    scores = retrieve(x, q, beta=BETA, steps=STEPS)
    assert scores[0] > scores[1] > scores[2], scores  # the best match's partner rises above the loner


def test_small_beta_blurs_and_large_beta_sharpens() -> None:
    """β sets how many memories the state mixes: tiny β → the mean of all; huge β → the single best match."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((200, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = x[10] * 0.8 + x[11] * 0.2
    q /= np.linalg.norm(q)
    mean = x.mean(axis=0)
    np.testing.assert_allclose(retrieve(x, q, beta=1e-4), x @ (mean / np.linalg.norm(mean)), atol=1e-3)
    np.testing.assert_allclose(retrieve(x, q, beta=1e4), x @ x[10], atol=1e-4)


def test_top_k_breaks_ties_by_ascending_id() -> None:
    ids = np.array([9, 4, 7, 2, 5], dtype=np.int64)
    scores = np.array([0.5, 0.9, 0.5, 0.5, 0.1], dtype=np.float32)
    assert top_k(ids, scores, 3) == [(4, pytest.approx(0.9)), (2, 0.5), (7, 0.5)]
    assert [i for i, _ in top_k(ids, scores, 10)] == [4, 2, 7, 9, 5]
    assert top_k(ids, scores, 0) == []


# -- the channel on a real store ------------------------------------------------------------------

@pytest.mark.parametrize("query,expected", [
    ("which version of httpx did we pin?", API[0]),
    ("how do retries back off after a failed request?", API[1]),
    ("where are the auth tokens kept?", API[6]),
    ("how do we run database schema migrations?", API[3]),
])
def test_a_close_memory_ranks_in_the_top_three(store: Store, embedder: Embedder, query: str, expected: str) -> None:
    result = _run(store, embedder, query)
    assert result.name == HOPFIELD and result.status == "ok", result
    top3 = [mid for mid, _ in result.items[:3]]
    assert _ids(store)[expected] in top3, (query, result.items)
    scores = [s for _, s in result.items]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 <= s <= 1.0 for s in scores)


def test_evidence_is_always_empty_and_detail_is_reported(store: Store, embedder: Embedder) -> None:
    result = _run(store, embedder, "which version of httpx did we pin?", k=4)
    assert result.status == "ok"
    assert result.evidence == set()  # associative candidates never count as evidence
    assert len(result.items) == 4
    # api memories + the global one; the web memory and the captured prompt are out of scope
    assert result.detail == {"beta": BETA, "steps": STEPS, "matrix_rows": len(API) + len(GLOBAL)}


def test_project_scope_and_excluded_kinds(store: Store, embedder: Embedder) -> None:
    ids = _ids(store)
    query = "which react version is pinned?"
    in_api = {mid for mid, _ in _run(store, embedder, query, project="api", k=50).items}
    assert ids[WEB[0]] not in in_api and ids[GLOBAL[0]] in in_api
    assert ids["please bump httpx again and rerun the tests"] not in in_api
    in_web = _run(store, embedder, query, project="web", k=50)
    assert {mid for mid, _ in in_web.items} == {ids[WEB[0]], ids[GLOBAL[0]]}
    assert in_web.items[0][0] == ids[WEB[0]]
    everywhere = _run(store, embedder, query, project=None, k=50, exclude_kinds=())
    assert everywhere.detail["matrix_rows"] == len(API) + len(WEB) + len(GLOBAL) + 1
    assert everywhere.items[0][0] == ids[WEB[0]]


def test_a_captured_prompt_costs_one_row_not_a_reload(store: Store, embedder: Embedder) -> None:
    index = VectorIndex()
    first = _run(store, embedder, "kafka", index)
    store.remember(NewMemory("can you check the kafka lag", project="api", kind="request"))
    embed_pending(store, embedder)
    again = _run(store, embedder, "kafka", index)  # the default scope excludes captured prompts
    assert (index.loads, index.refreshed_rows) == (1, 1)
    assert again.detail["matrix_rows"] == first.detail["matrix_rows"]


def test_the_index_follows_writes_without_reloading(store: Store, embedder: Embedder) -> None:
    index = VectorIndex()
    query = "what broke in the kafka consumer?"
    first = _run(store, embedder, query, index)
    assert index.loads == 1
    _run(store, embedder, query, index)
    assert (index.loads, index.refreshed_rows) == (1, 0)  # unchanged store: served from memory
    new = store.remember(NewMemory("The kafka consumer crashed on a poison message; it now goes to a DLQ",
                                   project="api"))
    before_embedding = _run(store, embedder, query, index)
    assert (index.loads, index.refreshed_rows) == (1, 0)  # a row without a vector changes nothing
    assert new.id not in {mid for mid, _ in before_embedding.items}  # no vector yet
    assert before_embedding.detail["matrix_rows"] == first.detail["matrix_rows"]
    store.remember(NewMemory("please look at the kafka consumer", project="api", kind="request"))
    embed_pending(store, embedder)  # both rows get vectors: two rows re-read, no reload
    after = _run(store, embedder, query, index)
    assert (index.loads, index.refreshed_rows) == (1, 2)
    assert after.detail["matrix_rows"] == first.detail["matrix_rows"] + 1
    assert after.items[0][0] == new.id


def test_superseded_memories_leave_the_matrix(store: Store, embedder: Embedder) -> None:
    index = VectorIndex()
    old = _ids(store)[API[0]]
    assert old in {mid for mid, _ in _run(store, embedder, "httpx pin", index, k=50).items}
    new = store.update(old, NewMemory("Pinned httpx to 0.28 after the client dropped the proxies argument"))
    embed_pending(store, embedder)
    got = {mid for mid, _ in _run(store, embedder, "httpx pin", index, k=50).items}
    assert old not in got and new.id in got
    assert index.loads == 1


def test_every_scope_is_a_mask_over_one_load(store: Store, embedder: Embedder) -> None:
    index = VectorIndex()
    rows = {}
    for project in ("api", "web", None, "api"):
        result = _run(store, embedder, "httpx", index, project=project)
        assert result.status == "ok"
        rows[project] = result.detail["matrix_rows"]
    assert index.loads == 1
    assert rows == {"api": len(API) + len(GLOBAL), "web": len(WEB) + len(GLOBAL),
                    None: len(API) + len(WEB) + len(GLOBAL)}


def test_concurrent_recalls_share_one_load(store: Store, embedder: Embedder) -> None:
    """Eight recalls hit a cold index at once; the load is slowed to 0.2 s so they all overlap it."""
    index = VectorIndex()
    real = index._load

    def slow(s: Store) -> None:
        time.sleep(0.2)
        real(s)

    index._load = slow  # type: ignore[method-assign]
    vector = embedder.embed_query("retry backoff")
    results: list[ChannelResult] = []
    gate = threading.Barrier(8)

    def worker() -> None:
        gate.wait()
        results.append(hopfield_channel(_ctx(store, embedder, "retry backoff", vector=vector), index))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == 8 and index.loads == 1
    assert all(r.status == "ok" and r.items == results[0].items for r in results)


# -- statuses -------------------------------------------------------------------------------------

def test_no_vector_while_the_model_loads_is_warming(store: Store, tmp_path: Path) -> None:
    loading = Embedder(tmp_path / "models")  # never loaded: state "warming"
    result = _run(store, loading, "httpx", vector=None)
    assert result.status == "warming" and result.note and result.items == [] and result.evidence == set()


def test_no_vector_after_a_model_error_is_no_embedding(store: Store, tmp_path: Path) -> None:
    broken = Embedder(tmp_path / "models")
    broken.state, broken.error = "error", "AssetError: model file missing"
    result = _run(store, broken, "httpx", vector=None)
    assert result.status == "no_embedding" and "model file missing" in result.note


def test_no_vector_without_an_embedder_is_no_embedding(store: Store) -> None:
    assert _run(store, None, "httpx", vector=None).status == "no_embedding"


def test_unbound_store_without_vector_is_warming(tmp_path: Path) -> None:
    s = Store(tmp_path / "fresh.db")
    s.remember(NewMemory("something", project="api"))
    assert _run(s, None, "something", vector=None).status == "warming"


def test_empty_store_is_no_candidates(tmp_path: Path, embedder: Embedder) -> None:
    s = Store(tmp_path / "empty.db")
    assert s.bind_model(embedder.model_id, embedder.dim)
    result = _run(s, embedder, "anything at all")
    assert result.status == "no_candidates" and result.detail["matrix_rows"] == 0
    s.remember(NewMemory("written but not embedded yet", project="api"))
    assert _run(s, embedder, "written").status == "no_candidates"


def test_blank_query_is_empty(store: Store, embedder: Embedder) -> None:
    assert _run(store, embedder, "   ", vector=np.ones(embedder.dim, dtype=np.float32)).status == "empty"


def test_wrong_dimension_is_an_error_not_an_exception(store: Store, embedder: Embedder) -> None:
    result = _run(store, embedder, "httpx", vector=np.ones(7, dtype=np.float32))
    assert result.status == "error" and "dimensions differ" in result.note
