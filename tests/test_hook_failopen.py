"""The hook fails open: a dead, hung or stopped sidecar and broken stdin never block a prompt (C01, C02)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from hookutil import (
    HOOK,
    FakeSidecar,
    cleanup_home,
    content_length,
    hook_env,
    hook_log,
    make_home,
    run_hook,
    run_hook_stdin_held_open,
    socket_path,
    spool_records,
    start_fake_process,
)

from memcue.hooks.run import STALL_MARK, STALL_PROBE_S

PROMPT = {
    "session_id": "sess-c01",
    "transcript_path": "/tmp/t.jsonl",
    "cwd": "/tmp",
    "permission_mode": "default",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "how do we rotate the build-cache key?",
}


@pytest.fixture
def home(tmp_path: Path):
    home = make_home(tmp_path)
    yield home
    cleanup_home(home)


def assert_failed_open(run, limit_s: float) -> None:
    assert run.returncode == 0
    assert run.stdout == b""
    assert run.stderr == b""
    assert run.elapsed_s < limit_s, f"hook took {run.elapsed_s:.2f} s"


def test_C01_socket_accepts_and_never_answers(home: Path) -> None:
    path = socket_path(home)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(64)  # never accept(): connections queue in the backlog, nothing ever answers
    try:
        for i in range(10):
            run = run_hook({**PROMPT, "prompt": f"prompt {i}"}, home, MEMCUE_HOOK_DEADLINE_S="0.5")
            assert_failed_open(run, 1.5)
            assert run.elapsed_s >= (0.4 if i == 0 else 0.25), "the hook gave up before its deadline (or probe)"
    finally:
        listener.close()
        path.unlink(missing_ok=True)
    log = hook_log(home)
    assert log.count(f"giving it {STALL_PROBE_S} s") == 9, "after one silent answer, later prompts only probe"
    assert "started pid=" not in log, "a connected-but-silent sidecar must not trigger a spawn"
    assert log.count("timed out waiting for the answer") == 10
    # No answer proves the prompt was stored, so each one is spooled (no loss).
    assert [r["content"] for r in spool_records(home)] == [f"prompt {i}" for i in range(10)]


def test_C01_stale_socket_file_spawns_once_and_returns(home: Path) -> None:
    path = socket_path(home)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()  # the file stays, nothing listens: connect() is refused
    assert path.exists()

    run = run_hook(PROMPT, home, MEMCUE_HOOK_DEADLINE_S="1.0")
    assert run.returncode == 0
    assert run.stderr == b""
    assert run.elapsed_s < 3.0
    if run.stdout:  # a real sidecar may come up in time and answer
        assert set(run.output()) == {"hookSpecificOutput"}
    log = hook_log(home)
    assert log.count("started pid=") == 1, log
    assert "Connection refused" in log


def test_C01_ten_prompts_with_nothing_listening(home: Path) -> None:
    path = socket_path(home)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()
    for i in range(10):
        run = run_hook({**PROMPT, "prompt": f"p{i}"}, home, MEMCUE_HOOK_DEADLINE_S="0.4")
        assert run.returncode == 0
        assert run.stderr == b""
        assert run.elapsed_s < 3.0
        if run.stdout:
            assert set(run.output()) == {"hookSpecificOutput"}
    # One spawn per run at most, never an escalating number of them.
    assert hook_log(home).count("started pid=") <= 10


def test_C01_sigstopped_sidecar(home: Path) -> None:
    path = socket_path(home)
    fake = start_fake_process(path, "memory: the build-cache key rotates every release")
    try:
        warm = run_hook(PROMPT, home, MEMCUE_HOOK_DEADLINE_S="2.0")
        assert warm.returncode == 0
        assert warm.output()["hookSpecificOutput"]["additionalContext"].startswith("memory: ")
        os.kill(fake.pid, signal.SIGSTOP)
        stopped = [run_hook(PROMPT, home, MEMCUE_HOOK_DEADLINE_S="1.5") for _ in range(4)]
        os.kill(fake.pid, signal.SIGCONT)
        resumed = [run_hook(PROMPT, home, MEMCUE_HOOK_DEADLINE_S="2.0") for _ in range(2)]
    finally:
        os.kill(fake.pid, signal.SIGCONT)
        fake.kill()
        fake.wait()
        path.unlink(missing_ok=True)
    for run in stopped:
        assert_failed_open(run, 2.5)
    # The first prompt waits out its deadline; the next ones only probe the stopped sidecar (STALL_PROBE_S).
    assert stopped[0].elapsed_s >= 1.4 and max(r.elapsed_s for r in stopped[1:]) < 1.0
    for run in resumed:  # the probe gets an answer once the sidecar runs again, and the mark is gone
        assert run.output()["hookSpecificOutput"]["additionalContext"].startswith("memory: ")
    assert not (home / STALL_MARK).exists()
    assert hook_log(home).count(f"giving it {STALL_PROBE_S} s") == 4
    assert "started pid=" not in hook_log(home)


#: The broken payloads of case C02 (plus two more shapes); "held open" is added where it applies.
BROKEN_STDIN = [
    pytest.param(b"", id="empty"),
    pytest.param(b'{"prompt": "hel', id="truncated"),
    pytest.param(b'{"session_id": "s", "cwd": "/tmp", "hook_event_name": "UserPromptSubmit"}', id="no-prompt"),
    pytest.param(b'[{"prompt": "in an array"}]', id="array"),
    pytest.param(b"[" * 100_000 + b"]" * 100_000, id="nested-too-deep"),
]


@pytest.mark.parametrize(
    "stdin",
    [*BROKEN_STDIN, pytest.param(b'"a bare string"', id="string"), pytest.param(b"\xff\xfe\x00garbage", id="binary")],
)
def test_C02_broken_stdin(home: Path, stdin: bytes) -> None:
    with FakeSidecar(socket_path(home), "should never be injected") as fake:
        run = run_hook(stdin, home, MEMCUE_HOOK_DEADLINE_S="1.0")
    assert_failed_open(run, 3.0)
    assert fake.requests == [], "no prompt, so nothing to recall"
    assert spool_records(home) == []
    log = hook_log(home)
    assert "no prompt in the payload" in log
    assert "hook error" not in log, "bad input is the harness's problem, not a memcue failure (doctor counts these)"


def test_C02_stdin_held_open_with_no_bytes(home: Path) -> None:
    with FakeSidecar(socket_path(home), "never") as fake:
        run = run_hook_stdin_held_open(home, MEMCUE_HOOK_DEADLINE_S="1.0")
        assert run.returncode == 0
        assert run.stdout == b""
        assert run.stderr == b""
        assert run.elapsed_s < 2.0, f"hook waited {run.elapsed_s:.2f} s on an open, silent stdin"
        assert fake.requests == []
    assert "empty stdin" in hook_log(home)


def test_C02_complete_payload_on_stdin_held_open(home: Path) -> None:
    """A harness that writes the payload but never closes stdin still gets an answer at once."""
    with FakeSidecar(socket_path(home), "remembered context") as fake:
        proc = subprocess.Popen(
            [*HOOK, "claude-code", "UserPromptSubmit"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=hook_env(home, MEMCUE_HOOK_DEADLINE_S="2.5"),
        )
        start = time.monotonic()
        proc.stdin.write(json.dumps(PROMPT).encode())
        proc.stdin.flush()
        try:
            proc.wait(timeout=10)
            elapsed = time.monotonic() - start
        finally:
            proc.kill()
            proc.stdin.close()
        out = json.loads(proc.stdout.read())
    assert proc.returncode == 0
    assert out["hookSpecificOutput"]["additionalContext"] == "remembered context"
    assert fake.requests[0][1]["event"]["prompt"] == PROMPT["prompt"]
    assert elapsed < 0.9, f"hook waited {elapsed:.2f} s for EOF after a complete object"


@pytest.mark.parametrize(
    "argv", [["nosuch", "user-prompt-submit"], ["claude-code", "nosuch"], ["claude-code"], []]
)
def test_C02_unknown_harness_or_event(home: Path, argv: list[str]) -> None:
    proc = subprocess.run(
        [*HOOK, *argv],
        input=json.dumps(PROMPT).encode(),
        capture_output=True,
        env=hook_env(home),
        timeout=10,
    )
    assert proc.returncode == 0
    assert proc.stdout == b""
    assert proc.stderr == b""
    assert hook_log(home).strip(), "the reason goes to the log"


def test_C01_sidecar_http_error_fails_open(home: Path) -> None:
    with FakeSidecar(socket_path(home), "x", status=500):
        run = run_hook(PROMPT, home, MEMCUE_HOOK_DEADLINE_S="1.0")
    assert_failed_open(run, 3.0)
    assert "HTTP 500" in hook_log(home)
    assert [r["content"] for r in spool_records(home)] == [PROMPT["prompt"]]


def test_C01_sidecar_garbage_answer_fails_open(home: Path) -> None:
    with FakeSidecar(socket_path(home), raw_answer=b"<html>not json") as fake:
        run = run_hook(PROMPT, home, MEMCUE_HOOK_DEADLINE_S="1.0")
    assert_failed_open(run, 3.0)
    assert len(fake.requests) == 1
    assert spool_records(home) == [], "a 200 means the sidecar has the prompt"


def test_C01_stale_socket_file_no_spawn_ten_prompts_spooled(home: Path) -> None:
    """A stale socket file, nothing listening, MEMCUE_HOOK_SPAWN=0: each prompt returns at once and is spooled."""
    path = socket_path(home)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()
    prompts = [f"prompt {i}: rotate the build-cache key\n\tC:\\new\\table 构建 🔑" for i in range(10)]
    try:
        for prompt in prompts:
            run = run_hook({**PROMPT, "prompt": prompt}, home, MEMCUE_HOOK_SPAWN="0")
            assert_failed_open(run, 1.0)  # connection refused at once: nothing to wait for
        assert path.exists(), "the hook never deletes the socket file"
    finally:
        path.unlink(missing_ok=True)
    records = spool_records(home)
    assert [r["content"] for r in records] == prompts
    assert len({r["spool_id"] for r in records}) == 10
    log = hook_log(home)
    assert log.count("Connection refused") == 10
    assert "started pid=" not in log


class _AcceptReadNeverAnswer:
    """A unix-socket server that accept()s, reads each whole HTTP request, and never writes a byte."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.requests: list[bytes] = []
        self._conns: list[socket.socket] = []
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        self._listener.listen(16)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            self._conns.append(conn)  # kept open, never answered
            conn.settimeout(5)
            data = b""
            try:
                while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < content_length(data):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                pass
            self.requests.append(data)

    def close(self) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        except OSError:
            pass
        self._listener.close()
        self._thread.join(timeout=2)
        for conn in self._conns:
            conn.close()
        self.path.unlink(missing_ok=True)


