"""Optional cross-encoder rerank through fastembed's ``TextCrossEncoder`` (issue 3, stage 5).

Off by default: no cross-encoder ships offline. Turn it on with a fastembed cross-encoder model name in
``MEMCUE_RERANK_MODEL`` (or the config file's ``[rerank] model``), e.g. ``Xenova/ms-marco-MiniLM-L-6-v2``
(the names ``TextCrossEncoder.list_supported_models()`` lists), and optionally ``MEMCUE_RERANK_MODEL_PATH``,
a local folder holding that model's ONNX file and tokenizer files (fastembed's ``specific_model_path``).
Without a path the model must already sit in fastembed's cache under ``cache_dir``.

Nothing is ever downloaded: the model loads with ``local_files_only=True`` (fastembed then only probes the
local Hugging Face cache and its own cache folder), ``threads=1`` and ``enable_cpu_mem_arena=False`` (the
settings measured for the embedding model, DESIGN.md section 2). It loads on a background thread; until
it is ready ``scores`` returns None at once and the fused order stands (the pipeline reports ``status`` as
``reranker_status``).

Scores are the model's raw relevance logits (ms-marco MiniLM: roughly -11 … +11, > 0 leaning relevant);
they rank, they are not probabilities. Besides reordering, the score is a support signal for the tier
stage (``recall.support``: a memory the cross-encoder scores above its threshold is supported on that
ground alone), so the pipeline passes each memory's score on to it.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from memcue.sidecar.runtime.assets import disable_onnx_telemetry

log = logging.getLogger("memcue.recall")

#: Environment variables: a fastembed cross-encoder model name, and an optional local model folder.
ENV_MODEL, ENV_MODEL_PATH = "MEMCUE_RERANK_MODEL", "MEMCUE_RERANK_MODEL_PATH"
#: ``status`` values.
OFF, WARMING, READY, ERROR = "off", "warming", "ready", "error"
#: Longest wait (s) for another recall's scoring to finish before giving up on this one (the model is
#: single-threaded; a call scores ~30 pairs in tens of ms).
SCORE_WAIT_S = 1.0
#: Pairs per ONNX batch.
BATCH_SIZE = 32
#: How many fused candidates the cross-encoder rescores (when one is loaded).
RERANK_DEPTH = 30


class CrossEncoder(Protocol):
    """What the reranker needs of a model: fastembed's ``TextCrossEncoder.rerank`` shape."""

    def rerank(self, query: str, documents: Iterable[str], batch_size: int = ...) -> Iterable[float]:
        """One relevance logit per document, in input order."""
        ...


#: Builds the model: ``factory(model_name, **kwargs)``; default fastembed's ``TextCrossEncoder``.
Factory = Callable[..., CrossEncoder]


def _fastembed_factory(model_name: str, **kwargs: Any) -> CrossEncoder:
    disable_onnx_telemetry()
    from fastembed.rerank.cross_encoder import TextCrossEncoder

    return TextCrossEncoder(model_name, **kwargs)


#: How long (s) ``close`` waits for a reranker still loading (as ``runtime.embedding.CLOSE_WAIT_S``).
CLOSE_WAIT_S = 10.0

