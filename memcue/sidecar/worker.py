"""The sidecar's background worker: one thread that embeds pending rows, binds the model, stores baselines, ingests the
spool, runs the capture signals (``capture``: captured prompts read for statements, candidates expired), gives
episodes stored before they were embedded with their turn's prompt that text, writes the usage log, optimises the
store and hands freed heap back, stepping aside while questions run; and a second thread that wakes it when a hook
appends to the spool.

Writes go to the store at once (keyword-searchable on return); the worker gives them their vectors when the
model is ready. ``wake`` makes it run a step now; otherwise it runs every ``WORKER_TICK_S``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import numpy as np

from memcue.sidecar.capture import SpoolReader, backfill_turn_prompts
from memcue.sidecar.recall import VectorIndex, baselines, probe_vectors
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.runtime.heap import trim_heap
from memcue.sidecar.scheduler import QuestionGate
from memcue.sidecar.store import Store
from memcue.sidecar.usage import UsageRecorder

log = logging.getLogger("memcue.worker")

#: Rows embedded per batch (about 0.2 s of work on the bulk session, so a question arriving meanwhile waits
#: at most that long for the CPU).
EMBED_BATCH = 64
#: Pending rows from which a step embeds them on both bulk sessions (``Embedder.embed_bulk``); fewer go through
#: the query session alone, which needs no second session loaded.
BULK_MIN_ROWS = 16
#: How often the worker wakes without being told (s): picks up spool files and missed rows.
WORKER_TICK_S = 1.0
#: The idle worker hands freed heap back to the system at most this often (s; ``heap.trim_heap``, a few ms
#: off the request threads: ctypes releases the GIL).
TRIM_EVERY_S = 5.0
#: Longest the background work (embedding backfill, baselines) steps aside for running questions (s; issue 4).
STEP_ASIDE_MAX_S = 20.0
#: The pause after the last question before background embedding starts (s): embedding a captured paste
#: takes 40-50 ms of a core, and started between two prompts of a busy stream it slowed the next one (one
#: session pasting 300 KB logs back to back: another session's prompt hook p50 38 ms with embedding in the
#: gaps, 30 ms without, 23 ms idle; ``make bench-stress``, issue 13). Keyword search finds a row at once;
#: only its vector waits, at most ``STEP_ASIDE_MAX_S``.
QUIET_GAP_S = 0.25
#: How often the spool watcher looks for a change (ms; watchfiles' ``step``): the watch loop wakes this often even
#: when idle (watchfiles checks its stop event and Python's signals each step), so it bounds both the idle
#: wakeups (4 a second) and how late a spooled record is read (a capture record, never a prompt's recall).
SPOOL_WATCH_STEP_MS = 250
#: Rows whose baselines are backfilled per step.
BASELINE_BATCH = 256


class Worker:
    """The background work over ``store`` (see the module docstring). ``embedder`` None: keyword-only (no
    embedding work). ``vectors``: the recall index, loaded once the model is bound. ``gate``: the
    questions running, which the embedding work steps aside for. ``capture``: the capture signals' step (run
    after the spool is ingested; it steps aside for questions itself when it has work). ``background_yields``
    (how often it did) and ``spool_watch`` (how the spool is followed) feed ``/health``."""

    def __init__(self, store: Store, embedder: Embedder | None, vectors: VectorIndex, spool: SpoolReader,
                 usage: UsageRecorder, gate: QuestionGate, capture: Callable[[], None] = lambda: None) -> None:
        self.store = store
        self.embedder = embedder
        self.vectors = vectors
        self.spool = spool
        self.usage = usage
        self.gate = gate
        self.capture = capture
        self.background_yields = 0
        #: How the spool is followed while running: "watchfiles", or why it is polled.
        self.spool_watch = f"polling every {WORKER_TICK_S:g} s"
        self._probes: np.ndarray | None = None
        #: One batch of a re-index to another model (``sidecar.reindex``), run while the store is not bound.
        self.reindex_step: Callable[[], bool] = lambda: False
        self._bind_tried = False
        self._episodes_backfilled = False
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def wake(self) -> None:
        """Run a step now (new rows, a new spool record, a usage record, the model ready)."""
        self._wake.set()

    def start(self) -> None:
        """Start the worker thread and the spool watcher (returns at once)."""
        self._thread = threading.Thread(target=self._work, name="memcue-worker", daemon=True)
        self._thread.start()
        threading.Thread(target=self._watch_spool, name="memcue-spool-watch", daemon=True).start()

    def stop(self) -> None:
        """Stop the worker (waits up to 5 s for its step to finish)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def store_vectors(self, ids: list[int], matrix: np.ndarray, emb: Embedder) -> None:
        """Store the rows of ``matrix`` (float32, (len(ids), dim)) as the vectors of ``ids``, with their
        baselines."""
        self.store.set_embeddings([(mid, matrix[i].tobytes()) for i, mid in enumerate(ids)])
        self._store_baselines(ids, matrix, emb)

    def _watch_spool(self) -> None:
        """Wake the worker as soon as a hook appends to the spool (watchfiles); the worker's
        ``WORKER_TICK_S`` poll stays as the fallback when watching is not possible."""
        try:
            from watchfiles import watch

            self.spool.spool_dir.mkdir(parents=True, exist_ok=True)
            self.spool_watch = "watchfiles"
            for _changes in watch(self.spool.spool_dir, stop_event=self._stop, debounce=50, step=SPOOL_WATCH_STEP_MS,
                                  raise_interrupt=False):
                self._wake.set()
        except Exception as exc:  # noqa: BLE001 - polling still ingests the spool
            self.spool_watch = f"polling every {WORKER_TICK_S:g} s ({type(exc).__name__}: {exc})"
            log.warning("spool watch off, polling instead: %s", exc)

    def _work(self) -> None:
        last_trim = time.monotonic()
        while not self._stop.is_set():
            try:
                if self._step():
                    continue  # a batch was done: more may wait
                if time.monotonic() - last_trim >= TRIM_EVERY_S:  # idle: give freed heap back (RSS)
                    trim_heap()
                    last_trim = time.monotonic()
            except Exception:  # noqa: BLE001 - the worker must survive anything
                log.exception("background worker step failed")
            self._wake.wait(WORKER_TICK_S)
            self._wake.clear()

    def _step(self) -> bool:
        """One round of background work; True when an embedding or baseline batch was done."""
        self.usage.flush()
        self.spool.ingest()
        self.capture()
        emb = self.embedder
        if emb is not None:
            if emb.state == "ready" and not self._bind_tried:
                self._bind_tried = True
                self._bind(emb)
            if self.store.vector_dim is not None:
                if self.gate.busy(QUIET_GAP_S):  # step aside: questions get the CPU
                    self.background_yields += 1
                    self.gate.wait_quiet(STEP_ASIDE_MAX_S, QUIET_GAP_S)
                if self._embed_pending(emb) or self._backfill_episodes():
                    return True
            elif emb.state == "ready" and self.reindex_step():
                return True
            if emb.release_bulk():
                log.info("embedding backlog done; bulk session released")
            if self.store.vector_dim is not None and self._backfill_baselines(emb):
                return True
        self.store.optimize_if_due()
        return False

    def _bind(self, emb: Embedder) -> None:
        """Bind the store to the loaded model and load the vectors now, not on a question."""
        if not self.store.bind_model(emb.model_id, emb.dim) and self.store.vec.available:
            log.warning("vector search off: %s", self.store.vector_note)  # no sqlite-vec: said at start
        elif self.store.vector_dim is not None:
            self.vectors.refresh(self.store)

    def _embed_pending(self, emb: Embedder) -> bool:
        """Embed one batch; True when a batch was done (there may be more)."""
        rows = self.store.pending_embeddings(EMBED_BATCH)
        if not rows:
            return False
        texts = [str(meta.get("embed_text") or content) for _, content, _, meta in rows]
        # A backlog (an import, a restart after a pause, a batch remember): both bulk sessions, side by side.
        # A trickle (captured prompts, a remember) goes through the loaded query session alone.
        matrix = np.vstack(emb.embed_bulk(texts) if len(rows) >= BULK_MIN_ROWS else emb.embed(texts))
        ids = [mid for mid, _, _, _ in rows]
        self.store_vectors(ids, matrix, emb)
        return True

    def _backfill_episodes(self) -> bool:
        """One batch of ``capture.episodes.backfill_turn_prompts`` until none is left in this process; True
        when a batch was done (its rows are then waiting for their new vectors)."""
        if self._episodes_backfilled:
            return False
        if backfill_turn_prompts(self.store):
            return True
        self._episodes_backfilled = False
        return False

    def _store_baselines(self, ids: list[int], matrix: np.ndarray, emb: Embedder) -> None:
        self.store.set_baselines(list(zip(ids, baselines(matrix, self._probe_matrix(emb)).tolist(), strict=True)))

    def _probe_matrix(self, emb: Embedder) -> np.ndarray:
        if self._probes is None:
            self._probes = probe_vectors(emb.embed)
        return self._probes

    def _backfill_baselines(self, emb: Embedder) -> bool:
        """Baselines for rows embedded before baselines existed; True when a batch was done."""
        ids = self.store.missing_baselines(BASELINE_BATCH)
        found = self.store.vectors(ids)
        if not found:
            return False
        ids = [i for i in ids if i in found]
        matrix = np.vstack([np.frombuffer(found[i], dtype=np.float32) for i in ids])
        self._store_baselines(ids, matrix, emb)
        return True
