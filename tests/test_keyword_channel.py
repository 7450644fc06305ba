"""The BM25 channel with hostile text (C03) and long prompts (C04), on a real SQLite file."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcue.sidecar.inject import PROMPT_LIMIT, injectable
from memcue.sidecar.recall import BM25, RecallRequest, recall
from memcue.sidecar.recall.query import keyword_query, number_pieces
from memcue.sidecar.store import NewMemory, Store

C03_MEMORIES = [
    "rotate the build-cache key after every release",
    "ticket OPS-4821 is blocked on the VPN change",
    "retry job step:3 uses exponential backoff",
    "c++ templates slow the build",
]
C03_PROMPTS = [
    "what did we decide about build-cache?",
    "status of OPS-4821",
    "why does step:3 retry?",
    "what about c++ templates?",
    'explain the "legacy flag',
    "should I use AND or OR here",
    "NOT sure why (deploy hangs",
    "bump to 2.1.3",
    "rm -rf build",
    "src/app/main.py",
    "*",
    'NEAR(a b) OR "x" AND y* ^z {col}: -',
    "'; DROP TABLE memories; --",
]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "m.db")
    s.remember_many([NewMemory(m, project="p") for m in C03_MEMORIES])
    return s


def _keyword(store: Store, prompt: str) -> dict:
    return recall(store, None, RecallRequest(prompt, project="p", channels=(BM25,)))


@pytest.mark.parametrize("prompt", C03_PROMPTS)
def test_C03_hostile_prompts_never_error_and_never_go_silent(store: Store, prompt: str) -> None:
    answer = _keyword(store, prompt)
    status = answer["channel_status"][BM25]
    assert status in ("ok", "empty", "no_candidates")
    if not answer["results"]:  # an empty keyword result is never silent: the channel says why
        assert status != "ok", answer
        assert answer["channel_notes"][BM25], answer
    if status == "ok":
        assert answer["results"], answer


@pytest.mark.parametrize("prompt,expected", list(zip(C03_PROMPTS[:4], C03_MEMORIES, strict=True)))
def test_C03_bm25_finds_the_matching_memory(store: Store, prompt: str, expected: str) -> None:
    kq = keyword_query(prompt)
    ids = [mid for mid, _ in store.bm25(kq.match, project="p", limit=5)]
    assert ids, prompt
    assert store.fetch(ids[:1])[ids[0]]["content"] == expected


def test_C03_match_expression_quotes_every_token() -> None:
    kq = keyword_query('NOT sure why (deploy hangs" OR *')
    for part in kq.match.split(" OR "):
        assert part.startswith('"') and part.endswith('"')
    assert keyword_query("*").match == "" and keyword_query("*").note


def test_C04_long_prompt_matches_words_independently(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db")
    wanted = store.remember_many(
        [
            NewMemory("the plugin cache keeps an orphaned version directory", project="p"),
            NewMemory("pin the plugin version in CI", project="p"),
        ]
    )
    store.remember(NewMemory("the weather was nice at the offsite", project="p"))
    prompt = (
        "So I was looking at the thing again this morning and honestly I am not sure what happened, but it "
        "seems like something is orphaned somewhere after the last upgrade, and the plugin that we load at "
        "startup keeps complaining about which version it should be using, could you help me figure out why "
        "this keeps happening every single time we deploy the app?"
    )
    assert len(prompt.split()) >= 60
    kq = keyword_query(prompt)
    assert " OR " in kq.match and "the" not in kq.terms  # stop words dropped, words OR-ed
    ids = {mid for mid, _ in store.bm25(kq.match, project="p", limit=10)}
    assert {w.id for w in wanted} <= ids


def _injected(store: Store, prompt: str) -> list[str]:
    """What the prompt hook would inject for ``prompt`` from a keyword-only answer (cold start, keyword race)."""
    return [r["content"] for r in injectable(_keyword(store, prompt), PROMPT_LIMIT)]


@pytest.mark.parametrize("prompt", ["bump to 2.1.3", "bump the version to 2.1.3", "tag v3.0.1 and push it",
                                    "is OPS-3 done?"])
def test_C03_a_versions_digits_are_not_words_the_prompt_hook_matches(store: Store, prompt: str) -> None:
    # "3" of 2.1.3 (or of OPS-3) is not "step:3": the identifier is matched whole, and no memory carries it
    assert _injected(store, prompt) == []


def test_C03_a_number_said_on_its_own_still_counts(store: Store) -> None:
    assert _injected(store, "why does step:3 retry?") == ["retry job step:3 uses exponential backoff"]
    assert number_pieces("bump to 2.1.3") == {"2", "1", "3"}
    assert number_pieces("tag v3.0.1") == {"v3", "0", "1"}
    assert number_pieces("PAY-219 needs 3 retries") == {"219"}
    assert number_pieces("step 3 of PAY-3") == frozenset()  # "3" said on its own too
    assert number_pieces("the s3 bucket policy") == frozenset()  # a word with a digit is a word


def test_keyword_recall_holds_a_task_to_all_its_words(store: Store) -> None:
    # without cosines, a task sharing one word ("step") with a memory is not about it; one whose words a memory
    # carries is
    assert _injected(store, "add a step 3 to the onboarding checklist") == []
    assert _injected(store, "rotate the build-cache key now") == ["rotate the build-cache key after every release"]
