"""Issue 13, failure kind 4: one event delivered twice counts once, through the real hook and a real sidecar.

A hook registered twice (or an event fired twice) runs two hook processes with the same payload at the same
moment. Both derive the same request id from the event (``memcue.hooks.request_id``), so the prompt (UserPromptSubmit),
the turn's answer (Stop) and the session's end (SessionEnd) are each counted once: both copies answered live,
one live and one spooled, both spooled. The same prompt asked again in a later turn (the transcript grew, or the
harness sent another turn id) counts again, and without any turn marker two prompts are never merged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import hookutil
from conftest import Sidecar, start_sidecar

from memcue.core import spool_format

QUESTION = "run the billing integration tests again with the sandbox key"
ANSWER = "Done: the invoice cron now runs at 02:00 UTC and all 42 billing tests pass."
ENDED = "Session ended (reason: exit)"
SESSION = "3f1c8a2e-5b7d-4e21-9c0a-1d2e3f4a5b6c"


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "MEMCUE_HOME": str(home), "MEMCUE_HOOK_SPAWN": "0", **extra}


def _payloads(project: Path, transcript: Path, **extra: object) -> dict[str, dict]:
    """The Claude Code payloads of one turn (by memcue event name), as the harness sends them."""
    base = {"session_id": SESSION, "transcript_path": str(transcript), "cwd": str(project), **extra}
    return {
        "user-prompt-submit": {**base, "hook_event_name": "UserPromptSubmit", "permission_mode": "default",
                               "prompt": QUESTION},
        "stop": {**base, "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": ANSWER},
        "session-end": {**base, "hook_event_name": "SessionEnd", "reason": "exit"},
    }


def _twins(harness: str, event: str, payload: dict, envs: tuple[dict[str, str], dict[str, str]]) -> None:
    """Two real hook processes for one delivery of ``event`` (a hook registered twice): both are up before the
    payload is written to both at once. A twin whose environment sets a deadline gets its payload at its start
    instead (it reads what is already in the pipe and spools at once: the copy that misses the sidecar)."""
    data = json.dumps(payload).encode()
    procs = [subprocess.Popen([sys.executable, "-m", "memcue.hooks", harness, event], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for env in envs]
    early = [proc for proc, env in zip(procs, envs, strict=True) if "MEMCUE_HOOK_DEADLINE_S" in env]
    for proc in early:
        assert proc.stdin is not None
        proc.stdin.write(data)
        proc.stdin.close()
    time.sleep(0.3)  # the others started and blocked on stdin
    for proc in procs:
        if proc not in early:
            assert proc.stdin is not None
            proc.stdin.write(data)
            proc.stdin.close()
    for proc in procs:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.read()
        stderr = proc.stderr.read()
        assert (proc.wait(timeout=30), stderr) == (0, b"")
        proc.stdout.close()
        proc.stderr.close()


def _both_live(home: Path) -> tuple[dict[str, str], dict[str, str]]:
    return _env(home), _env(home)


def _live_and_spooled(home: Path) -> tuple[dict[str, str], dict[str, str]]:
    return _env(home), _env(home, MEMCUE_HOOK_DEADLINE_S="0.15")  # under MIN_ASK_S: spooled unasked


def _counts(sc: Sidecar, home: Path, project: Path) -> dict[str, list[int]]:
    """``seen_count`` of every stored row of QUESTION, ANSWER and ENDED, once the sidecar has read every spool
    file written so far (a marker record in a file read after them is stored)."""
    marker = f"marker {spool_format.new_id()}"
    record = spool_format.remember_prompt(marker, project=str(project), session_id="m", harness="claude-code")
    (home / "spool").mkdir(mode=0o700, exist_ok=True)
    (home / "spool" / f"zz-{spool_format.new_id()}.jsonl").write_text(json.dumps(record) + "\n")
    deadline = time.monotonic() + 30
    while True:
        rows = sc.client.list_recent(all_projects=True, include_bookkeeping=True, limit=500)["results"]
        if any(r["content"] == marker for r in rows):
            break
        assert time.monotonic() < deadline, "the sidecar did not ingest the spool"
        time.sleep(0.05)
    return {text: [r["seen_count"] for r in rows if r["content"] == text] for text in (QUESTION, ANSWER, ENDED)}


def _turn(home: Path, project: Path, transcript: Path, envs: tuple[dict[str, str], dict[str, str]]) -> None:
    """One turn delivered twice: the twin prompt hooks, the twin Stop hooks, the twin SessionEnd hooks."""
    for event, payload in _payloads(project, transcript).items():
        _twins("claude-code", event, payload, envs)


def _grow(transcript: Path) -> None:
    """The harness writes the turn to its transcript (what a later turn of the session sees)."""
    with transcript.open("a") as fh:
        fh.write(json.dumps({"type": "assistant", "message": {"content": ANSWER}}) + "\n")


def _project(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "billing-api"
    project.mkdir()
    transcript = tmp_path / f"{SESSION}.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"content": "hello"}}) + "\n")
    return project, transcript


def test_twin_hooks_answered_live_or_one_spooled_count_once(home: Path, tmp_path: Path) -> None:
    project, transcript = _project(tmp_path)
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        _turn(home, project, transcript, _both_live(home))
        first = _counts(sc, home, project)
        _grow(transcript)  # a later turn: the person asks the same again, the agent answers alike
        _turn(home, project, transcript, _live_and_spooled(home))
        second = _counts(sc, home, project)
        spooled = hookutil.spool_records(home)
    finally:
        sc.stop()
    assert first == {QUESTION: [1], ANSWER: [1], ENDED: [1]}
    assert second == {QUESTION: [2], ANSWER: [2], ENDED: [2]}
    assert [r["content"] for r in spooled].count(QUESTION) == 1, "one copy of the second prompt was spooled"


def test_twin_hooks_both_spooled_count_once(home: Path, tmp_path: Path) -> None:
    project, transcript = _project(tmp_path)
    _turn(home, project, transcript, _both_live(home))  # nothing listens: every copy is spooled
    records = hookutil.spool_records(home)
    by_text: dict[str, set[str]] = {}
    for record in records:
        by_text.setdefault(record["content"], set()).add(record["spool_id"])
    assert len(records) == 6 and set(by_text) == {QUESTION, ANSWER, ENDED}
    for ids in by_text.values():  # the two copies of each event under one id, in the spool's id form
        (only,) = ids
        assert len(only) == 32 and int(only, 16) >= 0 and only[12] == "8", only
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        first = _counts(sc, home, project)
        _grow(transcript)
        _turn(home, project, transcript, _both_live(home))  # the next turn, live
        second = _counts(sc, home, project)
    finally:
        sc.stop()
    assert first == {QUESTION: [1], ANSWER: [1], ENDED: [1]}
    assert second == {QUESTION: [2], ANSWER: [2], ENDED: [2]}


def _turn_payloads(harness: str, project: Path, turn: str) -> list[tuple[str, dict]]:
    """A prompt and its Stop as ``harness`` sends them with its turn id (Codex ``turn_id``, Claude Code
    ``prompt_id``), the transcript not written yet (Claude Code's first prompt of a session)."""
    key = "turn_id" if harness == "codex" else "prompt_id"
    base = {"session_id": SESSION, "transcript_path": str(project / "not-written-yet.jsonl"), "cwd": str(project),
            key: turn}
    return [("user-prompt-submit", {**base, "hook_event_name": "UserPromptSubmit", "prompt": QUESTION}),
            ("stop", {**base, "hook_event_name": "Stop", "last_assistant_message": ANSWER})]


def test_a_harness_turn_id_tells_twins_from_a_repeat(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "billing-api"
    project.mkdir()
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    counts = {}  # one project and the same texts for both harnesses: their sightings add up on one row
    try:
        for harness in ("codex", "claude-code"):
            for n, turn in enumerate(("019a3c1e-7d55-7c41-a2f0-turn-one", "019a3c1e-7d55-7c41-a2f0-turn-two")):
                for event, payload in _turn_payloads(harness, project, f"{harness}-{turn}"):
                    _twins(harness, event, payload, _both_live(home) if n == 0 else _live_and_spooled(home))
                counts[harness, n] = _counts(sc, home, project)
        bare = {"session_id": SESSION, "cwd": str(project), "prompt": QUESTION}
        for _ in range(2):  # no turn id, no transcript: two prompts are never merged
            proc = subprocess.run([sys.executable, "-m", "memcue.hooks", "claude-code", "user-prompt-submit"],
                                  input=json.dumps(bare).encode(), capture_output=True, env=_env(home),
                                  timeout=30)
            assert (proc.returncode, proc.stderr) == (0, b"")
        unmarked = _counts(sc, home, project)
        spooled = [r["content"] for r in hookutil.spool_records(home)]
    finally:
        sc.stop()
    assert counts["codex", 0][QUESTION] == [1] and counts["codex", 0][ANSWER] == [1]
    assert counts["codex", 1][QUESTION] == [2] and counts["codex", 1][ANSWER] == [2]
    assert counts["claude-code", 0][QUESTION] == [3] and counts["claude-code", 0][ANSWER] == [3]
    assert counts["claude-code", 1][QUESTION] == [4] and counts["claude-code", 1][ANSWER] == [4]
    assert unmarked[QUESTION] == [6]
    assert spooled.count(QUESTION) == 2, "one copy of each harness's second prompt was spooled"
