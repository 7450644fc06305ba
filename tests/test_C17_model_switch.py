"""Case C17, embedding model change: index with the 384-dimension default model, configure another model, restart.
The mismatch is detected at start, nothing is dropped, recall is keyword-only with a loud warning (log,
``/health``, ``memcue status``, ``memcue doctor``) until ``memcue reindex`` re-embeds every memory, resumably
(Ctrl-C pauses, a killed sidecar goes on where it stopped, counted); configuring the original model again
before the swap restores hybrid recall at once.

"Another model" is built here, offline: a tiny ONNX model (token ids hashed into 4,096 buckets, each a fixed
random 512-dimension vector, mean-pooled by fastembed) in a folder shaped as fastembed's
``jinaai/jina-embeddings-v2-small-en`` (512 dimensions), loaded through ``[model] path``; and the packaged
MiniLM files under fastembed's name ``sentence-transformers/all-MiniLM-L6-v2`` (same 384 dimensions, another
model id).
"""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from conftest import Sidecar, start_sidecar, wait_until
from onnx import TensorProto, helper, numpy_helper

from memcue.core.paths import Locations
from memcue.sidecar.runtime.assets import MODEL_DIM, MODEL_ID, assemble_default_model
from memcue.sidecar.settings import load_settings
from memcue.sidecar.store import NewMemory, Store

pytestmark = pytest.mark.slow

TINY_NAME, TINY_DIM = "jinaai/jina-embeddings-v2-small-en", 512
SAME_FILES_NAME = "sentence-transformers/all-MiniLM-L6-v2"
PROJECT = "c17"
N_MEMORIES = 200
#: The memory a paraphrase finds only through meaning (no word in common with the query).
MEANING = "Releases are shipped to production through the staging cluster first"
PARAPHRASE = "how do deployments reach prod?"


def build_tiny_model(folder: Path, dim: int = TINY_DIM, buckets: int = 4096) -> Path:
    """A fastembed-loadable folder for ``TINY_NAME``: ``onnx/model.onnx`` maps each token id to a fixed random
    ``dim``-vector (``last_hidden_state``), with the packaged MiniLM tokenizer files."""
    default = assemble_default_model(folder.parent / "packaged")
    assert default.path is not None
    (folder / "onnx").mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json"):
        shutil.copyfile(default.path / name, folder / name)
    table = np.random.default_rng(17).standard_normal((buckets, dim)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Mod", ["input_ids", "buckets"], ["bucket"]),
         helper.make_node("Gather", ["table", "bucket"], ["last_hidden_state"], axis=0)],
        "hashed-tokens",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", dim])],
        initializer=[numpy_helper.from_array(table, "table"),
                     numpy_helper.from_array(np.array(buckets, dtype=np.int64), "buckets")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(folder / "onnx" / "model.onnx"))
    return folder


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two other models' folders: ``tiny`` (512 dims) and ``same_files`` (MiniLM's files, another id)."""
    root = tmp_path_factory.mktemp("c17-models")
    packaged = assemble_default_model(root / "packaged")
    assert packaged.path is not None
    return {"tiny": build_tiny_model(root / "tiny"), "same_files": packaged.path}


def _configure(home: Path, name: str | None, path: Path | None = None) -> None:
    """Write ``[model]`` into the data dir's config.toml (None: no ``[model]``, the packaged default)."""
    config = Locations(home).config_file
    if name is None:
        config.unlink(missing_ok=True)
        return
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[model]\nname = "{name}"\n' + (f'path = "{path}"\n' if path else ""))


def _memories() -> list[dict[str, Any]]:
    texts = [MEANING, "The billing service keeps invoices for seven years"]
    parts = ["cache", "queue", "scheduler", "importer", "exporter", "indexer", "mailer", "gateway"]
    for i in range(N_MEMORIES - len(texts)):
        texts.append(f"Note {i}: the {parts[i % len(parts)]} retries {i % 7 + 2} times before it gives up "
                     f"(ticket OPS-{1000 + i})")
    return [{"content": t, "project": PROJECT} for t in texts]


def _health(sc: Sidecar) -> dict[str, Any]:
    return sc.client.health()


