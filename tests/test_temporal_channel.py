"""The temporal channel: time expressions -> windows, and ranking on a real SQLite store."""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memcue.sidecar.recall import TEMPORAL
from memcue.sidecar.recall.channels import CHANNELS, ChannelContext, ChannelResult, run_channel, temporal
from memcue.sidecar.recall.query import keyword_query
from memcue.sidecar.recall.time import mentions_time, parse_time, warm_up
from memcue.sidecar.store import NewMemory, Store


def temporal_channel(ctx: ChannelContext) -> ChannelResult:
    """The temporal channel run as the pipeline runs it (timed, failures as ``error``)."""
    return run_channel(CHANNELS[TEMPORAL], ctx)


def ts(text: str) -> float:
    """Unix seconds of "YYYY-MM-DD HH:MM" in UTC."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=UTC).timestamp()


#: The asking time: Wednesday 18 June 2025, 15:30 UTC.
NOW = ts("2025-06-18 15:30")

MEMORIES = {
    "cache_friday": ("2025-06-13 14:00", "Decided to cache API responses in Redis for five minutes"),
    "login_friday": ("2025-06-13 10:00", "Paired on the flaky login test and quarantined it"),
    "cache_other_day": ("2025-06-10 09:00", "Cache invalidation bug in the session store"),
    "march": ("2025-03-12 11:00", "Upgraded the CI runners to Ubuntu 24.04"),
    "march_last_year": ("2024-03-20 11:00", "Switched log shipping to vector"),
    "feb_end": ("2025-02-28 23:00", "Released version 1.2 of the uploader"),
    "april_start": ("2025-04-01 00:00", "Started planning the second quarter roadmap"),
    "two_weeks": ("2025-06-04 11:00", "Wrote the onboarding guide for new contributors"),
    "two_weeks_edge": ("2025-06-07 20:00", "Reviewed the dependency update pull requests"),
    "before_event": ("2025-05-19 16:00", "Froze schema changes ahead of the database cutover"),
    "long_before": ("2025-05-10 09:00", "Renamed the billing tables to plural names"),
    "event": ("2025-05-20 12:00", "Ran the database migration to Postgres 16"),
    "after_event": ("2025-05-21 09:00", "Fixed slow queries on the orders table after the cutover"),
    "yesterday": ("2025-06-17 18:00", "Tuned the gunicorn worker count to four"),
}


@pytest.fixture(scope="module", autouse=True)
def _warm() -> None:
    warm_up()


@pytest.fixture
def store(tmp_path: Path) -> tuple[Store, dict[str, int]]:
    s = Store(tmp_path / "m.db")
    keys = list(MEMORIES)
    written = s.remember_many(
        [NewMemory(MEMORIES[k][1], project="p", created_at=ts(MEMORIES[k][0])) for k in keys])
    return s, {k: w.id for k, w in zip(keys, written, strict=True)}


def ctx_for(store: Store, query: str, *, now: float = NOW, vector: np.ndarray | None = None) -> ChannelContext:
    return ChannelContext(store=store, query=query, keywords=keyword_query(query), project="p", k=20,
                          exclude_kinds=("request",), now=now, vector=vector)


def window(query: str, now: float = NOW) -> tuple[str | None, str | None, str | None]:
    intent = parse_time(query, now)
    assert intent is not None, query

    def fmt(t: float | None) -> str | None:
        return None if t is None else datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M")

    return fmt(intent.start), fmt(intent.end), intent.order


# -- parse_time: each expression kind ------------------------------------------------------------------
@pytest.mark.parametrize("query,expected", [
    ("what did we decide about caching last Friday?", ("2025-06-13 00:00", "2025-06-14 00:00", None)),
    ("what happened in March?", ("2025-03-01 00:00", "2025-04-01 00:00", None)),
    ("what did I do two weeks ago", ("2025-06-01 03:30", "2025-06-08 03:30", None)),
    ("anything yesterday?", ("2025-06-17 00:00", "2025-06-18 00:00", None)),
    ("what did we ship last week", ("2025-06-09 00:00", "2025-06-16 00:00", None)),
    ("summary of last month", ("2025-05-01 00:00", "2025-06-01 00:00", None)),
    ("notes from 2025-03-04", ("2025-03-04 00:00", "2025-03-05 00:00", None)),
    ("what changed since May 3", ("2025-05-03 00:00", None, "newest")),
    ("3 days ago", ("2025-06-15 00:00", "2025-06-16 00:00", None)),
    ("in 2024", ("2024-01-01 00:00", "2025-01-01 00:00", None)),
    ("Q1 2024", ("2024-01-01 00:00", "2024-04-01 00:00", None)),
    ("last weekend", ("2025-06-14 00:00", "2025-06-16 00:00", None)),
    ("in the past 3 days", ("2025-06-15 15:30", None, "newest")),
    ("before March", (None, "2025-03-01 00:00", "newest")),
    ("after March", ("2025-04-01 00:00", None, "oldest")),
    ("between March and May", ("2025-03-01 00:00", "2025-06-01 00:00", None)),
    ("from March 3 to April 10", ("2025-03-03 00:00", "2025-04-11 00:00", None)),
    ("on 03/04/2025", ("2025-03-04 00:00", "2025-03-05 00:00", None)),
    ("the 3rd of March 2024", ("2024-03-03 00:00", "2024-03-04 00:00", None)),
    ("what did we discuss in june 2024", ("2024-06-01 00:00", "2024-07-01 00:00", None)),
    ("what did we ship this week", ("2025-06-16 00:00", "2025-06-23 00:00", None)),
    ("the earliest time we discussed redis", (None, None, "oldest")),
    ("latest decision on auth", (None, None, "newest")),
])
def test_expressions_resolve_to_windows(query: str, expected: tuple) -> None:
    assert window(query) == expected


def test_last_friday_asked_on_a_friday_means_a_week_ago() -> None:
    friday = ts("2025-06-13 09:00")
    assert window("last Friday", friday)[:2] == ("2025-06-06 00:00", "2025-06-07 00:00")


def test_in_march_asked_in_january_means_last_years_march() -> None:
    assert window("in March", ts("2026-01-10 12:00"))[:2] == ("2025-03-01 00:00", "2025-04-01 00:00")


@pytest.mark.parametrize("query,anchor,relation", [
    ("what changed before the migration?", "migration", "before"),
    ("what broke after we deployed the new cache", "deployed new cache", "after"),
    ("what changed since the migration", "migration", "since"),
])
def test_event_anchors(query: str, anchor: str, relation: str) -> None:
    intent = parse_time(query, NOW)
    assert intent is not None
    assert (intent.anchor, intent.relation, intent.start, intent.end) == (anchor, relation, None, None)


@pytest.mark.parametrize("query", [
    "May I ask about the cache?", "second retry", "may may may", "1 2 3 4", "now", "the sun is out",
    "retry 3 may fail", "since it is slow, what should we do?", "look after the cache", "version 2024-13",
    "when did we switch to uv?", "how do I configure the uploader", "",
    "export the till receipts as CSV", "the till's share is mounted where?",
    "I'm sure we've hit this before with the digest email time. What was it?",
])
def test_false_positives_make_no_window(query: str) -> None:
    assert parse_time(query, NOW) is None


@pytest.mark.parametrize("query", [
    "the gateways switch to UTC next week. will the stale check still be right?",
    "we're adding two loggers next month, anything to change?", "what should I deploy tomorrow?",
])
def test_a_future_period_is_a_plan_not_a_window(query: str) -> None:
    """No memory was written next week: a question about a plan keeps every memory in play."""
    assert parse_time(query, NOW) is None


@pytest.mark.parametrize("query", [
    "Ship today's fixes to the Pi.", "we're cutting 0.5.0 today. walk me through it",
    "I need to check today's raw till export on the Pi. Which folder should I look in?",
    "the partner's validator bounced today's payload. remind me what shape they expect from us now?",
    "who's on call for the gateway this week?", "add a retry to the uploader this morning, it keeps timing out",
    "smoke-publish to my local box like we did before, I want to see it still works after the retry changes",
    "rerun the import since the migration broke it",
    "who do I ask to re-run last night's failed import?", "the box was out during Monday's inventory, is that a bug?",
])
def test_a_period_around_now_in_a_task_names_the_moment_not_a_window(query: str) -> None:
    """"today's fixes" are the ones the task is about, not memories written today, and "see it still works after
    the retry changes" is about now, not about what was written after them: no window, every memory in play
    (the older how-to is what the prompt needs)."""
    assert parse_time(query, NOW) is None


@pytest.mark.parametrize("query", [
    "Mira dropped a file called Orca_manual.csv into the share on Friday and it never got imported. Why not?",
    "The nightly export failed last Tuesday. Who do I ask to re-run it?",
    "I was on call yesterday and the gateway paged twice. is the stale check too strict?",
])
def test_a_period_in_the_sentence_that_tells_the_story_is_not_a_window(query: str) -> None:
    """The sentence before (or after) the one that asks says when something happened; the memory that explains
    it may be older, so no window demotes it."""
    assert parse_time(query, NOW) is None


@pytest.mark.parametrize("query", [
    "Tell me what we changed on Friday. Keep it short.", "what did we decide last week? I was out.",
    "I was out. What did we decide last week?",
])
def test_a_period_in_the_asking_sentence_is_a_window(query: str) -> None:
    intent = parse_time(query, NOW)
    assert intent is not None and intent.start is not None and intent.end is not None


@pytest.mark.parametrize("query", [
    "what did we decide today about the cache?", "what was I doing this morning?", "What am I working on today?",
    "what have we changed this week?", "the bug we fixed this morning, what was its cause?",
])
def test_a_period_around_now_in_a_question_about_the_past_is_a_window(query: str) -> None:
    intent = parse_time(query, NOW)
    assert intent is not None and intent.start is not None and intent.start <= NOW < intent.end


@pytest.mark.parametrize("query", ["May I ask about the cache?", "second retry", "now", "1 2 3 4", "may may may"])
def test_mentions_time_ignores_everyday_words(query: str) -> None:
    assert not mentions_time(query)


@pytest.mark.parametrize("query", [
    "last Friday", "in March", "two weeks ago", "yesterday", "2025-03-04", "since May 3", "before the migration",
    "when did we switch to uv", "recently", "the earliest time", "last time we spoke",
])
def test_mentions_time_finds_time_words(query: str) -> None:
    assert mentions_time(query)


@pytest.mark.parametrize("text", [
    "'; DROP TABLE memories; --", "may may may", "1 2 3 4", "now", "x" * 100_000,
    "last Friday " * 5000, "\x00\ud800 in March \U0001f600", 'NEAR(a b) OR "x" AND y* before the "migration',
    "since since since before after until", "Q9 9999-99-99 99/99/9999 31st of February",
])
def test_hostile_text_never_raises(store: tuple[Store, dict[str, int]], text: str) -> None:
    parse_time(text, NOW)
    parse_time(text, float("nan"))
    mentions_time(text)
    result = temporal_channel(ctx_for(store[0], text))
    assert result.status in ("ok", "empty", "no_candidates"), result.note
    assert store[0].counts()["memories"] == len(MEMORIES)


def test_bad_input_types_give_none() -> None:
    assert parse_time(None, NOW) is None  # type: ignore[arg-type]
    assert parse_time("last Friday", "soon") is None  # type: ignore[arg-type]
    assert not mentions_time(None)  # type: ignore[arg-type]


# -- the channel --------------------------------------------------------------------------------------
def first(result: ChannelResult) -> int:
    assert result.status == "ok", result.note
    return result.items[0][0]


def test_caching_last_friday(store: tuple[Store, dict[str, int]]) -> None:
    s, ids = store
    result = temporal_channel(ctx_for(s, "what did we decide about caching last Friday?"))
    assert first(result) == ids["cache_friday"]
    got = {mid for mid, _ in result.items}
    assert got == {ids["cache_friday"], ids["login_friday"]}  # the other caching memory is outside the window
    assert result.evidence == {ids["cache_friday"]}  # the login memory is a candidate, not evidence
    assert all(0 < score <= 1 for _, score in result.items)
    assert result.detail["window"] == ["2025-06-13T00:00:00+00:00", "2025-06-14T00:00:00+00:00"]
    assert result.detail["expression"] == "last Friday"


def test_pure_time_question_makes_everything_in_window_evidence(store: tuple[Store, dict[str, int]]) -> None:
    s, ids = store
    result = temporal_channel(ctx_for(s, "what did we do last Friday?"))
    assert result.evidence == {ids["cache_friday"], ids["login_friday"]}


def test_what_happened_in_march(store: tuple[Store, dict[str, int]]) -> None:
    s, ids = store
    result = temporal_channel(ctx_for(s, "what happened in March?"))
    assert [mid for mid, _ in result.items] == [ids["march"]]


def test_two_weeks_ago_ranks_by_closeness(store: tuple[Store, dict[str, int]]) -> None:
    s, ids = store
    result = temporal_channel(ctx_for(s, "what did I do two weeks ago"))
    assert [mid for mid, _ in result.items] == [ids["two_weeks"], ids["two_weeks_edge"]]
    assert result.items[0][1] > result.items[1][1]


def test_before_the_migration(store: tuple[Store, dict[str, int]]) -> None:
    s, ids = store
    result = temporal_channel(ctx_for(s, "what changed before the migration?"))
    assert result.detail["anchor_memory_id"] == ids["event"]
    order = [mid for mid, _ in result.items]
    assert order[0] == ids["before_event"]
    assert order.index(ids["long_before"]) > 0
    assert ids["event"] not in order and ids["after_event"] not in order


def test_after_the_migration(store: tuple[Store, dict[str, int]]) -> None:
    s, ids = store
    result = temporal_channel(ctx_for(s, "what happened after the migration?"))
    assert first(result) == ids["after_event"]
    assert ids["event"] not in {mid for mid, _ in result.items}


def test_unknown_event_gives_no_candidates(store: tuple[Store, dict[str, int]]) -> None:
    result = temporal_channel(ctx_for(store[0], "what changed before the kubernetes rollout?"))
    assert result.status == "no_candidates"
    assert "kubernetes" in result.note


def test_no_time_gives_empty(store: tuple[Store, dict[str, int]]) -> None:
    for query in ("how do we cache API responses?", "May I ask about the cache?", "second retry"):
        result = temporal_channel(ctx_for(store[0], query))
        assert result.status == "empty" and result.note and not result.items


def test_empty_window_gives_no_candidates(store: tuple[Store, dict[str, int]]) -> None:
    result = temporal_channel(ctx_for(store[0], "what did we do in 2019?"))
    assert result.status == "no_candidates" and not result.items


def test_latest_orders_newest_first(store: tuple[Store, dict[str, int]]) -> None:
    s, ids = store
    result = temporal_channel(ctx_for(s, "what did we do most recently?"))
    assert first(result) == ids["yesterday"]
    assert result.items[-1][0] == ids["march_last_year"]


def test_oldest_reads_past_the_candidate_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(temporal, "CANDIDATE_CAP", 5)
    s = Store(tmp_path / "m.db")
    written = s.remember_many([NewMemory(f"note number {i} about topic {i}", project="p",
                                         created_at=NOW - (40 - i) * 86400) for i in range(40)])
    result = temporal_channel(ctx_for(s, "what was the earliest thing we did?"))
    assert first(result) == written[0].id


def test_cosine_joins_the_content_score(tmp_path: Path) -> None:
    s = Store(tmp_path / "m.db")
    if not s.bind_model("test-model", 4):
        pytest.skip("sqlite-vec is not available")
    a, b = s.remember_many([
        NewMemory("alpha note", project="p", created_at=ts("2025-06-13 11:00")),
        NewMemory("beta note", project="p", created_at=ts("2025-06-13 12:00")),
    ])
    near, far = np.array([1, 0, 0, 0], dtype=np.float32), np.array([0, 1, 0, 0], dtype=np.float32)
    s.set_embeddings([(a.id, near.tobytes()), (b.id, far.tobytes())])
    query = "what about latency last Friday"
    without = temporal_channel(ctx_for(s, query))
    with_vec = temporal_channel(ctx_for(s, query, vector=near))
    assert first(without) == b.id  # no topic word anywhere: the one nearer the day's centre wins
    assert first(with_vec) == a.id  # the cosine decides


class _BrokenStore:
    def in_window(self, *args: object, **kwargs: object) -> list:
        raise RuntimeError("disk on fire")

    def bm25(self, *args: object, **kwargs: object) -> list:
        raise RuntimeError("disk on fire")


def test_failure_becomes_error_status() -> None:
    result = temporal_channel(ctx_for(_BrokenStore(), "what did we do last Friday?"))  # type: ignore[arg-type]
    assert result.status == "error"
    assert "disk on fire" in result.note


# -- speed ---------------------------------------------------------------------------------------------
def test_parse_is_fast_and_cached() -> None:
    queries = ["what did we decide about caching last Friday?", "how do I run the tests", "what happened in March?",
               "deploy steps for staging", "what did I do two weeks ago", "since May 3", "before the migration"]
    timings = []
    for i, q in enumerate(queries * 3):
        t0 = time.perf_counter()
        parse_time(q, NOW + 3600 * i)  # a new minute each time: no whole-query cache hit
        timings.append((time.perf_counter() - t0) * 1000)
    assert statistics.median(timings) < 10.0, timings
    assert parse_time(queries[0], NOW) is parse_time(queries[0], NOW + 5)  # same minute: cached
    t0 = time.perf_counter()
    for _ in range(200):
        mentions_time("what did we decide about the retry policy for uploads?")
    assert (time.perf_counter() - t0) / 200 * 1000 < 0.1


def test_channel_name() -> None:
    assert temporal_channel(ctx_for(_BrokenStore(), "hello")).name == TEMPORAL  # type: ignore[arg-type]


def test_a_pasted_traceback_header_asks_no_order() -> None:
    """Python's "Traceback (most recent call last):" is what the user pasted, not "the most recent" memory."""
    assert parse_time('Traceback (most recent call last):\n  File "a.py", line 3\nwhy is httpx pinned?', NOW) is None
    intent = parse_time("what is the most recent decision on httpx?", NOW)
    assert intent is not None and intent.order == "newest"
