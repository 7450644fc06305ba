"""The CLI's client waits for the sidecar it just started when it is slow to answer ``/health`` (starting on a
loaded machine) instead of failing the first command with "stopped or stuck"; one that never answers is
reported stuck at its deadline. (A sidecar that was already running and does not answer is stuck at once:
``test_cli_stuck_sidecar.py``.)

A real unix socket in a real data dir, bound when the client starts "the sidecar", served by a tiny HTTP server
that holds its first ``/health`` answers past the client's health timeout, then answers as a sidecar does.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

import memcue.client as client_module
from memcue.client import Client, SidecarStuck
from memcue.core.paths import locations


def _serve(sock: socket.socket, slow_until: float, stop: threading.Event) -> None:
    sock.settimeout(0.1)
    while not stop.is_set():
        try:
            conn, _ = sock.accept()
        except TimeoutError:
            continue
        with conn:
            conn.recv(65536)
            if time.monotonic() < slow_until:
                time.sleep(max(0.0, slow_until - time.monotonic()) + 0.05)
                continue  # close without an answer: the client timed out already
            body = json.dumps({"status": "ok"}).encode()
            with contextlib.suppress(OSError):  # a client that gave up on this connection already
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                             + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)


@pytest.fixture
def slow_socket(home: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(client_module, "HEALTH_TIMEOUT_S", 0.3)
    loc = locations()
    loc.socket.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stop = threading.Event()
    spawned: list[float] = []

    def spawning(slow_s: float) -> None:
        def spawn() -> int:  # "the sidecar" binds its socket and answers /health only after slow_s
            spawned.append(slow_s)
            sock.bind(str(loc.socket))
            sock.listen(8)
            threading.Thread(target=_serve, args=(sock, time.monotonic() + slow_s, stop), daemon=True).start()
            return os.getpid()

        monkeypatch.setattr(client_module, "spawn_sidecar", spawn)

    yield spawning, spawned
    stop.set()
    sock.close()


def test_a_sidecar_slow_to_answer_health_while_it_starts_is_waited_for(slow_socket) -> None:
    spawning, spawned = slow_socket
    spawning(1.0)
    with Client() as c:
        assert c.ensure_running(timeout_s=10)["status"] == "ok"
    assert spawned == [1.0]  # started once


def test_a_started_sidecar_that_never_answers_is_reported_stuck(slow_socket) -> None:
    spawning, spawned = slow_socket
    spawning(60.0)
    started = time.monotonic()
    with Client() as c, pytest.raises(SidecarStuck, match="stopped or stuck"):
        c.ensure_running(timeout_s=1.5)
    assert time.monotonic() - started < 5 and spawned == [60.0]
