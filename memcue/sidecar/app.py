"""The sidecar's HTTP API (FastAPI): health, remember, recall, fetch/list/forget, session context, recall usage
statistics and the hook route.

Recall and hook work runs in worker threads (embedding and SQLite are blocking), bounded by one
``CapacityLimiter`` so a burst of callers cannot starve the event loop.
"""

from __future__ import annotations

import time
import uuid

import anyio
import anyio.to_thread
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse

from memcue import __version__
from memcue.sidecar.api_models import (
    ExpandIn,
    FetchIn,
    FetchOut,
    ForgetIn,
    ForgetOut,
    HookIn,
    HookOut,
    ListIn,
    ListOut,
    RecallIn,
    RememberBatchIn,
    RememberIn,
    RememberOut,
    SessionContextIn,
    SessionContextOut,
    StatsIn,
    UpdateIn,
    unix_seconds,
)
from memcue.sidecar.engine import Engine
from memcue.sidecar.inject.service import handle_hook, session_block
from memcue.sidecar.memory_api import fetch as fetch_memories
from memcue.sidecar.memory_api import list_recent
from memcue.sidecar.recall import ALL_CHANNELS, FULL_CHANNELS, KEYWORD_CHANNELS, Filters, RecallRequest
from memcue.sidecar.scheduler import Busy, Questions
from memcue.sidecar.store import NewMemory
from memcue.sidecar.usage import served_recall

#: Worker threads for recall and writes at once (2 cores; embedding uses one thread each).
WORKER_THREADS = 4
HARNESSES = ("claude-code", "codex", "hermes")
HOOK_EVENTS = ("user-prompt-submit", "session-start", "stop", "session-end")


def _new_memory(m: RememberIn) -> NewMemory:
    return NewMemory(content=m.content, kind=m.kind, project=m.project, session_id=m.session_id, pinned=m.pinned,
                     source=m.source, source_id=m.source_id, created_at=m.created_at, metadata=m.metadata)


