"""Relative days in present-tense and request questions (issue 15, failure kind 5), and a question never
answering itself, on a real SQLite store with the real embedding model, in process.

"What was I doing yesterday?" is answered from yesterday's memories, not today's; "what did I ask you on
Monday?" from Monday's captured prompts; one naming a topic ("... yesterday on the importer?") from that topic;
and "what did I ask you about the importer?" never returns its own just-captured copy.
"""

from __future__ import annotations

import datetime as dt

import pytest
from conftest import embed_all

from memcue.sidecar.recall import RecallRequest, recall
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import NewMemory, Store

NOW = dt.datetime(2026, 6, 10, 15, 0, tzinfo=dt.UTC).timestamp()  # a Wednesday afternoon
HOUR = 3600.0
YESTERDAY = NOW - 24 * HOUR
MONDAY = NOW - 48 * HOUR
ROWS = [
    ("Working on the CSV importer: rows with a BOM lose their first column name", "note", YESTERDAY),
    ("Importer now strips the UTF-8 BOM before reading the header", "note", YESTERDAY + HOUR),
    ("Started the dark-mode toggle in the settings screen", "note", NOW - 2 * HOUR),
    ("Dark-mode colours come from the design tokens file", "note", NOW - HOUR),
    ("can you make the importer skip blank lines", "request", MONDAY),
    ("please add a retry to the webhook sender", "request", YESTERDAY),
    ("rename the settings screen to preferences", "request", NOW - 3 * HOUR),
    ("If a LIMS import fails, Priya Raman at the core facility re-runs it (ext. 4471)", "decision", NOW - 9 * 86400),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Store:
    s = Store(tmp_path_factory.mktemp("days") / "memcue.db")
    s.remember_many([NewMemory(content=c, kind=k, project="app", created_at=t, session_id=f"s{int(t // 86400)}")
                     for c, k, t in ROWS])
    embed_all(s, embedder)
    return s


def ask(store: Store, embedder: Embedder, query: str) -> list[str]:
    answer = recall(store, embedder, RecallRequest(query=query, project="app", limit=8, now=NOW))
    return [r["content"] for r in answer["results"] if r["tier"] == "supported"]


def test_what_was_i_doing_yesterday_answers_from_yesterday(store: Store, embedder: Embedder) -> None:
    got = ask(store, embedder, "what was I working on yesterday?")
    assert got and all("mport" in c for c in got)


def test_what_am_i_working_on_answers_from_the_newest(store: Store, embedder: Embedder) -> None:
    got = ask(store, embedder, "what am I working on?")
    assert got[0] == "Dark-mode colours come from the design tokens file"


def test_what_did_i_ask_on_monday_answers_from_mondays_prompts(store: Store, embedder: Embedder) -> None:
    assert ask(store, embedder, "what did I ask you on Monday?") == ["can you make the importer skip blank lines"]


def test_a_day_and_a_topic_both_count(store: Store, embedder: Embedder) -> None:
    got = ask(store, embedder, "what was I doing yesterday on the importer?")
    assert got and all("mport" in c for c in got)


def test_a_request_question_never_answers_with_its_own_copy(store: Store, embedder: Embedder) -> None:
    question, bare = "what did I ask you about the importer?", "What did I ask you?"
    store.remember_many([NewMemory(content=q, kind="request", project="app", created_at=NOW - 1)
                         for q in (question, bare)])
    embed_all(store, embedder)
    got = ask(store, embedder, question)
    assert question not in got
    assert "can you make the importer skip blank lines" in got
    got = ask(store, embedder, "what  did i ask you?")
    assert bare not in got and question in got


def test_a_time_that_describes_the_world_does_not_hide_an_older_answer(store: Store, embedder: Embedder) -> None:
    """"last night's failed import" names when the import failed, not when the memory was written, so the
    nine-day-old rule answers. "yesterday on the importer" (above) keeps its day."""
    got = ask(store, embedder, "who do I ask to re-run last night's failed LIMS import?")
    assert got and got[0].startswith("If a LIMS import fails"), got



def test_a_time_in_the_story_sentence_does_not_hide_an_older_answer(store: Store, embedder: Embedder) -> None:
    """"The LIMS import failed yesterday." tells when it failed; the question asks who re-runs it, and the
    answer is the nine-day-old rule."""
    got = ask(store, embedder, "The LIMS import failed yesterday. Who re-runs a failed import?")
    assert got and got[0].startswith("If a LIMS import fails"), got
