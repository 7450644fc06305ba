"""Fetch, list, forget and session context through a real sidecar over its socket (``Client``), with the real
embedding model; the soft delete down to the store and the in-memory vector index."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Sidecar, context_of, embed_pending, run_hook, start_sidecar
from hookutil import hook_env, kill_spawned_sidecars

from memcue.client import ClientError
from memcue.core.blocks import POINTER, POINTER_SAVE, SESSION_HEADER, STANDING_NOTE
from memcue.core.limits import SESSION_BLOCK_TOKENS
from memcue.sidecar.recall import VectorIndex
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.runtime.tokenizer import TokenCounter
from memcue.sidecar.store import NewMemory, Store

DAY = 86400.0
MEMORY_FIELDS = {"memory_id", "content", "memory_kind", "project", "session_id", "created_at", "updated_at",
                 "age_label", "pinned", "bookkeeping", "forgotten", "forgotten_at", "superseded_by", "seen_count",
                 "tags", "source", "promoted_by"}
TARGET = "Deploys to the Lisbon cluster are frozen on Fridays after 3 pm"
#: Shares no word with TARGET: only the semantic channels can find it.
PARAPHRASE = "When is shipping code to production blocked at the end of the week?"
#: The one-line pointer (its count includes global memories other tests wrote).
POINTED = re.compile(re.escape(POINTER).replace(re.escape("{count}"), r"\d+ memor(y|ies)")
                     .replace(re.escape("{save}"), re.escape(POINTER_SAVE["mcp"])))
DISTRACTORS = ["The webhook sender retries five times with exponential backoff",
               "Use ruff for linting and formatting in every repository",
               "The billing service stores invoices in Postgres 16"]


@pytest.fixture(scope="module")
def sc() -> Iterator[Sidecar]:
    """One real sidecar (real model) for the module; each test works in its own project."""
    root = Path(tempfile.mkdtemp(prefix="mc-", dir="/tmp"))
    sidecar = start_sidecar(root)
    try:
        sidecar.client.wait_idle(timeout_s=120)
        yield sidecar
    finally:
        sidecar.stop()
        kill_spawned_sidecars(root)
        shutil.rmtree(root, ignore_errors=True)


def _ids(answer: dict) -> list[int]:
    return [r["memory_id"] for r in answer["results"]]


def test_fetch_keeps_order_reports_not_found_and_takes_comma_separated_ids(sc: Sidecar) -> None:
    c = sc.client
    a, b, d = (c.remember(text, project="fetch", kind="decision", session_id="s-f")["id"] for text in DISTRACTORS)
    out = c.fetch([d, a, 999_999, a])
    assert out["success"] is True and out["not_found"] == [999_999]
    assert [m["memory_id"] for m in out["results"]] == [d, a], "the order asked, each id once"
    first = out["results"][0]
    assert set(first) == MEMORY_FIELDS
    assert first["content"] == DISTRACTORS[2] and first["memory_kind"] == "decision" and first["project"] == "fetch"
    assert first["session_id"] == "s-f" and first["age_label"] == "today" and first["seen_count"] == 1
    assert first["forgotten"] is False and first["forgotten_at"] is None and first["superseded_by"] is None
    assert abs(first["created_at"] - time.time()) < 60 and first["updated_at"] >= first["created_at"]
    assert [m["memory_id"] for m in c.fetch(f" {b} ,{a},")["results"]] == [b, a]
    assert [m["memory_id"] for m in c.fetch(str(b))["results"]] == [b]
    assert c.fetch([999_998, 999_997]) == {"success": False, "results": [], "not_found": [999_998, 999_997]}
    with pytest.raises(ClientError, match="'x1' is not a memory id"):
        c.fetch(f"{a}, x1")
    with pytest.raises(ClientError, match="at least one memory id"):
        c.fetch(" , ")


def test_list_is_newest_first_and_scoped_like_recall(sc: Sidecar) -> None:
    c = sc.client
    now = time.time()
    ids = [c.remember(f"list scope note {i} about the {word} module", project="lp", kind=kind,
                      created_at=now - (10 - i) * DAY)["id"]
           for i, (word, kind) in enumerate([("parser", "note"), ("lexer", "decision"), ("printer", "note")])]
    glob = c.remember("list scope global convention: tabs never spaces", project="", created_at=now - 20 * DAY)["id"]
    other = c.remember("list scope note for another project", project="lq", created_at=now - DAY)["id"]
    record = c.remember("list scope agent answer", project="lp", kind="response")
    assert record["bookkeeping"]

    listed = c.list_recent(project="lp", limit=500)["results"]
    got = [m["memory_id"] for m in listed]
    assert got[:3] == ids[::-1] and glob in got, "the project's memories newest first, then global ones"
    assert other not in got and record["id"] not in got
    assert set(listed[0]) == MEMORY_FIELDS and listed[0]["content"].startswith("list scope note 2")
    times = [m["created_at"] for m in listed]
    assert times == sorted(times, reverse=True)
    everywhere = [m["memory_id"] for m in c.list_recent(limit=500)["results"]]
    assert other in everywhere and glob in everywhere and set(ids) <= set(everywhere)
    assert other in [m["memory_id"] for m in c.list_recent(project="lp", all_projects=True, limit=500)["results"]]
    assert [m["memory_id"] for m in c.list_recent(project="lp", limit=2)["results"]] == [ids[2], ids[1]]
    assert [m["memory_id"] for m in c.list_recent(project="lp", kind="decision")["results"]] == [ids[1]]
    with_records = c.list_recent(project="lp", include_bookkeeping=True, limit=500)["results"]
    assert any(m["memory_id"] == record["id"] and m["bookkeeping"] for m in with_records)
    with pytest.raises(ClientError, match="limit"):
        c.list_recent(limit=501)


def test_forget_reports_each_id_and_is_idempotent(sc: Sidecar) -> None:
    c = sc.client
    a = c.remember("forget report: the cron job runs at 04:00", project="fr")["id"]
    b = c.remember("forget report: the queue is SQS", project="fr")["id"]
    assert c.forget([a, a, 999_999]) == {"forgotten": [a], "not_found": [999_999], "already": []}
    first = c.fetch([a])["results"][0]
    assert c.forget(f"{b}, {a}") == {"forgotten": [b], "not_found": [], "already": [a]}
    again = c.fetch([a])["results"][0]
    assert again["forgotten"] is True and again["forgotten_at"] == first["forgotten_at"], "the first time stays"
    assert abs(again["forgotten_at"] - time.time()) < 60
    with pytest.raises(ClientError, match="'a' is not a memory id"):
        c.forget("a")
    assert [m["memory_id"] for m in c.list_recent(project="fr")["results"] if m["project"] == "fr"] == []
    shown = [m for m in c.list_recent(project="fr", include_forgotten=True)["results"] if m["project"] == "fr"]
    assert [m["memory_id"] for m in shown] == [b, a] and all(m["forgotten"] for m in shown)
    with pytest.raises(ClientError, match="forgotten"):  # a forgotten memory has no next version
        c.update({"memory_id": a, "content": "forget report: the cron job runs at 05:00"})
    # The same text remembered again is a new memory, not a reinforcement of the forgotten one.
    again_id = c.remember("forget report: the cron job runs at 04:00", project="fr")
    assert again_id["id"] != a and not again_id["duplicate"]


def test_a_forgotten_memory_stops_answering_through_every_channel(sc: Sidecar) -> None:
    c = sc.client
    project = "fg"
    target = c.remember(TARGET, project=project, kind="decision", pinned=True)["id"]
    for text in DISTRACTORS:
        c.remember(text, project=project)
    c.wait_idle(timeout_s=120)
    keyword = c.recall("Lisbon cluster frozen", project=project, mode="keyword")
    assert target in _ids(keyword)
    full = c.recall("Are deploys to the Lisbon cluster frozen on Fridays?", project=project)
    assert _ids(full)[:1] == [target] and full["tier"] == "supported"
    semantic = c.recall(PARAPHRASE, project=project)
    found = [r for r in semantic["results"] if r["memory_id"] == target]
    assert found and "semantic" in found[0]["channel_scores"] and "bm25" not in found[0]["channel_scores"], \
        "only the semantic channels can find the target for the paraphrase"
    asked_at = time.time()

    assert c.forget([target])["forgotten"] == [target]
    assert target not in _ids(c.recall("Lisbon cluster frozen", project=project, mode="keyword"))
    full = c.recall("Are deploys to the Lisbon cluster frozen on Fridays?", project=project)
    assert target not in _ids(full)
    assert full["channel_status"]["semantic"] == "ok" and full["channel_status"]["bm25"] in ("ok", "no_candidates")
    semantic = c.recall(PARAPHRASE, project=project)
    assert target not in _ids(semantic) and semantic["channel_status"]["semantic"] == "ok"
    assert target not in _ids(c.recall("Lisbon cluster frozen", project=None))  # every project
    # Not even what memcue knew before the forget, nor under a budget (the hook's race), nor pinned.
    assert target not in _ids(c.recall("Lisbon cluster frozen Fridays", project=project, as_of=asked_at))
    assert target not in _ids(c.recall("Lisbon cluster frozen Fridays", project=project, valid_at=asked_at))
    assert target not in _ids(c.recall("Lisbon cluster frozen Fridays", project=project, budget_s=5))
    assert target not in _ids(c.recall("what am I working on right now?", project=project))
    assert target not in _ids(c.recall("quantum chromodynamics lattice", project=project))  # pinned fallback
    block = c.session_context(project=project)["context"]
    assert "Lisbon" not in block and DISTRACTORS[0] in block
    assert c.fetch([target])["results"][0]["forgotten"] is True


def test_forget_invalidates_the_answer_cache(sc: Sidecar) -> None:
    c = sc.client
    project = "cache"
    target = c.remember("The cache test: nightly backups go to the Oslo bucket", project=project)["id"]
    c.remember("The cache test: the Oslo office opens at nine", project=project)
    c.wait_idle(timeout_s=120)
    first = c.recall("where do nightly backups go?", project=project)
    assert target in _ids(first) and first["answer_source"] == "run"
    cached = c.recall("where do nightly backups go?", project=project)
    assert cached["answer_source"] == "cache", "the answer cache is on, so the next check means something"
    c.forget(str(target))
    after = c.recall("where do nightly backups go?", project=project)
    assert after["answer_source"] == "run" and target not in _ids(after)


def _project_dir(root: Path, name: str) -> str:
    path = root / "work" / name
    path.mkdir(parents=True, exist_ok=True)
    return os.path.realpath(path)


def test_session_context_once_per_session_within_its_budget(sc: Sidecar, tmp_path: Path) -> None:
    c = sc.client
    project = _project_dir(tmp_path, "orbit-api")
    c.remember_batch([{"content": f"orbit api note {i}: the orbit service keeps a ring buffer of {i * 64} events "
                       "and flushes it to Postgres every few seconds", "project": project, "pinned": i == 0}
                      for i in range(40)])
    c.wait_idle(timeout_s=120)
    tokens = TokenCounter(tmp_path / "tiktoken")

    first = c.session_context(project=project)
    assert re.fullmatch(r"[0-9a-f]{32}", first["session_id"]), "a new session id when none is given"
    assert first["context"].startswith(f"{STANDING_NOTE}\n\n{SESSION_HEADER}\n") and first["included"] > 3
    assert "orbit api note 0:" in first["context"] and 'pinned="yes"' in first["context"]
    assert 0 < first["tokens"] <= SESSION_BLOCK_TOKENS and tokens.count(first["context"]) <= SESSION_BLOCK_TOKENS
    again = c.session_context(session_id=first["session_id"], project=project)
    assert again["session_id"] == first["session_id"] and again["included"] == 0
    assert POINTED.fullmatch(again["context"]), "the second ask gets the one-line pointer"

    small = c.session_context(session_id="tight", project=project, max_tokens=260, max_chars=1000)
    assert small["session_id"] == "tight" and small["context"].startswith(f"{STANDING_NOTE}\n\n{SESSION_HEADER}\n")
    assert 0 < small["included"] < first["included"]
    assert tokens.count(small["context"]) <= 260 and len(small["context"]) <= 1000
    assert small["context"].endswith("left out of this block; recall finds them]\n</memcue-memories>")
    # Memories go before the note: a budget with room for the note alone gives it alone, a smaller one nothing.
    note = c.session_context(session_id="tighter", project=project, max_tokens=115, max_chars=9500)
    assert (note["context"], note["included"]) == (STANDING_NOTE, 0)
    tiny = c.session_context(session_id="tiniest", project=project, max_tokens=120, max_chars=400)
    assert (tiny["context"], tiny["included"]) == ("", 0)
    nothing = c.session_context(project="")
    assert nothing["context"] == "" and nothing["included"] == 0 and nothing["session_id"]


def test_session_context_and_the_session_start_hook_share_one_ledger(sc: Sidecar, tmp_path: Path) -> None:
    project = _project_dir(tmp_path, "shared-ledger")
    sc.client.remember("shared ledger: releases are cut from the main branch", project=project)
    out = sc.client.session_context(session_id="sess-shared", project=project, harness="claude-code")
    assert out["context"].startswith(STANDING_NOTE)
    payload = {"session_id": "sess-shared", "transcript_path": "", "cwd": project,
               "hook_event_name": "SessionStart", "source": "startup"}
    proc = run_hook(payload, "session-start", env=hook_env(sc.root, MEMCUE_HOOK_SPAWN="0"))
    assert proc.returncode == 0 and POINTED.fullmatch(context_of(proc)), "the hook saw the endpoint's block"
    payload["session_id"] = "sess-hook-only"
    assert context_of(run_hook(payload, "session-start", env=hook_env(sc.root, MEMCUE_HOOK_SPAWN="0"))).startswith(
        f"{STANDING_NOTE}\n\n{SESSION_HEADER}\n")


def test_store_forget_leaves_scopes_and_the_vector_index_incrementally(tmp_path: Path, embedder: Embedder) -> None:
    store = Store(tmp_path / "f.db")
    assert store.bind_model(embedder.model_id, embedder.dim)
    target = store.remember(NewMemory(TARGET, project="p")).id
    for text in DISTRACTORS:
        store.remember(NewMemory(text, project="p"))
    embed_pending(store, embedder)
    index = VectorIndex()
    vector = embedder.embed_query(PARAPHRASE)
    assert [mid for mid, _ in index.search(store, vector, project="p", k=1)] == [target]
    generation, journal = store.generation, store.vector_journal.position()
    result = store.forget([target, target, 12345])
    assert (result.forgotten, result.already, result.not_found) == ([target], [], [12345])
    assert store.generation > generation and store.vector_journal.position() != journal
    assert target not in [mid for mid, _ in index.search(store, vector, project="p", k=10)]
    assert target not in [mid for mid, _ in index.search(store, vector, project=None, k=10)]
    assert index.loads == 1 and index.refreshed_rows >= 1, "the journal refreshed the row, no reload"
    assert target not in [mid for mid, _ in VectorIndex().search(store, vector, project="p", k=10)], "full load too"
    assert target not in [mid for mid, _ in store.bm25('"Lisbon"', project="p", limit=10)]
    assert target not in [mid for mid, _ in store.bm25('"Lisbon"', project="p", limit=10, include_superseded=True)]
    assert store.doc_count("p") == len(DISTRACTORS)
    generation = store.generation
    assert store.forget([target]).already == [target] and store.generation == generation, "nothing changed"
    store.close()
