"""The real hook against the real sidecar (keyword-only): start-up, answer, spool ingestion (C10)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import apsw
import pytest
from hookutil import cleanup_home, hook_log, make_home, run_hook, socket_path, spool_records

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
