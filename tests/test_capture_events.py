"""Stop and SessionEnd: capture only, through the real hook: spooled at once, nothing printed (issue 5)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import run_hook, start_sidecar
from hookutil import spool_records

from memcue.adapters import claude_code
from memcue.adapters.base import SESSION_END, STOP
from memcue.core.limits import CAPTURE_MAX_CHARS


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
    answer = "We switched the billing queue to SQS because Kafka was overkill.\n" * 600  # 39,000 characters
    stop = run_hook({"session_id": "s1", "cwd": str(project), "hook_event_name": "Stop",
                     "stop_hook_active": False, "last_assistant_message": answer}, "stop", env=env)
    silent = run_hook({"session_id": "s1", "cwd": str(project), "hook_event_name": "Stop",
                       "stop_hook_active": False}, "stop", env=env)  # no answer: nothing to record
    assert time.monotonic() - started < 4.5
    for proc in (end, stop, silent):
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    ended, replied = spool_records(home)
    assert (ended["content"], ended["kind"], ended["session_id"]) == ("Session ended (reason: clear)", "event", "s1")
    assert replied["kind"] == "episode" and "more characters left out]" in replied["content"]
    assert replied["content"].endswith("because Kafka was overkill.\n"), "the answer's end is kept too"
    assert CAPTURE_MAX_CHARS - 300 < len(replied["content"]) <= CAPTURE_MAX_CHARS
    assert not (home / "sidecar.pid").exists(), "a capture never starts the sidecar"
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        deadline = time.monotonic() + 15
        while sc.client.health()["counts"]["memories"] < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        counts = sc.client.health()["counts"]
        asked = sc.client.recall("why did we switch the billing queue to SQS?", project=str(project))
    finally:
        sc.stop()
    assert (counts["memories"], counts["bookkeeping"]) == (2, 1), "the session end is bookkeeping, the answer not"
    assert asked["results"] == [], "a captured answer answers only a question about what was done"
