"""C09: the sidecar is killed with SIGKILL, leaving its socket, pid and lock files behind. The next prompt
hook still returns within its deadline (it starts a new sidecar, which reclaims the stale socket), and a
regular file at the socket path is never deleted: the sidecar refuses to start with a clear error."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

from conftest import context_of, prompt_payload, run_hook, start_sidecar
from hookutil import kill_spawned_sidecars

from memcue.client import Client
from memcue.core.paths import Locations


def test_C09_kill9_leaves_files_and_the_next_prompt_recovers(home: Path, tmp_path: Path) -> None:
    project = str(tmp_path / "proj")
    os.makedirs(project)
    sc = start_sidecar(home)
    loc = Locations(home)
    try:
        sc.client.remember("We pinned httpx to 0.27.2 because 0.28 broke proxy settings", project=project)
        sc.client.wait_idle(timeout_s=120)
        os.kill(sc.proc.pid, signal.SIGKILL)
        sc.proc.wait(10)
        assert loc.socket.exists() and loc.pid_file.exists()  # left behind
        started = time.monotonic()
        first = run_hook(prompt_payload("why did we pin httpx?", project))
        assert first.returncode == 0 and first.stderr == b""
        assert time.monotonic() - started < 3.0  # within the prompt deadline (2.5 s) plus start-up slack
        client = Client(loc, timeout_s=30)
        deadline = time.monotonic() + 60
        while not client.is_up() and time.monotonic() < deadline:
            time.sleep(0.1)
        client.wait_idle(timeout_s=120)
        client.close()
        second = run_hook(prompt_payload("why did we pin httpx?", project))
        assert "httpx" in context_of(second)  # the new sidecar serves the store the killed one left
    finally:
        sc.stop()
        kill_spawned_sidecars(home)


def test_C09_a_regular_file_at_the_socket_path_is_never_deleted(home: Path) -> None:
    loc = Locations(home)
    loc.root.mkdir(parents=True, exist_ok=True)
    loc.socket.write_text("my notes, not a socket")
    loc.socket.chmod(0o644)
    proc = subprocess.run([sys.executable, "-m", "memcue.sidecar"], env={**os.environ, "MEMCUE_HOME": str(home)},
                          capture_output=True, text=True, timeout=60)
    assert stat.S_IMODE(loc.socket.stat().st_mode) == 0o644, "the user's file is not touched, its mode neither"
    assert proc.returncode != 0
    said = proc.stderr + (loc.sidecar_log.read_text() if loc.sidecar_log.exists() else "")
    assert "is not a socket" in said and "will not delete it" in said
    assert loc.socket.read_text() == "my notes, not a socket"
    status = subprocess.run([sys.executable, "-m", "memcue", "status", "--json"],
                            env={**os.environ, "MEMCUE_HOME": str(home)}, capture_output=True, text=True, timeout=60)
    data = json.loads(status.stdout)
    assert status.returncode == 1 and data["success"] is False, "a sidecar that cannot start is an error"
    data = data["data"]
    assert data["running"] is False and "is not a socket" in data["blocked"], "status names what blocks the start"
    assert loc.socket.read_text() == "my notes, not a socket"


def test_C09_hooks_do_not_start_a_sidecar_into_a_blocked_socket_path(home: Path) -> None:
    loc = Locations(home)
    loc.root.mkdir(parents=True, exist_ok=True)
    loc.socket.write_text("my notes, not a socket")
    for i in range(3):
        proc = run_hook(prompt_payload(f"prompt {i}", str(home)), env={**os.environ, "MEMCUE_HOME": str(home)})
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    log = loc.hook_log.read_text()
    assert log.count("is not a socket; not starting the sidecar") == 3 and "started pid=" not in log
    assert loc.socket.read_text() == "my notes, not a socket"
