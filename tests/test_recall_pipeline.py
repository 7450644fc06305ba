"""The full recall pipeline on a real SQLite store with the real embedding model, in process.

Covers: query classification and its weight table, every channel's status, the evidence floor before
the limit, support tiers (baseline, key terms, unknown names, owner check, no-question statements),
present-tense and "what did I ask" questions, window / as_of / valid_at and update/supersede, the
session working set, ranking mode, and the support-gate switch.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import embed_all

from memcue.sidecar.recall import (
    ALL_CHANNELS,
    BM25,
    GRAPH,
    HOPFIELD,
    KEYWORD_CHANNELS,
    SEMANTIC,
    TEMPORAL,
    Filters,
    RecallOptions,
    RecallRequest,
    RecallServices,
    classify,
    recall,
)
from memcue.sidecar.recall.contract import NOTE_RELATED
from memcue.sidecar.recall.query import is_question, key_terms
from memcue.sidecar.recall.query.terms import cue_terms
from memcue.sidecar.recall.support import Support, judge, owner_of, worded_text
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.settings import load_settings
from memcue.sidecar.store import NewMemory, Store

DAY = 86400.0
NOW = 1_780_000_000.0  # a fixed asking time (2026-05-28)
MEMORIES = [
    # (content, kind, days ago, pinned)
    ("We pinned httpx to 0.27.2 because 0.28 broke the proxy settings in the billing client", "decision", 40, False),
    ("The webhook sender retries with exponential backoff: 5 attempts, base 2 s, jitter", "decision", 30, False),
    ("Bug: invoices rendered twice when the Stripe webhook arrived before the DB commit; fixed by an"
     " idempotency key on event id", "bug", 20, False),
    ("Alice prefers small pull requests with one reviewer and squash merges", "preference", 60, False),
    ("Use ruff for linting and formatting; black is no longer used in this repo", "convention", 15, False),
    ("To rotate the staging database password run scripts/rotate_db_password.sh and update the vault entry",
     "procedure", 10, False),
    ("Currently migrating the invoice PDF renderer from wkhtmltopdf to WeasyPrint", "note", 1, False),
    ("Deploys freeze every Friday after 3 pm", "convention", 90, True),
    ("can you add retries to the webhook sender", "request", 31, False),
    ("please make the invoice totals round half up", "request", 5, False),
    ("session ended", "note", 0.5, False),
]


def support_label(s: Support) -> str:
    """The support tier alone of ``judge``'s ``(label, reason)``."""
    return judge(s)[0]


@pytest.fixture
def store(tmp_path: Path, embedder: Embedder) -> Iterator[Store]:
    s = Store(tmp_path / "m.db")
    s.remember_many([NewMemory(c, kind=k, project="billing", created_at=NOW - d * DAY, pinned=p)
                     for c, k, d, p in MEMORIES])
    s.remember(NewMemory("The frontend uses Vite and React 19", kind="decision", project="web",
                         created_at=NOW - 3 * DAY))
    embed_all(s, embedder)
    yield s
    s.close()


def ask(store: Store, emb: Embedder | None, query: str, services: RecallServices | None = None, **kw) -> dict:
    kw.setdefault("project", "billing")
    return recall(store, emb, RecallRequest(query, now=NOW, **kw), services or RecallServices())


def contents(answer: dict) -> list[str]:
    return [r["content"] for r in answer["results"]]


# -- classification ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text,expected", [
    ("what am I working on?", "present_tense"),
    ("where did I leave off", "present_tense"),
    ("what did I ask you to do about the webhook?", "request_recall"),
    ("what did we change last Friday?", "work_recall"),
    ("What did we conclude about those negative out-times, and did we ever actually fix it?", "work_recall"),
    ("have we ever tried caching the tiles?", "work_recall"),
    ("did you run the tests?", "meaning"),
    ("when did we pin httpx", "time"),
    ("so when is the cutoff for the trial emails?", "time"),
    # "when" as a conjunction names no time: the question is about the rotation, not a date
    ("same count as when the rotation dropped someone. which test guards that?", "meaning"),
    ("How did the reviewers react when the export changed?", "meaning"),
    ("OPS-4821 status", "exact_term"),
    ("src/app/main.py", "exact_term"),
    ("What do Caroline and Melanie have in common?", "multi_hop"),
    ("why do invoices render twice", "meaning"),
])
def test_query_types(text: str, expected: str) -> None:
    assert classify.query_type(text) == expected


