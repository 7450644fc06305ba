"""The real hook against the real sidecar (keyword-only): start-up, answer, spool ingestion (C10)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest
from hookutil import cleanup_home, hook_env, hook_log, make_home, run_hook, socket_path, spool_records

from memcue.core.paths import STALL_MARK
from memcue.hooks.client import SidecarError, request

NO_MODEL = {"MEMCUE_NO_MODEL": "1", "OPENBLAS_NUM_THREADS": "1"}


@pytest.fixture
def home(tmp_path: Path):
    home = make_home(tmp_path)
    yield home
    cleanup_home(home)


def wait_healthy(home: Path, timeout_s: float) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            status, body = request(
                "GET", "/health", None, time.monotonic() + 2, socket_path=socket_path(home)
            )
            if status == 200:
                return json.loads(body)
        except SidecarError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"the sidecar did not come up; hook log:\n{hook_log(home)}")


def stored(home: Path, timeout_s: float, want: int) -> list[tuple[str, str, str, str | None]]:
    """``(content, kind, source, source_id)`` of every memory, once at least ``want`` are there."""
    deadline = time.monotonic() + timeout_s
    rows: list = []
    while time.monotonic() < deadline:
        try:
            conn = apsw.Connection(str(home / "memcue.db"), flags=apsw.SQLITE_OPEN_READONLY)
            try:
                conn.setbusytimeout(2000)
                rows = conn.execute(
                    "SELECT content, kind, source, source_id FROM memories ORDER BY id"
                ).fetchall()
            finally:
                conn.close()
        except apsw.Error:
            rows = []
        if len(rows) >= want:
            return rows
        time.sleep(0.1)
    return rows


def test_C10_session_start_starts_the_sidecar_and_the_spool_is_ingested(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    down_prompt = "typed while the sidecar was down: rotate the build-cache key"
    live_prompt = "asked once it was up: how do we rotate the build-cache key?"

    run = run_hook(
        {"session_id": "s10", "cwd": str(project), "prompt": down_prompt}, home, MEMCUE_HOOK_SPAWN="0"
    )
    assert (run.returncode, run.stdout, run.stderr) == (0, b"", b"")
    [spooled] = spool_records(home)

    session = {
        "session_id": "s10",
        "cwd": str(project),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    run = run_hook(session, home, event="session-start", **NO_MODEL)
    assert run.returncode == 0
    assert run.stderr == b""
    assert run.elapsed_s < 5.0
    if run.stdout:
        assert run.output()["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert hook_log(home).count("started pid=") == 1

    health = wait_healthy(home, 30)
    assert health["status"] == "ok"

    run = run_hook({"session_id": "s10", "cwd": str(project), "prompt": live_prompt}, home, **NO_MODEL)
    assert (run.returncode, run.stderr) == (0, b"")
    if run.stdout:
        assert run.output()["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert len(spool_records(home)) == 1, "the sidecar answered, so nothing new is spooled"
    assert hook_log(home).count("started pid=") == 1, "a running sidecar is never started again"

    rows = stored(home, 15, want=2)
    by_content = {content: (kind, source, source_id) for content, kind, source, source_id in rows}
    assert by_content[down_prompt] == ("request", "hook:claude-code", spooled["spool_id"])
    assert by_content[live_prompt][:2] == ("request", "hook:claude-code")
    assert [c for c, *_ in rows].count(down_prompt) == 1


def _sidecar_caught_starting(home: Path, tries: int = 5) -> subprocess.Popen:
    """A real sidecar for ``home``, stopped (SIGSTOP) after it bound its socket and before it serves: the moment
    a cold start's next prompt meets it. Retried when the stop came too late (it already logged "serving on")."""
    log = home / "logs" / "sidecar.log"
    for _ in range(tries):
        proc = subprocess.Popen([sys.executable, "-m", "memcue.sidecar"], env=hook_env(home, **NO_MODEL),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not socket_path(home).exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.001)
        os.kill(proc.pid, signal.SIGSTOP)
        if socket_path(home).exists() and "serving on" not in (log.read_text() if log.exists() else ""):
            return proc
        os.kill(proc.pid, signal.SIGCONT)
        proc.terminate()
        proc.wait(10)
    raise AssertionError("never caught the sidecar between binding its socket and serving")


def test_a_prompt_while_the_sidecar_starts_goes_on_at_once_and_is_spooled(home: Path, tmp_path: Path) -> None:
    """A sidecar that bound its socket but does not serve yet refuses the connection: the prompt's hook spools
    and goes on (as with no sidecar at all) instead of waiting in the listen backlog for its whole deadline and
    marking the sidecar stalled."""
    project = tmp_path / "proj"
    project.mkdir()
    prompt = "sent while the sidecar was still starting: which port does invoices use?"
    proc = _sidecar_caught_starting(home)
    try:
        run = run_hook({"session_id": "s11", "cwd": str(project), "prompt": prompt}, home, **NO_MODEL)
        assert (run.returncode, run.stdout, run.stderr) == (0, b"", b"")
        log = hook_log(home)
        assert "Connection refused" in log, log
        assert not (home / STALL_MARK).exists(), "a starting sidecar is not a stalled one"
        [spooled] = spool_records(home)
        assert spooled["content"] == prompt
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    wait_healthy(home, 30)
    assert prompt in [content for content, *_ in stored(home, 15, want=1)]
    proc.terminate()
    proc.wait(10)
