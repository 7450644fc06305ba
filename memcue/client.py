"""The Python client of the sidecar (httpx over the unix socket), used by the CLI and the demo.

Errors form a small hierarchy: ``ClientError`` (base), ``SidecarDown`` (could not reach or start it),
``SidecarStuck`` (it took the connection but did not answer ``/health`` in time), ``SidecarBusy`` (HTTP 503;
exit code 75 in the CLI).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import httpx

from memcue.core.paths import Locations, locations
from memcue.hooks.client import spawn_sidecar

#: How long ``ensure_running`` waits for a sidecar it started (s): imports plus opening the store.
START_TIMEOUT_S = 30.0


class ClientError(RuntimeError):
    """A sidecar call failed; the message is meant for the user."""


class SidecarDown(ClientError):
    """The sidecar is not running and could not be started."""


class SidecarStuck(ClientError):
    """The sidecar's socket took the connection but ``/health`` did not answer in time: it is starting on a
    loaded machine, or it is stuck."""


class SidecarBusy(ClientError):
    """The sidecar answered 503 (all recall slots busy); ``retry_after_s`` says when to ask again."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def _exit_code(pid: int) -> int | None:
    """Exit code of our child ``pid`` if it has exited, else None (also when it is not our child)."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return None
    return os.waitstatus_to_exitcode(status) if done else None


def _log_tail(loc: Locations) -> str:
    """The sidecar log's last ERROR line (what went wrong), or "(no sidecar log)"."""
    try:
        lines = loc.sidecar_log.read_text(errors="replace").splitlines()
    except OSError:
        return "(no sidecar log)"
    errors = [line for line in lines if " ERROR " in line]
    return (errors or lines or ["(empty sidecar log)"])[-1]