def test_C01_socket_accepts_reads_and_never_answers(home: Path) -> None:
    server = _AcceptReadNeverAnswer(socket_path(home))
    prompts = [f"prompt {i} about the build-cache key" for i in range(10)]
    try:
        for i, prompt in enumerate(prompts):
            run = run_hook({**PROMPT, "prompt": prompt}, home, MEMCUE_HOOK_DEADLINE_S="0.5")
            assert_failed_open(run, 1.5)
            assert run.elapsed_s >= (0.4 if i == 0 else 0.25), "the hook gave up before its deadline (or probe)"
        deadline = time.monotonic() + 2
        while len(server.requests) < 10 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        server.close()
    # The server really had each whole request (headers and JSON body) and still said nothing.
    assert len(server.requests) == 10
    bodies = [json.loads(r.partition(b"\r\n\r\n")[2]) for r in server.requests]
    assert [b["event"]["prompt"] for b in bodies] == prompts
    log = hook_log(home)
    assert log.count("timed out waiting for the answer") == 10
    assert "started pid=" not in log, "a connected-but-silent sidecar must not trigger a spawn"
    records = spool_records(home)
    assert [r["content"] for r in records] == prompts
    # Spooled under the id the sidecar would have stored it under, so a late answer cannot duplicate it.
    assert [r["spool_id"] for r in records] == [b["event"]["extra"]["request_id"] for b in bodies]


