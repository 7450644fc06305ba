"""Case C22, a huge paste (issue 13, failure kind 2): one session pastes a 250 KB build log as its prompt while
a second session asks an ordinary question.

Expected: the paste is stored cut at the one stated cap (``memcue.core.limits.CAPTURE_MAX_CHARS``) at a line,
with a marker; the second session's hook answers with its memory meanwhile; capture work grows linearly with
the text (entity extraction was quadratic, and ran under the store's writer lock).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import Sidecar, context_of, prompt_payload, run_hook

from memcue.core import spool_format
from memcue.core.limits import CAPTURE_MAX_CHARS, CUT_MARKER, QUERY_JOIN, QUERY_MAX_CHARS, cap_text
from memcue.sidecar.store import NewMemory, Store, extract_entities, prepare_write

MARKER_START = CUT_MARKER.split("{", 1)[0]
PASTE_SESSION = "0b7e2c1d-1111-4a2b-9c3d-5e6f7a8b9c0d"
ASKING_SESSIONS = [f"6a5b4c3d-2222-4e1f-8a9b-0c1d2e3f4a5{n}" for n in range(3)]
MEMORY = "the staging deploy switches blue-green through the haproxy weights on port 8443"
QUESTION = "how does the staging deploy switch between blue and green?"


def build_log(chars: int, seed: int = 22) -> str:
    """A CI build log of ``chars`` characters: timestamps, thousands of host names, job ids, paths, versions,
    CamelCase test names and hex ids, one event per line."""
    rng = random.Random(seed)
    lines, total = [], 0
    while total < chars:
        n = len(lines)
        line = (f"2026-11-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:{(n * 7) % 60:02d}Z "
                f"[worker-{rng.randrange(9999):04d}.ci-{rng.choice('abcdef')}.build.example.net] "
                f"job JOB-{rng.randrange(1, 999999)} {rng.choice(['INFO', 'WARN', 'ERROR'])} "
                f"src/pkg_{rng.randrange(300)}/module_{rng.randrange(50)}.py TestCase{rng.randrange(500)}Runner "
                f"ok in {rng.random() * 9:.3f}s commit {rng.getrandbits(40):010x} v1.{n % 40}.{n % 7} "
                f"mail ci-{n % 97}@builds.example.org")
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)[:chars]


def _seconds(fn: object, text: str, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn(text)  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("shape", ["build_log", "dotted_run_with_at"])
def test_C22_entity_extraction_grows_linearly(shape: str) -> None:
    """4x the text takes well under 8x the time (it took about 16x: every match was checked against every
    span taken before it, and the e-mail pattern was retried at each word boundary of a long dotted run)."""
    def text(n: int) -> str:
        return build_log(n) if shape == "build_log" else "mail x@y.org " + "a.b-" * (n // 4)

    small, large = text(40_000), text(160_000)
    extract_entities(small)
    ratio = _seconds(extract_entities, large) / _seconds(extract_entities, small)
    assert ratio < 8, f"4x the text took {ratio:.1f}x the time"


def test_C22_cap_cuts_at_a_line_with_a_marker() -> None:
    """The one cap: at most CAPTURE_MAX_CHARS in all, cut at a line break, a marker with the count left out;
    a text within the cap, or cut already, is unchanged; no line break: cut at a word."""
    log = build_log(250_000)
    cut = cap_text(log)
    assert len(cut) <= CAPTURE_MAX_CHARS and cut.count("\n") > 10
    head, marker = cut.rsplit("\n", 1)
    assert log.startswith(head + "\n"), "cut inside a line"
    assert marker == CUT_MARKER.format(left_out=f"{len(log) - len(head):,}")
    assert cap_text(cut) == cut and cap_text(log[:500]) == log[:500]
    words = "alpha beta gamma " * 3000
    cut_words = cap_text(words)
    assert len(cut_words) <= CAPTURE_MAX_CHARS
    assert cut_words.split("\n")[0].split(" ")[-1] in {"alpha", "beta", "gamma"}


def test_C22_every_captured_route_gets_the_cap(tmp_path: Path) -> None:
    """The spool record (as the hook's writer writes it: ``redact_record``) and the write path of every captured
    kind apply the same cap; a memory written on purpose (a note) is not cut."""
    log = build_log(250_000)
    record = spool_format.redact_record(
        spool_format.remember_prompt(log, project="/p", session_id="s", harness="claude-code"))
    assert len(str(record["content"])) <= CAPTURE_MAX_CHARS
    assert len(json.dumps(record)) < CAPTURE_MAX_CHARS + 1000
    for kind in ("request", "response", "event"):
        p = prepare_write(NewMemory(content=log, kind=kind, project="/p"))
        assert len(p.content) <= CAPTURE_MAX_CHARS and MARKER_START in p.content, kind
    assert prepare_write(NewMemory(content=log, kind="note")).content == log
    store = Store(tmp_path / "m.db", want_vec=False)
    res = store.remember(NewMemory(content=log, kind="request", project="/p"))
    stored = store.fetch([res.id])[res.id]["content"]
    assert len(stored) <= CAPTURE_MAX_CHARS and stored.startswith(log.split("\n", 1)[0])
    store.close()


def test_C22_text_work_runs_outside_the_writer_lock(tmp_path: Path) -> None:
    """While a 300 KB capture is being prepared, another writer gets the lock at once (the lock is held only
    for the SQL)."""
    store = Store(tmp_path / "m.db", want_vec=False)
    log = build_log(300_000)
    waits: list[float] = []
    done = threading.Event()

    def other_writer() -> None:
        while not done.is_set():
            start = time.perf_counter()
            store.remember(NewMemory(content=f"note {len(waits)} about the release", project="/q"))
            waits.append(time.perf_counter() - start)
            time.sleep(0.005)

    t = threading.Thread(target=other_writer)
    t.start()
    try:
        store.remember(NewMemory(content=log, kind="request", project="/p"))
    finally:
        done.set()
        t.join()
        store.close()
    assert waits and max(waits) < 1.0, f"another write waited {max(waits):.2f} s"


def _listed(sidecar: Sidecar, project: str, kind: str, timeout_s: float = 60) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = sidecar.client.list_recent(project=project, kind=kind, include_bookkeeping=True)["results"]
        if rows:
            return rows
        time.sleep(0.2)
    return []


def test_C22_paste_through_the_real_hook_is_stored_cut(sidecar: Sidecar, tmp_path: Path) -> None:
    """A 250 KB build log pasted as a prompt through the real hook, with a question typed after it, is stored
    once, cut at the cap at lines, with the marker, and keeps its end: the question (answered or spooled: either
    way the same cut)."""
    project = tmp_path / "paste"
    project.mkdir()
    log = build_log(250_000) + "\n" + QUESTION
    proc = run_hook(prompt_payload(log, str(project), PASTE_SESSION), env=sidecar.env)
    assert proc.returncode == 0
    context_of(proc)
    rows = _listed(sidecar, os.path.realpath(project), "request")
    assert len(rows) == 1, rows
    stored = rows[0]["content"]
    assert len(stored) <= CAPTURE_MAX_CHARS
    head, rest = stored.split("\n" + MARKER_START, 1)
    tail = rest.split("left out]\n", 1)[1]
    assert log.startswith(head + "\n") and log.endswith("\n" + tail) and tail.endswith(QUESTION)


def test_C22_second_session_is_answered_while_a_paste_is_captured(sidecar: Sidecar, tmp_path: Path) -> None:
    """While one session's hook sends a 250 KB paste, another session's prompt hook (another project) still
    answers with its memory, within the hook's own deadline (generous bound, not a timing target)."""
    asking, pasting = tmp_path / "asking", tmp_path / "pasting"
    asking.mkdir()
    pasting.mkdir()
    sidecar.client.remember(MEMORY, project=os.path.realpath(asking))
    sidecar.client.wait_idle(timeout_s=60)
    # Idle first (a session is shown a memory once, so each round asks from a session of its own).
    assert MEMORY in context_of(run_hook(prompt_payload(QUESTION, str(asking), ASKING_SESSIONS[2]), env=sidecar.env))
    for n in range(2):
        paste = subprocess.Popen([sys.executable, "-m", "memcue.hooks", "claude-code", "user-prompt-submit"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env=sidecar.env)
        payload = json.dumps(prompt_payload(build_log(250_000, seed=n), str(pasting), PASTE_SESSION)).encode()
        writer = threading.Thread(target=paste.communicate, args=(payload,), kwargs={"timeout": 60})
        writer.start()
        time.sleep(0.3)  # the paste is on its way to the sidecar, or being captured
        start = time.monotonic()
        proc = run_hook(prompt_payload(QUESTION, str(asking), ASKING_SESSIONS[n]), env=sidecar.env)
        elapsed = time.monotonic() - start
        writer.join()
        assert proc.returncode == 0 and paste.returncode == 0
        assert MEMORY in context_of(proc), f"round {n}: nothing injected after {elapsed:.2f} s"
        assert elapsed < 3.0, f"round {n}: the hook took {elapsed:.2f} s"


def test_C22_recall_reads_the_two_ends_of_a_paste(sidecar: Sidecar, tmp_path: Path) -> None:
    """A 90 KB prompt (under the 100,000 characters ``/recall`` takes) is read by recall through its two ends
    (``core.limits.cap_query``): the answer's query is the log's opening and the question typed after it,
    not the whole log, and the keyword channel still finds the memory by the question's words."""
    project = tmp_path / "asks-after"
    project.mkdir()
    sidecar.client.remember(MEMORY, project=os.path.realpath(project))
    sidecar.client.wait_idle(timeout_s=60)
    log = build_log(90_000, seed=7)
    answer = sidecar.client.recall(log + "\n\n" + QUESTION, project=os.path.realpath(project), limit=20)
    assert len(answer["query"]) <= QUERY_MAX_CHARS + len(QUERY_JOIN)
    assert answer["query"].startswith(log[:1000]) and answer["query"].endswith(QUESTION)
    assert answer["channel_status"]["bm25"] == "ok"
    assert "haproxy" in answer["query_terms"] or "staging" in answer["query_terms"]
