"""The CLI against a stuck sidecar (a socket that accepts and never answers): a clear error within seconds,
not a 60 s wait, and never "not running" (the fresh-clone check found both)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from memcue.client import HEALTH_TIMEOUT_S
from memcue.core.paths import Locations


def test_status_and_recall_say_the_sidecar_is_stuck(home: Path) -> None:
    path = Locations(home).socket
    path.parent.mkdir(parents=True, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:  # accept every connection and never answer
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    env = {**os.environ, "MEMCUE_HOME": str(home)}
    try:
        for args in (["status"], ["recall", "anything"]):
            started = time.monotonic()
            run = subprocess.run([sys.executable, "-m", "memcue", *args], env=env, capture_output=True, text=True,
                                 timeout=60)
            took = time.monotonic() - started
            assert run.returncode == 1, (args, run.stdout, run.stderr)
            assert "stopped or stuck" in run.stderr and "not running" not in run.stdout, (args, run.stderr)
            assert took < HEALTH_TIMEOUT_S + 10, f"{args} waited {took:.1f} s"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()
        path.unlink(missing_ok=True)


def test_stop_says_how_to_end_a_suspended_sidecar(home: Path) -> None:
    """Fresh-user finding: `memcue stop` on a SIGSTOPped sidecar waited 15 s and gave no hint."""
    import signal

    from conftest import start_sidecar

    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    pid = int(Locations(home).pid_file.read_text().split()[0])
    os.kill(pid, signal.SIGSTOP)
    try:
        run = subprocess.run([sys.executable, "-m", "memcue", "stop"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "MEMCUE_HOME": str(home)})
    finally:
        os.kill(pid, signal.SIGCONT)
        sc.stop()
    assert run.returncode == 1 and f"kill -CONT {pid}" in run.stderr, run.stderr
