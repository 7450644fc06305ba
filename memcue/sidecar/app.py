"""The sidecar's HTTP API (FastAPI): health, remember, recall and the hook route.

Recall and hook work runs in worker threads (embedding and SQLite are blocking), bounded by one
``CapacityLimiter`` so a burst of callers cannot starve the event loop.
"""

from __future__ import annotations

import time

import anyio
import anyio.to_thread
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse

from memcue import __version__
from memcue.sidecar.engine import Engine
from memcue.sidecar.hook_service import handle_hook
from memcue.sidecar.models import (
    ExpandIn,
    HookIn,
    HookOut,
    RecallIn,
    RememberBatchIn,
    RememberIn,
    RememberOut,
    UpdateIn,
    unix_seconds,
)
from memcue.sidecar.questions import Busy, Questions
from memcue.sidecar.recall.channels import ALL_CHANNELS
from memcue.sidecar.recall.filters import Filters
from memcue.sidecar.recall.pipeline import FULL_CHANNELS, KEYWORD_CHANNELS, RecallRequest
from memcue.sidecar.store.memories import NewMemory

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
        result = (await anyio.to_thread.run_sync(engine.remember, [_new_memory(body)], limiter=limiter))[0]
        return RememberOut(id=result.id, bookkeeping=result.bookkeeping, duplicate=result.duplicate)

    @app.post("/remember/batch", response_model=list[RememberOut])
    async def remember_batch(body: RememberBatchIn) -> list[RememberOut]:
        results = await anyio.to_thread.run_sync(engine.remember, [_new_memory(m) for m in body.memories],
                                                 limiter=limiter)
        return [RememberOut(id=r.id, bookkeeping=r.bookkeeping, duplicate=r.duplicate) for r in results]

    @app.post("/update", response_model=RememberOut)
    async def update(body: UpdateIn) -> RememberOut:
        old = engine.store.fetch([body.memory_id]).get(body.memory_id)
        if old is None:
            raise HTTPException(404, f"no memory with id {body.memory_id}")
        memory = NewMemory(content=body.content, kind=body.kind or old["kind"], project=old["project"],
                           session_id=old["session_id"], pinned=old["pinned"] if body.pinned is None else body.pinned,
                           source="update", metadata=body.metadata, valid_from=unix_seconds(body.valid_from))
        result = await anyio.to_thread.run_sync(engine.update, body.memory_id, memory, limiter=limiter)
        return RememberOut(id=result.id, bookkeeping=result.bookkeeping, duplicate=result.duplicate)

    @app.post("/expand")
    async def expand(body: ExpandIn) -> dict:
        return await anyio.to_thread.run_sync(engine.expand, body.id_list(), limiter=limiter)

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
        if body.budget_s is None:
            return await questions.ask(request)
        started = time.perf_counter()
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
