"""Case C21 (issue 13, kind 1): a payload the harness wrote is read however late the hook gets to it, and
the prompt is answered or spooled, never logged as empty and dropped; the stall probe arms only on a sidecar
that sent not one byte of an answer.

The real hook runs as a subprocess with a real Claude Code payload; the sidecar is ``hookutil.FakeSidecar``
or a raw unix-socket server that reads the request and answers partly or not at all. ``HARNESS_TIMEOUT_S``
is the timeout memcue installs for prompt hooks: a hook still running then is killed, as the harness would.
"""

from __future__ import annotations

import json
import os
import select
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
    socket_path,
    spool_records,
)

from memcue.harnesses import HARNESSES, USER_PROMPT_SUBMIT
from memcue.hooks.run import STALL_MARK, STALL_PROBE_S
from memcue.hooks.stdin import read_stdin

HARNESS_TIMEOUT_S = HARNESSES["claude-code"].events[USER_PROMPT_SUBMIT].timeout_s
PROMPT = {
    "session_id": "5d2b7c1e-8f3a-4b6d-9e0f-c21c21c21c21",
    "transcript_path": "/home/dev/.claude/projects/x/5d2b7c1e.jsonl",
    "cwd": "/tmp",
    "permission_mode": "default",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "why does the nightly deploy rotate the build-cache key?",
}
CONTEXT = "memory: the build-cache key rotates after every release"


@pytest.fixture
def home(tmp_path: Path):
    home = make_home(tmp_path)
    yield home
    cleanup_home(home)


class Harness:
    """Starts the hook like a harness: stdin a pipe, killed at ``HARNESS_TIMEOUT_S`` if still running."""

    def __init__(self, home: Path, **env: str) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen([*HOOK, "claude-code", "UserPromptSubmit"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=hook_env(home, **env))

    def write(self, payload: dict, *, close: bool = True) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(payload).encode("utf-8"))
        self.proc.stdin.flush()
        if close:
            self.proc.stdin.close()

    def finish(self) -> tuple[int | None, bytes, bytes, float]:
        """(exit status or None if the harness had to kill it, stdout, stderr, seconds from start)."""
        try:
            self.proc.wait(timeout=max(0.01, self.started + HARNESS_TIMEOUT_S - time.monotonic()))
            status: int | None = self.proc.returncode
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            status = None
        elapsed = time.monotonic() - self.started
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        out, err = self.proc.stdout.read(), self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return status, out, err, elapsed


class RawSidecar:
    """A unix-socket server that reads each whole request and sends ``reply`` (maybe nothing), never more,
    keeping the connection open."""

    def __init__(self, path: Path, reply: bytes = b"") -> None:
        self.path, self.reply = path, reply
        self.requests: list[bytes] = []
        self._conns: list[socket.socket] = []
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        self._listener.listen(16)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self._conns.append(conn)
            data = b""
            while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < content_length(data):
                ready, _, _ = select.select([conn], [], [], 5)
                chunk = conn.recv(65536) if ready else b""
                if not chunk:
                    break
                data += chunk
            self.requests.append(data)
            if self.reply:
                conn.sendall(self.reply)

    def __enter__(self) -> RawSidecar:
        return self

    def __exit__(self, *exc: object) -> None:
        self._listener.close()
        for conn in self._conns:
            conn.close()
        self.path.unlink(missing_ok=True)


def _assert_clean(status: int | None, err: bytes, home: Path) -> None:
    assert status == 0, "the hook ran past the harness's timeout and was killed"
    assert err == b""
    assert "empty stdin" not in hook_log(home), hook_log(home)


def test_C21_read_stdin_takes_bytes_already_in_the_pipe_after_the_deadline() -> None:
    payload = json.dumps(PROMPT).encode()
    r, w = os.pipe()
    try:
        os.write(w, payload)
        assert read_stdin(time.monotonic() - 5.0, r) == payload, "bytes waiting in the pipe were thrown away"
        os.write(w, b'{"prompt": "part')
        started = time.monotonic()
        assert read_stdin(time.monotonic() + 0.2, r) == b'{"prompt": "part'
        assert time.monotonic() - started < 1.0, "the wait for more bytes ends at the deadline"
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.parametrize("close", [True, False], ids=["closed", "held-open"])
def test_C21_payload_written_late_is_answered(home: Path, close: bool) -> None:
    with FakeSidecar(socket_path(home), CONTEXT) as fake:
        harness = Harness(home)
        time.sleep(1.5)
        harness.write(PROMPT, close=close)
        status, out, err, _ = harness.finish()
    _assert_clean(status, err, home)
    assert json.loads(out)["hookSpecificOutput"]["additionalContext"] == CONTEXT
    assert [body["event"]["prompt"] for _, body in fake.requests] == [PROMPT["prompt"]]


