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
from memcue.sidecar.models import HookIn, HookOut, RecallIn, RememberBatchIn, RememberIn, RememberOut
from memcue.sidecar.recall.channels import BM25, SEMANTIC
from memcue.sidecar.recall.pipeline import DEFAULT_WEIGHTS, RecallRequest
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

    @app.exception_handler(ValueError)
    async def bad_value(request: Request, exc: ValueError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": [{"loc": ["body"], "msg": str(exc)}]})

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

    @app.post("/recall")
    async def recall(body: RecallIn) -> dict:
        weights = {**DEFAULT_WEIGHTS, **(body.weights or {})}
        channels = (BM25,) if body.mode == "keyword" else (SEMANTIC, BM25)
        request = RecallRequest(query=body.query, project=body.project, limit=body.limit,
                                session_id=body.session_id, channels=channels,
                                include_requests=body.include_requests, weights=weights)
        if body.budget_s is None:
            return await anyio.to_thread.run_sync(engine.recall, request, limiter=limiter)
        started = time.perf_counter()
        answer, by = await engine.recall_within(request, body.budget_s, limiter)
        if answer is None:
            return {"query": body.query, "results": [], "tier": "none", "retrieval_mode": "none",
                    "note": "The search did not finish within the budget.", "abstained": True,
                    "abstention_reason": "no_candidates", "incomplete_channels": [SEMANTIC, BM25],
                    "channel_status": {SEMANTIC: "timeout", BM25: "timeout"},
                    "retrieval_time_ms": round((time.perf_counter() - started) * 1000, 2)}
        answer["retrieval_mode"] = by
        if by == "keyword":
            answer["incomplete_channels"] = [SEMANTIC]
            answer["channel_status"][SEMANTIC] = "timeout"
        return answer

    @app.post("/hooks/{harness}/{event}", response_model=HookOut)
    async def hook(harness: str, event: str, body: HookIn) -> HookOut:
        if harness not in HARNESSES or event not in HOOK_EVENTS:
            raise HTTPException(404, f"unknown hook {harness}/{event}")
        return await handle_hook(engine, harness, event, body, limiter)

    return app
