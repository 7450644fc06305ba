"""Issue 14 part 5 through real parts: a real sidecar process, the real hook as a subprocess (SessionStart, a few
UserPromptSubmit prompts with one durable statement, a Stop), the real CLI. ``memcue receipt`` lists the captured
prompts, the promoted statement with its reason, the injected memories with their tokens and the prompts that got
nothing with why; an unknown session is a clear error; ``memcue doctor`` warns when a wired harness captured
nothing for 7 days."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Sidecar, prompt_payload, run_hook, start_sidecar, wait_until

SESSION = "6a0f2c4e-1b3d-4f5a-8c7e-9d0b1a2c3e4f"
STATEMENT = "from now on we keep invoices in Postgres 16"
SAVED = "The billing worker exports invoices nightly at 02:00 to the accounting SFTP"
SMALL_TALK = "thanks, that looks fine"




def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memcue", *args], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ), cwd=cwd)


def _event(project: Path, name: str, **fields: Any) -> dict[str, Any]:
    return {"session_id": SESSION, "transcript_path": f"/home/dev/.claude/projects/x/{SESSION}.jsonl",
            "cwd": str(project), "hook_event_name": name, **fields}




def _session(sc: Sidecar, project: Path) -> None:
    """A saved memory, then one Claude Code session through the real hook: start, three prompts, a Stop."""
    sc.client.remember(SAVED, kind="decision", project=str(project))
    start = run_hook(_event(project, "SessionStart", source="startup"), "session-start")
    assert start.returncode == 0 and SAVED in start.stdout.decode(), start.stdout
    for prompt in ("how do we export invoices?", STATEMENT, SMALL_TALK):
        assert run_hook(prompt_payload(prompt, str(project), SESSION)).returncode == 0
    stop = _event(project, "Stop", stop_hook_active=False,
                  last_assistant_message="I moved the invoice tables to Postgres 16 and updated the settings.")
    assert run_hook(stop, "stop").returncode == 0


def test_the_receipt_of_a_real_session(keyword_sidecar: Sidecar, tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    _session(keyword_sidecar, project)

    def ready() -> dict[str, Any] | None:
        r = keyword_sidecar.client.receipt(SESSION)
        done = r["candidates"]["by_state"].get("promoted") and r["captured"]["by_kind"].get("episode")
        return r if done else None

    receipt = wait_until(ready)
    assert receipt, keyword_sidecar.client.receipt(SESSION)
    assert receipt["harnesses"] == ["claude-code"]
    captured = receipt["captured"]
    requests = [i["content"] for i in captured["items"] if i["kind"] == "request"]
    assert requests == ["how do we export invoices?", STATEMENT, SMALL_TALK]
    assert captured["by_via"] == {"live": 3, "spool": 1}  # the prompts went live, the Stop's answer by the spool
    [promoted] = receipt["candidates"]["items"]
    assert [(i["id"], i["kind"], i["content"]) for i in receipt["saved"]["items"]] == [
        (promoted["memory_id"], "decision", STATEMENT)]  # the memory the gate wrote, apart from what was captured
    assert (promoted["state"], promoted["signal"], promoted["why"], promoted["content"]) == (
        "promoted", "prompt-statement", "user-statement", STATEMENT)
    injected = receipt["injected"]
    session_block = next(b for b in injected["items"] if b["served_by"] == "session")
    assert SAVED in [m["content"] for m in session_block["memories"]] and session_block["tokens"] > 0
    assert injected["tokens"] == sum(b["tokens"] for b in injected["items"]) >= session_block["tokens"]
    skipped = {i["content"]: i["reason"] for i in receipt["skipped"]["items"]}
    assert skipped[SMALL_TALK].startswith("no evidence"), skipped  # small talk finds nothing worth injecting
    assert receipt["failed"] == {"total": 0, "items": []}

    text = _cli("receipt", cwd=project)  # no SESSION: this project's latest session
    assert text.returncode == 0, text.stderr
    out = text.stdout
    assert f"session {SESSION} (claude-code)" in out and "captured: 4 (request 3, episode 1; live 3, spool 1)" in out
    assert f"request (live): {STATEMENT}" in out and "how do we export invoices?" in out
    assert f"promoted prompt-statement -> memory #{promoted['memory_id']} (user-statement): {STATEMENT}" in out
    assert f"{injected['tokens']} tokens" in out and f"session/full {session_block['tokens']} tokens" in out
    assert "saved: 1 (capture:prompt-statement 1)" in out and "skipped: " in out and "failed: 0" in out

    as_json = json.loads(_cli("receipt", SESSION, "--json").stdout)
    assert as_json["success"] is True
    assert set(as_json["data"]) == {"session_id", "project", "harnesses", "first_at", "last_at", "captured",
                                    "saved", "candidates", "injected", "skipped", "failed", "distilled"}
    assert as_json["data"]["captured"]["total"] == 4 and as_json["data"]["injected"] == injected

    listed = _cli("receipt", "--list", "--json", cwd=project)
    [row] = json.loads(listed.stdout)["data"]["results"]
    assert (row["session_id"], row["captured"], row["candidates"]) == (SESSION, 4, 1)
    assert SESSION in _cli("receipt", "--list", cwd=project).stdout


def test_the_list_holds_sessions_that_stored_nothing(keyword_sidecar: Sidecar, tmp_path: Path) -> None:
    """`receipt --list` read sessions off stored rows only: a session that was given its start block and did
    nothing else, or whose one prompt repeated an earlier one (kept once, under the first session), was missing.
    Such a session belongs to the project its hooks ran in, also when it was given nothing."""
    project = tmp_path / "shop"
    project.mkdir()
    _session(keyword_sidecar, project)
    started_only, repeated = "b1c2d3e4-0000-4000-8000-000000000001", "b1c2d3e4-0000-4000-8000-000000000002"
    start = {**_event(project, "SessionStart", source="startup"), "session_id": started_only}
    assert SAVED in run_hook(start, "session-start").stdout.decode()
    assert run_hook(prompt_payload(SMALL_TALK, str(project), repeated)).returncode == 0

    def listed(*where: str) -> dict[str, dict[str, Any]]:
        rows = json.loads(_cli("receipt", "--list", "--json", *where, cwd=project).stdout)["data"]["results"]
        return {r["session_id"]: r for r in rows}

    found = wait_until(lambda: (lambda f: f if {SESSION, started_only, repeated} <= set(f) else None)(listed()))
    assert found, listed()
    assert found[started_only]["stored"] == 0 and found[started_only]["recalls"] == 1
    assert found[repeated]["stored"] == 0 and found[repeated]["recalls"] == 1  # its prompt got nothing
    assert found[started_only]["project"] == found[repeated]["project"] == found[SESSION]["project"]
    other = listed("--project", str(tmp_path))  # another project's list
    assert started_only not in other and repeated not in other
    assert {started_only, repeated} <= set(listed("--all-projects"))
    assert keyword_sidecar.client.receipt(started_only)["injected"]["blocks"] == 1
    assert f"{started_only}" in _cli("receipt", "--list", cwd=project).stdout
    # Its own receipt places it where the list does (fresh-clone trial: "(no harness) in (global)").
    assert keyword_sidecar.client.receipt(repeated)["project"] == found[repeated]["project"] != ""
    assert keyword_sidecar.client.receipt(started_only)["project"] == found[started_only]["project"]
    head = _cli("receipt", started_only, cwd=project).stdout.splitlines()[0]  # it stored nothing: no harness named
    assert f"session {started_only} (harness not recorded) in {found[started_only]['project']}" in head, head


def test_a_prompt_that_got_nothing_says_why(keyword_sidecar: Sidecar, tmp_path: Path) -> None:
    project = tmp_path / "empty"
    project.mkdir()
    assert run_hook(prompt_payload("what is the meaning of the frobnicator?", str(project), SESSION)).returncode == 0
    receipt = wait_until(lambda: keyword_sidecar.client.receipt(SESSION)["skipped"]["total"] and
                     keyword_sidecar.client.receipt(SESSION))
    assert receipt["injected"]["blocks"] == 0
    assert [(i["reason"], i["content"]) for i in receipt["skipped"]["items"]] == [
        ("no evidence: nothing matched", "what is the meaning of the frobnicator?")]
    out = _cli("receipt", SESSION).stdout
    assert "skipped: 1 (no evidence: nothing matched 1)" in out and "frobnicator" in out, out


def test_spool_lines_that_could_not_be_read_are_in_the_receipt(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "down"
    project.mkdir()
    env = {**os.environ, "MEMCUE_HOOK_SPAWN": "0", "MEMCUE_HOOK_DEADLINE_S": "1.0"}  # the sidecar is down
    assert run_hook(prompt_payload("please look at the nightly export", str(project), SESSION), env=env).returncode == 0
    [spooled] = (home / "spool").glob("*.jsonl")
    with spooled.open("ab") as fh:
        fh.write(b'{"op": "remember", "content": \n')  # a line cut by a crash
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        receipt = wait_until(lambda: sc.client.receipt(SESSION)["failed"]["total"] and sc.client.receipt(SESSION))
        assert receipt and receipt["captured"]["by_via"] == {"spool": 1}
        assert [(i["content"], i["reason"]) for i in receipt["skipped"]["items"]] == [
            ("please look at the nightly export", "sidecar not reached in time: the prompt was spooled, nothing "
                                                  "injected")]
        [failed] = receipt["failed"]["items"]
        assert (failed["harness"], failed["file"], failed["count"]) == ("claude-code", spooled.name, 1)
        assert f"1 spool lines of claude-code ({spooled.name})" in _cli("receipt", SESSION).stdout
    finally:
        sc.stop()


def test_an_unknown_session_is_an_error_and_no_session_yet_is_not(keyword_sidecar: Sidecar, tmp_path: Path) -> None:
    run = _cli("receipt", "no-such-session")
    assert run.returncode == 1 and "no session 'no-such-session'" in run.stderr, run.stderr
    run = _cli("receipt", "--json", "no-such-session")
    assert run.returncode == 1 and json.loads(run.stdout)["success"] is False
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    run = _cli("receipt", cwd=empty)  # a fresh install: nothing to show yet, which is not an error
    assert run.returncode == 0 and "No session of this project has stored anything yet" in run.stdout, run.stderr
    run = _cli("receipt", "--json", cwd=empty)
    assert run.returncode == 0 and json.loads(run.stdout)["data"]["session_id"] is None


def _doctor(tmp_path: Path, home: Path) -> dict[str, dict[str, Any]]:
    env = {**os.environ, "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "CODEX_HOME": str(tmp_path / "codex"), "MEMCUE_HOME": str(home), "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-m", "memcue", "doctor", "--json"], env=env, capture_output=True,
                         text=True, timeout=60)
    return {f["area"]: f for f in json.loads(run.stdout)["data"]["findings"]}


def test_doctor_warns_when_a_wired_harness_captured_nothing_for_a_week(tmp_path: Path, home: Path) -> None:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "MEMCUE_HOME": str(home)}
    assert subprocess.run([sys.executable, "-m", "memcue", "install", "claude-code"], env=env,
                          capture_output=True, timeout=60).returncode == 0
    down = _doctor(tmp_path, home)
    assert down["captures"]["status"] == "skip" and "could not check" in down["captures"]["message"]
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        old = time.time() - 10 * 86400
        sc.client.remember("please look at the flaky billing test", kind="request", project="/p",
                           source="hook:claude-code", created_at=old)
        # A session end alone (claude mcp list fires SessionEnd) is no capture.
        sc.client.remember("Session ended (reason: other)", kind="event", project="/p", source="hook:claude-code")
        stale = _doctor(tmp_path, home)["claude-code captures"]
        assert stale["status"] == "warn" and "nothing captured from it for 10 days" in stale["message"], stale
        assert stale["last_capture"] == pytest.approx(old)
        sc.client.remember("what does the invoice exporter do?", kind="request", project="/p",
                           source="hook:claude-code")
        fresh = _doctor(tmp_path, home)["claude-code captures"]
        assert fresh["status"] == "ok" and "last capture" in fresh["message"], fresh
    finally:
        sc.stop()


def test_the_session_list_says_what_to_try_and_no_empty_parentheses() -> None:
    """Fresh-clone trial: a session that stored nothing read "stored 0 ()", and an empty list outside any session's
    project gave no hint that --all-projects lists sessions elsewhere."""
    from memcue.cli.receipt import render_sessions

    row = {"session_id": "s5", "last_at": None, "captured": 0, "stored": 0, "by_kind": {}, "candidates": 0,
           "recalls": 1, "project": "/work/shop"}
    assert "stored 0, candidates 0, recalls 1  /work/shop" in render_sessions([row])
    assert "stored 2 (decision 2), candidates" in render_sessions([{**row, "stored": 2, "by_kind": {"decision": 2}}])
    assert "--all-projects" in render_sessions([])
    assert "--all-projects" not in render_sessions([], every_project=True)
