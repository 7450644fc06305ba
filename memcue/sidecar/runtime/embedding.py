"""The embedding model: fastembed ``TextEmbedding`` over the offline model folder, loaded in the background.

Settings measured on a 2-core machine (DESIGN.md section 2): ``threads=1`` (4–5 ms per query, against
11–32 ms with two threads) and ``enable_cpu_mem_arena=False``. Bulk embedding (a backlog in the background
worker, the benchmarks' store builds) sorts the texts by length and runs two one-thread sessions side by
side, the query session and a second one, each on every other text in batches of ``BULK_BATCH``: 327-346
memories/s against 289-316/s for one two-thread session and 177/s for the query session alone (1,200
benchmark memories on this 2-core machine; ONNX Runtime releases the GIL while it runs, and two small
independent runs keep both cores busier than one run split across two threads). A session costs about
155 MB resident, so the second one exists only while a backlog lasts (``release_bulk``), and freed heap is
handed back after loading (``trim_heap``).
The model is the packaged all-MiniLM-L6-v2 int8 (``assets.assemble_default_model``) unless another fastembed
model is configured (``model_name``, and ``model_path`` for a local folder; ``assets.configured_model``). Nothing
is downloaded: a configured model without a folder must already be in fastembed's cache under ``models_dir``,
else loading fails with ``state`` "error" and recall stays keyword-only.
``state`` is "warming" until the model is ready, then "ready", or "error" with ``error`` set; recall never
waits for it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memcue.sidecar.runtime.assets import (
    ModelFolder,
    assemble_default_model,
    configured_model,
    disable_onnx_telemetry,
    is_default_model,
)
from memcue.sidecar.runtime.heap import trim_heap

log = logging.getLogger("memcue.embedding")


#: Query embeddings kept by the LRU cache (issue 4: 256 by default; ``MEMCUE_EMBEDDING_CACHE_SIZE``).
EMBEDDING_CACHE_SIZE = 256


def cache_size_from_env(env: Mapping[str, str] = os.environ) -> int:
    """``MEMCUE_EMBEDDING_CACHE_SIZE`` in ``env`` (>= 0), or ``EMBEDDING_CACHE_SIZE`` when unset or not an
    integer. The sidecar's ``Settings`` reads it once at start; an ``Embedder`` built without a
    ``cache_size`` (tests, benchmarks) reads it itself."""
    try:
        return max(0, int(env.get("MEMCUE_EMBEDDING_CACHE_SIZE", "") or EMBEDDING_CACHE_SIZE))
    except ValueError:
        return EMBEDDING_CACHE_SIZE


#: Texts per ONNX run in bulk embedding. Small batches waste least on padding: 4-8 gave 300 texts/s on
#: the benchmark corpus, 32 gave 245 and 128 gave 131 (two threads, texts sorted by length).
BULK_BATCH = 8
#: Threads of the second bulk session (it runs beside the one-thread query session: the machine's two cores).
BULK_THREADS = 1


#: How long (s) ``close`` waits for a model still loading: creating the ONNX session takes about a second
#: here; the interpreter must not exit while that thread is inside onnxruntime (it can abort the process).
CLOSE_WAIT_S = 10.0


class ModelNotReady(RuntimeError):
    """The model is still loading or failed to load (``Embedder.state`` says which)."""


class _Closed(Exception):
    """``close`` was called while the model loaded: loading ends at its next step."""


class Embedder:
    """Loads the model on a background thread and embeds text into unit-length float32 vectors.

    ``models_dir``: the offline model folder's parent (and fastembed's cache for a configured model). ``cache_size``:
    query embeddings kept (None: ``cache_size_from_env``). ``load_delay_s``: a pause before loading (s; tests
    observe the warming state). ``model_name`` / ``model_path``: a configured fastembed model and its optional
    local folder ("": the packaged default)."""

    def __init__(self, models_dir: Path, *, cache_size: int | None = None, load_delay_s: float = 0.0,
                 model_name: str = "", model_path: str = "") -> None:
        self._models_dir = models_dir
        self.model_name = "" if is_default_model(model_name) else model_name.strip()
        self._model_path = model_path
        self._load_delay_s = load_delay_s
        self._model = None
        self._bulk = None
        self._bulk_lock = threading.Lock()
        self.folder: ModelFolder | None = None
        self.state = "warming"
        self.error = ""
        self.ready = threading.Event()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self.on_ready: Callable[[], None] | None = None
        self.cache_size = cache_size_from_env() if cache_size is None else cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()
        self.cache_hits = self.cache_misses = 0

    @property
    def model_id(self) -> str:
        return self.folder.model_id if self.folder else ""

    @property
    def dim(self) -> int:
        return self.folder.dim if self.folder else 0

    def load(self) -> None:
        """Assemble the model folder and load it (blocking; call from a thread). Never raises. After
        ``close`` it stops at its next step with ``state`` "stopped"."""
        try:
            if self._load_delay_s > 0:  # lets tests observe the warming state deterministically
                self._closing.wait(self._load_delay_s)
            self._check_open()
            self.folder = self._folder()
            self._check_open()
            self._model = self._session(threads=1)
            self._check_open()
            warm = self.embed(["warm up"])[0]  # first run allocates; do it before answering
            if warm.shape[0] != self.folder.dim:  # the vector length the model really gives
                self.folder = dataclasses.replace(self.folder, dim=int(warm.shape[0]))
            trim_heap()  # the graph optimiser's temporaries: about 60 MB back to the system
            self.state = "ready"
        except _Closed:
            self.state = "stopped"
        except Exception as exc:  # noqa: BLE001 - a failed model means keyword-only service
            self.state = "error"
            self.error = f"{type(exc).__name__}: {exc}" + self._where()
            log.error("embedding model failed to load, recall is keyword-only: %s", self.error)
        finally:
            self.ready.set()
            if self.on_ready is not None:
                self.on_ready()

    def _folder(self) -> ModelFolder:
        """Where the model loads from: the packaged default assembled under ``models_dir``, or the configured one."""
        if not self.model_name:
            return assemble_default_model(self._models_dir)
        return configured_model(self.model_name, self._model_path, self._models_dir)

    def _where(self) -> str:
        """For a configured model's load error: where memcue looked and how to fix it ("" for the default)."""
        if not self.model_name:
            return ""
        where = (f"the folder {self._model_path}" if self._model_path
                 else f"fastembed's cache {self._models_dir}")
        return (f" (configured model {self.model_name!r}, looked in {where}; memcue never downloads a model: put"
                " its files in a folder and set [model] path or MEMCUE_MODEL_PATH, or remove [model] name /"
                " MEMCUE_MODEL to use the packaged default)")

    def _session(self, threads: int) -> Any:
        """A fastembed ``TextEmbedding`` over the model folder (or fastembed's cache in ``models_dir``) with
        ``threads`` ONNX threads (no download, no memory arena; see the module docstring)."""
        disable_onnx_telemetry()
        from fastembed import TextEmbedding

        folder = self.folder
        assert folder is not None
        where: dict[str, str] = ({"specific_model_path": str(folder.path)} if folder.path is not None
                                 else {"cache_dir": str(folder.cache_dir)})
        return TextEmbedding(folder.fastembed_name, threads=threads, enable_cpu_mem_arena=False,
                             local_files_only=True, lazy_load=False, **where)

    def _check_open(self) -> None:
        if self._closing.is_set():
            raise _Closed

    def start(self) -> threading.Thread:
        """Start ``load`` on a daemon thread and return it."""
        thread = self._thread = threading.Thread(target=self.load, name="memcue-model-load", daemon=True)
        thread.start()
        return thread

    def close(self, wait_s: float = CLOSE_WAIT_S) -> bool:
        """Stop a load in progress at its next step and wait up to ``wait_s`` seconds for the loading thread
        (a step already inside onnxruntime finishes first). True when no loading thread is left running."""
        self._closing.set()
        thread = self._thread
        if thread is not None:
            thread.join(wait_s)
            if thread.is_alive():
                log.warning("the embedding model was still loading after %.0f s; exiting anyway", wait_s)
                return False
        return True

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Embed ``texts`` into ``dim``-length float32 unit vectors. Raises ``ModelNotReady``."""
        model = self._model
        if model is None:
            raise ModelNotReady(self.error or "the embedding model is still loading")
        return [np.asarray(v, dtype=np.float32) for v in model.embed(list(texts), batch_size=32)]

    def embed_bulk(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Embed many texts for storage (same vectors as ``embed``, in the order given): sorted by length, every
        other text on the query session and the rest at the same time on a second session, loaded on first
        use (see the module docstring). Raises ``ModelNotReady``."""
        model = self._model
        if model is None or self.folder is None:
            raise ModelNotReady(self.error or "the embedding model is still loading")
        with self._bulk_lock:
            if self._bulk is None:
                self._bulk = self._session(threads=BULK_THREADS)
            bulk = self._bulk
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        halves = (order[0::2], order[1::2])
        found: list[list[Any]] = [[], []]
        errors: list[BaseException] = []

        def run(session: Any, half: int) -> None:
            try:
                found[half] = list(session.embed([texts[i] for i in halves[half]], batch_size=BULK_BATCH))
            except BaseException as exc:  # noqa: BLE001 - raised again in the calling thread
                errors.append(exc)

        beside = threading.Thread(target=run, args=(bulk, 1), name="memcue-embed-bulk", daemon=True)
        beside.start()
        run(model, 0)
        beside.join()
        if errors:
            raise errors[0]
        out: list[np.ndarray] = [np.empty(0, dtype=np.float32)] * len(texts)
        for half in (0, 1):
            for pos, i in enumerate(halves[half]):
                out[i] = np.asarray(found[half][pos], dtype=np.float32)
        return out

    def release_bulk(self) -> bool:
        """Drop the bulk session (about 100 MB) once a backlog is done; True when there was one. The next
        ``embed_bulk`` loads it again (about 0.3 s)."""
        with self._bulk_lock:
            had, self._bulk = self._bulk is not None, None
        if had:
            import gc

            gc.collect()
            trim_heap()
        return had

    def embed_query(self, text: str) -> np.ndarray:
        """One vector for a query, from an LRU cache of ``cache_size`` recent queries (``MEMCUE_EMBEDDING_CACHE_SIZE``,
        default ``EMBEDDING_CACHE_SIZE``; 0 turns it off). Raises ``ModelNotReady``."""
        if self.cache_size <= 0:
            return self.embed([text])[0]
        with self._cache_lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                self.cache_hits += 1
                return hit
        vector = self.embed([text])[0]
        vector.setflags(write=False)  # shared between callers: nobody may change it
        with self._cache_lock:
            self.cache_misses += 1
            self._cache[text] = vector
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return vector

    def cached(self, text: str) -> np.ndarray | None:
        """The query vector of ``text`` if the LRU cache holds it (never computes one; read only)."""
        with self._cache_lock:
            return self._cache.get(text)

    def cache_stats(self) -> dict[str, int]:
        """The query-embedding cache: size limit, entries, hits and misses."""
        return {"size": self.cache_size, "entries": len(self._cache), "hits": self.cache_hits,
                "misses": self.cache_misses}