def _model_settled(sc: Sidecar, timeout_s: float = 120) -> dict[str, Any]:
    """``/health`` once the model is loaded and the worker bound it (or found the mismatch)."""
    def settled() -> dict[str, Any] | None:
        h = _health(sc)
        done = h["model"]["state"] != "warming" and (h["vector_search"] or h["vector_note"]
                                                    or h["model"]["state"] != "ready")
        return h if done else None
    health = wait_until(settled, timeout_s)
    assert health, _health(sc)
    return health


def _index_with_default(home: Path) -> list[int]:
    """Store the memories with the packaged default model and wait until every one has its vector."""
    sc = start_sidecar(home)
    try:
        ids = [r["id"] for r in sc.client.remember_batch(_memories())]
        health = sc.client.wait_idle(180)
        assert health["vector_search"] and health["model"]["id"] == MODEL_ID
        assert health["counts"]["embedded"] == N_MEMORIES
        answer = sc.client.recall(PARAPHRASE, project=PROJECT)
        assert answer["channel_status"]["semantic"] == "ok"
        assert MEANING in [r["content"] for r in answer["results"]], "hybrid recall finds it by meaning"
    finally:
        sc.stop()
    return ids


def _stored_vectors(home: Path, model_id: str, dim: int, ids: list[int]) -> dict[int, bytes]:
    """The vectors a second store over the same file reads when bound to ``model_id`` ({} when it cannot)."""
    store = Store(Locations(home).database)
    try:
        return store.vectors(ids) if store.bind_model(model_id, dim) else {}
    finally:
        store.close()


def _cli(home: Path, *args: str, stderr: Any = subprocess.PIPE) -> subprocess.Popen[str]:
    """The CLI as a subprocess, with SIGINT's default action whatever this test runs under: a background job of a
    non-interactive shell inherits SIGINT ignored, and the test's Ctrl-C would then never reach ``reindex``."""
    env = {**os.environ, "MEMCUE_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-m", "memcue", *args], env=env, stdout=subprocess.PIPE,
                            stderr=stderr, text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _read_terminal(fd: int) -> str:
    """What was written to the terminal ``fd`` (a pty's controller side) so far."""
    out = b""
    while select.select([fd], [], [], 0.2)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    return out.decode("utf-8", "replace")


def _reindex_status(sc: Sidecar) -> dict[str, Any]:
    return sc.client.reindex("status")


@pytest.fixture
def sidecars() -> Iterator[list[Sidecar]]:
    """Sidecars a test starts, stopped at its end."""
    started: list[Sidecar] = []
    yield started
    for sc in started:
        sc.stop()