class Reranker:
    """A cross-encoder loaded in the background; scoring never waits for the load.

    ``model_name``: fastembed cross-encoder name; None reads ``MEMCUE_RERANK_MODEL`` from ``env`` (default
    ``os.environ``); "" means off. ``cache_dir``: fastembed's cache folder (e.g. ``<data>/models``); None
    uses fastembed's default. ``model_path``: a local model folder; None reads ``MEMCUE_RERANK_MODEL_PATH``.
    ``factory`` builds the model (tests pass a stand-in; default fastembed's ``TextCrossEncoder``).

    ``status``: off | warming | ready | error; ``note`` says why (the exception text on an error).
    """

    def __init__(
        self,
        model_name: str | None = None,
        cache_dir: Path | str | None = None,
        *,
        model_path: str | None = None,
        env: Mapping[str, str] | None = None,
        factory: Factory | None = None,
    ) -> None:
        env = os.environ if env is None else env
        self.model_name = (env.get(ENV_MODEL, "") if model_name is None else model_name).strip()
        self.model_path = (env.get(ENV_MODEL_PATH, "") if model_path is None else model_path).strip() or None
        self.cache_dir = str(cache_dir) if cache_dir is not None else None
        self._factory = factory or _fastembed_factory
        self._model: CrossEncoder | None = None
        self._score_lock = threading.Lock()
        self._start_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()
        if self.model_name:
            self.status = WARMING
            self.note = f"loading {self.model_name}"
        else:
            self.status = OFF
            self.note = f"no reranker configured ({ENV_MODEL} or the config's [rerank] model)"
            self.ready.set()

    def load(self) -> None:
        """Load the model (blocking; ``start`` runs it on a thread). Never raises: a failure sets ``status``
        "error" and ``note`` to the exception text. Never downloads (``local_files_only=True``)."""
        if self.status == OFF:
            return
        try:
            kwargs: dict[str, Any] = {
                "threads": 1,
                "local_files_only": True,
                "lazy_load": False,
                "enable_cpu_mem_arena": False,
            }
            if self.cache_dir is not None:
                kwargs["cache_dir"] = self.cache_dir
            if self.model_path is not None:
                if not Path(self.model_path).is_dir():
                    raise FileNotFoundError(f"{ENV_MODEL_PATH} is not a folder: {self.model_path}")
                kwargs["specific_model_path"] = self.model_path
            model = self._factory(self.model_name, **kwargs)
            list(model.rerank("warm up", ["warm up"], batch_size=1))  # first run allocates; do it now
            self._model = model
            self.status, self.note = READY, f"{self.model_name} loaded"
        except Exception as exc:  # noqa: BLE001 - a failed reranker leaves the fused order standing
            self.status = ERROR
            self.note = (f"{type(exc).__name__}: {exc} (memcue never downloads a reranker: put the model in the"
                         f" cache folder {self.cache_dir or 'of fastembed'} or point {ENV_MODEL_PATH} at it)")
            log.error("reranker %s failed to load; results keep the fused order: %s", self.model_name, self.note)
        finally:
            self.ready.set()

    def start(self) -> threading.Thread | None:
        """Start ``load`` on a daemon thread (once); returns the thread, or None when off."""
        if self.status == OFF:
            return None
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self.load, name="memcue-rerank-load", daemon=True)
                self._thread.start()
            return self._thread

    def close(self, wait_s: float = CLOSE_WAIT_S) -> bool:
        """Wait up to ``wait_s`` (s) for a load in progress (the interpreter must not exit while that thread is
        inside onnxruntime: it can abort the process). True when no loading thread is left running."""
        thread = self._thread
        if thread is None:
            return True
        thread.join(wait_s)
        if thread.is_alive():
            log.warning("the reranker was still loading after %.0f s; exiting anyway", wait_s)
            return False
        return True

    def scores(self, query: str, texts: Sequence[str]) -> list[float] | None:
        """Relevance logits for ``texts`` against ``query``, in input order (one float each).

        None at once unless ``status`` is "ready" (never waits for the load), when the model is busy with
        another recall for longer than ``SCORE_WAIT_S`` (s), or when scoring fails (``note`` then says why;
        ``status`` stays "ready", the next call tries again). An empty ``texts`` gives ``[]``.
        """
        model = self._model
        if self.status != READY or model is None:
            return None
        if not texts:
            return []
        if not self._score_lock.acquire(timeout=SCORE_WAIT_S):
            self.note = f"busy: another recall held the reranker for over {SCORE_WAIT_S:g} s"
            return None
        try:
            got = [float(s) for s in model.rerank(query, list(texts), batch_size=BATCH_SIZE)]
            if len(got) != len(texts):
                raise ValueError(f"the model returned {len(got)} scores for {len(texts)} texts")
            self.note = f"{self.model_name} loaded"
            return got
        except Exception as exc:  # noqa: BLE001 - a scoring failure keeps the fused order
            self.note = f"scoring failed: {type(exc).__name__}: {exc}"
            log.warning("reranker scoring failed; keeping the fused order: %s", self.note)
            return None
        finally:
            self._score_lock.release()

    def rerank(self, query: str, items: Sequence[tuple[int, str]]) -> list[tuple[int, float]] | None:
        """Reorder ``(memory_id, text)`` pairs by cross-encoder score: ``(memory_id, score)`` best first,
        equal scores by ascending id (deterministic). None when ``scores`` gives None (keep the old order)."""
        got = self.scores(query, [text for _, text in items])
        if got is None:
            return None
        return sorted(((int(mid), s) for (mid, _), s in zip(items, got, strict=True)), key=lambda x: (-x[1], x[0]))


@dataclass
class Reranked:
    """The rerank stage's result: ``survivors`` ``(memory_id, fused score)`` in their new order, ``scores``
    id -> cross-encoder logit for the rescored head (empty when nothing was rescored) and the reranker's
    ``status`` (``off`` without one)."""

    survivors: list[tuple[int, float]]
    scores: dict[int, float] = field(default_factory=dict)
    status: str = OFF


def rerank_head(reranker: Reranker | None, query: str, survivors: list[tuple[int, float]],
                contents: Mapping[int, Mapping[str, Any]]) -> Reranked:
    """Reorder the first ``RERANK_DEPTH`` of ``survivors`` by cross-encoder score (``contents``: id -> row
    with ``content``); the rest keep their place. Never waits for a model: without a ready one the order
    stands."""
    if reranker is None:
        return Reranked(survivors)
    if not survivors:
        return Reranked(survivors, status=reranker.status)
    head = survivors[:RERANK_DEPTH]
    got = reranker.rerank(query, [(mid, contents[mid]["content"]) for mid, _ in head])
    if got is None:
        return Reranked(survivors, status=reranker.status)
    fused = dict(head)
    return Reranked([(mid, fused[mid]) for mid, _ in got] + survivors[RERANK_DEPTH:], dict(got), reranker.status)
