"""C23: twin session starts and events delivered twice, through the real hook and the real sidecar.

Two SessionStart hooks for one new session at the same moment give one full block between them; one event
delivered twice (the same request id, live and through the spool, or one spool record read twice) counts
once; ``memcue doctor`` names a hook registered twice for one event.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import hookutil
from conftest import Sidecar, context_of, prompt_payload, run_hook, start_sidecar

from memcue.core import spool_format
from memcue.core.blocks import SESSION_HEADER, STANDING_NOTE

ROUNDS = 10


def _start_payload(project: Path, session_id: str) -> bytes:
    return json.dumps({"session_id": session_id, "transcript_path": f"/tmp/{session_id}.jsonl",
                       "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"}).encode()


def _twin_starts(env: dict[str, str], payload: bytes) -> list[str]:
    """Two real SessionStart hooks for one session, their payloads written at the same moment (both processes
    are up and waiting on stdin first); the contexts they printed."""
    procs = [subprocess.Popen([sys.executable, "-m", "memcue.hooks", "claude-code", "session-start"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for _ in range(2)]
    time.sleep(0.3)  # both interpreters started and blocked on stdin
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(payload)
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
    out = []
    for proc in procs:
        assert proc.stdout is not None and proc.stderr is not None
        stdout, stderr = proc.stdout.read(), proc.stderr.read()
        assert (proc.wait(timeout=30), stderr) == (0, b"")
        out.append(context_of(subprocess.CompletedProcess(proc.args, 0, stdout, stderr)))
    return out


def test_C23_two_session_starts_at_once_give_one_full_block(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "billing-api"
    project.mkdir()
    env = {**os.environ, "MEMCUE_HOME": str(home), "MEMCUE_HOOK_SPAWN": "0"}
    sc = start_sidecar(home)
    try:
        for i in range(30):
            sc.client.remember(f"billing-api note {i}: invoices are cut on the {i + 1}th by the cron in ops/cron.yml",
                               project=str(project), kind="decision", pinned=i < 5)
        rounds = [_twin_starts(env, _start_payload(project, f"twin-{n}")) for n in range(ROUNDS)]
    finally:
        sc.stop()
    for n, contexts in enumerate(rounds):
        full = [c for c in contexts if c.startswith(f"{STANDING_NOTE}\n\n{SESSION_HEADER}\n")]
        assert len(full) == 1, (n, contexts)
        other = next(c for c in contexts if not c.startswith(STANDING_NOTE))
        assert other == "" or (other.count("\n") == 0 and other.startswith("memcue: memory is on")), (n, other)


def _rows(sc: Sidecar, content: str) -> list[dict]:
    """Every stored row (bookkeeping too) whose text is ``content``."""
    rows = sc.client.list_recent(all_projects=True, include_bookkeeping=True, limit=500)["results"]
    return [r for r in rows if r["content"] == content]


def _wait_for(sc: Sidecar, content: str, seen: int, timeout_s: float = 30.0) -> list[dict]:
    """The rows of ``content`` once one has ``seen_count >= seen`` (the worker ingests the spool on its own)."""
    deadline = time.monotonic() + timeout_s
    while True:
        rows = _rows(sc, content)
        if any(r["seen_count"] >= seen for r in rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


def _hook(home: Path, payload: dict, event: str) -> None:
    proc = run_hook(payload, event, env={**os.environ, "MEMCUE_HOME": str(home), "MEMCUE_HOOK_SPAWN": "0"})
    assert (proc.returncode, proc.stderr) == (0, b"")


def _deliver_again(sc: Sidecar, home: Path, record: dict) -> None:
    """Deliver one spool ``record`` a second time (a spool file read again, or the record written twice), then
    wait until the sidecar has read past it (a marker record after it is stored)."""
    marker = f"marker {spool_format.new_id()}"
    again = home / "spool" / f"again-{spool_format.new_id()[:8]}.jsonl"
    lines = [record, spool_format.remember_prompt(marker, project=record["project"], session_id="m",
                                                  harness="claude-code")]
    again.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    assert _wait_for(sc, marker, 1), "the sidecar did not ingest the spool"


def _live(home: Path, payload: dict, request_id: str) -> None:
    """Send the prompt hook's event to the sidecar as the real hook does (``hooks.run.ask_sidecar``), under the
    given request id (a hook retry, or the live copy of a spooled prompt)."""
    from memcue.adapters import claude_code
    from memcue.hooks.run import ask_sidecar

    event = claude_code.parse("user-prompt-submit", payload)
    event.extra["request_id"] = request_id
    answer = ask_sidecar(event, claude_code.budget("user-prompt-submit"), time.monotonic() + 10, may_spawn=False)
    assert isinstance(answer.get("context"), str)


def test_C23_one_prompt_delivered_twice_counts_once(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "billing-api"
    project.mkdir()
    asked = "run the billing integration tests again with the sandbox key"  # asked in two sessions
    fresh = "which cron cuts the invoices on the first of the month?"  # asked once
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        _hook(home, prompt_payload(asked, str(project), "s0"), "user-prompt-submit")  # live: one row
        assert [r["seen_count"] for r in _rows(sc, asked)] == [1]
    finally:
        sc.stop()
    # The sidecar is down: the real hook spools both prompts of session s1 under their request ids.
    _hook(home, prompt_payload(asked, str(project), "s1"), "user-prompt-submit")
    _hook(home, prompt_payload(fresh, str(project), "s1"), "user-prompt-submit")
    spooled = {r["content"]: r for r in hookutil.spool_records(home)}
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        assert [r["seen_count"] for r in _wait_for(sc, asked, 2)] == [2]  # a second request by the person
        assert [r["seen_count"] for r in _wait_for(sc, fresh, 1)] == [1]
        for text in (asked, fresh):  # the same requests delivered live too (the hook timed out, then retried)
            _live(home, prompt_payload(text, str(project), "s1"), spooled[text]["spool_id"])
            _deliver_again(sc, home, spooled[text])  # and the spool record read a second time
        asked_rows, fresh_rows = _rows(sc, asked), _rows(sc, fresh)
    finally:
        sc.stop()
    assert [r["seen_count"] for r in asked_rows] == [2]
    assert [r["seen_count"] for r in fresh_rows] == [1]


def test_C23_a_doubled_stop_or_session_end_counts_once(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "billing-api"
    project.mkdir()
    answer = "Done: the invoice cron now runs at 02:00 UTC and all 42 billing tests pass."
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        for n, session in enumerate(("s0", "s1")):  # two sessions end alike: two sightings of one row
            base = {"session_id": session, "transcript_path": f"/tmp/{session}.jsonl", "cwd": str(project)}
            _hook(home, {**base, "hook_event_name": "Stop", "stop_hook_active": False,
                         "last_assistant_message": answer}, "stop")
            _hook(home, {**base, "hook_event_name": "SessionEnd", "reason": "exit"}, "session-end")
            assert [r["seen_count"] for r in _wait_for(sc, answer, n + 1)] == [n + 1]
            assert [r["seen_count"] for r in _wait_for(sc, "Session ended (reason: exit)", n + 1)] == [n + 1]
        for record in [r for r in hookutil.spool_records(home) if r["session_id"] == "s1"]:
            _deliver_again(sc, home, record)  # s1's Stop and SessionEnd delivered a second time
        stops, ends = _rows(sc, answer), _rows(sc, "Session ended (reason: exit)")
    finally:
        sc.stop()
    assert [r["seen_count"] for r in stops] == [2]
    assert [r["seen_count"] for r in ends] == [2]


def test_C23_a_request_id_is_stored_once_even_when_its_text_was_known(tmp_path: Path) -> None:
    from memcue.sidecar.store import NewMemory, Store

    store = Store(tmp_path / "memcue.db")
    try:
        def write(source_id: str | None) -> None:
            store.remember_many([NewMemory(content="pin the plugin version in CI", kind="request", project="/w/a",
                                           source="hook:claude-code", source_id=source_id)])

        write("req-1")
        write("req-2")  # a second request by the person: a sighting
        write("req-2")  # the same request again (retry, spool read twice): nothing
        write("req-1")
        write(None)  # a write without an id (``memcue remember``): a sighting, as before
        rows = store.list_memories(project="/w/a", limit=10, include_bookkeeping=True)
    finally:
        store.close()
    assert [r["seen_count"] for r in rows] == [3]




def _doctor(tmp_path: Path, home: Path, cwd: Path) -> tuple[int, dict]:
    env = {**os.environ, "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "CODEX_HOME": str(tmp_path / "codex"), "MEMCUE_HOME": str(home), "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-m", "memcue", "doctor", "--json"], env=env, capture_output=True,
                         text=True, timeout=60, cwd=cwd)
    return run.returncode, {f["area"]: f for f in json.loads(run.stdout)["data"]["findings"]}


def _memcue(tmp_path: Path, home: Path, cwd: Path, *argv: str) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "MEMCUE_HOME": str(home)}
    run = subprocess.run([sys.executable, "-m", "memcue", *argv], env=env, capture_output=True, timeout=60, cwd=cwd)
    assert run.returncode == 0, run.stderr


def test_C23_doctor_flags_a_hook_registered_twice(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "billing-api"
    (project / ".git").mkdir(parents=True)
    _memcue(tmp_path, home, project, "install", "claude-code", "--no-mcp")
    code, found = _doctor(tmp_path, home, project)
    assert code == 0 and found["claude-code"]["status"] == "ok"
    # A second registration through another interpreter in the same file; install brings both up to date.
    path = tmp_path / "claude" / "settings.json"
    settings = json.loads(path.read_text())
    hook = dict(settings["hooks"]["UserPromptSubmit"][-1]["hooks"][0])
    settings["hooks"]["UserPromptSubmit"].append({"hooks": [{**hook, "command": hook["command"].replace(
        sys.executable, "/usr/local/bin/python3.11")}]})
    path.write_text(json.dumps(settings, indent=2))
    _memcue(tmp_path, home, project, "install", "claude-code", "--no-mcp")
    code, found = _doctor(tmp_path, home, project)
    message = found["claude-code"]["message"]
    assert code == 1 and found["claude-code"]["status"] == "problem", message
    assert "UserPromptSubmit 2 times" in message and "Fix: `memcue uninstall claude-code` then" in message
    _memcue(tmp_path, home, project, "uninstall", "claude-code")
    _memcue(tmp_path, home, project, "install", "claude-code", "--no-mcp")
    assert _doctor(tmp_path, home, project)[1]["claude-code"]["status"] == "ok"  # the fix line works
    # User settings and the project's own settings both register it: Claude Code merges them, both run.
    _memcue(tmp_path, home, project, "install", "claude-code", "--project")
    code, found = _doctor(tmp_path, home, project)
    message = found["claude-code"]["message"]
    assert code == 1 and found["claude-code"]["status"] == "problem", message
    assert str(project / ".claude" / "settings.local.json") in message and str(path) in message
    assert "SessionStart 2 times" in message and "memcue uninstall claude-code --project" in message
    assert _doctor(tmp_path, home, tmp_path)[1]["claude-code"]["status"] == "ok"  # elsewhere: once