def test_C17_mismatch_is_detected_nothing_dropped_and_reindex_resumes(
        home: Path, models: dict[str, Path], sidecars: list[Sidecar]) -> None:
    """Longer than 60 lines: one store through three sidecar starts (the switch, the paused reindex, its resume),
    each start's checks right after it."""
    ids = _index_with_default(home)
    _configure(home, TINY_NAME, models["tiny"])

    # restart with the other model: mismatch at start, keyword-only, loud everywhere, nothing dropped
    sc = start_sidecar(home, MEMCUE_REINDEX_DELAY_S="1.0")
    sidecars.append(sc)
    health = _model_settled(sc)
    assert health["model"] == {"id": TINY_NAME, "state": "ready", "error": ""}
    assert not health["vector_search"]
    assert "mismatch" in health["vector_note"] and "memcue reindex" in health["vector_note"]
    assert health["reindex"]["state"] == "needed" and health["reindex"]["store_model"] == MODEL_ID
    assert health["counts"]["memories"] == N_MEMORIES and health["counts"]["embedded"] == N_MEMORIES
    assert "embedding model mismatch" in sc.log()
    answer = sc.client.recall("staging cluster", project=PROJECT)
    assert answer["channel_status"]["semantic"] != "ok" and "mismatch" in json.dumps(answer)
    assert MEANING in [r["content"] for r in answer["results"]], "keyword recall still answers"
    assert len(_stored_vectors(home, MODEL_ID, MODEL_DIM, ids)) == N_MEMORIES, "the old vectors are all there"
    status = _cli(home, "status")
    assert "WARNING: embedding model changed" in status.communicate(timeout=60)[0]
    doctor = _cli(home, "doctor", "--json")
    findings = {f["area"]: f for f in json.loads(doctor.communicate(timeout=120)[0])["data"]["findings"]}
    assert findings["vectors"]["status"] == "warn" and "mismatch" in findings["vectors"]["message"]

    # `memcue reindex`, then Ctrl-C: paused, progress kept
    terminal, tty = pty.openpty()
    cli = _cli(home, "reindex", stderr=tty)
    os.close(tty)
    assert wait_until(lambda: _reindex_status(sc)["done"] >= 32, 120)
    cli.send_signal(signal.SIGINT)
    out, _ = cli.communicate(timeout=60)
    bar = _read_terminal(terminal)
    os.close(terminal)
    assert cli.returncode == 130 and "paused" in out
    assert "re-embedding memories [" in bar and f"/{N_MEMORIES}" in bar, "a progress bar on the terminal"
    paused = _reindex_status(sc)
    assert paused["state"] == "paused"
    time.sleep(1.5)
    assert _reindex_status(sc)["done"] == paused["done"] < paused["total"], "a paused re-index does nothing"

    # resume in the background, then kill the sidecar half way
    resumed = _cli(home, "reindex", "--no-wait", "--json")
    assert json.loads(resumed.communicate(timeout=60)[0])["data"]["state"] == "running"
    assert wait_until(lambda: _reindex_status(sc)["done"] >= paused["done"] + 32, 120)
    sc.proc.kill()
    sc.proc.wait(30)
    store = Store(Locations(home).database)
    done_at_kill, total = store.reindex_counts()
    assert store.reindex_target() == (TINY_NAME, TINY_DIM, "running")
    store.close()
    assert paused["done"] < done_at_kill < total == N_MEMORIES

    # a new sidecar goes on by itself, embeds only what was missing, swaps, and recall is hybrid again
    sc = start_sidecar(home)
    sidecars.append(sc)
    assert wait_until(lambda: _health(sc)["vector_search"], 180), _health(sc)
    final = _reindex_status(sc)
    assert final["state"] == "none" and final["finished"] == N_MEMORIES
    assert final["embedded_here"] == N_MEMORIES - done_at_kill, "no memory was embedded twice"
    health = _health(sc)
    assert health["vector_note"] == "" and health["counts"]["embedded"] == N_MEMORIES
    answer = sc.client.recall("staging cluster", project=PROJECT)
    assert answer["channel_status"]["semantic"] == "ok"
    vectors = _stored_vectors(home, TINY_NAME, TINY_DIM, ids)
    assert len(vectors) == N_MEMORIES and {len(v) for v in vectors.values()} == {TINY_DIM * 4}


def test_C17_switching_back_before_the_reindex_restores_hybrid_recall_at_once(
        home: Path, models: dict[str, Path], sidecars: list[Sidecar]) -> None:
    """Longer than 60 lines: one store through three sidecar starts (the switch, the paused reindex, its resume),
    each start's checks right after it."""
    ids = _index_with_default(home)
    _configure(home, SAME_FILES_NAME, models["same_files"])  # same 384 dims, another model id
    sc = start_sidecar(home, MEMCUE_REINDEX_DELAY_S="1.0")
    sidecars.append(sc)
    health = _model_settled(sc)
    assert health["model"]["id"] == SAME_FILES_NAME and not health["vector_search"]
    assert "mismatch" in health["vector_note"]
    started = sc.client.reindex("start")
    assert started["state"] == "running"
    assert wait_until(lambda: _reindex_status(sc)["done"] >= 32, 120)
    sc.client.reindex("pause")
    sc.stop()

    _configure(home, None)  # back to the packaged default, before the re-index completed
    sc = start_sidecar(home)
    sidecars.append(sc)
    health = _model_settled(sc)
    assert health["vector_search"] and health["vector_note"] == ""
    assert health["counts"]["embedded"] == N_MEMORIES and health["counts"]["pending_embeddings"] == 0
    assert health["reindex"]["state"] == "none" and SAME_FILES_NAME in health["reindex"]["note"]
    answer = sc.client.recall(PARAPHRASE, project=PROJECT)
    assert answer["channel_status"]["semantic"] == "ok"
    assert MEANING in [r["content"] for r in answer["results"]]
    assert len(_stored_vectors(home, MODEL_ID, MODEL_DIM, ids)) == N_MEMORIES
    nothing = _cli(home, "reindex", "--json")
    assert json.loads(nothing.communicate(timeout=60)[0])["data"]["state"] == "none" and nothing.returncode == 0
    sc.stop()

    _configure(home, SAME_FILES_NAME, models["same_files"])  # the other model again: its re-index was kept
    sc = start_sidecar(home)
    sidecars.append(sc)
    health = _model_settled(sc)
    assert health["reindex"]["state"] == "paused" and health["reindex"]["done"] >= 32


