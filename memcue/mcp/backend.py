"""The MCP server's link to the sidecar: one ``Client``, started on demand, errors turned into tool results.

A tool never raises into the protocol: whatever goes wrong comes back as ``{"success": false, "error": ...}``
with ``retryable`` set when asking again later can help (busy).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from memcue.client import Client, ClientError, SidecarBusy, SidecarDown

log = logging.getLogger("memcue.mcp")


def failure(message: str, *, retryable: bool = False, **extra: Any) -> dict[str, Any]:
    """A tool result that says the call failed, and why, in words an agent can act on."""
    return {"success": False, "error": message, "retryable": retryable, **extra}


class Backend:
    """The sidecar as the tools see it. ``call(fn)`` runs ``fn(client)``; when the sidecar is down it is
    started (``Client.ensure_running``) and ``fn`` runs once more."""

    def __init__(self, client: Client | None = None) -> None:
        self.client = client or Client()  # httpx.Client is thread-safe: tools run in worker threads
        self._start_lock = threading.Lock()

    def start(self) -> None:
        """Start the sidecar if it is not answering; raises ``SidecarDown``. Concurrent callers wait for one
        start rather than each spawning a sidecar."""
        with self._start_lock:
            self.client.ensure_running()

    def warm_up(self) -> None:
        """Start the sidecar in the background so the first tool call finds it up; failures are only logged
        (the next call tries again and reports them)."""

        def run() -> None:
            try:
                self.start()
            except ClientError as exc:
                log.warning("memcue sidecar did not start: %s", exc)
            except RuntimeError as exc:  # the server closed its client meanwhile (the harness closed stdin)
                log.debug("memcue sidecar warm-up ended: %s", exc)

        threading.Thread(target=run, name="memcue-mcp-warm-up", daemon=True).start()

    def call(self, fn: Callable[[Client], dict[str, Any]]) -> dict[str, Any]:
        """``fn(client)``, starting the sidecar if needed; a failure becomes a ``failure(...)`` result."""
        try:
            try:
                return fn(self.client)
            except SidecarDown:
                self.start()
                return fn(self.client)
        except SidecarBusy as exc:
            after = f" in {exc.retry_after_s:g} s" if exc.retry_after_s else " in a moment"
            return failure(f"memcue is busy ({exc}); retry{after}.", retryable=True, retry_after_s=exc.retry_after_s)
        except SidecarDown as exc:
            return failure(f"memcue's sidecar is not running and could not be started: {exc}")
        except ClientError as exc:
            return failure(str(exc))
        except Exception as exc:  # a tool must answer, never take the server down
            log.exception("memcue MCP tool failed")
            return failure(f"unexpected error: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        self.client.close()