def test_C21_payload_written_late_with_no_sidecar_is_spooled(home: Path) -> None:
    harness = Harness(home, MEMCUE_HOOK_SPAWN="0")
    time.sleep(1.5)
    harness.write(PROMPT)
    status, out, err, _ = harness.finish()
    _assert_clean(status, err, home)
    assert out == b""
    assert [r["content"] for r in spool_records(home)] == [PROMPT["prompt"]]



def test_C21_payload_written_just_before_the_deadline_is_spooled_not_dropped(home: Path) -> None:
    """A payload written 0.3 s before the hook's deadline (2.2 s of 2.5 s): too late to ask the sidecar, but
    still read and spooled before the harness's timeout; never logged as an empty stdin and dropped."""
    harness = Harness(home, MEMCUE_HOOK_SPAWN="0")
    time.sleep(max(0.0, harness.started + 2.2 - time.monotonic()))
    harness.write(PROMPT)
    status, out, err, elapsed = harness.finish()
    _assert_clean(status, err, home)
    assert out == b"" and elapsed < HARNESS_TIMEOUT_S
    assert [r["content"] for r in spool_records(home)] == [PROMPT["prompt"]]

def test_C21_payload_written_late_to_a_silent_sidecar_is_spooled_in_time(home: Path) -> None:
    with RawSidecar(socket_path(home)) as silent:
        harness = Harness(home)
        time.sleep(1.5)
        harness.write(PROMPT)
        status, out, err, _ = harness.finish()
    _assert_clean(status, err, home)
    assert out == b""
    assert len(silent.requests) == 1
    assert [r["content"] for r in spool_records(home)] == [PROMPT["prompt"]]


def _stopped_at_start(home: Path, stop_s: float, **env: str) -> Harness:
    """The hook, stopped (SIGSTOP) right after exec for ``stop_s`` seconds with its payload in the pipe: a
    start-up that took that long on a machine starved of CPU."""
    harness = Harness(home, **env)
    os.kill(harness.proc.pid, signal.SIGSTOP)
    try:
        harness.write(PROMPT)
        time.sleep(stop_s)
    finally:
        os.kill(harness.proc.pid, signal.SIGCONT)
    return harness


def test_C21_hook_starved_at_start_still_answers(home: Path) -> None:
    with FakeSidecar(socket_path(home), CONTEXT) as fake:
        status, out, err, _ = _stopped_at_start(home, 1.5).finish()
    _assert_clean(status, err, home)
    assert json.loads(out)["hookSpecificOutput"]["additionalContext"] == CONTEXT
    assert [body["event"]["prompt"] for _, body in fake.requests] == [PROMPT["prompt"]]


def test_C21_hook_starved_at_start_spools_before_the_harness_timeout(home: Path) -> None:
    """The deadline counts from the real process start, so a silent sidecar still leaves time to spool."""
    with RawSidecar(socket_path(home)):
        status, out, err, elapsed = _stopped_at_start(home, 1.5).finish()
    _assert_clean(status, err, home)
    assert out == b""
    assert elapsed < HARNESS_TIMEOUT_S
    assert [r["content"] for r in spool_records(home)] == [PROMPT["prompt"]]


def test_C21_hook_starved_past_its_whole_deadline_spools_without_asking(home: Path) -> None:
    """Started so late that its deadline has passed: it still reads the payload, and spools it at once."""
    with FakeSidecar(socket_path(home), CONTEXT) as fake:
        status, out, err, _ = _stopped_at_start(home, 1.3, MEMCUE_HOOK_DEADLINE_S="1.0").finish()
    _assert_clean(status, err, home)
    assert out == b""
    assert fake.requests == [], "no time was left to ask the sidecar"
    assert "not asking the sidecar" in hook_log(home)
    assert [r["content"] for r in spool_records(home)] == [PROMPT["prompt"]]