#: How long (s) a health check waits: /health answers in milliseconds unless the sidecar is stuck.
HEALTH_TIMEOUT_S = 5.0


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
        if not self.loc.socket_trusted():
            raise SidecarDown(f"the memcue sidecar's socket folder {self.loc.socket.parent} is not a private folder "
                              "of yours (another user may own it): not connecting. Remove it, or set MEMCUE_HOME to "
                              "a shorter path")
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException:
            if path == "/health":
                raise SidecarStuck(f"the memcue sidecar did not answer /health within {HEALTH_TIMEOUT_S:g} s: it is "
                                  "stopped or stuck. `memcue stop` (or kill it), then try again; see "
                                  f"{self.loc.sidecar_log}") from None
            raise ClientError(f"the memcue sidecar did not answer {path} in time") from None
        except (httpx.TransportError, FileNotFoundError) as exc:
            raise SidecarDown(f"the memcue sidecar is not running ({self.loc.socket}): {exc}") from None
        if response.status_code == 503:
            retry = response.headers.get("retry-after")
            raise SidecarBusy(response.json().get("message", "memcue is busy"), float(retry) if retry else None)
        if response.status_code == 422:
            problems = []
            for e in response.json().get("detail", []):
                where = ".".join(str(p) for p in e.get("loc", [])[1:])
                problems.append(f"{where}: {e.get('msg')}" if where else str(e.get("msg")))
            raise ClientError("invalid request: " + "; ".join(problems))
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail")
            except ValueError:
                detail = None
            if isinstance(detail, str):
                raise ClientError(detail)
            raise ClientError(f"{method} {path}: HTTP {response.status_code}: {response.text[:500]}")
        return response.json()

    def health(self) -> dict[str, Any]:
        """``GET /health``; a sidecar that does not answer within ``HEALTH_TIMEOUT_S`` is an error (a stuck
        sidecar must not hold a command for the full request timeout)."""
        return self._call("GET", "/health", timeout=HEALTH_TIMEOUT_S)

    def is_up(self) -> bool:
        try:
            self.health()
            return True
        except ClientError:
            return False

    def ensure_running(self, timeout_s: float = START_TIMEOUT_S) -> dict[str, Any]:
        """Start the sidecar detached if it is not running; return its health. One that was running and does
        not answer ``/health`` is stuck: ``SidecarStuck`` at once. One this call started may be slow to answer
        while it starts on a loaded machine: it is waited for, at most ``timeout_s`` (s) in all. Raises
        ``SidecarDown`` (it could not start) or ``SidecarStuck`` (the one started never answered)."""
        try:
            return self.health()
        except SidecarDown:
            if self.loc.root.exists() and not self.loc.root.is_dir():
                raise SidecarDown(f"the data dir {self.loc.root} is not a folder: set MEMCUE_HOME to a folder (or "
                                  "unset it for the default)") from None
            pid = spawn_sidecar()
        deadline = time.monotonic() + timeout_s
        last: ClientError | None = None
        while time.monotonic() < deadline:
            try:
                return self.health()
            except SidecarStuck as exc:
                last = exc
            except SidecarDown as exc:
                last = exc
                code = _exit_code(pid)
                if code not in (None, 0):  # 0: another instance holds the lock and is starting
                    raise SidecarDown(f"the memcue sidecar could not start (exit {code}):\n"
                                      f"{_log_tail(self.loc)}\nfull log: {self.loc.sidecar_log}") from None
                time.sleep(0.1)
        if isinstance(last, SidecarStuck):
            raise last
        raise SidecarDown(f"the memcue sidecar did not start within {timeout_s:.0f} s; see {self.loc.sidecar_log}")

    def remember(self, content: str, **fields: Any) -> dict[str, Any]:
        return self._call("POST", "/remember", json={"content": content, **fields})

    def remember_batch(self, memories: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self._call("POST", "/remember/batch", json={"memories": memories})

    def import_batch(self, memories: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``POST /import``: one outcome per memory (``status`` stored, updated, unchanged or bad)."""
        return self._call("POST", "/import", json={"memories": memories})

    def export_chunks(self, **fields: Any) -> Iterator[bytes]:
        """``POST /export`` (``project``, ``all_projects``): the export's JSON Lines as the sidecar streams them,
        in chunks of bytes. Raises ``SidecarDown``, ``ClientError``."""
        if not self.loc.socket_trusted():
            self._call("GET", "/health")  # raises the untrusted-socket error
        try:
            with self._http.stream("POST", "/export", json=fields) as response:
                if response.status_code >= 400:
                    response.read()
                    raise ClientError(f"POST /export: HTTP {response.status_code}: {response.text[:500]}")
                yield from response.iter_bytes()
        except httpx.TimeoutException:
            raise ClientError("the memcue sidecar stopped sending the export (timed out)") from None
        except httpx.RemoteProtocolError:
            raise ClientError(f"the memcue sidecar broke off the export partway; see {self.loc.sidecar_log}") from None
        except (httpx.TransportError, FileNotFoundError) as exc:
            raise SidecarDown(f"the memcue sidecar is not running ({self.loc.socket}): {exc}") from None

    def restore(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /restore``: part of an export written back (``RestoreIn``); ``ClientError`` with the sidecar's
        message when a plain restore meets a store that is not empty (409)."""
        return self._call("POST", "/restore", json=body)

    def update(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /update``: a new version of ``body["memory_id"]``. Raises ``SidecarError`` on 404/422."""
        return self._call("POST", "/update", json=body)

    def recall(self, query: str, **fields: Any) -> dict[str, Any]:
        return self._call("POST", "/recall", json={"query": query, **fields})

    def expand(self, ids: list[int] | list[str] | str, **fields: Any) -> dict[str, Any]:
        """``POST /expand``: memories with their context (depth 2): ``{"success", "items", "not_found"}``.
        ``ids`` as for ``fetch``; ``fields``: ``session_id``, ``query_id`` (the recall being opened)."""
        return self._call("POST", "/expand", json={"ids": ids, **fields})

    def stats(self, days: float = 30) -> dict[str, Any]:
        """``POST /stats``: recall usage over the last ``days`` days: ``{"days", "since", "items", "recalls",
        "by_channel", "by_kind", "by_served"}``, each count ``{"used", "unused", "total", "used_fraction"}``
        (``used_fraction`` None when nothing was shown)."""
        return self._call("POST", "/stats", json={"days": days})

    def fetch(self, ids: list[int] | list[str] | str, **fields: Any) -> dict[str, Any]:
        """``POST /fetch``: memories by id (a list, or a comma-separated string such as ``"12, 15"``; ``memcue://``
        addresses too), forgotten and superseded ones too, in the order asked. ``fields``: ``session_id``,
        ``query_id`` (the recall being opened: marks the memories used). Returns ``{"success", "results":
        [memory], "not_found": [id]}``; a memory is ``{"memory_id", "content", "memory_kind", "project",
        "session_id", "created_at", "updated_at" (Unix s), "age_label", "pinned", "bookkeeping", "forgotten",
        "forgotten_at", "superseded_by", "seen_count"}``; ``success`` is False when no id resolves. Raises
        ``ClientError`` for a part that is not a number (HTTP 422)."""
        return self._call("POST", "/fetch", json={"ids": ids, **fields})

    def list_recent(self, **fields: Any) -> dict[str, Any]:
        """``POST /list``: the newest memories first, full text. ``fields``: ``project`` (that project plus
        global memories; none: every project), ``all_projects``, ``limit`` (1..500, default 20), ``kind``,
        ``include_forgotten``, ``include_bookkeeping``. Returns ``{"results": [memory]}`` (see ``fetch``)."""
        return self._call("POST", "/list", json=fields)

    def forget(self, ids: list[int] | str) -> dict[str, Any]:
        """``POST /forget``: soft-delete memories (a list of ids or ``"12, 15"``); they stop answering at once
        and stay fetchable. Idempotent. Returns ``{"forgotten": [id], "not_found": [id], "already": [id]}``.
        Raises ``ClientError`` for a part that is not a number (HTTP 422)."""
        return self._call("POST", "/forget", json={"ids": ids})

    def pin(self, ids: list[int] | str, pinned: bool = True) -> dict[str, Any]:
        """``POST /pin``: pin (or with ``pinned`` False unpin) memories in place. Returns ``{"changed": [id],
        "unchanged": [id], "not_found": [id]}``."""
        return self._call("POST", "/pin", json={"ids": ids, "pinned": pinned})

    def unforget(self, ids: list[int] | str) -> dict[str, Any]:
        """``POST /unforget``: take a ``forget`` back; same answer shape as ``pin``."""
        return self._call("POST", "/unforget", json={"ids": ids})

    def purge(self, ids: list[int] | str) -> dict[str, Any]:
        """``POST /purge``: hard-delete memories and every version of them, for good (a list of ids or
        ``"12, 15"``). Returns ``{"purged": [id], "not_found": [id], "wal_truncated": bool}``. Raises
        ``ClientError`` for a part that is not a number (HTTP 422)."""
        return self._call("POST", "/purge", json={"ids": ids})

    def session_context(self, **fields: Any) -> dict[str, Any]:
        """``POST /session_context``: the session-start block of ``project`` (pinned, standing rules, newest,
        named after the project) once per session; the same session asking again gets a one-line pointer (or "").
        ``fields``: ``session_id`` (omit for a new one), ``project``, ``harness`` (default "mcp"),
        ``max_tokens`` (default 2200), ``max_chars`` (default 9500), ``budget_s`` (default 5). Returns
        ``{"session_id", "context", "included", "tokens", "memory_ids", "shortened_ids"}``."""
        return self._call("POST", "/session_context", json=fields)

    def candidates(self, **fields: Any) -> dict[str, Any]:
        """``POST /candidates``: capture candidates newest first. ``fields``: ``state`` (pending, promoted,
        rejected, expired), ``project``, ``session_id``, ``limit`` (1..500, default 50). Returns ``{"results":
        [candidate]}``; a candidate is ``{"id", "content", "kind", "project", "session_id", "harness", "turn",
        "signal", "evidence", "created_at", "expires_at", "state", "memory_id", "reason", "decided_at"}``."""
        return self._call("POST", "/candidates", json=fields)

    def accept_candidate(self, candidate_id: int, content: str | None = None, **fields: Any) -> dict[str, Any]:
        """``POST /candidates/accept``: write pending candidate ``candidate_id`` as a memory (``content``: edited
        text) and return the candidate (``memory_id`` set). ``fields``: ``reason``, ``by_agent`` (an agent decides:
        refused for a candidate held for a person). Raises ``ClientError`` (unknown id, decided already, held)."""
        body: dict[str, Any] = {"id": candidate_id, **fields}
        if content is not None:
            body["content"] = content
        return self._call("POST", "/candidates/accept", json=body)

    def reject_candidate(self, candidate_id: int, **fields: Any) -> dict[str, Any]:
        """``POST /candidates/reject``: turn down pending candidate ``candidate_id``; returns the candidate.
        ``fields`` as for ``accept_candidate``. Raises ``ClientError`` (unknown id, decided already, held)."""
        return self._call("POST", "/candidates/reject", json={"id": candidate_id, **fields})

    def receipt(self, session_id: str | None = None, project: str | None = None) -> dict[str, Any]:
        """``POST /receipt``: the receipt of ``session_id`` (without one: ``project``'s latest session, every
        project's when None too): ``{"session_id", "project", "harnesses", "first_at", "last_at", "captured",
        "saved", "candidates", "injected", "skipped", "failed"}`` (``memcue.sidecar.receipt.build_receipt``). Raises
        ``ClientError`` for an unknown session."""
        return self._call("POST", "/receipt", json={"session_id": session_id, "project": project})

    def sessions(self, project: str | None = None, limit: int = 10) -> dict[str, Any]:
        """``POST /receipt/sessions``: recent sessions newest first, ``{"results": [{"session_id", "project",
        "first_at", "last_at", "stored", "captured", "by_kind", "candidates", "recalls"}]}``."""
        return self._call("POST", "/receipt/sessions", json={"project": project, "limit": limit})

    def ledger(self, days: float = 7.0) -> dict[str, Any]:
        """``POST /ledger``: the distillation ledger, ``{"enabled", "off_reason", "runner", "target", "model",
        "daily_tokens", "today": {"since", "spent", "left", "calls"}, "days", "entries": [...]}`` (rows of the
        last ``days`` days, newest first; ``memcue.sidecar.api_models.LedgerOut``)."""
        return self._call("POST", "/ledger", json={"days": days})

    def reindex(self, action: str = "status") -> dict[str, Any]:
        """``POST /reindex``: "start" (or resume), "pause" or "status" of the re-index to the configured embedding
        model; ``{"state", "store_model", "store_dim", "model", "dim", "done", "total", "embedded_here",
        "finished", "note"}`` (``memcue.sidecar.reindex.Reindexer.status``)."""
        return self._call("POST", "/reindex", json={"action": action})

    def sources(self, name: str | None = None, enabled: bool | None = None) -> dict[str, Any]:
        """``POST /sources``: the native memory sources, ``{"sources": [{"name", "harness", "enabled", "files":
        [{"path", "project", "loaded_by", "memories", "synced_at", "error"}], "memories", "last_sync"}], "watch"}``;
        with ``name`` and ``enabled``, that source is turned on or off first (kept in ``config.toml``)."""
        body: dict[str, Any] = {} if name is None else {"name": name, "enabled": bool(enabled)}
        return self._call("POST", "/sources", json=body)

    def last_captures(self, sources: list[str]) -> dict[str, Any]:
        """``POST /receipt/last_captures``: ``{"sources": {source: newest row's Unix s, or None}}``."""
        return self._call("POST", "/receipt/last_captures", json={"sources": sources})

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
            if model_state == "ready" and pending == 0 and health["vector_search"]:
                return health
            if time.monotonic() > deadline:
                raise ClientError(f"still {pending} memories waiting for vectors after {timeout_s:.0f} s")
            time.sleep(0.2)
