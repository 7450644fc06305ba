"""The sidecar's HTTP API (FastAPI): health, remember, recall, fetch/list/forget, session context, recall usage
statistics, the hook route, candidate review, session receipts, the distillation ledger, export and restore, and
the re-index to another embedding model.

Each route turns its body into arguments, makes one ``MemoryService`` call and returns a response model;
the service runs blocking work (embedding, SQLite) in worker threads.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse

from memcue import __version__, harnesses
from memcue.sidecar.agent_writes import Held
from memcue.sidecar.api_models import (
    CandidateAcceptIn,
    CandidateOut,
    CandidateRejectIn,
    CandidatesIn,
    CandidatesOut,
    ExpandIn,
    ExportIn,
    ExportMemoryIn,
    FetchIn,
    FetchOut,
    ForgetIn,
    ForgetOut,
    HookIn,
    HookOut,
    ImportOut,
    LastCapturesIn,
    LedgerIn,
    LedgerOut,
    ListIn,
    ListOut,
    MarkOut,
    PinIn,
    PurgeIn,
    PurgeOut,
    RecallIn,
    ReceiptIn,
    ReindexIn,
    RememberBatchIn,
    RememberIn,
    RememberOut,
    RestoreIn,
    RestoreOut,
    SessionContextIn,
    SessionContextOut,
    SessionsIn,
    SourcesIn,
    StatsIn,
    UnforgetIn,
    UpdateIn,
    unix_seconds,
)
from memcue.sidecar.capture import CandidateDecided, CandidateHeld, CandidateNotFound
from memcue.sidecar.failures import LogFailures, validation_failed
from memcue.sidecar.recall import FULL_CHANNELS, KEYWORD_CHANNELS, Filters, RecallRequest
from memcue.sidecar.receipt import SessionNotFound
from memcue.sidecar.scheduler import Busy
from memcue.sidecar.service import MemoryNotFound, MemoryService, StoreNotEmpty
from memcue.sidecar.store import NewMemory, RestoredCandidate, RestoredMemory, WriteResult


def create_app(service: MemoryService) -> FastAPI:
    """Build the FastAPI app serving ``service``."""
    app = FastAPI(title="memcue sidecar", version=__version__)
    _errors(app)
    _writes(app, service)
    _reads(app, service)
    _recall(app, service)
    _hooks(app, service)
    _review(app, service)
    _receipts(app, service)
    _ledger(app, service)
    _transfer(app, service)
    _sources(app, service)
    _reindex(app, service)
    return app


def _sources(app: FastAPI, service: MemoryService) -> None:
    """``/sources``: the native memory sources (what is read, from where, how many memories, last sync), and
    turning one on or off (404 for an unknown name, 409 when the config file cannot be changed)."""

    @app.post("/sources")
    async def sources(body: SourcesIn) -> dict:
        if body.name is None:
            return await service.sources()
        try:
            return await service.set_source(body.name, body.enabled)
        except KeyError:
            raise HTTPException(404, f"no native source named {body.name!r}") from None
        except (ValueError, OSError) as exc:
            raise HTTPException(409, f"cannot change config.toml: {exc}") from None


log = logging.getLogger("memcue.sidecar.api")


def _errors(app: FastAPI) -> None:
    """A bad value is 422 (as pydantic's own errors; logged with its traceback, since a ``ValueError`` raised
    past validation may be a fault of ours); ``Busy`` is 503 with ``Retry-After``; anything else a route raises
    is logged with its traceback and answered with a JSON 500 (``LogFailures``)."""
    app.add_middleware(LogFailures)
    app.add_exception_handler(RequestValidationError, validation_failed)  # type: ignore[arg-type]

    @app.exception_handler(CandidateDecided)
    async def decided(request: Request, exc: CandidateDecided) -> JSONResponse:
        return JSONResponse(status_code=409, content={"detail": str(exc), "state": exc.state})

    @app.exception_handler(ValueError)
    async def bad_value(request: Request, exc: ValueError) -> JSONResponse:
        log.warning("%s %s refused: %s: %s", request.method, request.url.path, type(exc).__name__, exc,
                    exc_info=exc)
        return JSONResponse(status_code=422, content={"detail": [{"loc": ["body"], "msg": str(exc)}]})

    @app.exception_handler(Busy)
    async def busy(request: Request, exc: Busy) -> JSONResponse:
        return JSONResponse(status_code=503, headers={"Retry-After": str(exc.retry_after_s)},
                            content={"code": "RECALL_BUSY", "retryable": True, "message": str(exc),
                                     "retry_after_s": exc.retry_after_s})


def _new_memory(m: RememberIn) -> NewMemory:
    return NewMemory(content=m.content, kind=m.kind, project=m.project, session_id=m.session_id, pinned=m.pinned,
                     source=m.source, source_id=m.source_id, created_at=m.created_at, metadata=m.metadata,
                     tags=tuple(m.tags))


def _written(result: WriteResult | Held) -> RememberOut:
    if isinstance(result, Held):
        return RememberOut(id=None, bookkeeping=False, held=result.reason, candidate_id=result.candidate_id)
    return RememberOut(id=result.id, bookkeeping=result.bookkeeping, duplicate=result.duplicate,
                       redacted=result.redacted)


def _writes(app: FastAPI, service: MemoryService) -> None:
    """``/remember``, ``/remember/batch``, ``/update``, ``/import``, ``/forget`` and ``/purge``."""

    @app.post("/remember", response_model=RememberOut)
    async def remember(body: RememberIn) -> RememberOut:
        return _written(await service.remember(_new_memory(body)))

    @app.post("/remember/batch", response_model=list[RememberOut])
    async def remember_batch(body: RememberBatchIn) -> list[RememberOut]:
        return [_written(r) for r in await service.remember_batch([_new_memory(m) for m in body.memories])]

    @app.post("/update", response_model=RememberOut)
    async def update(body: UpdateIn) -> RememberOut:
        try:
            result = await service.update(body.memory_id, content=body.content, kind=body.kind, pinned=body.pinned,
                                          metadata=body.metadata, valid_from=unix_seconds(body.valid_from),
                                          source=body.source)
        except MemoryNotFound as exc:
            raise HTTPException(404, str(exc)) from None
        return _written(result)

    @app.post("/import", response_model=list[ImportOut])
    async def import_batch(body: RememberBatchIn) -> list[ImportOut]:
        """Each memory stored, updated, unchanged or bad on its own (``sidecar.imports``)."""
        out = await service.import_batch([_new_memory(m) for m in body.memories])
        return [ImportOut(**dataclasses.asdict(r)) for r in out]

    @app.post("/forget", response_model=ForgetOut)
    async def forget(body: ForgetIn) -> ForgetOut:
        out = await service.forget(body.ids)
        return ForgetOut(forgotten=out.forgotten, not_found=out.not_found, already=out.already)

    @app.post("/pin", response_model=MarkOut)
    async def pin(body: PinIn) -> MarkOut:
        return MarkOut(**dataclasses.asdict(await service.set_pinned(body.ids, body.pinned)))

    @app.post("/unforget", response_model=MarkOut)
    async def unforget(body: UnforgetIn) -> MarkOut:
        return MarkOut(**dataclasses.asdict(await service.unforget(body.ids)))

    @app.post("/purge", response_model=PurgeOut)
    async def purge(body: PurgeIn) -> PurgeOut:
        out = await service.purge(body.ids)
        return PurgeOut(purged=out.purged, not_found=out.not_found, wal_truncated=out.wal_truncated)


def _reads(app: FastAPI, service: MemoryService) -> None:
    """``/health``, ``/expand``, ``/fetch``, ``/list`` and ``/stats``."""

    @app.get("/health")
    async def health() -> dict:
        return await service.health()

    @app.post("/expand")
    async def expand(body: ExpandIn) -> dict:
        return await service.expand(body.id_list(), session_id=body.session_id, query_id=body.query_id)

    @app.post("/fetch", response_model=FetchOut)
    async def fetch(body: FetchIn) -> dict:
        return await service.fetch(body.ids, session_id=body.session_id, query_id=body.query_id)

    @app.post("/list", response_model=ListOut)
    async def list_memories(body: ListIn) -> dict:
        return await service.list_recent(project=None if body.all_projects else body.project, limit=body.limit,
                                         kind=body.kind, include_forgotten=body.include_forgotten,
                                         include_bookkeeping=body.include_bookkeeping, tags=tuple(body.tags),
                                         include_captured=body.include_captured)

    @app.post("/stats")
    async def stats(body: StatsIn) -> dict:
        """Recall usage: used and unused memories per channel, kind and way served (``store.usage``)."""
        return await service.usage_stats(body.days)


def _recall_request(body: RecallIn) -> RecallRequest:
    """The ``RecallRequest`` a ``POST /recall`` body asks for (times as Unix seconds)."""
    window = body.window or None
    filters = Filters(window_start=unix_seconds(window.from_) if window else None,
                      window_end=unix_seconds(window.to) if window else None,
                      as_of=unix_seconds(body.as_of), valid_at=unix_seconds(body.valid_at), kind=body.kind,
                      tags=tuple(body.tags))
    return RecallRequest(query=body.query, project=body.project, limit=body.limit, session_id=body.session_id,
                         channels=KEYWORD_CHANNELS if body.mode == "keyword" else FULL_CHANNELS,
                         include_requests=body.include_requests or body.kind == "request", weights=body.weights,
                         filters=filters, now=unix_seconds(body.now), depth=body.depth, max_tokens=body.max_tokens)


def _recall(app: FastAPI, service: MemoryService) -> None:
    """``/recall`` and ``/session_context``."""

    @app.post("/recall")
    async def recall(body: RecallIn) -> dict:
        return await service.ask(_recall_request(body), body.budget_s)

    @app.post("/session_context", response_model=SessionContextOut)
    async def session_context(body: SessionContextIn) -> SessionContextOut:
        session_id = body.session_id or uuid.uuid4().hex
        out = await service.session_context(body.harness, session_id, body.project, budget_s=body.budget_s,
                                            max_tokens=body.max_tokens, max_chars=body.max_chars)
        return SessionContextOut(session_id=session_id, context=out.context, included=out.included,
                                 tokens=out.tokens, memory_ids=list(out.memory_ids),
                                 shortened_ids=list(out.shortened_ids))


def _hooks(app: FastAPI, service: MemoryService) -> None:
    """``/hooks/{harness}/{event}``: known harnesses and events only (the harness registry, ``memcue.harnesses``)."""

    @app.post("/hooks/{harness}/{event}", response_model=HookOut)
    async def hook(harness: str, event: str, body: HookIn) -> HookOut:
        if harness not in harnesses.HARNESSES or event not in harnesses.EVENTS:
            raise HTTPException(404, f"unknown hook {harness}/{event}")
        out = await service.hook(harness, event, body.event, budget_s=body.budget_s, max_tokens=body.max_tokens,
                                 max_chars=body.max_chars, sent_at=body.sent_at)
        return HookOut(version=__version__, **dataclasses.asdict(out))


def _review(app: FastAPI, service: MemoryService) -> None:
    """``/candidates`` (list), ``/candidates/accept`` and ``/candidates/reject``: review of capture candidates.
    An unknown id is 404, a candidate decided already 409, one an agent may not decide (``by_agent``) 403."""

    @app.post("/candidates", response_model=CandidatesOut)
    async def candidates(body: CandidatesIn) -> dict:
        return await service.list_candidates(state=body.state, project=body.project, session_id=body.session_id,
                                             limit=body.limit)

    @app.post("/candidates/accept", response_model=CandidateOut)
    async def accept(body: CandidateAcceptIn) -> dict:
        try:
            return await service.accept_candidate(body.id, content=body.content, reason=body.reason,
                                                  by_agent=body.by_agent)
        except CandidateNotFound as exc:
            raise HTTPException(404, str(exc)) from None
        except CandidateHeld as exc:
            raise HTTPException(403, str(exc)) from None

    @app.post("/candidates/reject", response_model=CandidateOut)
    async def reject(body: CandidateRejectIn) -> dict:
        try:
            return await service.reject_candidate(body.id, reason=body.reason, by_agent=body.by_agent)
        except CandidateNotFound as exc:
            raise HTTPException(404, str(exc)) from None
        except CandidateHeld as exc:
            raise HTTPException(403, str(exc)) from None


def _receipts(app: FastAPI, service: MemoryService) -> None:
    """``/receipt`` (one session's receipt; 404 for an unknown session), ``/receipt/sessions`` (recent sessions
    with counts) and ``/receipt/last_captures`` (newest capture per source, for ``memcue doctor``)."""

    @app.post("/receipt")
    async def receipt(body: ReceiptIn) -> dict:
        try:
            return await service.receipt(body.session_id, body.project)
        except SessionNotFound as exc:
            raise HTTPException(404, str(exc)) from None

    @app.post("/receipt/sessions")
    async def sessions(body: SessionsIn) -> dict:
        return await service.sessions(body.project, body.limit)

    @app.post("/receipt/last_captures")
    async def last_captures(body: LastCapturesIn) -> dict:
        return await service.last_captures(body.sources)


def _ledger(app: FastAPI, service: MemoryService) -> None:
    """``/ledger``: the optional model distiller's ledger and today's spend against its budget."""

    @app.post("/ledger", response_model=LedgerOut)
    async def ledger(body: LedgerIn) -> dict:
        return await service.ledger(body.days)


def _restored_memory(m: ExportMemoryIn) -> RestoredMemory:
    """An export's memory line as the store restores it (tags normalised by the store)."""
    return RestoredMemory(
        id=m.id, content=m.content, kind=m.kind, project=m.project, session_id=m.session_id, created_at=m.created_at,
        updated_at=m.updated_at, pinned=m.pinned, bookkeeping=m.bookkeeping, source=m.source, source_id=m.source_id,
        metadata=m.metadata, seen_count=m.seen_count, valid_from=m.valid_from, valid_to=m.valid_to,
        superseded_by=m.superseded_by, superseded_at=m.superseded_at, forgotten_at=m.forgotten_at,
        tags=tuple(m.tags))