def test_weights_come_from_one_table_and_config_and_request_override() -> None:
    base = classify.classify("why do invoices render twice")
    assert base.weights == classify.CHANNEL_WEIGHTS["meaning"]
    over = classify.classify("why do invoices render twice", {"meaning": {SEMANTIC: 0.9}}, {BM25: 0.7})
    assert over.weights[SEMANTIC] == 0.9 and over.weights[BM25] == 0.7
    assert classify.CHANNEL_WEIGHTS["meaning"][SEMANTIC] != 0.9  # the table itself is untouched
    with pytest.raises(ValueError):
        classify.classify("x", None, {BM25: -1})


def test_config_file_overrides_and_a_broken_file_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[recall]\nsupport_gate = false\n[recall.weights.meaning]\nsemantic = 0.8\n")
    cfg = load_settings(path, env={})
    assert not cfg.support_gate and cfg.weights == {"meaning": {"semantic": 0.8}}
    path.write_text("[recall\nbroken")
    cfg = load_settings(path, env={})
    assert cfg.support_gate and cfg.error
    assert not load_settings(tmp_path / "absent.toml", env={"MEMCUE_NO_SUPPORT_GATE": "1"}).support_gate


# -- channels, fusion, floor, tiers -----------------------------------------------------------------
def test_every_channel_reports_a_status_and_the_right_memory_wins(store: Store, embedder: Embedder) -> None:
    answer = ask(store, embedder, "why did we pin httpx?")
    assert set(answer["channel_status"]) == set(ALL_CHANNELS)
    assert answer["channel_status"][SEMANTIC] == "ok" and answer["channel_status"][BM25] == "ok"
    assert answer["tier"] == "supported"
    assert "httpx" in contents(answer)[0]
    for field in ("query_type", "channel_weights", "incomplete_channels", "retrieval_time_ms", "query_id",
                  "abstained", "abstention_reason", "warming_up", "calibration_status", "answer_confidence",
                  "answerability", "layers", "reranker_status"):
        assert field in answer
    top = answer["results"][0]
    for field in ("fact_id", "memory_id", "content", "score", "tier", "memory_kind", "age_label", "channel_scores",
                  "cue_terms"):
        assert field in top


def test_keyword_mode_runs_bm25_only(store: Store) -> None:
    answer = ask(store, None, "httpx proxy", channels=KEYWORD_CHANNELS)
    assert answer["channel_status"][BM25] == "ok"
    assert all(answer["channel_status"][n] == "disabled" for n in (SEMANTIC, TEMPORAL, GRAPH, HOPFIELD))
    assert "httpx" in contents(answer)[0]


def test_unrelated_question_abstains(tmp_path: Path, embedder: Embedder) -> None:
    s = Store(tmp_path / "nopin.db")
    s.remember_many([NewMemory(c, kind=k, project="billing", created_at=NOW - d * DAY)
                     for c, k, d, p in MEMORIES if not p])
    embed_all(s, embedder)
    answer = ask(s, embedder, "what is the capital of Mongolia?")
    assert answer["tier"] in ("none", "related")
    if answer["tier"] == "none":
        assert answer["abstained"] and answer["abstention_reason"] in ("evidence_floor", "no_candidates")
    else:
        assert answer["note"] == NOTE_RELATED and len(answer["results"]) <= 3


def test_gibberish_is_never_supported(store: Store, embedder: Embedder) -> None:
    assert ask(store, embedder, "zxqv blorft wibble snark")["tier"] != "supported"


def test_a_question_captured_before_it_is_asked_still_counts_its_unknown_words(store: Store,
                                                                              embedder: Embedder) -> None:
    """The prompt hook captures the prompt before its recall runs: the captured copy must not make the question's
    words known (document frequencies count rows that can answer), or gibberish and unknown names would pass."""
    for text in ("zxqv blorft wibble snark", "How do we deploy Kubernetes on Fridays?"):
        store.remember(NewMemory(text, kind="request", project="billing", created_at=NOW))
        embed_all(store, embedder)
        answer = ask(store, embedder, text)
        assert answer["tier"] != "supported", (text, answer["results"])


