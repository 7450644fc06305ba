"""Re-embedding every memory with the configured model after the embedding model changed (case C17).

At start the worker binds the store to the loaded model; when the store's vectors were made with another model
(``Store.bind_model`` fails: another id or dimension), nothing is deleted and recall is keyword-only, with a
warning in the log, ``/health`` (``vector_note``, ``reindex``), ``memcue status`` and ``memcue doctor``.
``memcue reindex`` (``POST /reindex``) then starts a re-index that the background worker runs a batch at a time
(stepping aside for questions), keeping each new vector apart from the old ones (``store/sqlite/reindex.py``).

**Keyword-only until it completes.** The old vectors stay on disk, untouched, until the swap, but they are not
searched meanwhile: a query embedded by the configured model cannot be compared with another model's vectors,
and keeping the old model loaded beside the new one to embed queries for them would double the model's memory
(about 155 MB a session) for the length of the re-index. So switching the config back to the old model at any
point before the swap restores hybrid recall at once (the store binds again, nothing was dropped), and the
re-index's progress is kept for if the new model is configured again.

**Resumable.** A memory counts as done once its new vector is stored, batch by batch; a paused re-index (Ctrl-C
in ``memcue reindex``) or a killed sidecar goes on from the memories still missing: a sidecar that starts with
a re-index "running" to its model resumes it by itself, and ``memcue reindex`` resumes a paused one. When every
memory has its new vector the swap is one transaction (``Store.finish_reindex``); then hybrid recall is back.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from memcue.sidecar.recall import VectorIndex, baselines, probe_vectors
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import Store

log = logging.getLogger("memcue.reindex")

#: Memories re-embedded per batch (about 0.1-0.2 s of work, so a question waits at most that long for the CPU,
#: and a killed sidecar loses at most one batch of work).
REINDEX_BATCH = 32
#: Batches of at least this many rows run on both bulk sessions (``Embedder.embed_bulk``).
BULK_MIN_ROWS = 16


class Reindexer:
    """Runs and reports a re-index of ``store`` to ``embedder``'s model (see the module docstring). ``vectors``:
    the recall index, reloaded after the swap. ``step_aside()``: waits while questions run. ``delay_s``: a pause
    after each batch (s, tests only)."""

    def __init__(self, store: Store, embedder: Embedder | None, vectors: VectorIndex,
                 step_aside: Callable[[], Any] = lambda: None, delay_s: float = 0.0) -> None:
        self._store = store
        self._embedder = embedder
        self._vectors = vectors
        self._probes: np.ndarray | None = None  # the baseline probes, embedded once
        self._step_aside = step_aside
        self._delay_s = delay_s
        self._after = 0
        self._stop = threading.Event()
        self._announced = False
        #: Memories this process embedded for a re-index (a resumed one does not count the ones done before).
        self.embedded_here = 0
        #: Vectors swapped in by the last re-index this process completed (None: none completed).
        self.finished: int | None = None

    def close(self) -> None:
        """End a ``delay_s`` pause at once (the sidecar is stopping)."""
        self._stop.set()

    def status(self) -> dict[str, Any]:
        """``{"state", "store_model", "store_dim", "model", "dim", "done", "total", "embedded_here", "finished",
        "note"}``. ``state``: off (no model: keyword-only service) | warming | error (the configured model did
        not load) | none (the vectors match the model, nothing to do) | needed (they do not: keyword-only until
        ``memcue reindex``) | running | paused. ``done`` / ``total``: memories with their new vector / to embed
        (both 0 in the other states)."""
        emb, store = self._embedder, self._store
        bound = store.bound_model()
        target = store.reindex_target()
        model = (emb.model_id, emb.dim) if emb is not None and emb.state == "ready" else None
        if emb is None:
            state = "off"
        elif model is None:
            state = emb.state
        elif bound is None or bound == model:
            state = "none"
        elif target is not None and target[:2] == model:
            state = target[2]
        else:
            state = "needed"
        # Counted only when a re-index is due (``/health`` shows this, and counting reads every row).
        done, total = store.reindex_counts() if state in ("needed", "running", "paused") else (0, 0)
        if target is None or model is None or target[:2] != model:
            done = 0
        return {"state": state, "store_model": bound[0] if bound else "", "store_dim": bound[1] if bound else 0,
                "model": model[0] if model else "", "dim": model[1] if model else 0, "done": done,
                "total": total, "embedded_here": self.embedded_here, "finished": self.finished,
                "note": _note(state, bound, model, target, done, total)}

    def start(self) -> dict[str, Any]:
        """Start (or resume) the re-index when the configured model differs from the store's; returns
        ``status()``. Nothing happens in any other state (the status says why)."""
        current = self.status()
        if current["state"] in ("needed", "paused", "running"):
            resumed = self._store.start_reindex(current["model"], current["dim"])
            self._after = 0
            log.warning("re-index to %s %s (%d of %d memories have their new vector)", current["model"],
                        "resumed" if resumed else "started", current["done"] if resumed else 0, current["total"])
        return self.status()

    def pause(self) -> dict[str, Any]:
        """Pause a running re-index (its progress is kept; ``start`` goes on from there); returns ``status()``."""
        if self.status()["state"] == "running":
            self._store.set_reindex_state("paused")
            log.warning("re-index paused; `memcue reindex` goes on from where it stopped")
        return self.status()

    def step(self) -> bool:
        """One batch of a running re-index to the loaded model, or the swap when none is left; True when work
        was done. Called by the worker while the store is not bound (a model mismatch)."""
        emb, store = self._embedder, self._store
        if emb is None or emb.state != "ready" or store.vector_dim is not None:
            return False
        target = store.reindex_target()
        if target is None or target[2] != "running" or target[:2] != (emb.model_id, emb.dim):
            return False
        if not self._announced:
            self._announced = True
            done, total = store.reindex_counts()
            log.warning("re-index to %s running: %d of %d memories already have their new vector", emb.model_id,
                        done, total)
        rows = store.reindex_pending(REINDEX_BATCH, self._after)
        if not rows:
            if self._after:  # one more pass from the start before the swap
                self._after = 0
                return True
            self._finish(emb)
            return True
        self._step_aside()
        texts = [str(meta.get("embed_text") or content) for _, content, _, meta in rows]
        matrix = np.vstack(emb.embed_bulk(texts) if len(rows) >= BULK_MIN_ROWS else emb.embed(texts))
        if self._probes is None:
            self._probes = probe_vectors(emb.embed)
        base = baselines(matrix, self._probes).tolist()
        store.add_reindex_vectors([(mid, matrix[i].tobytes(), float(base[i]))
                                   for i, (mid, _, _, _) in enumerate(rows)])
        self.embedded_here += len(rows)
        self._after = rows[-1][0]
        if self._delay_s > 0:
            self._stop.wait(self._delay_s)
        return True

    def _finish(self, emb: Embedder) -> None:
        """Swap the new vectors in and load them for recall."""
        swapped = self._store.finish_reindex(emb.model_id, emb.dim)
        self.finished = swapped
        self._vectors.refresh(self._store)
        emb.release_bulk()
        log.warning("re-index done: %d memories re-embedded with %s (%d dims); hybrid recall is back", swapped,
                    emb.model_id, emb.dim)


def _note(state: str, bound: tuple[str, int] | None, model: tuple[str, int] | None,
          target: tuple[str, int, str] | None, done: int, total: int) -> str:
    """The sentence ``status`` gives for ``state``."""
    parked = (f"; a re-index to {target[0]} is kept, it goes on if {target[0]} is configured again"
              if target is not None and model is not None and target[:2] != model else "")
    if state == "none":
        return "the stored vectors match the configured model" + parked
    if state in ("off", "warming", "error"):
        return f"the embedding model is {'not loaded' if state == 'off' else state}"
    assert bound is not None and model is not None
    change = f"stored vectors are {bound[0]} ({bound[1]} dims), the configured model is {model[0]} ({model[1]} dims)"
    if state == "needed":
        return (f"{change}: recall is keyword-only until `memcue reindex`; nothing was deleted, and configuring "
                f"{bound[0]} again restores hybrid recall")
    return (f"re-index {state}: {done} of {total} memories re-embedded with {model[0]}; recall is keyword-only "
            f"until it completes ({change})")
