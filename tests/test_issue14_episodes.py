"""Issue 14: the agent's final answer of a turn, kept as an ``episode``, through real parts.

A Stop payload's answer becomes an ``episode`` row (cut, redacted, with its provenance); a later "what did we
do about X?" prompt through the real prompt hook gets it, below a saved memory on the same topic; an ordinary
question or a task prompt on the same topic never gets it; a trivial answer ("Done.") stays bookkeeping.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from conftest import Sidecar, context_of, prompt_payload, run_hook, start_sidecar

from memcue.sidecar.recall.classify import query_type
from memcue.sidecar.store import NewMemory, prepare_write

SESSION = "5a1e2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b"
LATER = "8d2b7c1a-0f3e-4a59-b6c7-2e1d0c9b8a7f"
ANSWER = ("I fixed the CSV importer creating duplicate customers: it now deduplicates rows on the external "
          "customer id before the insert, and a regression test covers a file with the same customer twice. "
          "The staging token sk_live_4eC39HqLyjWDarjtT1zdp7dc was not needed.")
EPISODE_MARK = "deduplicates rows on the external customer id"
SAVED = ("The CSV importer must treat the external customer id as the customer's identity: "
         "never create a second customer for the same external id")
WORK_QUESTION = "what did we do about the CSV importer duplicate customers?"
ORDINARY_QUESTION = "how does the CSV importer deduplicate rows on the external customer id?"
TASK_PROMPT = "make the CSV importer deduplicate rows on the external customer id faster"


def _stop(project: Path, answer: str, session: str = SESSION) -> None:
    proc = run_hook({"session_id": session, "transcript_path": f"/tmp/{session}.jsonl", "cwd": str(project),
                     "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": answer},
                    "stop")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")


def _rows(sc: Sidecar, kind: str, count: int) -> list[dict]:
    deadline = time.monotonic() + 30
    while True:
        rows = sc.client.list_recent(all_projects=True, kind=kind, include_bookkeeping=True)["results"]
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


def _ask(prompt: str, project: Path, session: str) -> str:
    """The context the real prompt hook gives ``prompt`` (a generous deadline: two busy cores must not turn a
    slow answer into an empty one)."""
    env = {**os.environ, "MEMCUE_HOOK_DEADLINE_S": "10"}
    return context_of(run_hook(prompt_payload(prompt, str(project), session_id=session), env=env))


def _provenance(home: Path) -> list[tuple]:
    with sqlite3.connect(f"file:{home / 'memcue.db'}?mode=ro", uri=True) as db:
        return db.execute("SELECT kind, source, session_id, length(source_id), bookkeeping FROM memories"
                          " WHERE kind = 'episode'").fetchall()


def test_an_answer_is_an_episode_injected_only_for_what_was_done(sidecar: Sidecar, home: Path,
                                                                 tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    sidecar.client.wait_idle(120)
    sidecar.client.remember(SAVED, project=str(project), kind="decision")
    _stop(project, ANSWER)
    [episode] = _rows(sidecar, "episode", 1)
    assert not episode["bookkeeping"] and episode["session_id"] == SESSION
    assert "sk_live_4eC39HqLyjWDarjtT1zdp7dc" not in episode["content"], "redacted before it is stored"
    assert _provenance(home) == [("episode", "hook:claude-code", SESSION, 32, 0)]
    sidecar.client.wait_idle(120)
    # Each prompt in a session of its own (a session is not given the same memory twice).
    for n, prompt in enumerate((ORDINARY_QUESTION, TASK_PROMPT)):
        context = _ask(prompt, project, f"{LATER[:-1]}{n}")
        assert EPISODE_MARK not in context, (prompt, context)
    asked = _ask(WORK_QUESTION, project, LATER)
    assert EPISODE_MARK in asked, asked
    assert "external customer id as the customer's identity" in asked, asked
    assert asked.index("customer's identity") < asked.index(EPISODE_MARK), "the saved memory ranks first"
    answer = sidecar.client.recall(ORDINARY_QUESTION, project=str(project))
    assert all(r["memory_kind"] != "episode" for r in answer["results"]), "episodes answer only what was done"
    working = sidecar.client.recall("what am I working on?", project=str(project))
    assert all(r["memory_kind"] != "episode" for r in working["results"])
    opened = run_hook({"session_id": "new-session", "transcript_path": "/tmp/new-session.jsonl",
                       "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"},
                      "session-start", env={**os.environ, "MEMCUE_HOOK_DEADLINE_S": "10"})
    block = context_of(opened)
    assert "customer's identity" in block and EPISODE_MARK not in block, block


def test_a_trivial_answer_stays_bookkeeping_and_what_did_we_do_gets_the_newest_episodes(home: Path,
                                                                                       tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        _stop(project, "Done.")
        _stop(project, ANSWER, session="other-session")
        rows = _rows(sc, "episode", 2)
        health = sc.client.health()["counts"]
        latest = sc.client.recall("what did we do?", project=str(project))
    finally:
        sc.stop()
    flags = {r["content"][:5]: r["bookkeeping"] for r in rows}
    assert flags == {"Done.": True, "I fix": False}
    assert health["bookkeeping"] == 1
    assert latest["answered_from"] == "newest_episodes" and latest["tier"] == "supported"
    assert [r["content"][:5] for r in latest["results"]] == ["I fix"], "a trivial answer never answers"


def test_only_a_trivial_episode_is_bookkeeping() -> None:
    cases = [("Done.", True), ("ok", True), ("", True), ("All tests pass now.", True),
             ("I fixed the importer retry bug by capping backoff at 30 s.", False),
             ("Nothing in this repository configures a docs build yet.", True),
             ("There is nothing in this project that covers that.", True),
             ("Glad it works, let me know if you need anything else!", True),
             ("The job hung because the lock was never released on timeout.", False),
             ("Austrian invoices now print the customer's own VAT id from the customer record.", False),
             ("The retry loop lives in `importer/retry.py` and gives up after five tries.", False),
             # A search that found nothing is no record of work, whatever files it names as where it looked.
             ("Not that I can see: there's no LICENSE file and no license field in pyproject.toml.", True),
             ("I couldn't find any crash reporting in cli.py, settings.toml or `docs/`.", True),
             ("I don't know of one: nothing in `ops/` mentions a Slack channel for downtime.", True),
             ("I couldn't find a retry in importer.py, so I added one with backoff.", False),
             ("Nothing in cli.py retries the upload; the 503 comes from the store's rate limit.", False),
             # So is an answer that says "no" or "I don't know" about what is there (found by the dev4 week) ...
             ("No: the feed has no podcast: namespace tags at all, and show.json has no guid.", True),
             ("Not that I know of: there's no podcast:funding tag in the feed, nothing in the repo picks one.", True),
             ("I don't know it: nothing in the repo or in what we've saved names the old host.", True),
             # ... unless it tells a cause or a change.
             ("No, the parser is fine: the 503 is caused by the proxy's 30 s timeout in nginx.conf.", False),
             ("No: the guid was the enclosure URL, so I changed feed.py to keep the first one.", False)]
    assert [prepare_write(NewMemory(content=t, kind="episode")).bookkeeping for t, _ in cases] == [
        trivial for _, trivial in cases]
    # Rows of the older kind stay what they were: bookkeeping, whatever they say.
    assert all(prepare_write(NewMemory(content=t or "x", kind="response")).bookkeeping for t, _ in cases)


WORK_QUESTIONS = ("what did we do about the importer?", "how did we fix the flaky login test last week?",
                  "what did you change in billing yesterday?", "what have we done on the cron job?",
                  "which files did you touch in billing?", "what was changed in the invoice service?",
                  # a problem met before, and the lessons of earlier work (found by the dev2 week)
                  "the webhook is timing out again. I'm sure we've hit this before. What was it?",
                  "Why were the invoice totals a cent off earlier this week?", "what went wrong with the export?",
                  "I'm adding a second webhook. Any gotchas?", "is the importer picky about what it gets?",
                  "anything to watch out for when I write the migration?",
                  "bump the retries to 5. and remind me why we needed retries in the first place",
                  "the digest is late again for Madrid users, have we seen this before?",
                  "did we hit this before? the digest goes out at the wrong hour",
                  "I'm sure we've hit this before with the digest email time. What was it?",
                  "is there anything about how the scanner talks to us that we had to work around?",
                  "any workarounds in the importer I should know about?",
                  # a problem met or looked into before, pointed back at (found by test5's first run)
                  "the fee for Kalimera doesn't match the office's again. Same thing as last time or a real bug?",
                  "the tide windows are slow on the Pi again. fix it properly this time",
                  "ok let's fix that arrivals date problem we found the other day. test + commit")
OTHER_PROMPTS = ("why did we switch the billing queue to SQS?", "what do we use for queues?",
                 "did you run the tests?", "what did we decide about money columns?", "fix the importer",
                 "how do we deploy billing?", "what did I ask you to do about the webhook?",
                 "change the importer to skip duplicates", "why is the importer slow?",
                 "what was the name of the billing queue?", "we hit the rate limit, add a retry",
                 "can you work around the flaky login test for now?", "run the tests again",
                 "this time use argon2 for the hashes", "we found a bug in the parser, fix it")


def test_what_was_done_questions_and_only_they_ask_for_episodes() -> None:
    assert {q: query_type(q) for q in WORK_QUESTIONS} == dict.fromkeys(WORK_QUESTIONS, "work_recall")
    assert [p for p in OTHER_PROMPTS if query_type(p) == "work_recall"] == []