def test_C21_hook_starved_past_its_deadline_mid_call_spools(home: Path) -> None:
    """Stopped while it waits for the sidecar until past the watchdog's time: the watchdog spools the prompt."""
    with RawSidecar(socket_path(home)) as silent:
        harness = Harness(home, MEMCUE_HOOK_DEADLINE_S="1.0")
        harness.write(PROMPT)
        limit = time.monotonic() + 5
        while not silent.requests and time.monotonic() < limit:
            time.sleep(0.005)
        os.kill(harness.proc.pid, signal.SIGSTOP)
        time.sleep(max(0.0, harness.started + 1.6 - time.monotonic()))
        os.kill(harness.proc.pid, signal.SIGCONT)
        status, out, err, _ = harness.finish()
    _assert_clean(status, err, home)
    assert out == b""
    assert [r["content"] for r in spool_records(home)] == [PROMPT["prompt"]]
    assert len(silent.requests) == 1


def test_C21_slowly_answering_sidecar_does_not_arm_the_probe(home: Path) -> None:
    """Headers at once, the body never by the deadline: an answer began, so the sidecar is not stalled."""
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n"
    with RawSidecar(socket_path(home), head) as slow:
        first = Harness(home, MEMCUE_HOOK_DEADLINE_S="1.0")
        first.write(PROMPT)
        status, out, err, _ = first.finish()
        _assert_clean(status, err, home)
        assert not (home / STALL_MARK).exists(), "a sidecar that began to answer armed the stall probe"
        second = Harness(home, MEMCUE_HOOK_DEADLINE_S="1.0")
        second.write({**PROMPT, "prompt": "second prompt"})
        status, _, err, elapsed = second.finish()
    _assert_clean(status, err, home)
    assert elapsed > 0.7, "the next prompt gave the sidecar its whole deadline, not a probe"
    assert f"giving it {STALL_PROBE_S} s" not in hook_log(home)
    assert len(slow.requests) == 2
    # No whole 2xx answer came, so neither prompt is known to be stored: both are spooled.
    assert [r["content"] for r in spool_records(home)] == [PROMPT["prompt"], "second prompt"]


def test_C21_busy_sidecar_answering_a_probe_with_an_error_clears_the_mark(home: Path) -> None:
    mark = home / STALL_MARK
    mark.touch()
    with FakeSidecar(socket_path(home), status=503):
        harness = Harness(home)
        harness.write(PROMPT)
        status, _, err, _ = harness.finish()
    _assert_clean(status, err, home)
    assert f"giving it {STALL_PROBE_S} s" in hook_log(home)
    assert not mark.exists(), "a probe that got an answer (503 busy) left the sidecar on probation"
    assert [r["content"] for r in spool_records(home)] == [PROMPT["prompt"]]


def test_C21_probe_that_times_out_does_not_rearm_the_mark(home: Path) -> None:
    """A mark set 50 s ago keeps its time when a probe gets nothing: a busy sidecar cannot extend it."""
    mark = home / STALL_MARK
    mark.touch()
    then = time.time() - 50
    os.utime(mark, (then, then))
    with RawSidecar(socket_path(home)):
        harness = Harness(home)
        harness.write(PROMPT)
        status, _, err, elapsed = harness.finish()
    _assert_clean(status, err, home)
    assert elapsed < 1.5, "the probe gave the sidecar its whole deadline"
    assert abs(mark.stat().st_mtime - then) < 1.0, "the timed-out probe re-armed the stall mark"
    assert [r["content"] for r in spool_records(home)] == [PROMPT["prompt"]]


def test_C21_late_payload_reaches_the_real_sidecar(tmp_path: Path) -> None:
    """Against the real sidecar (keyword-only): a payload written 1.5 s late is stored as the prompt it is."""
    import apsw
    from conftest import start_sidecar

    home = make_home(tmp_path)
    sidecar = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        harness = Harness(home)
        time.sleep(1.5)
        harness.write(PROMPT)
        status, out, err, _ = harness.finish()
        _assert_clean(status, err, home)
        if out:
            assert set(json.loads(out)) == {"hookSpecificOutput"}
        assert "sidecar call failed" not in hook_log(home), hook_log(home)
        conn = apsw.Connection(str(home / "memcue.db"), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            conn.setbusytimeout(5000)
            rows = conn.execute("SELECT content, kind FROM memories").fetchall()
        finally:
            conn.close()
    finally:
        sidecar.stop()
        cleanup_home(home)
    assert (PROMPT["prompt"], "request") in rows
    assert spool_records(home) == [], "answered by the sidecar, so nothing to spool"
