"""Unexpected failures of the sidecar's routes: logged with their traceback, answered with a short JSON 500.

A sidecar started by a hook has no stderr anyone reads, and uvicorn reports an exception that leaves the app on
its own logger (stderr) and then drops the connection. ``LogFailures`` sits inside the app instead: whatever a
route raises that no exception handler turned into an answer is logged (``logger.exception``, so the traceback
lands in ``logs/sidecar.log``) and answered ``500 {"detail": "internal error: <ExceptionType>", "code":
"INTERNAL"}`` while the connection stays usable. An exception after the answer has started is logged and then
raised on (the answer cannot be replaced any more).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.requests import Request

log = logging.getLogger("memcue.sidecar.api")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def internal_error_body(exc: BaseException) -> bytes:
    """The JSON body of a 500: a short message naming the exception's type, never its text (it may quote the
    request's content)."""
    return json.dumps({"detail": f"internal error: {type(exc).__name__} (see logs/sidecar.log)",
                       "code": "INTERNAL"}).encode()


def _json_safe(value: Any) -> Any:
    """``value`` with every NaN or infinite number replaced by its text ("nan", "-inf")."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


async def validation_failed(request: Request, exc: RequestValidationError) -> JSONResponse:
    """FastAPI's 422 for a request that fails validation (each error naming its field in ``loc``), with the
    offending ``input`` shown as text when it is a number JSON cannot carry (NaN, infinity)."""
    return JSONResponse(status_code=422, content={"detail": _json_safe(jsonable_encoder(exc.errors()))})


class LogFailures:
    """ASGI middleware: log an unhandled exception of an HTTP request with its traceback and answer a JSON 500
    (see the module docstring). Other scopes (lifespan, websockets) pass through untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            log.exception("%s %s failed", scope.get("method", ""), scope.get("path", ""))
            if started:
                raise
            body = internal_error_body(exc)
            await send({"type": "http.response.start", "status": 500,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
