"""Issue 14: an episode is embedded with the prompt that opened its turn (``capture.episodes``).

The agent's answer says what was done; a later "what did we conclude about X?" names X as the user put it, in the
turn's prompt. Through the real prompt hook, the real Stop hook's spool and a real sidecar with the real model:
the episode's embedded text holds the turn's prompt, and a question in the prompt's words (none of them rare words
of the answer) gets the episode. Without the prompt in the embedded text that question gets nothing.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

from conftest import Sidecar, context_of, prompt_payload, run_hook, start_sidecar

from memcue.core.paths import Locations
from memcue.core.project import resolve_project
from memcue.sidecar.capture.episodes import (
    BACKFILL_MARK,
    REQUEST_CHARS,
    backfill_turn_prompts,
    episode_embedding_text,
    with_turn_requests,
)
from memcue.sidecar.store import NewMemory, Store

SESSION = "0c9d8e7f-6a5b-4c3d-9e2f-1a0b9c8d7e6f"
PROMPT = ("Support says our Auckland customers keep getting their payment reminders a day late, every single "
          "month. What's going on?")
ANSWER = ("The reminder job builds its batch from each invoice's due date in UTC and runs at 09:00 server time, "
          "so for anyone east of UTC+12 the due date has already rolled over when the batch is built. The batch "
          "now uses each customer's own timezone, with a test for Pacific/Auckland.")
QUESTION = "what did we conclude about the payment reminders arriving late for New Zealand customers?"
MARK = "each customer's own timezone"


def _episode_rows(home: Path) -> list[tuple[str, dict]]:
    with sqlite3.connect(f"file:{home / 'memcue.db'}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT content, metadata FROM memories WHERE kind = 'episode'").fetchall()
    return [(content, json.loads(meta or "{}")) for content, meta in rows]


def test_an_episode_is_embedded_with_its_turns_prompt_and_found_in_the_users_words(
        sidecar: Sidecar, home: Path, tmp_path: Path) -> None:
    project = tmp_path / "billing"
    project.mkdir()
    sidecar.client.wait_idle(120)
    env = {**os.environ, "MEMCUE_HOOK_DEADLINE_S": "10"}
    assert run_hook(prompt_payload(PROMPT, str(project), session_id=SESSION), env=env).returncode == 0
    stop = run_hook({"session_id": SESSION, "transcript_path": f"/tmp/{SESSION}.jsonl", "cwd": str(project),
                     "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": ANSWER},
                    "stop")
    assert (stop.returncode, stop.stdout) == (0, b"")
    deadline = time.monotonic() + 30
    while not _episode_rows(home) and time.monotonic() < deadline:
        time.sleep(0.1)
    [(content, metadata)] = _episode_rows(home)
    assert content == ANSWER, "the stored and shown text is the answer alone"
    assert metadata["embed_text"] == f"{PROMPT}\n\n{ANSWER}"
    sidecar.client.wait_idle(120)
    asked = context_of(run_hook(prompt_payload(QUESTION, str(project), session_id="later-session"), env=env))
    assert MARK in asked, asked


def test_the_answer_alone_would_not_answer_the_users_words(sidecar: Sidecar, tmp_path: Path) -> None:
    """The control: the same answer stored without its turn's prompt is not injected for the question."""
    project = tmp_path / "billing"
    project.mkdir()
    sidecar.client.wait_idle(120)
    sidecar.client.remember(ANSWER, project=str(project), kind="episode")
    sidecar.client.wait_idle(120)
    env = {**os.environ, "MEMCUE_HOOK_DEADLINE_S": "10"}
    asked = context_of(run_hook(prompt_payload(QUESTION, str(project), session_id="later-session"), env=env))
    assert MARK not in asked, asked


def _stored_without_prompt(home: Path, project: str) -> None:
    """The turn as a store written before episodes were embedded with their turn's prompt holds it: the
    captured prompt, then the episode with no ``embed_text``."""
    store = Store(Locations(home).database)
    try:
        store.remember_many([
            NewMemory(PROMPT, kind="request", project=project, session_id=SESSION, created_at=time.time() - 60),
            NewMemory(ANSWER, kind="episode", project=project, session_id=SESSION, created_at=time.time() - 30)])
    finally:
        store.close()