def test_unknown_name_in_the_question_is_not_supported(store: Store, embedder: Embedder) -> None:
    # "Kubernetes" is in no memory: a deploy memory is related at most.
    answer = ask(store, embedder, "How do we deploy Kubernetes on Fridays?")
    assert answer["tier"] != "supported", answer["results"]


def test_support_gate_switch_turns_the_gate_off(store: Store, embedder: Embedder) -> None:
    services = RecallServices(config=RecallOptions(support_gate=False))
    answer = ask(store, embedder, "How do we deploy Kubernetes on Fridays?", services)
    assert answer["tier"] == "supported"


def test_evidence_floor_runs_before_the_limit(store: Store, embedder: Embedder) -> None:
    # limit 1 must still give the best *evidenced* memory, not the first fused candidate.
    answer = ask(store, embedder, "webhook retries backoff", limit=1)
    assert len(answer["results"]) == 1 and "backoff" in answer["results"][0]["content"]


def test_owner_check_and_baseline_in_support_features() -> None:
    assert owner_of("[1:56 pm on 8 May, 2023] Caroline: I went to a support group") == "caroline"
    assert owner_of("We pinned httpx") == ""
    mine = Support(cosine=0.6, baseline=0.1, query_people=["caroline"],
                   content="[8 May 2023] Melanie: I painted a lake at sunrise")
    assert mine.owner_mismatch and support_label(mine) == "weak"
    # A memory close to every question (high baseline) gets no free pass from closeness alone.
    generic = Support(cosine=0.6, baseline=0.4)
    assert support_label(generic) != "supported"
    assert support_label(Support(cosine=0.6, baseline=0.1)) == "supported"
    # Between the support and the strong cosine, closeness needs the query's key words too.
    assert support_label(Support(cosine=0.5, baseline=0.1)) == "weak"
    assert support_label(Support(cosine=0.5, baseline=0.1, key_terms=["httpx", "pin"],
                                 cue_terms=["httpx"])) == "supported"
    # A statement (no question word) is held to carrying its words.
    statement = Support(cosine=0.6, baseline=0.1, question=False, key_terms=["httpx"], cue_terms=[])
    assert support_label(statement) != "supported"
    # A task that repeats earlier work: a strongly close memory of any kind carrying one of its key terms.
    repeat = Support(cosine=0.68, baseline=0.1, question=False, key_terms=["export", "watcher", "half"],
                     cue_terms=["export"])
    assert support_label(repeat) == "supported"
    assert support_label(Support(cosine=0.5, baseline=0.1, question=False, key_terms=["export", "watcher", "half"],
                                 cue_terms=["export"])) != "supported"  # close, not strongly


def test_a_possessive_is_the_word_it_belongs_to() -> None:
    """"Ines's plasma box during Monday's inventory" is about Ines and Monday: the possessive form is no rare word of
    its own (no memory writes "ines's"), and a memory naming Ines carries the term."""
    from memcue.sidecar.recall.query import content_terms, cue_terms, words

    terms = tuple(content_terms("Ines's plasma box was out during Monday's inventory, and the report's total?"))
    assert "ines" in terms and "monday" in terms and "report" in terms
    assert not any(t.endswith("'s") for t in terms)
    assert cue_terms(terms, "Ines keeps the plasma boxes in Orca") == ["ines", "plasma", "box"]
    assert words("don't log Ines's token") == ["don't", "log", "ines", "token"]


def test_the_words_of_conversation_are_never_key_terms() -> None:
    """"remind me what shape the partner expects": a memory need not say "remind" to answer it. Words no memory
    carries stay key terms (the question's own subject), the words of asking and reporting do not."""
    doc_freq = {"partner": 3, "payload": 2, "shape": 1, "validator": 0}
    query = ("partner", "validator", "bounced", "payload", "remind", "shape", "expect", "someone", "said")
    keys, gibberish = key_terms(doc_freq, query)
    assert not gibberish and "remind" not in keys and "someone" not in keys and "said" not in keys
    assert keys == ["validator", "bounced", "expect", "shape"]
    assert key_terms({"x": 1}, ("remind", "someone")) == ([], True)  # only chat words: nothing to carry


