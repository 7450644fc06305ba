"""The sidecar's state: store, embedding model, token counter, and the background embedding worker.

One ``Engine`` per sidecar process. Writes go to the store at once (keyword-searchable on return);
the worker thread embeds pending rows when the model is ready and ingests the spool.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import numpy as np

from memcue import __version__
from memcue.core.paths import Locations
from memcue.sidecar.answer_check import AnswerChecker
from memcue.sidecar.capture.spool import SpoolReader
from memcue.sidecar.dedup import NearCheck, find_near_duplicate
from memcue.sidecar.inject.ledger import SessionLedger
from memcue.sidecar.race import race
from memcue.sidecar.recall import (
    KEYWORD_CHANNELS,
    RecallOptions,
    RecallRequest,
    RecallServices,
    Reranker,
    apply_layers,
    baselines,
    context_for,
    is_warming,
    probe_vectors,
    recall,
)
from memcue.sidecar.recall import time as temporal
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.runtime.heap import trim_heap
from memcue.sidecar.runtime.tokenizer import TokenCounter
from memcue.sidecar.settings import load_config
from memcue.sidecar.store import ForgetResult, NewMemory, Store, WriteResult, redact
from memcue.sidecar.usage import UsageRecorder

log = logging.getLogger("memcue.engine")
#: Hook calls kept for ``/health`` (the latest first out).
HOOK_TIMES_KEPT = 20

#: Rows embedded per batch by the background worker (about 0.2 s of work on the bulk session, so a question
#: arriving meanwhile waits at most that long for the CPU).
EMBED_BATCH = 64
#: How often the worker wakes without being told (s): picks up spool files and missed rows.
WORKER_TICK_S = 1.0
#: The idle worker hands freed heap back to the system at most this often (s; ``heap.trim_heap``, a few ms
#: off the request threads: ctypes releases the GIL).
TRIM_EVERY_S = 5.0
#: Longest the background work (embedding backfill, baselines) steps aside for running questions (s; issue 4).
STEP_ASIDE_MAX_S = 20.0


class Engine:
    """Holds everything recall needs. ``load_model=False`` serves keyword-only (tests, C18/C19)."""

    def __init__(self, locations: Locations, *, load_model: bool = True) -> None:
        self.locations = locations
        locations.root.mkdir(parents=True, exist_ok=True)
        self.store = Store(locations.database)
        if not self.store.vec.available:
            log.warning("sqlite-vec could not load (%s): recall is keyword-only", self.store.vec.error)
        # Without sqlite-vec there is nowhere to search vectors: skip the model (memory, start-up work).
        self.embedder: Embedder | None = (
            Embedder(locations.models_dir) if load_model and self.store.vec.available else None)
        self.tokens = TokenCounter(locations.tiktoken_cache)
        self.spool = SpoolReader(locations.spool_dir, self.store)
        self.config = load_config(locations.config_file)
        self.services = RecallServices(config=RecallOptions(support_gate=self.config.support_gate,
                                                            weights=self.config.weights))
        if self.config.rerank_model:
            self.services.reranker = Reranker(self.config.rerank_model, locations.models_dir)
        #: The optional judge of question answers (off unless configured: ``sidecar/answer_check.py``).
        self.answer_checker = AnswerChecker(self.config.answer_check)
        self._probes: np.ndarray | None = None
        #: Set by the HTTP app: the question scheduler's settings and counters for ``/health``.
        self.question_stats: Any = None
        self._questions = 0
        self._questions_lock = threading.Lock()
        self._quiet = threading.Event()
        self._quiet.set()
        #: How many times the background worker waited for questions to finish (``/health``).
        self.background_yields = 0
        #: Per session: its one full session-start block (case C15) and the memories already injected.
        self.sessions = SessionLedger()
        #: Captured prompts stored with their recall's query vector instead of a second embedding (``/health``).
        self.prompt_vectors_reused = 0
        #: The last ``HOOK_TIMES_KEPT`` hook calls served: harness, event, ms in the sidecar, answered_by,
        #: memories included (``/health`` ``hooks``, ``memcue doctor``).
        self.hook_times: collections.deque[dict[str, Any]] = collections.deque(maxlen=HOOK_TIMES_KEPT)
        #: How the spool is followed while running: "watchfiles", or why it is polled.
        self.spool_watch = f"polling every {WORKER_TICK_S:g} s"
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        #: Recalls served and the memories opened from them (``sidecar/usage.py``), written by the worker.
        self.usage = UsageRecorder(self.store, on_record=self._wake.set)

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Start model loading and the background worker (returns at once)."""
        if self.embedder is not None:
            self.embedder.on_ready = self._wake.set  # bind vectors as soon as the model is there
            self.embedder.start()
        if self.services.reranker is not None:
            self.services.reranker.start()
        self._worker = threading.Thread(target=self._work, name="memcue-worker", daemon=True)
        self._worker.start()
        threading.Thread(target=self._watch_spool, name="memcue-spool-watch", daemon=True).start()
        threading.Thread(target=temporal.warm_up, name="memcue-dateparser-warm", daemon=True).start()

    def stop(self) -> None:
        """Stop the worker and checkpoint the database."""
        self._stop.set()
        self._wake.set()
        if self._worker is not None:
            self._worker.join(timeout=5)
        self.usage.flush()
        self.store.close()

    @property
    def warming_up(self) -> bool:
        return is_warming(self.store, self.embedder)

    def health(self) -> dict[str, Any]:
        """The ``/health`` payload."""
        emb = self.embedder
        return {
            "status": "ok",
            "version": __version__,
            "pid": os.getpid(),
            "warming_up": self.warming_up,
            "model": {"id": emb.model_id if emb else "", "state": emb.state if emb else "disabled",
                      "error": emb.error if emb else ""},
            "vector_search": self.store.vector_dim is not None,
            "vector_note": self.store.vector_note,
            "sqlite_vec": {"available": self.store.vec.available, "version": self.store.vec.version,
                           "error": self.store.vec.error},
            "tokenizer": self.tokens.mode,
            "reranker": {"status": self.services.reranker.status if self.services.reranker else "off",
                         "note": self.services.reranker.note if self.services.reranker else
                         "no reranker configured (config [rerank] model or MEMCUE_RERANK_MODEL)"},
            "config_error": self.config.error,
            "questions": self.question_stats() if self.question_stats else {},
            "background_yields": self.background_yields,
            "prompt_vectors_reused": self.prompt_vectors_reused,
            "hooks": {"recent": list(self.hook_times)},
            "spool_watch": self.spool_watch,
            "embedding_cache": emb.cache_stats() if emb else {},
            "vector_index": self.services.vectors.stats(),
            "schema_version": self.store.schema_version,
            "counts": self.store.counts(),
            "data_dir": str(self.locations.root),
        }

    # -- writes --------------------------------------------------------------------------------
    def remember(self, memories: list[NewMemory]) -> list[WriteResult]:
        """Store memories now; their vectors are computed by the worker."""
        out = self.store.remember_many(memories)
        self._wake.set()
        return out

    def remember_one(self, memory: NewMemory) -> WriteResult:
        """Store one memory (``/remember``): a near-duplicate in the same project reinforces the stored memory
        instead (``sidecar.dedup``; the result says ``duplicate``). A new row gets the vector the check
        computed at once, so the next ``remember`` sees it."""
        try:
            check = find_near_duplicate(self.store, self.services.vectors, self.embedder, memory)
        except Exception:  # noqa: BLE001 - the write must not fail for the check; exact dedup still applies
            log.exception("near-duplicate check failed; storing the memory as new")
            check = NearCheck()
        if check.memory_id is not None:
            self.store.reinforce(check.memory_id)
            return WriteResult(check.memory_id, False, duplicate=True, redacted=redact(memory.content).count)
        return self._write_with_vector(memory, check.vector)[0]

    def remember_prompt(self, memory: NewMemory) -> WriteResult:
        """Store a captured prompt. When its recall just embedded the same text (the query-embedding cache
        holds it), that vector is stored with it at once: the worker does not embed the prompt a second
        time (about 4 ms of CPU per prompt, which three agents at once feel)."""
        emb = self.embedder
        vector = emb.cached(memory.content) if emb is not None and emb.state == "ready" else None
        result, stored = self._write_with_vector(memory, vector)
        self.prompt_vectors_reused += stored
        return result

    def _write_with_vector(self, memory: NewMemory, vector: np.ndarray | None) -> tuple[WriteResult, bool]:
        """Store ``memory``; when ``vector`` (its embedding, computed already) fits a new, embeddable row, store
        it with the row at once instead of leaving it to the worker. Returns ``(result, vector stored)``."""
        result = self.store.remember_many([memory])[0]
        emb = self.embedder
        if (vector is None or emb is None or result.duplicate or result.bookkeeping
                or memory.metadata.get("embed_text") or self.store.vector_dim != vector.shape[0]):
            self._wake.set()
            return result, False
        self._store_vectors([result.id], np.asarray(vector, dtype=np.float32).reshape(1, -1), emb)
        return result, True

    def update(self, memory_id: int, memory: NewMemory) -> WriteResult:
        """Write a new version of ``memory_id`` (see ``Store.update``); it leaves every working set."""
        out = self.store.update(memory_id, memory)
        self.services.working_sets.forget(memory_id)
        self._wake.set()
        return out

    def forget(self, ids: list[int]) -> ForgetResult:
        """Soft-delete memories (see ``Store.forget``): they stop answering at once and leave every working
        set. Idempotent."""
        out = self.store.forget(ids)
        for memory_id in out.forgotten:
            self.services.working_sets.forget(memory_id)
        return out

    # -- reads ---------------------------------------------------------------------------------
    def recall(self, request: RecallRequest) -> dict[str, Any]:
        """Run the recall pipeline and shape the results by ``request.depth`` and ``request.max_tokens``
        (blocking; call from a worker thread). Raises ``ValueError`` for a bad request."""
        answer = recall(self.store, self.embedder, request, self.services)
        return apply_layers(answer, depth=request.depth, max_tokens=request.max_tokens, count=self.tokens.count,
                            store=self.store)

    def expand(self, ids: list[int]) -> dict[str, Any]:
        """Memories by id at depth 2 (text plus session, entity and version context): ``{"success", "items",
        "not_found"}``; success is False when no id resolves."""
        rows = self.store.fetch(ids)
        items = [{"memory_id": mid, "fact_id": mid, "content": rows[mid]["content"], "memory_kind": rows[mid]["kind"],
                  "project": rows[mid]["project"], "created_at": rows[mid]["created_at"],
                  "superseded_by": rows[mid]["superseded_by"], "bookkeeping": rows[mid]["bookkeeping"],
                  "forgotten": rows[mid]["forgotten_at"] is not None,
                  "context": context_for(self.store, mid)} for mid in dict.fromkeys(ids) if mid in rows]
        return {"success": bool(items), "items": items, "not_found": [i for i in dict.fromkeys(ids) if i not in rows]}

    async def recall_within(self, request: RecallRequest, budget_s: float,
                            limiter: anyio.CapacityLimiter) -> tuple[dict[str, Any] | None, str]:
        """The hook race for ``request``: full recall, the same request keyword-only after 1 s, nothing at
        ``budget_s`` (s). Returns ``(answer or None, answered_by)`` ("full", "keyword" or "none")."""
        keyword = dataclasses.replace(request, channels=KEYWORD_CHANNELS)
        return await race(lambda: self.recall(request), lambda: self.recall(keyword),
                          budget_s=budget_s, limiter=limiter)

    @contextlib.contextmanager
    def question_running(self) -> Iterator[None]:
        """Mark a question as running: background work (embedding backfill, baselines) waits meanwhile."""
        with self._questions_lock:
            self._questions += 1
            self._quiet.clear()
        try:
            yield
        finally:
            with self._questions_lock:
                self._questions -= 1
                if self._questions == 0:
                    self._quiet.set()

    def _step_aside(self) -> None:
        """Wait (at most ``STEP_ASIDE_MAX_S``) while questions run, so they get the CPU."""
        if not self._quiet.is_set():
            self.background_yields += 1
            self._quiet.wait(STEP_ASIDE_MAX_S)

    # -- background ----------------------------------------------------------------------------
    def _watch_spool(self) -> None:
        """Wake the worker as soon as a hook appends to the spool (watchfiles); the worker's
        ``WORKER_TICK_S`` poll stays as the fallback when watching is not possible."""
        try:
            from watchfiles import watch

            self.locations.spool_dir.mkdir(parents=True, exist_ok=True)
            self.spool_watch = "watchfiles"
            for _changes in watch(self.locations.spool_dir, stop_event=self._stop, debounce=50, step=20,
                                  raise_interrupt=False):
                self._wake.set()
        except Exception as exc:  # noqa: BLE001 - polling still ingests the spool
            self.spool_watch = f"polling every {WORKER_TICK_S:g} s ({type(exc).__name__}: {exc})"
            log.warning("spool watch off, polling instead: %s", exc)

    def _work(self) -> None:
        bind_tried = False
        last_trim = time.monotonic()
        while not self._stop.is_set():
            try:
                self.usage.flush()
                self.spool.ingest()
                emb = self.embedder
                if emb is not None and emb.state == "ready" and not bind_tried:
                    bind_tried = True
                    if not self.store.bind_model(emb.model_id, emb.dim) and self.store.vec.available:
                        log.warning("vector search off: %s", self.store.vector_note)  # no sqlite-vec: said at start
                    elif self.store.vector_dim is not None:
                        self.services.vectors.refresh(self.store)  # load the vectors now, not on a question
                if emb is not None and self.store.vector_dim is not None:
                    self._step_aside()
                if emb is not None and self.store.vector_dim is not None and self._embed_pending(emb):
                    continue
                if emb is not None and emb.release_bulk():
                    log.info("embedding backlog done; bulk session released")
                if emb is not None and self.store.vector_dim is not None and self._backfill_baselines(emb):
                    continue
                self.store.optimize_if_due()
                if time.monotonic() - last_trim >= TRIM_EVERY_S:  # idle: give freed heap back (RSS)
                    trim_heap()
                    last_trim = time.monotonic()
            except Exception:  # noqa: BLE001 - the worker must survive anything
                log.exception("background worker step failed")
            self._wake.wait(WORKER_TICK_S)
            self._wake.clear()

    def _embed_pending(self, emb: Embedder | None) -> bool:
        """Embed one batch; True when a batch was done (there may be more)."""
        if emb is None:
            return False
        rows = self.store.pending_embeddings(EMBED_BATCH)
        if not rows:
            return False
        texts = [str(meta.get("embed_text") or content) for _, content, _, meta in rows]
        # A full batch means a backlog (an import, a restart after a pause): the two-thread bulk session.
        # A trickle (captured prompts, a remember) goes through the loaded query session.
        matrix = np.vstack(emb.embed_bulk(texts) if len(rows) == EMBED_BATCH else emb.embed(texts))
        ids = [mid for mid, _, _, _ in rows]
        self._store_vectors(ids, matrix, emb)
        return True

    def _store_vectors(self, ids: list[int], matrix: np.ndarray, emb: Embedder) -> None:
        """Store the rows of ``matrix`` (float32, (len(ids), dim)) as the vectors of ``ids``, with their
        baselines."""
        self.store.set_embeddings([(mid, matrix[i].tobytes()) for i, mid in enumerate(ids)])
        self._store_baselines(ids, matrix, emb)

    def _store_baselines(self, ids: list[int], matrix: np.ndarray, emb: Embedder) -> None:
        self.store.set_baselines(list(zip(ids, baselines(matrix, self._probe_matrix(emb)).tolist(), strict=True)))

    def _probe_matrix(self, emb: Embedder) -> np.ndarray:
        if self._probes is None:
            self._probes = probe_vectors(emb.embed)
        return self._probes

    def _backfill_baselines(self, emb: Embedder) -> bool:
        """Baselines for rows embedded before baselines existed; True when a batch was done."""
        ids = self.store.missing_baselines(256)
        found = self.store.vectors(ids)
        if not found:
            return False
        ids = [i for i in ids if i in found]
        matrix = np.vstack([np.frombuffer(found[i], dtype=np.float32) for i in ids])
        self._store_baselines(ids, matrix, emb)
        return True
