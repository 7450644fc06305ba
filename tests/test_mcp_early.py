"""``memcue mcp`` answers the handshake from the SDK's earlier answers while the SDK loads (``mcp.early``).

Real server processes over real stdio, raw JSON-RPC lines as Codex sends them (``initialize`` at protocol
2025-06-18 with id 0, ``notifications/initialized``, ``tools/list``), and a real sidecar for a tool call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import start_sidecar

from memcue.mcp.early import CACHE_NAME, HandshakeCache, cache_key

pytestmark = pytest.mark.slow

VERSION = "2025-06-18"  # what Codex 0.171 asks for (seen on its wire)
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": VERSION, "capabilities": {},
                         "clientInfo": {"name": "codex-mcp-client", "version": "0.171.0"}}}


class Server:
    """``python -m memcue mcp`` on pipes; ``lines`` collects every JSON line it writes."""

    def __init__(self, home: Path, **env: str) -> None:
        full = {"PATH": os.environ["PATH"], "HOME": str(home), "MEMCUE_HOME": str(home),
                "MEMCUE_MCP_WARM_UP": "0", "PYTHONPATH": os.environ.get("PYTHONPATH", ""), **env}
        self.proc = subprocess.Popen([sys.executable, "-m", "memcue", "mcp"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full, cwd=str(home))
        self.lines: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            with self._cond:
                self.lines.append(json.loads(raw))
                self._cond.notify_all()

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def answer(self, request_id: int, timeout_s: float = 60) -> dict[str, Any]:
        with self._cond:
            assert self._cond.wait_for(lambda: any(m.get("id") == request_id for m in self.lines), timeout_s), \
                (self.lines, self.proc.poll())
            return next(m for m in self.lines if m.get("id") == request_id)

    def handshake(self) -> tuple[dict[str, Any], dict[str, Any]]:
        self.send(INITIALIZE)
        init = self.answer(0)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        return init, self.answer(1)

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)


def _cache(home: Path) -> dict[str, Any]:
    return json.loads((home / CACHE_NAME).read_text())


def test_first_start_fills_the_cache_with_the_sdks_answers(home: Path) -> None:
    server = Server(home)
    init, tools = server.handshake()
    assert server.close() == 0
    assert init["result"]["serverInfo"]["name"] == "memcue"
    assert "remember" in {t["name"] for t in tools["result"]["tools"]}
    cached = _cache(home)
    assert cached["key"] == cache_key()
    assert cached["answers"][VERSION] == {"initialize": init["result"], "tools/list": tools["result"]}


def test_a_later_start_answers_from_the_cache_once_and_heals_a_wrong_answer(home: Path) -> None:
    first = Server(home)
    _, tools = first.handshake()
    assert first.close() == 0
    cache = HandshakeCache(home / CACHE_NAME, cache_key())
    marked = {**tools["result"], "tools": tools["result"]["tools"][:1]}  # not what the SDK says: only the cache's
    cache.put(VERSION, "tools/list", marked)
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        server = Server(home)
        _, early = server.handshake()
        server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "list_recent", "arguments": {}}})
        call = server.answer(2)
        assert server.close() == 0
    finally:
        sc.stop()
    assert early["result"] == marked  # answered from the cache, before the SDK's own answer
    assert [m.get("id") for m in server.lines if "method" not in m] == [0, 1, 2]  # the SDK's duplicates dropped
    assert json.loads(call["result"]["content"][0]["text"])["success"] is True  # the SDK serves what follows
    assert _cache(home)["answers"][VERSION]["tools/list"] == tools["result"]  # healed from the SDK's answer


@pytest.mark.parametrize("junk", ["{not json", json.dumps({"key": "another memcue", "answers": {VERSION: {
    "initialize": {"serverInfo": {"name": "stale"}}}}})])
def test_a_corrupt_or_stale_cache_file_is_ignored_and_rewritten(home: Path, junk: str) -> None:
    (home / CACHE_NAME).write_text(junk)
    server = Server(home)
    init, tools = server.handshake()
    assert server.close() == 0
    assert init["result"]["serverInfo"]["name"] == "memcue" and tools["result"]["tools"]
    assert _cache(home)["key"] == cache_key()


def test_switched_off_the_sdk_serves_the_real_stdio(home: Path) -> None:
    server = Server(home, MEMCUE_MCP_EARLY="0")
    init, _ = server.handshake()
    assert server.close() == 0
    assert init["result"]["serverInfo"]["name"] == "memcue"
    assert not (home / CACHE_NAME).exists()


def test_requests_piped_in_at_once_are_all_answered_before_the_server_exits(home: Path) -> None:
    """A client that writes its requests and closes stdin at once (``… | memcue mcp``) gets every answer: with
    no cache the SDK answers the handshake (and teaches the cache); the SDK, which drops requests in flight when
    its input ends, gets its input closed only once it has answered; the server ends once the answers are out."""
    lines = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}]
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "MEMCUE_HOME": str(home), "MEMCUE_MCP_WARM_UP": "0",
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    for _ in ("the SDK answers", "the cache answers"):
        proc = subprocess.run([sys.executable, "-m", "memcue", "mcp"], capture_output=True, text=True, env=env,
                              input="".join(json.dumps(m) + "\n" for m in lines), timeout=60, check=False)
        assert proc.returncode == 0, proc.stderr
        answers = [json.loads(line) for line in proc.stdout.splitlines()]
        assert [a["id"] for a in answers] == [0, 1, 2], answers
        assert answers[1]["result"]["tools"] and answers[2]["result"] == {}