def test_pinned_memory_returns_when_nothing_else_does(store: Store, embedder: Embedder) -> None:
    answer = ask(store, embedder, "what is the capital of Mongolia?")
    assert answer["tier"] == "related" and not answer["abstained"]
    assert answer["results"][0]["pinned"] and "Deploys freeze" in answer["results"][0]["content"]
    assert answer["note"] == NOTE_RELATED
    # A supported answer does not drag the pinned memory along.
    assert all(not r["pinned"] for r in ask(store, embedder, "why did we pin httpx?")["results"])


# -- present tense and requests -----------------------------------------------------------------------
def test_present_tense_answers_from_newest_real_memories(store: Store, embedder: Embedder) -> None:
    answer = ask(store, embedder, "what am I working on?")
    assert answer["query_type"] == "present_tense" and answer["tier"] == "supported"
    assert "WeasyPrint" in contents(answer)[0]
    kinds = {r["memory_kind"] for r in answer["results"]}
    assert "request" not in kinds and all("session ended" not in c for c in contents(answer))


def test_what_did_i_ask_returns_captured_prompts_first(store: Store, embedder: Embedder) -> None:
    answer = ask(store, embedder, "what did I ask you to do about the webhook sender?")
    assert answer["query_type"] == "request_recall"
    assert answer["results"][0]["memory_kind"] == "request"
    assert "retries to the webhook sender" in answer["results"][0]["content"]


def test_captured_prompts_rank_below_saved_memories(store: Store, embedder: Embedder) -> None:
    answer = ask(store, embedder, "webhook sender retries", include_requests=True)
    kinds = [r["memory_kind"] for r in answer["results"]]
    assert "request" in kinds
    assert kinds.index("request") > 0 and all(k == "request" for k in kinds[kinds.index("request"):])


# -- time and versions --------------------------------------------------------------------------------
def test_window_filter(store: Store, embedder: Embedder) -> None:
    window = Filters(window_start=NOW - 35 * DAY, window_end=NOW - 25 * DAY)
    answer = ask(store, embedder, "webhook retries and httpx", filters=window)
    assert answer["results"] and all(NOW - 35 * DAY <= r["created_at"] < NOW - 25 * DAY for r in answer["results"])


def test_update_supersedes_and_as_of_sees_the_old_version(store: Store, embedder: Embedder) -> None:
    old_id = next(r["id"] for r in store.list_memories(project="billing", limit=50) if "httpx" in r["content"])
    new = store.update(old_id, NewMemory("We pinned httpx to 0.28.1 now that the proxy bug is fixed",
                                         kind="decision"))
    embed_all(store, embedder)
    now_answer = ask(store, embedder, "which httpx version did we pin?")
    ids = [r["memory_id"] for r in now_answer["results"]]
    assert new.id in ids and old_id not in ids
    past = ask(store, embedder, "which httpx version did we pin?", filters=Filters(as_of=time.time() - 60))
    past_ids = [r["memory_id"] for r in past["results"]]
    assert old_id in past_ids and new.id not in past_ids
    with pytest.raises(ValueError):
        store.update(old_id, NewMemory("again"))
    with pytest.raises(KeyError):
        store.update(999_999, NewMemory("nothing"))


def test_valid_at_filter(tmp_path: Path) -> None:
    s = Store(tmp_path / "v.db")
    s.remember(NewMemory("On-call rotation owner is Bob", project="p", created_at=NOW - 100 * DAY,
                         valid_from=NOW - 100 * DAY, valid_to=NOW - 50 * DAY))
    s.remember(NewMemory("On-call rotation owner is Dana", project="p", created_at=NOW - 50 * DAY,
                         valid_from=NOW - 50 * DAY))
    then = ask(s, None, "on-call rotation owner", project="p", channels=KEYWORD_CHANNELS,
               filters=Filters(valid_at=NOW - 70 * DAY))
    assert contents(then) == ["On-call rotation owner is Bob"]
    now = ask(s, None, "on-call rotation owner", project="p", channels=KEYWORD_CHANNELS,
              filters=Filters(valid_at=NOW))
    assert contents(now) == ["On-call rotation owner is Dana"]
    with pytest.raises(ValueError):
        Filters(window_start=NOW, window_end=NOW - 1)


