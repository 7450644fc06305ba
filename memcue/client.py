"""The Python client of the sidecar (httpx over the unix socket), used by the CLI and the demo.

Errors form a small hierarchy: ``ClientError`` (base), ``SidecarDown`` (could not reach or start it),
``SidecarBusy`` (HTTP 503; exit code 75 in the CLI).
"""

from __future__ import annotations

import time
from typing import Any

import httpx

from memcue.hooks.client import spawn_sidecar
from memcue.hooks.locations import Locations, locations

#: How long ``ensure_running`` waits for a sidecar it started (s): imports plus opening the store.
START_TIMEOUT_S = 30.0


class ClientError(RuntimeError):
    """A sidecar call failed; the message is meant for the user."""


class SidecarDown(ClientError):
    """The sidecar is not running and could not be started."""


class SidecarBusy(ClientError):
    """The sidecar answered 503 (all recall slots busy); ``retry_after_s`` says when to ask again."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Client:
    """A connection to the sidecar of ``loc`` (default: the current environment's data dir)."""

    def __init__(self, loc: Locations | None = None, timeout_s: float = 60.0) -> None:
        self.loc = loc or locations()
        transport = httpx.HTTPTransport(uds=str(self.loc.socket))
        self._http = httpx.Client(transport=transport, base_url="http://memcue", timeout=timeout_s)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except (httpx.ConnectError, FileNotFoundError) as exc:
            raise SidecarDown(f"the memcue sidecar is not running ({self.loc.socket}): {exc}") from None
        except httpx.TimeoutException:
            raise ClientError(f"the memcue sidecar did not answer {path} in time") from None
        if response.status_code == 503:
            retry = response.headers.get("retry-after")
            raise SidecarBusy(response.json().get("message", "memcue is busy"), float(retry) if retry else None)
        if response.status_code >= 400:
            raise ClientError(f"{method} {path}: HTTP {response.status_code}: {response.text[:500]}")
        return response.json()

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/health")

    def is_up(self) -> bool:
        try:
            self.health()
            return True
        except ClientError:
            return False

    def ensure_running(self, timeout_s: float = START_TIMEOUT_S) -> dict[str, Any]:
        """Start the sidecar detached if it is not answering; return its health. Raises ``SidecarDown``."""
        try:
            return self.health()
        except SidecarDown:
            pass
        spawn_sidecar()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                return self.health()
            except SidecarDown:
                time.sleep(0.1)
        raise SidecarDown(f"the memcue sidecar did not start within {timeout_s:.0f} s; see {self.loc.sidecar_log}")

    def remember(self, content: str, **fields: Any) -> dict[str, Any]:
        return self._call("POST", "/remember", json={"content": content, **fields})

    def remember_batch(self, memories: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self._call("POST", "/remember/batch", json={"memories": memories})

    def recall(self, query: str, **fields: Any) -> dict[str, Any]:
        return self._call("POST", "/recall", json={"query": query, **fields})

    def wait_idle(self, timeout_s: float = 600.0, on_progress: Any = None) -> dict[str, Any]:
        """Wait until the model is loaded and every memory has its vector; return the last health."""
        deadline = time.monotonic() + timeout_s
        while True:
            health = self.health()
            model_state = health["model"]["state"]
            pending = health["counts"]["pending_embeddings"]
            if on_progress:
                on_progress(health)
            if model_state in ("error", "disabled") or health["vector_note"]:
                return health
            if model_state == "ready" and pending == 0:
                return health
            if time.monotonic() > deadline:
                raise ClientError(f"still {pending} memories waiting for vectors after {timeout_s:.0f} s")
            time.sleep(0.2)