def _transfer(app: FastAPI, service: MemoryService) -> None:
    """``/export`` (the export's lines, streamed as JSON Lines: ``sidecar.export``) and ``/restore`` (part of an
    export written back; 409 for a plain restore into a store that is not empty)."""

    @app.post("/export")
    async def export(body: ExportIn) -> StreamingResponse:
        project = None if body.all_projects else body.project
        return StreamingResponse(service.export_lines(project), media_type="application/x-ndjson")

    @app.post("/restore", response_model=RestoreOut)
    async def restore(body: RestoreIn) -> dict:
        try:
            report = await service.restore(
                [_restored_memory(m) for m in body.memories],
                [RestoredCandidate(**c.model_dump()) for c in body.candidates],
                [(d.source_id, d.memory_id, d.created_at) for d in body.deliveries],
                known=body.known, merge=body.merge, start=body.start, id_floor=body.id_floor)
        except StoreNotEmpty as exc:
            raise HTTPException(409, str(exc)) from None
        return {"memories": [dataclasses.asdict(r) for r in report.memories],
                "candidates": [dataclasses.asdict(r) for r in report.candidates],
                "deliveries": [dataclasses.asdict(r) for r in report.deliveries], "ids": report.ids}


def _reindex(app: FastAPI, service: MemoryService) -> None:
    """``/reindex``: start, pause or read the re-index to the configured embedding model (case C17)."""

    @app.post("/reindex")
    async def reindex(body: ReindexIn) -> dict:
        return await service.reindex(body.action)