def create_app(engine: Engine) -> FastAPI:
    """Build the FastAPI app serving ``engine``."""
    app = FastAPI(title="memcue sidecar", version=__version__)
    limiter = anyio.CapacityLimiter(WORKER_THREADS)
    store = engine.store
    # The answer cache's key: any write (generation), a new vector or a superseded row (journal), a rebind.
    questions = Questions(engine.recall, lambda: (store.generation, store.vector_dim, store.vector_journal.position()),
                          limiter, engine.question_running)
    engine.question_stats = questions.stats

    @app.exception_handler(ValueError)
    async def bad_value(request: Request, exc: ValueError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": [{"loc": ["body"], "msg": str(exc)}]})

    @app.exception_handler(Busy)
    async def busy(request: Request, exc: Busy) -> JSONResponse:
        return JSONResponse(status_code=503, headers={"Retry-After": str(exc.retry_after_s)},
                            content={"code": "RECALL_BUSY", "retryable": True, "message": str(exc),
                                     "retry_after_s": exc.retry_after_s})

    @app.get("/health")
    async def health() -> dict:
        return await anyio.to_thread.run_sync(engine.health, limiter=limiter)

    @app.post("/remember", response_model=RememberOut)
    async def remember(body: RememberIn) -> RememberOut:
        result = await anyio.to_thread.run_sync(engine.remember_one, _new_memory(body), limiter=limiter)
        return RememberOut(id=result.id, bookkeeping=result.bookkeeping, duplicate=result.duplicate,
                           redacted=result.redacted)

    @app.post("/remember/batch", response_model=list[RememberOut])
    async def remember_batch(body: RememberBatchIn) -> list[RememberOut]:
        results = await anyio.to_thread.run_sync(engine.remember, [_new_memory(m) for m in body.memories],
                                                 limiter=limiter)
        return [RememberOut(id=r.id, bookkeeping=r.bookkeeping, duplicate=r.duplicate, redacted=r.redacted)
                for r in results]

    @app.post("/update", response_model=RememberOut)
    async def update(body: UpdateIn) -> RememberOut:
        old = engine.store.fetch([body.memory_id]).get(body.memory_id)
        if old is None:
            raise HTTPException(404, f"no memory with id {body.memory_id}")
        memory = NewMemory(content=body.content, kind=body.kind or old["kind"], project=old["project"],
                           session_id=old["session_id"], pinned=old["pinned"] if body.pinned is None else body.pinned,
                           source="update", metadata=body.metadata, valid_from=unix_seconds(body.valid_from))
        result = await anyio.to_thread.run_sync(engine.update, body.memory_id, memory, limiter=limiter)
        return RememberOut(id=result.id, bookkeeping=result.bookkeeping, duplicate=result.duplicate,
                           redacted=result.redacted)

    def opened(out: dict, found: list[int], session_id: str, query_id: str) -> dict:
        """Mark memories opened from a recall (``query_id``, else the session's latest) used."""
        engine.usage.mark_used(found, query_id=query_id, session_id=session_id)
        return out

    @app.post("/expand")
    async def expand(body: ExpandIn) -> dict:
        def run() -> dict:
            out = engine.expand(body.id_list())
            return opened(out, [i["memory_id"] for i in out["items"]], body.session_id, body.query_id)

        return await anyio.to_thread.run_sync(run, limiter=limiter)

    @app.post("/fetch", response_model=FetchOut)
    async def fetch(body: FetchIn) -> dict:
        def run() -> dict:
            out = fetch_memories(store, body.ids)
            return opened(out, [m["memory_id"] for m in out["results"]], body.session_id, body.query_id)

        return await anyio.to_thread.run_sync(run, limiter=limiter)

    @app.post("/stats")
    async def stats(body: StatsIn) -> dict:
        """Recall usage: used and unused memories per channel, kind and way served (``store.usage``)."""
        return await anyio.to_thread.run_sync(engine.usage.stats, body.days, limiter=limiter)

    @app.post("/list", response_model=ListOut)
    async def list_memories(body: ListIn) -> dict:
        return await anyio.to_thread.run_sync(list_recent, store, body, limiter=limiter)

    @app.post("/forget", response_model=ForgetOut)
    async def forget(body: ForgetIn) -> ForgetOut:
        out = await anyio.to_thread.run_sync(engine.forget, body.ids, limiter=limiter)
        return ForgetOut(forgotten=out.forgotten, not_found=out.not_found, already=out.already)

    @app.post("/session_context", response_model=SessionContextOut)
    async def session_context(body: SessionContextIn) -> SessionContextOut:
        session_id = body.session_id or uuid.uuid4().hex
        out = await session_block(engine, body.harness, session_id, body.project, budget_s=body.budget_s,
                                  max_tokens=body.max_tokens, max_chars=body.max_chars, limiter=limiter)
        return SessionContextOut(session_id=session_id, context=out.context, included=out.included,
                                 tokens=out.tokens)

    @app.post("/recall")
    async def recall(body: RecallIn) -> dict:
        window = body.window or None
        filters = Filters(window_start=unix_seconds(window.from_) if window else None,
                          window_end=unix_seconds(window.to) if window else None,
                          as_of=unix_seconds(body.as_of), valid_at=unix_seconds(body.valid_at))
        request = RecallRequest(query=body.query, project=body.project, limit=body.limit,
                                session_id=body.session_id,
                                channels=KEYWORD_CHANNELS if body.mode == "keyword" else FULL_CHANNELS,
                                include_requests=body.include_requests, weights=body.weights, filters=filters,
                                now=unix_seconds(body.now), depth=body.depth, max_tokens=body.max_tokens)
        started = time.perf_counter()
        answer = await _answer(request, body, started)
        engine.usage.record(served_recall(str(answer.get("query_id") or ""), body.session_id, "question",
                                          answer.get("results") or []))
        # The optional answer check, within what is left of the budget; it adds fields, never hides a result.
        left = (body.budget_s - (time.perf_counter() - started)) if body.budget_s is not None else 60.0
        return {**answer, **await engine.answer_checker.judge(answer, left, warming=bool(answer.get("warming_up")))}

    async def _answer(request: RecallRequest, body: RecallIn, started: float) -> dict:
        if body.budget_s is None:
            return await questions.ask(request)
        answer, by = await engine.recall_within(request, body.budget_s, limiter)
        if answer is None:
            return {"query": body.query, "results": [], "tier": "none", "retrieval_mode": "none",
                    "note": "The search did not finish within the budget.", "abstained": True,
                    "abstention_reason": "no_candidates", "incomplete_channels": list(request.channels),
                    "channel_status": {name: "timeout" for name in ALL_CHANNELS},
                    "retrieval_time_ms": round((time.perf_counter() - started) * 1000, 2)}
        answer["retrieval_mode"] = by
        if by == "keyword":
            answer["incomplete_channels"] = [name for name in request.channels if name not in KEYWORD_CHANNELS]
            for name in answer["incomplete_channels"]:
                answer["channel_status"][name] = "timeout"
        return answer

    @app.post("/hooks/{harness}/{event}", response_model=HookOut)
    async def hook(harness: str, event: str, body: HookIn) -> HookOut:
        if harness not in HARNESSES or event not in HOOK_EVENTS:
            raise HTTPException(404, f"unknown hook {harness}/{event}")
        out = await handle_hook(engine, harness, event, body, limiter)
        engine.hook_times.append({"harness": harness, "event": event, "ms": out.retrieval_time_ms,
                                  "answered_by": out.answered_by, "included": out.included})
        return out

    return app