def test_an_episode_stored_before_gets_its_turns_prompt_when_the_sidecar_starts(
        home: Path, tmp_path: Path) -> None:
    project = tmp_path / "billing"
    project.mkdir()
    _stored_without_prompt(home, resolve_project(str(project)))
    sc = start_sidecar(home)
    try:
        deadline = time.monotonic() + 60
        while "embed_text" not in _episode_rows(home)[0][1] and time.monotonic() < deadline:
            time.sleep(0.1)
        sc.client.wait_idle(120)
        [(content, metadata)] = _episode_rows(home)
        assert (content, metadata.get("embed_text")) == (ANSWER, f"{PROMPT}\n\n{ANSWER}")
        env = {**os.environ, "MEMCUE_HOOK_DEADLINE_S": "10"}
        asked = context_of(run_hook(prompt_payload(QUESTION, str(project), session_id="later-session"), env=env))
        assert MARK in asked, asked
    finally:
        sc.stop()


ONE = ("The cron line uses day-of-week 1-6, so Sunday (0) never matched; it now reads 0-6, and "
       "test_cron_covers_every_day checks the schedule.")
AFTER = ("The retry loop gave up after 3 attempts because MAX_RETRIES was read before the config file; it "
         "is now read at call time.")
NO_SESSION = ("The export wrote CRLF line endings on the build server because the csv module's default "
              "dialect was used; it now passes lineterminator='\\n'.")
TWO = ("Retries back off 2, 4 and 8 seconds now, since the upstream rate limit resets every 10 seconds; the old "
       "fixed 1-second wait hit it three times in a row.")


def test_the_backfill_looks_at_each_episode_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db", want_vec=False)
    try:
        store.remember_many([
            NewMemory("Why do the nightly exports skip Sundays?", kind="request", session_id="a", created_at=1.0),
            NewMemory(ONE, kind="episode", session_id="a", created_at=2.0),
            NewMemory(AFTER, kind="episode", session_id="a", created_at=3.0),
            NewMemory(NO_SESSION, kind="episode", created_at=4.0),
            NewMemory("And the retries?", kind="request", session_id="b", created_at=5.0),
            NewMemory(TWO, kind="episode", session_id="b", created_at=6.0, metadata={"embed_text": "given"})])
        assert backfill_turn_prompts(store, limit=1) == 1
        assert backfill_turn_prompts(store) == 1, "the second call goes on after the first one's mark"
        assert backfill_turn_prompts(store) == 0
        rows = {r["content"]: r for r in store.session_memories("a") + store.session_memories("b")}
        assert not any(r["bookkeeping"] for r in rows.values())
        assert rows[ONE]["metadata"]["embed_text"] == f"Why do the nightly exports skip Sundays?\n\n{ONE}"
        assert "embed_text" not in rows[AFTER]["metadata"], "its turn's prompt was not captured"
        assert rows[TWO]["metadata"]["embed_text"] == "given"
        assert store.get_meta(BACKFILL_MARK) is not None
    finally:
        store.close()


def _lookup_none(session_id: str, before: float) -> str | None:
    return None


def test_the_turns_prompt_comes_from_the_same_batch_or_the_store_and_is_cut() -> None:
    asked: list[tuple[str, float]] = []

    def lookup(session_id: str, before: float) -> str | None:
        asked.append((session_id, before))
        return "stored prompt"

    batch = [NewMemory("spooled prompt", kind="request", session_id="a", created_at=1.0),
             NewMemory("answer one of the turn", kind="episode", session_id="a", created_at=2.0),
             NewMemory("a second answer with no prompt of its own", kind="episode", session_id="a", created_at=3.0),
             NewMemory("answer of another session", kind="episode", session_id="b", created_at=4.0),
             NewMemory("an answer without a session", kind="episode", created_at=5.0),
             NewMemory("a note", kind="note", session_id="a", created_at=6.0)]
    out = with_turn_requests(batch, lookup)
    assert [m.metadata.get("embed_text") for m in out] == [
        None, "spooled prompt\n\nanswer one of the turn", None, "stored prompt\n\nanswer of another session",
        None, None]
    assert asked == [("b", 4.0)], "the store is asked only for a session the batch says nothing of"
    assert batch[1].metadata == {}, "the caller's memories are not changed"
    kept = NewMemory("answer", kind="episode", session_id="c", metadata={"embed_text": "given"})
    assert with_turn_requests([kept], lookup)[0].metadata["embed_text"] == "given"
    long = "word " * 400
    text = episode_embedding_text(long, "the answer")
    assert text.endswith(" …\n\nthe answer") and len(text.split("\n\n")[0]) <= REQUEST_CHARS + 2
    assert episode_embedding_text("  ", "the answer") == "the answer"
    assert with_turn_requests([NewMemory("x y", kind="episode", session_id="d")], _lookup_none)[0].metadata == {}
