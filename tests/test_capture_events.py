"""Stop and SessionEnd: capture only, through the real hook: spooled at once, nothing printed (issue 5)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import run_hook, start_sidecar
from hookutil import spool_records

from memcue.adapters import claude_code
from memcue.adapters.base import SESSION_END, STOP


def test_parse_and_render_of_capture_events() -> None:
    end = claude_code.parse(SESSION_END, {"session_id": "s1", "cwd": "/tmp", "hook_event_name": "SessionEnd",
                                          "reason": "logout"})
    assert end.extra["reason"] == "logout"
    stop = claude_code.parse(STOP, {"session_id": "s1", "cwd": "/tmp", "stop_hook_active": False})
    assert claude_code.render(stop, "- (note) never shown") == "" == claude_code.render(end, "- (note) x")


def test_session_end_is_spooled_at_once_and_stored_as_bookkeeping(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "svc"
    project.mkdir()
    env = {**os.environ, "MEMCUE_HOME": str(home)}  # spawning allowed: capture must not start or wait for it
    started = time.monotonic()
    end = run_hook({"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": str(project),
                    "hook_event_name": "SessionEnd", "reason": "clear"}, "session-end", env=env)
    stop = run_hook({"session_id": "s1", "cwd": str(project), "hook_event_name": "Stop",
                     "stop_hook_active": False}, "stop", env=env)
    assert time.monotonic() - started < 3.0
    assert (end.returncode, end.stdout, end.stderr) == (0, b"", b"") == (stop.returncode, stop.stdout, stop.stderr)
    (record,) = spool_records(home)  # Stop records nothing
    assert (record["content"], record["kind"], record["session_id"]) == ("Session ended (reason: clear)", "event",
                                                                         "s1")
    assert not (home / "sidecar.pid").exists(), "a capture never starts the sidecar"
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        deadline = time.monotonic() + 15
        while sc.client.health()["counts"]["memories"] < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        counts = sc.client.health()["counts"]
    finally:
        sc.stop()
    assert (counts["memories"], counts["bookkeeping"]) == (1, 1), "stored, flagged as bookkeeping"