# -- sessions and ranking -------------------------------------------------------------------------------
def test_working_set_holds_recalled_memories_and_skips_synthetic_sessions(store: Store, embedder: Embedder) -> None:
    services = RecallServices()
    first = ask(store, embedder, "webhook retries backoff", services, session_id="s-1")
    held = [mid for mid, _ in services.working_sets.held("s-1")]
    assert first["results"][0]["memory_id"] in held
    ask(store, embedder, "webhook retries backoff", services, session_id="cli:probe")
    assert services.working_sets.held("cli:probe") == []


def test_ranking_mode_prefers_fresh_memories(store: Store, embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCUE_RANKING", "1")
    answer = ask(store, embedder, "invoice rendering")
    assert answer["results"] and all("ranking_score" in r for r in answer["results"])
    scores = [r["ranking_score"] for r in answer["results"]]
    assert scores == sorted(scores, reverse=True)


def test_C16_no_channel_crosses_projects(tmp_path: Path, embedder: Embedder) -> None:
    s = Store(tmp_path / "c16.db")
    s.remember(NewMemory("use jwt middleware v8 with clock-skew 30s", project="/w/billing-api", kind="decision",
                         created_at=NOW - 2 * DAY))
    s.remember(NewMemory("JWT tokens are refreshed by the AuthGate component", project="/w/other/app",
                         created_at=NOW - 2 * DAY))
    s.remember(NewMemory("Team rule: every PR needs one review", project="", created_at=NOW - 2 * DAY))
    embed_all(s, embedder)
    for query in ("how do we handle jwt here?", "what did we decide about jwt middleware v8 two days ago?",
                  "clock-skew", "AuthGate jwt"):
        answer = recall(s, embedder, RecallRequest(query, project="/w/web-ui", now=NOW), RecallServices())
        assert all(r["project"] in ("/w/web-ui", "") for r in answer["results"]), (query, answer["results"])
        assert all(status != "error" for status in answer["channel_status"].values()), answer["channel_notes"]
    s.close()


def test_a_slow_channel_times_out_and_the_recall_goes_on(store: Store, embedder: Embedder,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault injection: the temporal channel hangs (as a stuck dateparser would); the others answer."""
    from memcue.sidecar.recall.channels import CHANNELS

    real = CHANNELS[TEMPORAL].run
    monkeypatch.setattr(CHANNELS[TEMPORAL], "run", lambda ctx: (time.sleep(1.0), real(ctx))[1])
    started = time.perf_counter()
    answer = ask(store, embedder, "what did we decide last month about httpx?", channel_timeout_s=0.3)
    assert time.perf_counter() - started < 0.9
    assert answer["channel_status"][TEMPORAL] == "timeout" and answer["incomplete_channels"] == [TEMPORAL]
    assert answer["tier"] == "supported" and "httpx" in contents(answer)[0]


def test_a_failing_channel_reports_error_and_the_recall_goes_on(store: Store, embedder: Embedder,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from memcue.sidecar.recall.channels import CHANNELS

    def broken(ctx: object) -> None:
        raise RuntimeError("graph store corrupted")

    monkeypatch.setattr(CHANNELS[GRAPH], "run", broken)
    answer = ask(store, embedder, "why did we pin httpx?")
    assert answer["channel_status"][GRAPH] == "error" and "corrupted" in answer["channel_notes"][GRAPH]
    assert answer["tier"] == "supported"


def test_valid_at_before_an_update_serves_the_old_version(tmp_path: Path) -> None:
    s = Store(tmp_path / "va.db")
    old = s.remember(NewMemory("Deploy window is Tuesday mornings", project="p", created_at=NOW - 30 * DAY))
    new = s.update(old.id, NewMemory("Deploy window is Thursday afternoons", project="p"))
    before = ask(s, None, "deploy window", project="p", channels=KEYWORD_CHANNELS,
                 filters=Filters(valid_at=NOW - 10 * DAY))
    assert [r["memory_id"] for r in before["results"]] == [old.id]
    current = ask(s, None, "deploy window", project="p", channels=KEYWORD_CHANNELS,
                  filters=Filters(valid_at=time.time() + 60))
    assert [r["memory_id"] for r in current["results"]] == [new.id]
    s.close()


def test_a_time_in_the_question_prefers_memories_written_then(store: Store, embedder: Embedder) -> None:
    # NOW is Thursday 2026-05-28; "last week" is 05-18..05-25: the password procedure (10 days ago) is in it.
    answer = ask(store, embedder, "what did we change about the staging database password last week?")
    assert answer["query_type"] == "work_recall" and answer["channel_status"][TEMPORAL] == "ok"
    assert answer["channel_weights"] == classify.CHANNEL_WEIGHTS["time"], "a time question that asks what was done"
    top = answer["results"][0]
    assert "rotate the staging database password" in top["content"] and top["tier"] == "supported"
    # The linting convention (15 days ago) is outside the window: never supported for this question.
    other = ask(store, embedder, "what did we decide about linting and formatting last week?")
    assert all(r["tier"] != "supported" for r in other["results"] if "ruff" in r["content"])


def test_a_pure_time_question_answers_from_that_time(store: Store, embedder: Embedder, tmp_path: Path) -> None:
    answer = ask(store, embedder, "what did we do yesterday?")
    assert answer["tier"] == "supported"
    assert "WeasyPrint" in contents(answer)[0] and answer["results"][0]["support"] == "time"
    s = Store(tmp_path / "nopin.db")  # no pinned memory to fall back on
    s.remember_many([NewMemory(c, kind=k, project="billing", created_at=NOW - d * DAY)
                     for c, k, d, p in MEMORIES if not p])
    embed_all(s, embedder)
    empty = ask(s, embedder, "what did we decide in January?")
    assert empty["tier"] == "none" and empty["note"] == "Nothing in memcue was written in January."


def test_a_memory_stands_out_from_what_the_filters_keep_only() -> None:
    """How far the closest memory stands out is measured against the candidates the request's filters keep: a
    near-copy written after ``as_of`` or outside the window (still in the semantic channel's list) does not
    hide it."""
    from memcue.sidecar.recall.candidates import Candidates
    from memcue.sidecar.recall.floor import Evidence
    from memcue.sidecar.recall.support import _standouts

    found = Candidates(channels={}, incomplete=[], fused=[], scores={"semantic": {1: 0.9, 2: 0.5, 3: 0.3}},
                       rows={}, evidence={2: Evidence(cosine=0.5), 3: Evidence(cosine=0.3)}, terms=(),
                       doc_freq={}, vector=None)
    standout = _standouts(found)
    assert standout(2, 0.5) == pytest.approx(0.2)
    assert standout(3, 0.3) == pytest.approx(-0.2)
    assert standout(2, None) is None


PASTED_TRACE = ('Traceback (most recent call last):\n  File "tools/sync_labels.py", line 12, in <module>\n'
                "ConnectionResetError: [Errno 104] Connection reset by peer (gw-17.corp)\n")


@pytest.fixture
def httpx_store(tmp_path: Path, embedder: Embedder) -> Iterator[Store]:
    s = Store(tmp_path / "h.db")
    s.remember_many([NewMemory(c, kind=k, project="billing", created_at=NOW - d * DAY) for c, k, d in (
        ("We pinned httpx to 0.27.2 because 0.28 broke the proxy settings in the billing client", "decision", 40),
        ("The billing client's httpx timeouts are 10 s connect and 30 s read", "note", 20),
        ("httpx retries are off in the billing client; the webhook sender retries instead", "decision", 25),
        ("Use ruff for linting and formatting", "convention", 15))])
    embed_all(s, embedder)
    yield s
    s.close()


@pytest.mark.parametrize("prompt", [
    PASTED_TRACE + "why did we pin httpx?",
    "I saw this in the log: ConnectionResetError 104 from gw-17.corp. why did we pin httpx?",
])
def test_a_question_after_a_pasted_error_is_answered(httpx_store: Store, embedder: Embedder, prompt: str) -> None:
    """"Paste the error, then ask": the log's own words and names (a file, a host, an exception) are what the user
    saw, not what the memory must say; the question's words are."""
    answer = ask(httpx_store, embedder, prompt)
    supported = [r["content"] for r in answer["results"] if r["tier"] == "supported"]
    assert supported and supported[0].startswith("We pinned httpx"), answer["results"]


def test_the_asking_sentence_still_blocks_what_no_memory_names(httpx_store: Store, embedder: Embedder) -> None:
    """Only the context's unknown words are set aside: a question naming something no memory carries is still not
    answered by a memory that shares its other words."""
    answer = ask(httpx_store, embedder, PASTED_TRACE + "why did we pin grpcio?")
    assert [r for r in answer["results"] if r["tier"] == "supported"] == []


def test_asking_words_are_those_of_the_sentence_that_asks() -> None:
    from memcue.sidecar.recall.query import asking_words

    assert asking_words("why is httpx pinned?") is None  # one sentence: the whole prompt asks
    assert asking_words("ConnectError host-3 timeout. why is httpx pinned?") == frozenset({"httpx", "pinned"})
    assert asking_words("log line one\nlog line two\nwhat changed in billing?") == frozenset({"changed", "billing"})
    assert asking_words("Fix the flaky test. Keep it small.") is None  # nothing asks
    assert asking_words("The invoice list is slow. Find out why and fix it.") is None  # a task, not a question
    assert asking_words("Would Caroline have Dr. Seuss books on her shelf?") is None  # a title, not a sentence end
    assert asking_words("Has John been to the U.S. office or to C. S. Lewis' college?") is None


@pytest.mark.parametrize(("text", "asks"), [
    ("whats the slack shortcut to edit the message i just sent", True),  # typed in a hurry, no apostrophe
    ("hows the nightly export doing", True),
    ("what did we decide about retries", True),
    ("whatsapp alerts: add them to the notifier", False),
    ("add a docstring to the order model", False),
])
def test_a_question_is_told_from_a_task(text: str, asks: bool) -> None:
    assert is_question(text) is asks


def test_an_episode_carries_the_words_of_its_turns_prompt() -> None:
    """Found by test5's week: a task that points back at a finding ("the report is slow on the build box again.
    fix it properly this time") names it as the user did when it was looked into, words the finding itself never
    uses. Its turn's prompt (the episode's ``embed_text``) carries them, so the finding is support for the task;
    judged by its answer's words alone, at a cosine below ``SUPPORT_COSINE``, it was not."""
    finding = ("Almost all the time is file I/O: render() calls load_rates() inside its loop, so rates.csv is "
               "parsed again for each row. Parsing it once per call would make it near instant.")
    prompt = "the nightly report takes ~40 s on the build box. where is the time going?"
    row = {"content": finding, "kind": "episode", "metadata": {"embed_text": f"{prompt}\n\n{finding}"}}
    terms = ("report", "slow", "build", "box", "fix", "properly")
    keys = ["report", "build", "box", "slow"]

    def label(text: str) -> str:
        return support_label(Support(cosine=0.43, baseline=0.04, question=False, asked_kind=True, key_terms=keys,
                                     cue_terms=cue_terms(terms, text), worded_match=True))

    assert worded_text(row).startswith(finding) and "build box" in worded_text(row)
    assert (label(worded_text(row)), label(finding)) == ("supported", "related")
    assert worded_text({"content": "plain", "kind": "episode", "metadata": {}}) == "plain"
    assert worded_text({**row, "kind": "change"}) == finding, "a promoted change is shown to any task: its own words"
    commit = "Read rates once per render\n\nTests added: test_one_parse\n\nFiles: report.py"
    assert cue_terms(("file", "test", "render"), worded_text({"content": commit, "kind": "change"})) == [
        "test", "render"], "the trailer's labels are memcue's words, not the commit's"
    # "dates" and "date" are one word to the cue terms (a four-letter word ending in "e" and its plural)
    assert cue_terms(("date", "file", "rule"), "dates files rules") == ["date", "file", "rule"]
