"""Early answers to the MCP handshake, from the SDK's own earlier answers, while the SDK loads.

Codex starts a turn without an optional MCP server's tools when the server has not answered ``initialize`` and
``tools/list`` within ``mcp_optional_startup_grace_ms`` (1,000 ms by default in Codex 0.171; see
``install.mcp_startup``). Importing the MCP SDK alone takes 0.7 s on an idle 2-core machine, so a ``codex exec``
run often had no memcue tools at all (``benchmarks/results/mcp_startup.md``).

``EarlyAnswers`` stands between the process's real stdin/stdout and the SDK's stdio server, which runs unchanged
on two pipes put in place of fds 0 and 1:

- every line the client sends goes on to the SDK, in order;
- an ``initialize`` whose ``protocolVersion`` the cache holds, and a first-page ``tools/list`` after it, are
  answered at once from the cache; the SDK's own answer to the same request id is dropped when it comes;
- the SDK's answers to those two requests are what the cache holds: each one is compared with the cached answer
  and stored when it differs or is missing, so a first start (or one after memcue or the SDK changed) answers
  late, as before, and teaches the next.

The cache is a JSON file in memcue's data directory, keyed by memcue's version, the Python version and the
modification times of memcue's MCP modules and of the SDK package: an upgrade starts a new cache. A missing,
unreadable or corrupt cache file means no early answers, never an error. Standard library only: it runs before
the SDK is imported.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import logging
import os
import struct
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO

import memcue
from memcue.core.paths import MCP_HANDSHAKE_CACHE, data_dir

log = logging.getLogger("memcue.mcp")

#: The cache file's name in memcue's data directory (``core.paths``, which lists what memcue writes there).
CACHE_NAME = MCP_HANDSHAKE_CACHE
#: How often ``EarlyAnswers.close`` looks whether the SDK's last lines are out (s).
IDLE_CHECK_S = 0.02
#: How long the SDK's input stays open after the client's ends, for answers still owed (s).
DRAIN_S = 5.0
#: The requests answered early: the two Codex waits for before a turn (see the module docstring).
EARLY_METHODS = ("initialize", "tools/list")

__all__ = ["CACHE_NAME", "EarlyAnswers", "HandshakeCache", "answer_early", "cache_key"]


def cache_key() -> str:
    """What the cached answers depend on: memcue's and Python's versions and the modification times (ns) of
    ``memcue/mcp/*.py`` and of the ``mcp`` SDK's ``__init__.py`` (found without importing it)."""
    here = Path(__file__).parent
    parts = [memcue.__version__, sys.version.split()[0]]
    parts += [f"{p.name}:{p.stat().st_mtime_ns}" for p in sorted(here.glob("*.py"))]
    spec = importlib.util.find_spec("mcp")
    parts.append(f"mcp:{os.stat(spec.origin).st_mtime_ns}" if spec and spec.origin else "mcp:missing")
    return "|".join(parts)


class HandshakeCache:
    """The SDK's answers (JSON-RPC ``result`` objects) to ``initialize`` and ``tools/list``, per protocol version
    the client asked for, in the JSON file ``path``, valid for ``key`` only (``cache_key``). Thread-safe."""

    def __init__(self, path: Path, key: str) -> None:
        self.path, self.key = path, key
        self._lock = threading.Lock()
        self._answers: dict[str, dict[str, Any]] = self._read()

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        answers = data.get("answers") if isinstance(data, dict) and data.get("key") == self.key else None
        return answers if isinstance(answers, dict) else {}

    def get(self, version: str, method: str) -> dict[str, Any] | None:
        """The cached result of ``method`` for protocol ``version``, or None."""
        with self._lock:
            result = (self._answers.get(version) or {}).get(method)
        return result if isinstance(result, dict) else None

    def put(self, version: str, method: str, result: dict[str, Any]) -> None:
        """Store ``result`` unless it is what the cache holds already; written atomically (a temporary file
        renamed over the old one). A failed write (read-only or full disk) is logged and changes nothing."""
        with self._lock:
            if (self._answers.get(version) or {}).get(method) == result:
                return
            self._answers.setdefault(version, {})[method] = result
            text = json.dumps({"key": self.key, "answers": self._answers})
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".mcp_handshake.")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("memcue MCP handshake cache not written: %s", exc)


class EarlyAnswers:
    """The relay of the module docstring. ``start()`` puts the pipes in place of fds 0 and 1 and starts its two
    threads; call it before anything reads stdin or writes stdout. ``close()`` after the SDK's server returns:
    it waits for the SDK's last lines to go out. POSIX only (pipes, ``FIONREAD``), as memcue is."""

    def __init__(self, cache: HandshakeCache) -> None:
        self.cache = cache
        self._write_lock = threading.Lock()
        self._early: dict[str, tuple[str, str]] = {}  # request id (JSON) -> (method, version) answered early
        self._learn: dict[str, tuple[str, str]] = {}  # request id -> (method, version) the SDK answers first
        self._version: str | None = None
        self._client_out: BinaryIO | None = None
        self._from_sdk_fd = -1
        self._busy = False
        self._pending: set[str] = set()  # ids of requests forwarded to the SDK and not answered yet
        self._answered = threading.Condition()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Plumb and start; raises ``OSError`` when the descriptors cannot be set up (nothing changed then)."""
        client_in, client_out = os.dup(0), os.dup(1)
        to_sdk_r, to_sdk_w = os.pipe()
        from_sdk_r, from_sdk_w = os.pipe()
        os.dup2(to_sdk_r, 0)
        os.dup2(from_sdk_w, 1)
        os.close(to_sdk_r)
        os.close(from_sdk_w)
        self._client_out = os.fdopen(client_out, "wb")
        self._from_sdk_fd = from_sdk_r
        for name, target, args in (("client", self._from_client, (client_in, to_sdk_w)),
                                   ("sdk", self._from_sdk, (from_sdk_r,))):
            thread = threading.Thread(target=target, args=args, name=f"memcue-mcp-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def close(self, timeout_s: float = 2.0) -> None:
        """Let the SDK's last lines out: wait (at most ``timeout_s``, s) until the pipe from the SDK is empty and
        its reader idle, seen twice ``IDLE_CHECK_S`` apart. Not its end of file: the SDK keeps private copies of
        the pipe's descriptors to the end of the process."""
        sys.stdout.flush()
        deadline, idle = time.monotonic() + timeout_s, 0
        while idle < 2 and time.monotonic() < deadline:
            time.sleep(IDLE_CHECK_S)
            idle = idle + 1 if not self._busy and not _unread(self._from_sdk_fd) else 0

    def _from_client(self, client_in: int, to_sdk: int) -> None:
        """Forward the client's lines to the SDK. At the client's end of input, keep the SDK's input open until it
        has answered every request forwarded (at most ``DRAIN_S``): the SDK drops requests still in flight when
        its input ends (modelcontextprotocol/python-sdk issue 2678), so ``… | memcue mcp`` lost answers."""
        with os.fdopen(client_in, "rb") as lines, os.fdopen(to_sdk, "wb") as sdk:
            for line in lines:
                message = _parse(line)
                request_id = json.dumps(message["id"]) if "method" in message and message.get("id") is not None else ""
                self._maybe_answer(message, request_id)
                if request_id:
                    with self._answered:
                        self._pending.add(request_id)
                try:
                    sdk.write(line)
                    sdk.flush()
                except OSError:  # the SDK is gone: the process is ending
                    return
            with self._answered:
                self._answered.wait_for(lambda: not self._pending, DRAIN_S)

    def _maybe_answer(self, message: dict[str, Any], request_id: str) -> None:
        """Answer the client's ``message`` (a request when ``request_id``, its id as JSON, is set) from the cache
        when it is an early method the cache holds (module docstring)."""
        method = message.get("method")
        if method not in EARLY_METHODS or not request_id:
            return
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if method == "initialize":
            version = params.get("protocolVersion")
            self._version = version if isinstance(version, str) else None
        if self._version is None or (method == "tools/list" and params.get("cursor")):
            return
        result = self.cache.get(self._version, method)
        if result is None:
            self._learn[request_id] = (method, self._version)
            return
        self._early[request_id] = (method, self._version)
        self._send(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode() + b"\n")

    def _from_sdk(self, from_sdk: int) -> None:
        rest = b""
        while chunk := _read(from_sdk):
            self._busy = True
            *lines, rest = (rest + chunk).split(b"\n")
            for line in lines:
                self._relay(line + b"\n")
            self._busy = False

    def _relay(self, line: bytes) -> None:
        """Send the SDK's ``line`` to the client, unless it answers a request answered early; learn from it."""
        message = _parse(line)
        request_id = json.dumps(message.get("id")) if "method" not in message else ""
        with self._answered:
            self._pending.discard(request_id)
            self._answered.notify_all()
        early = self._early.pop(request_id, None)
        learn = early or self._learn.pop(request_id, None)
        if learn and isinstance(message.get("result"), dict):
            self.cache.put(learn[1], learn[0], message["result"])
        if early is None:
            self._send(line)

    def _send(self, line: bytes) -> None:
        assert self._client_out is not None
        with self._write_lock:
            try:
                self._client_out.write(line)
                self._client_out.flush()
            except OSError:  # the client is gone
                pass


def _read(fd: int) -> bytes:
    """The next bytes of ``fd`` (b"" at its end or when it fails)."""
    try:
        return os.read(fd, 65536)
    except OSError:
        return b""


def _unread(fd: int) -> int:
    """Bytes waiting in the pipe ``fd`` (``FIONREAD``); 0 when that cannot be asked."""
    try:
        return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
    except OSError:
        return 0


def _parse(line: bytes) -> dict[str, Any]:
    """``line`` as a JSON object, or {} (not JSON, a batch, a log line)."""
    try:
        message = json.loads(line)
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}


def answer_early() -> EarlyAnswers | None:
    """Start an ``EarlyAnswers`` relay over this process's stdio with the cache in memcue's data directory;
    None (and stdio left as it was) when the data directory cannot be named or the descriptors cannot be set
    up: the SDK then serves the real stdio, as it would without this module."""
    try:
        relay = EarlyAnswers(HandshakeCache(data_dir() / CACHE_NAME, cache_key()))
        relay.start()
    except OSError as exc:
        log.warning("memcue MCP early answers off: %s", exc)
        return None
    return relay
