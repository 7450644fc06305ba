"""The sidecar's idle exit: after ``idle_exit_s`` without a request it stops itself, and says so in its log; the
next hook or command starts it again (keyword-ready within about a second, DESIGN.md section 3).

``Activity`` is a small ASGI middleware that notes the time of every HTTP request. ``watch_idle`` runs on its
own daemon thread while uvicorn serves: it looks every ``check_every_s`` and, once no request came for
``idle_exit_s`` and the background work is done (``busy()`` False: vectors, the spool, a distillation), asks the
server to shut down gracefully, as a stop signal does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

log = logging.getLogger("memcue.sidecar")

#: The default idle period (s) after which the sidecar exits: 2 hours (issue 17).
IDLE_EXIT_S = 7200.0

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]


class Activity:
    """ASGI middleware around ``app`` that records ``last`` (``time.monotonic()``, s) at every HTTP request."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.last = time.monotonic()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            self.last = time.monotonic()
        await self.app(scope, receive, send)

    def idle_for(self) -> float:
        """Seconds since the last request (or since start)."""
        return time.monotonic() - self.last


def watch_idle(activity: Activity, idle_exit_s: float, busy: Callable[[], bool], server: Any,
               done: threading.Event, check_every_s: float | None = None) -> threading.Thread | None:
    """Start the daemon thread that stops ``server`` (uvicorn's: ``should_exit``) after ``idle_exit_s`` (s) with
    no request and ``busy()`` False; it ends when ``done`` is set. None (no thread) when ``idle_exit_s`` <= 0."""
    if idle_exit_s <= 0:
        return None
    every = check_every_s if check_every_s is not None else min(30.0, max(0.2, idle_exit_s / 4))

    def run() -> None:
        while not done.wait(every):
            if activity.idle_for() >= idle_exit_s and not busy():
                log.info("memcue sidecar exits after %.0f s without a request (idle exit; the next hook or "
                         "command starts it again)", activity.idle_for())
                server.should_exit = True
                return

    thread = threading.Thread(target=run, name="memcue-idle-exit", daemon=True)
    thread.start()
    return thread
