"""Task prompts and paraphrases (issue 15, failure kinds 1, 2 and 6), on a real SQLite store with the real
embedding model, in process, through the prompt hook's injection policy.

A task that runs into a standing decision, preference, convention or known bug gets that memory, though it
shares few words with it; a paraphrase gets the memory that stands out for it; a task that touches nothing the
team decided, and a task that says "latest", get nothing.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from conftest import embed_all

from memcue.sidecar.inject.policy import injectable
from memcue.sidecar.recall import RecallRequest, recall
from memcue.sidecar.recall.support import SUPPORTED, WEAK, Support, judge
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import NewMemory, Store

NOW = 1_780_000_000.0
MEMORIES = [
    ("Money is stored as integer cents everywhere; never floats or DECIMAL columns for prices", "decision"),
    ("Secrets live only in the OS keychain (keytar); never in localStorage, cookies or config files", "decision"),
    ("Session tokens are kept in memory only, so a cold start of the app clears them", "bug"),
    ("The mobile app reaches the backend only through the GraphQL gateway, never the REST endpoints", "decision"),
    ("Use pnpm in the web repo, not npm or yarn", "preference"),
    ("Schema changes go through Alembic migrations; nobody edits the production database by hand", "convention"),
    ("The nightly export job hangs when S3 returns 503; added a 30 s timeout with backoff", "bug"),
    ("Staging runs on port 5433 because 5432 is taken by the analytics replica", "note"),
    ("Feature flags are read from LaunchDarkly at start-up only; a changed flag needs a restart", "decision"),
    ("All API handlers return errors as RFC 7807 problem+json bodies", "convention"),
    ("Priya reviews anything touching the invoice PDF templates", "preference"),
    ("The CSV importer strips a UTF-8 byte order mark before reading the header row", "note"),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Store:
    s = Store(tmp_path_factory.mktemp("tasks") / "memcue.db")
    s.remember_many([NewMemory(content=c, kind=k, project="shop", created_at=NOW - 86400 * (30 - i))
                     for i, (c, k) in enumerate(MEMORIES)])
    embed_all(s, embedder)
    return s


def injected(store: Store, embedder: Embedder, prompt: str) -> list[str]:
    answer = recall(store, embedder, RecallRequest(query=prompt, project="shop", limit=8, now=NOW))
    return [r["content"] for r in injectable(answer, 8)]


@pytest.mark.parametrize(("prompt", "expected"), [
    ("store the price as a float column in the products table", 0),
    ("cache the API key in localStorage so we don't ask every time", 1),
    ("call the REST endpoint /v1/orders straight from the mobile app", 3),
    ("install lodash with npm in the web repo", 4),
])
def test_a_task_that_runs_into_a_standing_decision_gets_it(store: Store, embedder: Embedder, prompt: str,
                                                            expected: int) -> None:
    assert MEMORIES[expected][0] in injected(store, embedder, prompt)


def test_a_paraphrase_gets_the_memory_that_stands_out(store: Store, embedder: Embedder) -> None:
    assert injected(store, embedder, "why does the app log people out after a phone reboot?") == [MEMORIES[2][0]]


@pytest.mark.parametrize("prompt", [
    "add a docstring to the order model explaining its fields",
    "rename the HikeCard component to TrailCard everywhere",
    "bump the black formatter to the latest version in pre-commit",
])
def test_a_task_that_touches_no_decision_gets_nothing(store: Store, embedder: Embedder, prompt: str) -> None:
    assert injected(store, embedder, prompt) == []


@pytest.mark.parametrize(("prompt", "expected"), [
    ("flip the checkout banner's flag so it changes without redeploying the pods", 8),
    ("point the reporting dashboard at the staging database for a quick look", 7),
])
def test_a_tasks_new_words_do_not_hide_what_it_runs_into(store: Store, embedder: Embedder, prompt: str,
                                                           expected: int) -> None:
    """A task names the new work it asks for ("checkout banner", "redeploying the pods"), words no memory can
    carry; its key terms are the words some memory carries (``key_terms(known_only=True)``)."""
    assert MEMORIES[expected][0] in injected(store, embedder, prompt)


@pytest.mark.parametrize("prompt", [
    "add a dark mode toggle to the settings page",
    "write a tutorial page about our onboarding flow for new hires",
])
def test_a_new_feature_touching_nothing_stored_gets_nothing(store: Store, embedder: Embedder, prompt: str) -> None:
    assert injected(store, embedder, prompt) == []


EPISODE = ("test_post_retries_on_429 really slept: post() called time.sleep(Retry-After) directly, so every test "
           "run waited 2 s. post() now takes a sleep= argument and the test passes a no-op.")


@pytest.fixture(scope="module")
def work_store(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Store:
    s = Store(tmp_path_factory.mktemp("work") / "memcue.db")
    rows = [NewMemory(content=c, kind=k, project="shop", created_at=NOW - 86400 * (30 - i))
            for i, (c, k) in enumerate(MEMORIES)]
    rows.append(NewMemory(content=EPISODE, kind="episode", project="shop", created_at=NOW - 86400 * 3))
    s.remember_many(rows)
    embed_all(s, embedder)
    return s


def test_a_task_that_asks_what_was_done_gets_the_episode(work_store: Store, embedder: Embedder) -> None:
    """A task that also asks what was done ("remind me why…": ``work_recall``) is shown the agent's answer that
    tells it, as a question of that type would be; the episode is the kind it asks for, as a decision is the
    kind a task runs into."""
    prompt = "bump the post retries to 5 and commit. and remind me why the test suite got so slow last time"
    assert EPISODE in injected(work_store, embedder, prompt)


def test_a_task_that_asks_what_was_done_is_shown_the_episode_it_touches() -> None:
    """dev3's week (S7 t2): "bump it to 5 + a test, commit. and remind me why we needed retries" is a task that
    asks what was done; the answer that tells it is close (cosine 0.50) yet carries few of the task's rare words.
    Like a decision the task runs into, the kind it asks for is support; any other unworded kind stays weak."""
    episode = Support(cosine=0.50, baseline=0.10, key_terms=["marta", "bump", "retries", "monday"],
                      cue_terms=["retries"], question=False, asked_kind=True)
    assert judge(episode) == (SUPPORTED, "task")
    assert judge(replace(episode, asked_kind=False)) == (WEAK, "close")


def test_a_task_that_does_not_ask_what_was_done_gets_no_episode(work_store: Store, embedder: Embedder) -> None:
    assert EPISODE not in injected(work_store, embedder, "make the post retries sleep for Retry-After seconds")


def test_an_episode_a_commit_confirmed_still_answers_what_was_done(tmp_path: Path, embedder: Embedder) -> None:
    """An answer promoted to a ``change`` because a later commit landed its edits (``capture.turn_edits``) is
    still the record of what was done: "what did we do about X?" supports it as it did the episode it was,
    while the same text saved as an ordinary change is only weak."""
    fix = ("Fixed it: roster.csv had a space after the comma on Ana's row and csv.DictReader kept it, so her "
           "mention broke. load_roster() now reads with skipinitialspace=True. Landed in commit ed8b8c79add5.")
    rows = [NewMemory(content=c, kind=k, project="shop", created_at=NOW - 86400 * (30 - i))
            for i, (c, k) in enumerate(MEMORIES)]
    for source in ("capture:episode-committed", "cli"):
        s = Store(tmp_path / f"{source.replace(':', '-')}.db")
        s.remember_many([*rows, NewMemory(content=fix, kind="change", project="shop", source=source,
                                          created_at=NOW - 86400)])
        embed_all(s, embedder)
        answer = recall(s, embedder, RecallRequest(query="what did we do about the roster?", project="shop",
                                                   limit=8, now=NOW))
        tiers = {r["content"]: r["tier"] for r in answer["results"]}
        assert answer["query_type"] == "work_recall"
        assert tiers.get(fix) == ("supported" if source.startswith("capture") else "weak"), (source, tiers)
