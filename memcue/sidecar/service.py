"""The sidecar's service: one facade over the store, recall, the question scheduler, the hook service and
the background worker. The HTTP routes call one method each; nothing outside reaches into its parts.

Writes (``remember``, ``remember_batch``, ``update``, ``forget``) go to the store at once (keyword-searchable
on return); the ``Worker`` embeds them when the model is ready. Reads (``fetch``, ``expand``, ``list_recent``,
``usage_stats``) mark memories opened from a recall as used. Recall (``ask``) goes through the scheduler's
question slots, or its keyword race when the caller gives a budget. ``health`` is the ``/health`` payload.
Blocking work runs in worker threads bounded by one ``CapacityLimiter`` (``WORKER_THREADS``), so a burst of
callers cannot starve the event loop. The service also implements ``inject.HookBackend`` for the hook service.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import numpy as np

from memcue import __version__
from memcue.core.paths import Locations
from memcue.sidecar import export
from memcue.sidecar.active_sessions import ActiveSessions
from memcue.sidecar.agent_writes import Held, held_reason, hold, is_agent
from memcue.sidecar.answer_check import AnswerChecker
from memcue.sidecar.capture import (
    CommitSignal,
    Gate,
    PromptStatements,
    Recurrence,
    SpoolReader,
    TestRuns,
    TurnEdits,
    with_turn_requests,
)
from memcue.sidecar.capture.distiller import Distiller
from memcue.sidecar.capture.gate import AGENT_REJECTED, AGENT_SAVED
from memcue.sidecar.capture.native import SOURCES, NativeSync
from memcue.sidecar.capture.native.sync import START_PROJECTS
from memcue.sidecar.dedup import NearCheck, block_repeats, find_near_duplicate, near_duplicates
from memcue.sidecar.imports import ImportResult, import_memories
from memcue.sidecar.inject import HookResult, HookService, session_tools
from memcue.sidecar.recall import (
    KEYWORD_CHANNELS,
    RecallRequest,
    RecallServices,
    Reranker,
    age_label,
    apply_layers,
    budget_timeout_answer,
    context_for,
    is_warming,
    recall,
    warm_up,
)
from memcue.sidecar.receipt import build_receipt, latest_session
from memcue.sidecar.reindex import Reindexer
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.runtime.tokenizer import TokenCounter
from memcue.sidecar.scheduler import QuestionGate, Questions, race_recall
from memcue.sidecar.settings import Settings, write_sources_off
from memcue.sidecar.store import (
    ForgetResult,
    MarkResult,
    NewMemory,
    PreparedWrite,
    PurgeResult,
    RestoredCandidate,
    RestoredMemory,
    Store,
    WriteResult,
    instruction_like,
    prepare_write,
)
from memcue.sidecar.usage import UsageRecorder, served_recall
from memcue.sidecar.worker import QUIET_GAP_S, STEP_ASIDE_MAX_S, Worker

log = logging.getLogger("memcue.service")
#: Worker threads for recall and writes at once (2 cores; embedding uses one thread each).
WORKER_THREADS = 4
#: Seconds the answer check gets on a question asked without a budget.
CHECK_WITHOUT_BUDGET_S = 60.0
#: Longest a session start waits for its project's native memory files to be read (s).
NATIVE_SYNC_S = 1.0
#: How long (s) ``stop`` waits for the dateparser warm-up still importing (about a second on this machine).
WARM_JOIN_S = 5.0


class MemoryNotFound(LookupError):
    """No memory has the id asked for (``update``)."""


class StoreNotEmpty(RuntimeError):
    """A plain restore of an export was asked of a store that holds memories already (``restore``)."""


class MemoryService:
    """The sidecar's service over the data dir ``locations`` with ``settings`` (read once at start).

    ``load_model=False`` serves keyword-only (tests, cases C18/C19). Raises what ``Store`` raises when the
    database cannot be opened. Its parts (store, embedder, worker, scheduler, hook service) are private: callers
    use its methods."""

    def __init__(self, locations: Locations, settings: Settings, *, load_model: bool = True) -> None:
        self._locations = locations
        self._settings = settings
        locations.root.mkdir(parents=True, exist_ok=True)
        self._store = Store(locations.database)
        if not self._store.vec.available:
            log.warning("sqlite-vec could not load (%s): recall is keyword-only", self._store.vec.error)
        # Without sqlite-vec there is nowhere to search vectors: skip the model (memory, start-up work).
        self._embedder: Embedder | None = (
            Embedder(locations.models_dir, cache_size=settings.embedding_cache_size,
                     load_delay_s=settings.model_load_delay_s, model_name=settings.model_name,
                     model_path=settings.model_path)
            if load_model and self._store.vec.available else None)
        self._tokens = TokenCounter(locations.tiktoken_cache)
        self._recall_services = RecallServices(config=settings.recall_options())
        if settings.rerank_model:
            self._recall_services.reranker = Reranker(settings.rerank_model, locations.models_dir,
                                                     model_path=settings.rerank_model_path)
        #: The optional judge of question answers (off unless configured: ``sidecar/answer_check.py``).
        self._answer_checker = AnswerChecker(settings.answer_check, key=settings.answer_check_key)
        self._limiter = anyio.CapacityLimiter(WORKER_THREADS)
        self._gate = QuestionGate()
        #: Recalls served and the memories opened from them (``sidecar/usage.py``), written by the worker.
        self._usage = UsageRecorder(self._store)
        self._worker = Worker(self._store, self._embedder, self._recall_services.vectors,
                             self._wire_capture(locations, settings), self._usage, self._gate,
                             capture=self._capture_step)
        self._usage.on_record = self._worker.wake
        #: A re-index to the configured model after a model change (case C17), run by the worker.
        self._reindex = Reindexer(self._store, self._embedder, self._recall_services.vectors,
                                  step_aside=lambda: self._gate.wait_quiet(STEP_ASIDE_MAX_S, QUIET_GAP_S),
                                  delay_s=settings.reindex_delay_s)
        self._worker.reindex_step = self._reindex.step
        self._recurrence = Recurrence(self._store, self._candidates, self._embedder, near_memory=self._near_memory,
                                      near_texts=near_duplicates, saved_by_agent=is_agent,
                                      step_aside=lambda: self._gate.wait_quiet(STEP_ASIDE_MAX_S, QUIET_GAP_S))
        store = self._store
        # The answer cache's key: any write (generation), a new vector or a superseded row (journal), a rebind.
        self._questions = Questions(self.recall, lambda: (store.generation, store.vector_dim,
                                                         store.vector_journal.position()),
                                   self._limiter, self._gate.running, slots=settings.recall_slots,
                                   wait_s=settings.recall_wait_s, ttl_s=settings.answer_cache_ttl_s,
                                   delay_s=settings.recall_delay_s)
        #: The harnesses' own memory files, kept in step with the store (``capture.native``).
        self._native = NativeSync(self._store, list(SOURCES.values()), env=os.environ,
                                  home=Path(settings.native_home or Path.home()), off=settings.sources_off,
                                  after_write=self._native_changed)
        #: The sessions the hooks served lately, per project: whose an agent's save through Codex's MCP server is.
        self._active = ActiveSessions()
        self._hooks = HookService(self, prompt_block=settings.prompt_block, prompt_limit=settings.hook_recall_limit,
                                  native_filter=self._native.not_loaded_by,
                                  tools_of=functools.partial(session_tools, locations), repeats=self._block_repeats)
        self._warm: threading.Thread | None = None
        #: Captured prompts stored with their recall's query vector instead of a second embedding (``/health``).
        self.prompt_vectors_reused = 0

    def _wire_capture(self, locations: Locations, settings: Settings) -> SpoolReader:
        """The capture side (``_candidates``, ``_statements``, ``_turn_edits``, ``_commits``, ``_distiller``) and
        the spool reader that feeds it."""
        #: The promotion gate (writes through ``_remember_one``) and the prompt-statement signal the worker runs.
        self._candidates = Gate(self._store, self._remember_one, self._update_held)
        self._statements = PromptStatements(self._store, self._candidates, wake=lambda: self._worker.wake())
        #: Episodes whose turn's edits a later commit landed (``capture.turn_edits``), told by the commit signal.
        self._turn_edits = TurnEdits(self._store, self._candidates)
        self._commits = CommitSignal(self._store, self._candidates, wake=lambda: self._worker.wake(),
                                     on_landed=self._turn_edits.confirm)
        #: Optional model distillation at session end (off unless ``[distill]`` is configured), its own thread.
        self._distiller = Distiller(self._store, settings.distill, self._tokens.count, key=settings.distill_key)
        tool_signals = (TestRuns(self._store, self._candidates).record, self._turn_edits.record)
        return SpoolReader(locations.spool_dir, self._store, on_stored=self._spooled,
                           on_tool=functools.partial(_each, tool_signals))

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Start model loading and the background worker (returns at once)."""
        if self._embedder is not None:
            self._embedder.on_ready = self._worker.wake  # bind vectors as soon as the model is there
            self._embedder.start()
        if self._recall_services.reranker is not None:
            self._recall_services.reranker.start()
        self._worker.start()
        self._distiller.start()
        self._native.start(lambda: self._store.session_projects(START_PROJECTS))
        self._warm = threading.Thread(target=warm_up, name="memcue-dateparser-warm", daemon=True)
        self._warm.start()

    def stop(self) -> None:
        """Stop the worker, end model loading, write the pending usage log and checkpoint the database. Safe at
        any point after construction (also when ``start`` was never called): start-up threads still inside
        native code (onnxruntime, dateparser's imports) are waited for, bounded, so the process never exits
        under them."""
        self._reindex.close()
        self._native.stop()
        self._worker.stop()
        self._distiller.stop()
        if self._embedder is not None:
            self._embedder.close()
        if self._recall_services.reranker is not None:
            self._recall_services.reranker.close()
        if self._warm is not None:
            self._warm.join(WARM_JOIN_S)
        self._usage.flush()
        self._store.close()

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        """The worker threads blocking work shares (``WORKER_THREADS``)."""
        return self._limiter

    @property
    def warming_up(self) -> bool:
        """True while the embedding model loads or rows wait for their vectors (``recall.is_warming``)."""
        return is_warming(self._store, self._embedder)

    async def health(self) -> dict[str, Any]:
        """The ``/health`` payload (see ``_health``)."""
        return await anyio.to_thread.run_sync(self._health, limiter=self._limiter)

    def _health(self) -> dict[str, Any]:
        emb, reranker = self._embedder, self._recall_services.reranker
        return {
            "status": "ok",
            "version": __version__,
            "pid": os.getpid(),
            "warming_up": self.warming_up,
            "model": {"id": emb.model_id if emb else "", "state": emb.state if emb else "disabled",
                      "error": emb.error if emb else ""},
            "vector_search": self._store.vector_dim is not None,
            "vector_note": self._store.vector_note,
            "reindex": self._reindex.status(),
            "sqlite_vec": {"available": self._store.vec.available, "version": self._store.vec.version,
                           "error": self._store.vec.error},
            "tokenizer": self._tokens.mode,
            "reranker": {"status": reranker.status if reranker else "off",
                         "note": reranker.note if reranker else
                         "no reranker configured (config [rerank] model or MEMCUE_RERANK_MODEL)"},
            "config_error": self._settings.error,
            "distill": {"enabled": self._distiller.config.enabled, "off_reason": self._distiller.config.off_reason},
            "questions": self._questions.stats(),
            "background_yields": self._worker.background_yields,
            "prompt_vectors_reused": self.prompt_vectors_reused,
            "hooks": {"recent": self._hooks.timings.recent()},
            "spool_watch": self._worker.spool_watch,
            "embedding_cache": emb.cache_stats() if emb else {},
            "vector_index": self._recall_services.vectors.stats(),
            "schema_version": self._store.schema_version,
            "counts": self._store.counts(),
            "data_dir": str(self._locations.root),
        }

    async def reindex(self, action: str) -> dict[str, Any]:
        """``/reindex``: "status", "start" (or resume) or "pause" the re-index to the configured model
        (``sidecar.reindex``); returns its status. Raises ``ValueError`` for another action."""
        steps = {"status": self._reindex.status, "start": self._reindex.start, "pause": self._reindex.pause}
        if action not in steps:
            raise ValueError(f"re-index action {action!r}: must be one of {', '.join(steps)}")
        out = await anyio.to_thread.run_sync(steps[action], limiter=self._limiter)
        if action == "start":
            self._worker.wake()
        return out

    # -- writes --------------------------------------------------------------------------------
    async def remember(self, memory: NewMemory) -> WriteResult | Held:
        """Store one memory (``/remember``): a near-duplicate in the same project reinforces the stored memory
        instead (``sidecar.dedup``; the result says ``duplicate``). An agent's text that reads like instructions
        is held for review instead (``agent_writes``: the result is a ``Held``)."""
        memory = self._active.attribute(memory)
        reason = held_reason(memory)
        if reason:
            return await anyio.to_thread.run_sync(lambda: hold(self._store, memory, reason), limiter=self._limiter)
        return await anyio.to_thread.run_sync(self._remember_one, memory, limiter=self._limiter)

    async def remember_batch(self, memories: list[NewMemory]) -> list[WriteResult | Held]:
        """Store memories now (exact duplicates once); their vectors are computed by the worker. An agent's
        instruction-like one is held for review (``Held``), as in ``remember``."""
        return await anyio.to_thread.run_sync(self._remember_many, memories, limiter=self._limiter)

    def _remember_many(self, memories: list[NewMemory]) -> list[WriteResult | Held]:
        memories = with_turn_requests([self._active.attribute(m) for m in memories], self._store.turn_request)
        reasons = [held_reason(m) for m in memories]
        stored = iter(self._store.remember_many([m for m, r in zip(memories, reasons, strict=True) if not r]))
        out = [hold(self._store, m, r) if r else next(stored) for m, r in zip(memories, reasons, strict=True)]
        self._worker.wake()
        return out

    async def import_batch(self, memories: list[NewMemory]) -> list[ImportResult]:
        """Import memories one outcome each (``imports.import_memories``: stored, updated, unchanged or bad; a bad
        one never stops the others)."""
        return await anyio.to_thread.run_sync(self._import_many, memories, limiter=self._limiter)

    def _import_many(self, memories: list[NewMemory]) -> list[ImportResult]:
        out = import_memories(self._store, memories)
        for result in out:
            if result.replaced is not None:
                self._recall_services.working_sets.forget(result.replaced)
        self._worker.wake()
        return out

    def _remember_one(self, memory: NewMemory) -> WriteResult:
        """A new row gets the vector the near-duplicate check computed at once, so the next ``remember``
        sees it. An episode is embedded with its turn's prompt (``capture.episodes``)."""
        memory = with_turn_requests([memory], self._store.turn_request)[0]
        try:
            check = find_near_duplicate(self._store, self._recall_services.vectors, self._embedder, memory)
        except Exception:  # noqa: BLE001 - the write must not fail for the check; exact dedup still applies
            log.exception("near-duplicate check failed; storing the memory as new")
            check = NearCheck()
        # The check prepared the memory for the store (sanitised, stripped, redacted): write that, so a remember
        # runs the write preparation once.
        prepared = check.prepared or prepare_write(memory)
        if check.memory_id is not None:
            self._store.reinforce(check.memory_id, prepared.tags)  # its tags join the stored memory's
            return WriteResult(check.memory_id, False, duplicate=True, redacted=prepared.redacted)
        return self._write_with_vector(prepared, check.vector)[0]

    def _near_memory(self, memory: NewMemory) -> tuple[int | None, np.ndarray | None]:
        """The stored memory ``memory`` near-duplicates (``dedup.find_near_duplicate``) and its vector, each None
        when there is none (for ``capture.recurrence``)."""
        check = find_near_duplicate(self._store, self._recall_services.vectors, self._embedder, memory)
        return check.memory_id, check.vector

    def remember_prompt(self, memory: NewMemory) -> WriteResult:
        """Store a captured prompt (blocking). When its recall just embedded the same text (the query-embedding
        cache holds it), that vector is stored with it at once: the worker does not embed the prompt a second
        time (about 4 ms of CPU per prompt, which three agents at once feel)."""
        emb = self._embedder
        vector = emb.cached(memory.content) if emb is not None and emb.state == "ready" else None
        result, stored = self._write_with_vector(memory, vector)
        self.prompt_vectors_reused += stored
        self._statements.queue(memory, result)  # read for statements by the worker, off the hook's answer
        return result

    def _spooled(self, memory: NewMemory, result: WriteResult) -> None:
        """A spooled record was stored: a prompt is read for statements, a Stop/SessionEnd for commits, a
        session's end distilled when a model is configured."""
        self._statements.queue(memory, result)
        self._commits.queue(memory, result)
        self._distiller.queue(memory, result)

    def busy(self) -> bool:
        """True while background work is left that an idle exit would put off (``sidecar.idle``): captured
        prompts or session ends not yet read for statements or commits, or memories waiting for their vector
        while the model is ready."""
        if self._statements.waiting or self._commits.waiting:
            return True
        emb = self._embedder
        return bool(emb and emb.state == "ready" and self._store.pending_embeddings(1))  # one indexed row, not a count

    def _capture_step(self) -> None:
        """The worker's capture work: queued prompts read for statements (once no question ran for
        ``QUIET_GAP_S``: a prompt's recall first, its statements a moment later), pending candidates past their
        time expired, pending candidates that recurred in another session promoted (``capture.recurrence``)."""
        if self._statements.waiting:
            self._gate.wait_quiet(STEP_ASIDE_MAX_S, QUIET_GAP_S)
            self._statements.run()
        if self._commits.waiting:
            self._commits.run()
        self._candidates.expire_due()
        self._recurrence.run()

    def _write_with_vector(self, memory: NewMemory | PreparedWrite,
                           vector: np.ndarray | None) -> tuple[WriteResult, bool]:
        """Store ``memory``; when ``vector`` (its embedding, computed already) fits a new, embeddable row, store
        it with the row at once instead of leaving it to the worker. Returns ``(result, vector stored)``."""
        result = self._store.remember_many([memory])[0]
        emb = self._embedder
        if (vector is None or emb is None or result.duplicate or result.bookkeeping
                or memory.metadata.get("embed_text") or self._store.vector_dim != vector.shape[0]):
            self._worker.wake()
            return result, False
        self._worker.store_vectors([result.id], np.asarray(vector, dtype=np.float32).reshape(1, -1), emb)
        return result, True

    async def update(self, memory_id: int, *, content: str, kind: str | None, pinned: bool | None,
                     metadata: dict[str, Any], valid_from: float | None, source: str = "update") -> WriteResult | Held:
        """Write a new version of ``memory_id`` (see ``Store.update``): ``kind`` and ``pinned`` None keep the old
        ones; ``valid_from`` in Unix s. It leaves every working set. An agent's (``source`` ``mcp``) text that
        reads like instructions is held for review instead: a candidate that replaces ``memory_id`` when accepted
        (``Held``). Raises ``MemoryNotFound``."""
        old = self._store.fetch([memory_id]).get(memory_id)
        if old is None:
            raise MemoryNotFound(f"no memory with id {memory_id}")
        agent = is_agent(source)
        memory = NewMemory(content=content, kind=kind or old["kind"], project=old["project"],
                           session_id=old["session_id"], pinned=old["pinned"] if pinned is None else pinned,
                           source="mcp:update" if agent else "update", metadata=metadata, valid_from=valid_from)
        reason = instruction_like(content) if agent else ""
        if reason:
            return await anyio.to_thread.run_sync(lambda: hold(self._store, memory, reason, replaces=memory_id),
                                                  limiter=self._limiter)
        return await anyio.to_thread.run_sync(self._update, memory_id, memory, limiter=self._limiter)

    def _update_held(self, memory_id: int, memory: NewMemory) -> WriteResult:
        """An accepted held update (``Gate``): a new version of ``memory_id`` keeping its pinned flag. Raises
        ``ValueError`` when that memory is gone, replaced or forgotten."""
        old = self._store.fetch([memory_id]).get(memory_id)
        if old is None:
            raise ValueError(f"memory {memory_id}, which this candidate would replace, no longer exists")
        memory.pinned = bool(old["pinned"])
        return self._update(memory_id, memory)

    def _update(self, memory_id: int, memory: NewMemory) -> WriteResult:
        out = self._store.update(memory_id, memory)
        self._recall_services.working_sets.forget(memory_id)
        self._worker.wake()
        return out

    async def forget(self, ids: list[int]) -> ForgetResult:
        """Soft-delete memories (see ``Store.forget``): they stop answering at once and leave every working
        set. Idempotent."""
        return await anyio.to_thread.run_sync(self._forget, ids, limiter=self._limiter)

    def _forget(self, ids: list[int]) -> ForgetResult:
        out = self._store.forget(ids)
        for memory_id in out.forgotten:
            self._recall_services.working_sets.forget(memory_id)
        return out

    async def set_pinned(self, ids: list[int], pinned: bool) -> MarkResult:
        """Pin or unpin memories in place (a person's mark: the session-start block offers pinned ones first)."""
        return await anyio.to_thread.run_sync(self._store.set_pinned, ids, pinned, limiter=self._limiter)

    async def unforget(self, ids: list[int]) -> MarkResult:
        """Take a ``forget`` back: the memories answer again (vector indexes take them back)."""
        return await anyio.to_thread.run_sync(self._store.unforget, ids, limiter=self._limiter)

    async def purge(self, ids: list[int]) -> PurgeResult:
        """Hard-delete memories and all their versions (see ``Store.purge``): gone from every table, index and
        working set, their text left in neither the database file nor its WAL. Cannot be undone."""
        return await anyio.to_thread.run_sync(self._purge, ids, limiter=self._limiter)

    def _purge(self, ids: list[int]) -> PurgeResult:
        out = self._store.purge(ids)
        for memory_id in out.purged:
            self._recall_services.working_sets.forget(memory_id)
        log.warning("purged memories %s for good (asked for %s)", out.purged, ids)
        return out

    # -- reads ---------------------------------------------------------------------------------
    async def expand(self, ids: list[int], *, session_id: str = "", query_id: str = "") -> dict[str, Any]:
        """Memories by id at depth 2 (text plus session, entity and version context): ``{"success", "items",
        "not_found"}``; success is False when no id resolves. Those found are marked used in the recall
        ``query_id`` names (else the session's latest)."""
        def run() -> dict[str, Any]:
            out = self._expand(ids)
            self._usage.mark_used([i["memory_id"] for i in out["items"]], query_id=query_id, session_id=session_id)
            return out

        return await anyio.to_thread.run_sync(run, limiter=self._limiter)

    def _expand(self, ids: list[int]) -> dict[str, Any]:
        rows = self._store.fetch(ids)
        items = [{"memory_id": mid, "fact_id": mid, "content": rows[mid]["content"], "memory_kind": rows[mid]["kind"],
                  "project": rows[mid]["project"], "created_at": rows[mid]["created_at"],
                  "superseded_by": rows[mid]["superseded_by"], "bookkeeping": rows[mid]["bookkeeping"],
                  "forgotten": rows[mid]["forgotten_at"] is not None,
                  "context": context_for(self._store, mid)} for mid in dict.fromkeys(ids) if mid in rows]
        return {"success": bool(items), "items": items, "not_found": [i for i in dict.fromkeys(ids) if i not in rows]}

    async def fetch(self, ids: list[int], *, session_id: str = "", query_id: str = "") -> dict[str, Any]:
        """Memories by id, in the order asked, each id once, forgotten and superseded ones too:
        ``{"success", "results", "not_found"}`` (results in the ``MemoryOut`` shape); ``success`` is False when
        no id resolves. Those found are marked used as in ``expand``."""
        def run() -> dict[str, Any]:
            wanted = list(dict.fromkeys(ids))
            rows, now = self._store.fetch(wanted), time.time()
            results = [_memory_item(rows[i], now) for i in wanted if i in rows]
            out = {"success": bool(results), "results": results, "not_found": [i for i in wanted if i not in rows]}
            self._usage.mark_used([m["memory_id"] for m in results], query_id=query_id, session_id=session_id)
            return out

        return await anyio.to_thread.run_sync(run, limiter=self._limiter)

    async def list_recent(self, *, project: str | None, limit: int, kind: str | None = None,
                          include_forgotten: bool = False, include_bookkeeping: bool = False,
                          tags: Sequence[str] = (), include_captured: bool = True) -> dict[str, Any]:
        """The newest memories of ``project`` plus global ones (every project when None), at most ``limit``, of
        ``kind`` and carrying every one of ``tags`` when given, captured prompts (kind ``request``) only with
        ``include_captured`` or when ``kind`` asks for them: ``{"results": [...]}`` in the ``MemoryOut`` shape."""
        excluded = () if include_captured or kind else ("request",)

        def run() -> dict[str, Any]:
            rows = self._store.list_memories(project=project, limit=limit, include_bookkeeping=include_bookkeeping,
                                            kind=kind, include_forgotten=include_forgotten, tags=tags,
                                            kinds_excluded=excluded)
            now = time.time()
            return {"results": [_memory_item(row, now) for row in rows]}

        return await anyio.to_thread.run_sync(run, limiter=self._limiter)

    async def usage_stats(self, days: float) -> dict[str, Any]:
        """Recall usage over the last ``days`` days: used and unused memories per channel, kind and way served
        (``UsageRecorder.stats``)."""
        return await anyio.to_thread.run_sync(self._usage.stats, days, limiter=self._limiter)

    # -- review --------------------------------------------------------------------------------
    async def list_candidates(self, *, state: str | None, project: str | None, session_id: str | None,
                              limit: int) -> dict[str, Any]:
        """Capture candidates newest first (``Store.list_candidates``): ``{"results": [candidate]}``."""
        def run() -> dict[str, Any]:
            return {"results": self._store.list_candidates(state=state, project=project, session_id=session_id,
                                                           limit=limit)}

        return await anyio.to_thread.run_sync(run, limiter=self._limiter)

    async def accept_candidate(self, candidate_id: int, *, content: str | None, reason: str,
                               by_agent: bool = False) -> dict[str, Any]:
        """Promote a pending candidate through the gate (``Gate.promote``; ``content``: the reviewer's edit) and
        return its row. ``by_agent``: an agent decides it (MCP), which the gate allows only for a candidate not
        held for a person (``Gate.check_agent_may_decide``), with reason ``AGENT_SAVED`` (``reason`` is a
        person's). Raises ``CandidateNotFound``, ``CandidateDecided``, ``CandidateHeld``, ``ValueError``."""
        def run() -> dict[str, Any]:
            if by_agent:
                self._candidates.check_agent_may_decide(candidate_id, content)
            return self._candidates.promote(candidate_id, AGENT_SAVED if by_agent else reason, content=content)

        return await anyio.to_thread.run_sync(run, limiter=self._limiter)

    async def reject_candidate(self, candidate_id: int, *, reason: str, by_agent: bool = False) -> dict[str, Any]:
        """Turn down a pending candidate (``Gate.reject``) and return its row (``by_agent`` as for
        ``accept_candidate``). Raises ``CandidateNotFound``, ``CandidateDecided``, ``CandidateHeld``."""
        def run() -> dict[str, Any]:
            if by_agent:
                self._candidates.check_agent_may_decide(candidate_id)
            return self._candidates.reject(candidate_id, AGENT_REJECTED if by_agent else reason)

        return await anyio.to_thread.run_sync(run, limiter=self._limiter)

    # -- receipts ------------------------------------------------------------------------------
    async def receipt(self, session_id: str | None, project: str | None) -> dict[str, Any]:
        """The receipt of ``session_id`` (``receipt.build_receipt``), or without one of ``project``'s latest
        session (every project's when None). Raises ``receipt.SessionNotFound``."""
        def run() -> dict[str, Any]:
            self._usage.flush()  # a block served a moment ago is in the receipt
            return build_receipt(self._store, session_id or latest_session(self._store, project))

        return await anyio.to_thread.run_sync(run, limiter=self._limiter)

    async def ledger(self, days: float) -> dict[str, Any]:
        """The distillation ledger and today's spend against the budget (``Distiller.report``)."""
        return await anyio.to_thread.run_sync(self._distiller.report, days, limiter=self._limiter)

    async def sessions(self, project: str | None, limit: int) -> dict[str, Any]:
        """Recent sessions with their counts (``Store.sessions``): ``{"results": [session]}``."""
        def run() -> dict[str, Any]:
            self._usage.flush()
            return {"results": self._store.sessions(project, limit)}

        return await anyio.to_thread.run_sync(run, limiter=self._limiter)

    async def last_captures(self, sources: list[str]) -> dict[str, Any]:
        """The newest capture per source (``Store.last_captures``): ``{"sources": {source: Unix s or None}}``."""
        return {"sources": await anyio.to_thread.run_sync(self._store.last_captures, sources,
                                                          limiter=self._limiter)}

    # -- export and restore --------------------------------------------------------------------
    def export_lines(self, project: str | None) -> Iterator[str]:
        """The lines of an export of ``project`` and the global memories (every project when None), read as they
        are iterated (blocking: iterate in a worker thread; ``export.export_lines``)."""
        return export.export_lines(self._store, project)

    async def restore(self, memories: Sequence[RestoredMemory], candidates: Sequence[RestoredCandidate],
                      deliveries: Sequence[tuple[str, int, float]], *, known: dict[int, int], merge: bool,
                      start: bool, id_floor: int | None) -> export.RestoreReport:
        """Write part of an export back (``export.restore``). Raises ``StoreNotEmpty`` on the ``start`` of a plain
        (not ``merge``) restore into a store that holds memories or candidates."""
        def run() -> export.RestoreReport:
            if start and not merge and not export.is_empty(self._store):
                counts = self._store.counts()
                raise StoreNotEmpty(f"this store is not empty ({counts['memories']} memories in "
                                    f"{self._locations.root}): an export is restored into an empty store only. "
                                    "Pass --merge to add what it lacks (records held already are skipped), or "
                                    "point MEMCUE_HOME at an empty folder")
            report = export.restore(self._store, memories, candidates, deliveries, known=known, merge=merge,
                                    id_floor=id_floor)
            self._worker.wake()
            return report

        return await anyio.to_thread.run_sync(run, limiter=self._limiter)

    # -- recall --------------------------------------------------------------------------------
    def recall(self, request: RecallRequest) -> dict[str, Any]:
        """Run the recall pipeline and shape the results by ``request.depth`` and ``request.max_tokens``
        (blocking; call from a worker thread). Raises ``ValueError`` for a bad request."""
        answer = recall(self._store, self._embedder, request, self._recall_services)
        return apply_layers(answer, depth=request.depth, max_tokens=request.max_tokens, count=self._tokens.count,
                            store=self._store)

    async def ask(self, request: RecallRequest, budget_s: float | None) -> dict[str, Any]:
        """A question (``POST /recall``): through the question slots without a budget, else the keyword race
        within ``budget_s`` (s). The recall is queued for the usage log, and the optional answer check runs
        within what is left of the budget (it adds fields, never hides a result). Raises ``Busy`` and
        ``ValueError``."""
        started = time.perf_counter()
        answer = await self._answer(request, budget_s, started)
        self._usage.record(served_recall(str(answer.get("query_id") or ""), request.session_id, "question",
                                        answer.get("results") or [], project=request.project or ""))
        left = (budget_s - (time.perf_counter() - started)) if budget_s is not None else CHECK_WITHOUT_BUDGET_S
        return {**answer, **await self._answer_checker.judge(answer, left, warming=bool(answer.get("warming_up")))}

    async def _answer(self, request: RecallRequest, budget_s: float | None, started: float) -> dict[str, Any]:
        if budget_s is None:
            return await self._questions.ask(request)
        answer, by = await self.race_recall(request, budget_s)
        if answer is None:
            return budget_timeout_answer(request, (time.perf_counter() - started) * 1000)
        answer["retrieval_mode"] = by
        if by == "keyword":
            answer["incomplete_channels"] = [name for name in request.channels if name not in KEYWORD_CHANNELS]
            for name in answer["incomplete_channels"]:
                answer["channel_status"][name] = "timeout"
        return answer

    async def race_recall(self, request: RecallRequest, budget_s: float) -> tuple[dict[str, Any] | None, str]:
        """The keyword race for ``request`` within ``budget_s`` (s): ``(answer or None, answered_by)``
        (``scheduler.race_recall``)."""
        return await race_recall(self.recall, request, budget_s, self._limiter)

    def question_running(self) -> contextlib.AbstractContextManager[None]:
        """Mark a question as running: background work (embedding backfill, baselines) waits meanwhile."""
        return self._gate.running()

    # -- hooks ---------------------------------------------------------------------------------
    async def hook(self, harness: str, event: str, payload: dict[str, Any], *, budget_s: float, max_tokens: int,
                   max_chars: int, sent_at: float | None = None) -> HookResult:
        """Serve one hook call (``HookService.handle``); a session start first reads its project's native memory
        files (``NativeSync.sync``, within ``NATIVE_SYNC_S`` of the budget). ``sent_at`` (Unix s, the hook's clock):
        the time since then comes off ``budget_s``; a request taken up after its hook's budget has run out is
        answered with nothing (a prompt is still captured), so nothing the hook never got counts as shown."""
        self._active.seen(str(payload.get("project") or ""), str(payload.get("session_id") or ""), sent_at)
        if sent_at is not None:
            budget_s -= max(0.0, time.time() - sent_at)
            payload = {**payload, "sent_at": sent_at}  # a captured prompt is dated when it was sent
        if budget_s <= 0:
            return await self._hooks.late(harness, event, payload)
        if event == "session-start" and payload.get("project"):
            started = time.perf_counter()
            with anyio.move_on_after(min(NATIVE_SYNC_S, budget_s / 2)):
                await anyio.to_thread.run_sync(self._native.sync, str(payload["project"]), abandon_on_cancel=True,
                                               limiter=self._limiter)
            budget_s -= time.perf_counter() - started
        return await self._hooks.handle(harness, event, payload, budget_s=budget_s, max_tokens=max_tokens,
                                       max_chars=max_chars)

    async def session_context(self, harness: str, session_id: str, project: str, *, budget_s: float,
                              max_tokens: int, max_chars: int) -> HookResult:
        """The session-start block for ``session_id`` (``HookService.session_block``)."""
        return await self._hooks.session_block(harness, session_id, project, budget_s=budget_s,
                                              max_tokens=max_tokens, max_chars=max_chars)

    # -- native memory sources ---------------------------------------------------------------------
    async def sources(self) -> dict[str, Any]:
        """The native memory sources (``NativeSync.listing``): ``{"sources": [...], "watch": status}``."""
        listing = await anyio.to_thread.run_sync(self._native.listing, limiter=self._limiter)
        return {"sources": listing, "watch": self._native.watch_status}

    async def set_source(self, name: str, enabled: bool) -> dict[str, Any]:
        """Turn native source ``name`` on or off, kept in ``config.toml`` (``[sources] off``), and return the
        listing. Raises ``KeyError`` for an unknown name, ``ValueError``/``OSError`` when the config file cannot
        be changed (nothing changed then)."""
        def run() -> None:
            off = set(self._native.off) | {name} if not enabled else set(self._native.off) - {name}
            if name not in SOURCES:
                raise KeyError(name)
            write_sources_off(self._locations.config_file, sorted(off))
            self._native.set_enabled(name, enabled)

        await anyio.to_thread.run_sync(run, limiter=self._limiter)
        return await self.sources()

    def _native_changed(self, ids: list[int]) -> None:
        """A native sync superseded or forgot ``ids``: they leave every working set; new rows get vectors."""
        for memory_id in ids:
            self._recall_services.working_sets.forget(memory_id)
        self._worker.wake()

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` (``TokenCounter``)."""
        return self._tokens.count(text)

    def _block_repeats(self, rows: Sequence[dict[str, Any]]) -> dict[int, int]:
        """``dedup.block_repeats`` of a session-start block's ``rows`` over their stored vectors, made unit length
        (a row not embedded yet is never left out); blocking."""
        vectors: dict[int, np.ndarray] = {}
        for mid, blob in self._store.vectors(int(r["memory_id"]) for r in rows).items():
            vector = np.frombuffer(blob, dtype=np.float32)
            norm = float(np.linalg.norm(vector))
            if norm > 0:
                vectors[mid] = vector / norm
        return block_repeats(rows, vectors)

    def doc_count(self, project: str) -> int:
        """Memories the session-start pointer counts for ``project`` (``Store.doc_count``; blocking)."""
        return self._store.doc_count(project)

    def keyword_rows(self, match: str, *, project: str, limit: int, exclude_kinds: Sequence[str] = ()
                     ) -> list[dict[str, Any]]:
        """Rows of the keyword index's best ``limit`` matches of ``match`` (``Store.bm25`` then ``Store.fetch``),
        best first; blocking."""
        ranked = self._store.bm25(match, project=project, limit=limit, exclude_kinds=exclude_kinds)
        rows = self._store.fetch(i for i, _ in ranked)
        return [rows[i] for i, _ in ranked if i in rows]

    def list_memories(self, **filters: Any) -> list[dict[str, Any]]:
        """Store rows newest first (``Store.list_memories``; blocking)."""
        return self._store.list_memories(**filters)

    def session_recalls(self, session_id: str) -> list[dict[str, Any]]:
        """The usage log's recalls for ``session_id`` (``Store.session_recalls``; blocking)."""
        return self._store.session_recalls(session_id)

    def record_served(self, query_id: str, session_id: str, served_by: str, results: Sequence[dict[str, Any]],
                      block: str = "", *, tokens: int = 0, skipped: str = "", project: str = "") -> None:
        """Queue a recall served for the usage log (``usage.served_recall``)."""
        self._usage.record(served_recall(query_id, session_id, served_by, results, block, tokens=tokens,
                                         skipped=skipped, project=project))


def _each(calls: Sequence[Callable[[dict[str, Any]], object]], record: dict[str, Any]) -> None:
    """Hand one spooled tool record to each of ``calls`` in turn (the signals that read tool records)."""
    for call in calls:
        call(record)


def _memory_item(row: dict[str, Any], now: float) -> dict[str, Any]:
    """One memory (a ``Store.fetch`` row) in the ``MemoryOut`` shape; ``now`` (Unix s) for its age label."""
    return {
        "memory_id": row["id"],
        "content": row["content"],
        "memory_kind": row["kind"],
        "project": row["project"],
        "session_id": row["session_id"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "age_label": age_label(row["created_at"], now),
        "pinned": row["pinned"],
        "bookkeeping": row["bookkeeping"],
        "forgotten": row.get("forgotten_at") is not None,
        "forgotten_at": row.get("forgotten_at"),
        "superseded_by": row["superseded_by"],
        "seen_count": row.get("seen_count") or 1,
        "tags": row.get("tags") or [],
        "source": row.get("source") or "",
        "promoted_by": _promoted_by(row.get("metadata")),
    }


def _promoted_by(metadata: Any) -> str | None:
    """Why a captured candidate was kept (``metadata["promoted_by"]``, set by ``capture.Gate``), or None."""
    why = metadata.get("promoted_by") if isinstance(metadata, dict) else None
    return str(why) if why else None