def test_C17_a_configured_model_missing_from_the_cache_is_a_clear_error_and_keyword_recall(
        home: Path, sidecars: list[Sidecar]) -> None:
    sc = start_sidecar(home, MEMCUE_MODEL=TINY_NAME)  # no path, and nothing in fastembed's cache
    sidecars.append(sc)
    sc.client.remember("The billing service keeps invoices for seven years", project=PROJECT)
    health = _model_settled(sc)
    assert health["model"]["state"] == "error" and health["model"]["id"] == TINY_NAME
    assert "never downloads" in health["model"]["error"] and TINY_NAME in health["model"]["error"]
    assert not health["vector_search"]
    answer = sc.client.recall("invoices", project=PROJECT)
    assert answer["results"] and answer["channel_status"]["semantic"] != "ok"
    assert "never downloads" in sc.log()
    assert "the embedding model failed" in _cli(home, "status").communicate(timeout=60)[0]
    doctor = _cli(home, "doctor", "--json")
    findings = {f["area"]: f for f in json.loads(doctor.communicate(timeout=120)[0])["data"]["findings"]}
    assert findings["model"]["status"] == "problem" and "never downloads" in findings["model"]["message"]
    reindex = _cli(home, "reindex", "--json")
    out = json.loads(reindex.communicate(timeout=60)[0])
    assert reindex.returncode == 1 and out["data"]["state"] == "error"


def test_C17_model_settings_from_config_and_environment(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    assert (load_settings(config, {}).model_name, load_settings(config, {}).model_path) == ("", "")
    config.write_text(f'[model]\nname = "{TINY_NAME}"\npath = "{tmp_path}"\n')
    got = load_settings(config, {})
    assert (got.model_name, got.model_path, got.error) == (TINY_NAME, str(tmp_path), "")
    got = load_settings(config, {"MEMCUE_MODEL": SAME_FILES_NAME, "MEMCUE_MODEL_PATH": "/models/x"})
    assert (got.model_name, got.model_path) == (SAME_FILES_NAME, "/models/x")
    config.write_text(f'[model]\npath = "{tmp_path}"\n')
    got = load_settings(config, {})
    assert got.model_path == "" and "without model.name" in got.error
    config.write_text("[model]\nname = 3\n")
    got = load_settings(config, {})
    assert got.model_name == "" and "model.name" in got.error


def test_C17_reindex_rows_skip_purged_memories_and_late_ones_wait_for_the_worker(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db")
    assert store.bind_model("model-a", 4)
    ids = [r.id for r in store.remember_many([NewMemory(content=f"memory {i} about the queue") for i in range(6)])]
    store.set_embeddings([(i, np.ones(4, np.float32).tobytes()) for i in ids])
    store.close()
    store = Store(tmp_path / "m.db")
    assert not store.bind_model("model-b", 3)
    assert store.start_reindex("model-b", 3) is False  # nothing to resume
    batch = store.reindex_pending(3)
    assert [r[0] for r in batch] == ids[:3]
    assert store.add_reindex_vectors([(r[0], np.ones(3, np.float32).tobytes(), 0.1) for r in batch]) == 3
    assert store.start_reindex("model-b", 3) is True  # the same target goes on where it was
    assert [r[0] for r in store.reindex_pending(10)] == ids[3:]
    store.purge([ids[0]])
    assert store.reindex_counts() == (2, 5), "a purged memory leaves no new vector behind"
    store.add_reindex_vectors([(r[0], np.ones(3, np.float32).tobytes(), 0.2) for r in store.reindex_pending(10)])
    late = store.remember(NewMemory(content="written after the last batch")).id
    assert store.finish_reindex("model-b", 3) == 5
    assert store.vector_dim == 3 and store.vector_note == "" and store.reindex_target() is None
    assert store.bound_model() == ("model-b", 3)
    assert [r[0] for r in store.pending_embeddings(10)] == [late]
    assert sorted(store.vectors(ids + [late])) == ids[1:]
    store.close()
