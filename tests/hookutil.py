"""Helpers for the hook tests: run the real hook as a subprocess, fake sidecars on a unix socket.

Used by tests/test_hook_*.py (``import hookutil``). Also runnable as a script, which serves a fake
sidecar in its own process (so a test can SIGSTOP it): ``python hookutil.py SOCKET CONTEXT``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

HOOK = [sys.executable, "-m", "memcue.hooks"]


def socket_path(home: Path) -> Path:
    """The sidecar socket path the hook will use for ``MEMCUE_HOME=home``."""
    from memcue.core.paths import Locations

    return Locations(home.absolute()).socket


def hook_env(home: Path, **extra: str) -> dict[str, str]:
    """A clean environment for the hook: no inherited MEMCUE_*/CLAUDE_* variables, ``MEMCUE_HOME=home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCUE_", "CLAUDE_"))}
    env["MEMCUE_HOME"] = str(home)
    env.update(extra)
    return env


@dataclass
class HookRun:
    returncode: int
    stdout: bytes
    stderr: bytes
    elapsed_s: float

    def output(self) -> Any:
        """stdout parsed strictly (UTF-8, strict JSON), or None when stdout is empty."""
        if not self.stdout:
            return None
        return json.loads(self.stdout.decode("utf-8"))


def run_hook(
    stdin: bytes | str | dict | list | None,
    home: Path,
    *,
    event: str = "user-prompt-submit",
    harness: str = "claude-code",
    cwd: Path | None = None,
    timeout: float = 15.0,
    **env: str,
) -> HookRun:
    """Run ``python -m memcue.hooks harness event`` with ``stdin`` (dicts and lists are JSON-encoded)."""
    if isinstance(stdin, dict | list):
        data = json.dumps(stdin).encode("utf-8")
    elif isinstance(stdin, str):
        data = stdin.encode("utf-8")
    else:
        data = stdin or b""
    start = time.monotonic()
    proc = subprocess.run(
        [*HOOK, harness, event],
        input=data,
        capture_output=True,
        env=hook_env(home, **env),
        cwd=cwd or home.parent,
        timeout=timeout,
    )
    return HookRun(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)


def run_hook_stdin_held_open(home: Path, *, event: str = "user-prompt-submit", **env: str) -> HookRun:
    """Run the hook with stdin left open and empty, as a harness that never writes nor closes it (up to 10 s)."""
    start = time.monotonic()
    proc = subprocess.Popen(
        [*HOOK, "claude-code", event],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=hook_env(home, **env),
    )
    try:
        proc.wait(timeout=10)  # stdin stays open the whole time
        elapsed = time.monotonic() - start
    finally:
        proc.kill()
        proc.stdin.close()
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    return HookRun(proc.returncode, out, err, elapsed)


def hook_log(home: Path) -> str:
    path = home / "logs" / "hook.log"
    return path.read_text("utf-8") if path.exists() else ""


def spool_files(home: Path) -> list[Path]:
    """The spool files under ``home`` (one per writer), sorted by name."""
    return sorted((home / "spool").glob("*.jsonl")) if (home / "spool").is_dir() else []


def spool_records(home: Path) -> list[dict[str, Any]]:
    """Every spooled record under ``home``, oldest first (by ``ts``) across the writers' files."""
    records = [json.loads(line) for path in spool_files(home) for line in path.read_text("utf-8").splitlines()]
    return sorted(records, key=lambda r: r["ts"])


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    allow_reuse_address = True


class FakeSidecar:
    """A fake sidecar on a unix socket, in a thread: records requests, answers with ``context``.

    ``raw_answer`` (bytes) replaces the whole JSON body when given; ``status`` sets the HTTP status.
    """

    def __init__(self, path: Path, context: str = "", *, status: int = 200, raw_answer: bytes | None = None):
        self.path = path
        self.context = context
        self.status = status
        self.raw_answer = raw_answer
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._server: _Server | None = None

    def __enter__(self) -> FakeSidecar:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length).decode("utf-8"))
                fake.requests.append((self.path, body))
                answer = fake.raw_answer or json.dumps(
                    {
                        "context": fake.context,
                        "answered_by": "full",
                        "tier": "supported",
                        "retrieval_time_ms": 1.0,
                        "query_id": "q1",
                    }
                ).encode("utf-8")
                self.send_response(fake.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def address_string(self) -> str:
                return "unix"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._server = _Server(str(self.path), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        self.path.unlink(missing_ok=True)


def start_fake_process(path: Path, context: str) -> subprocess.Popen:
    """A fake sidecar in its own process (so it can be SIGSTOPped); returns once it answers."""
    proc = subprocess.Popen([sys.executable, __file__, str(path), context])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.connect(str(path))
            return proc
        except OSError:
            time.sleep(0.02)
    proc.kill()
    raise RuntimeError("fake sidecar did not start")


def sidecar_pids(home: Path) -> list[int]:
    """Pids of ``memcue.sidecar`` processes whose environment has ``MEMCUE_HOME=home``."""
    pids = []
    marker = f"MEMCUE_HOME={home.absolute()}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            if b"memcue.sidecar" not in cmdline:
                continue
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def kill_spawned_sidecars(home: Path) -> list[int]:
    """Stop any sidecar the hook started for ``home``; returns the pids.

    Sidecars are found in /proc by command line and environment rather than by ``sidecar.pid`` alone,
    so a stale pid file can never make the test kill an unrelated process.
    """
    pids = set(sidecar_pids(home))
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + 3
    for pid in pids:
        while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
            try:
                if Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z"):
                    break
            except OSError:
                break
            time.sleep(0.02)
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return sorted(pids)


if __name__ == "__main__":
    with FakeSidecar(Path(sys.argv[1]), sys.argv[2]):
        while True:
            time.sleep(3600)


def make_home(tmp_path: Path) -> Path:
    """A fresh ``MEMCUE_HOME`` under ``tmp_path`` (the socket falls back to the temp dir if too deep)."""
    home = tmp_path / "h"
    home.mkdir()
    return home


def cleanup_home(home: Path) -> None:
    """Kill sidecars the hook spawned for ``home`` and remove its socket if it lives outside ``home``."""
    kill_spawned_sidecars(home)
    sock = socket_path(home)
    if home not in sock.parents:
        sock.unlink(missing_ok=True)


def content_length(request: bytes) -> int:
    """The ``Content-Length`` of a raw HTTP request's head (bytes), 0 when it names none."""
    for line in request.partition(b"\r\n\r\n")[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0