@pytest.mark.parametrize("stdin", [*BROKEN_STDIN, pytest.param(None, id="held-open")])
def test_C02_broken_stdin_with_no_sidecar(home: Path, stdin: bytes | None) -> None:
    """The five broken-stdin variants with no sidecar at all and spawning off, at the default deadline."""
    assert not socket_path(home).exists()
    if stdin is None:  # stdin held open with no bytes (the harness would hold it for 10 s)
        run = run_hook_stdin_held_open(home, MEMCUE_HOOK_SPAWN="0")
    else:
        run = run_hook(stdin, home, MEMCUE_HOOK_SPAWN="0")
    returncode, out, err, elapsed = run.returncode, run.stdout, run.stderr, run.elapsed_s
    assert (returncode, out, err) == (0, b"", b"")
    assert elapsed < 2.5, f"hook took {elapsed:.2f} s, over the default deadline"
    log = hook_log(home)
    assert "no prompt in the payload" in log, "diagnostics go to the log file"
    assert "started pid=" not in log
    assert spool_records(home) == []
    assert not socket_path(home).exists()


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_goes_to_stderr_and_stdout_stays_empty(flag: str, tmp_path: Path) -> None:
    """A person trying the hook by hand gets its usage; a harness's stdout never gets anything but its JSON."""
    proc = subprocess.run([*HOOK, flag], capture_output=True, timeout=30, env=hook_env(tmp_path / "home"))
    assert (proc.returncode, proc.stdout) == (0, b"")
    assert proc.stderr.startswith(b"usage: python -m memcue.hooks HARNESS EVENT") and b"always exits 0" in proc.stderr
