"""The store on a real SQLite file: schema, sanitising (C06), bookkeeping flags (C20), idempotent writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memcue.sidecar.store import NewMemory, Store, sanitize_text
from memcue.sidecar.store.sqlite.migrations import MIGRATIONS
from memcue.sidecar.store.write.bookkeeping import is_bookkeeping

BOOKKEEPING = [
    "session ended",
    "Session started in billing-api",
    "[codex] session ended (exit) at 17:42 in billing",
    "[claude-code] session closed (exit) at 17:42 in billing-api",
    "File changed: src/app.py",
    "File changed",
    "file created:",
    "File edited: web/src/App.tsx",
    "files: a.py, b.md",
    "Tool: Bash completed (exit 0)",
    "Read 3 files",
    "billing-api: session started",
    "- session ended",
    "2026-11-02T10:00:01Z session ended",
    "Session abc123 resumed",
    "PostToolUse: Edit billing/money.py ✔",
    "[claude-code] SessionEnd reason=clear 2024-07-08T16:05:11Z",
    "web-ui: 4 files edited (a.tsx, b.ts)",
    "Subagent finished: Explore (3 tool uses, 9.8s)",
    "Stop hook fired; turn finished in 41.2s",
    "Edited app.py",
    "wrote src/a.py, src/b.py",
    "Created tests/test_x.py",
    "Tool result: Bash exit 0",
    "tool output: 3 lines",
    "Bash: pytest -q (exit 0)",
    "shell: make test, exit code 2",
    "Bash(npm run build) exited 1",
]
REAL = [
    "We decided the session ended event should flush the cache because of leaks",
    "Session started failing after the upgrade because the token expired",
    "File changed detection is broken in watchfiles, use polling",
    "app.py changed because the retry loop double-charged customers",
    "files are stored in S3 under the tenant prefix",
    "Read the docs before deploying: make deploy ENV=staging",
    "Updated the retry policy to 5 attempts",
    "Edited app.py because the retry was wrong",
    "Tool result: the build failed because of ruff",
    "Deleted the old users table",
    "Bash: run the migrations before the tests, or pytest exits 2",
    "shell: always pass --frozen to uv sync in CI (exit 1 otherwise)",
]


@pytest.mark.parametrize("text", BOOKKEEPING)
def test_C20_bookkeeping_rows_are_flagged(text: str) -> None:
    assert is_bookkeeping(text)


@pytest.mark.parametrize("text", REAL)
def test_C20_real_memories_are_not_flagged(text: str) -> None:
    assert not is_bookkeeping(text)


def test_C06_sanitize_keeps_text_and_drops_poison() -> None:
    raw = 'tab\there\nline\x00nul \x1b[31mred\x1b[0m \ud800 C:\\new\\table\\x "q" 日本 🎉\r\nend\\'
    clean = sanitize_text(raw)
    assert clean == 'tab\there\nlinenul red \ufffd C:\\new\\table\\x "q" 日本 🎉\nend\\'
    clean.encode("utf-8")  # no lone surrogate survives


def test_store_schema_flags_and_idempotent_writes(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db")
    assert store.schema_version == len(MIGRATIONS)
    assert store.vec.available and store.vec.version.startswith("v")
    first = store.remember(NewMemory("File changed: src/app.py", project="p", source_id="spool:1"))
    again = store.remember(NewMemory("File changed: src/app.py", project="p", source_id="spool:1"))
    real = store.remember(NewMemory("we cache builds \x00per branch", project="p"))
    assert first.bookkeeping and again.duplicate and again.id == first.id and not real.bookkeeping
    # Stored at once and keyword-searchable before any vector exists; bookkeeping never indexed.
    assert [mid for mid, _ in store.bm25('"cache"', project="p", limit=5)] == [real.id]
    assert store.bm25('"changed"', project="p", limit=5) == []
    assert store.fetch([real.id])[real.id]["content"] == "we cache builds per branch"
    listed = store.list_memories(project="p")
    assert {m["id"] for m in listed} == {first.id, real.id}  # bookkeeping stays listable
    assert [r[0] for r in store.pending_embeddings()] == [real.id]  # bookkeeping never embedded
    store.close()


def test_store_reopen_keeps_rows_and_model_mismatch_keeps_everything(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db")
    assert store.bind_model("model-a", 4)
    mid = store.remember(NewMemory("alpha", project="p")).id
    store.set_embeddings([(mid, np.array([1, 0, 0, 0], dtype=np.float32).tobytes())])
    store.close()
    reopened = Store(tmp_path / "m.db")
    assert reopened.schema_version == len(MIGRATIONS)  # migrations ran once
    assert not reopened.bind_model("model-b", 8)
    assert "mismatch" in reopened.vector_note
    assert reopened.fetch([mid])[mid]["content"] == "alpha"
    assert reopened.bind_model("model-a", 4)
    assert reopened.knn(np.array([1, 0, 0, 0], dtype=np.float32).tobytes(), project="p", k=3)[0][0] == mid


def test_C18_store_without_sqlite_vec_is_keyword_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCUE_DISABLE_VEC", "1")
    store = Store(tmp_path / "m.db")
    assert not store.vec.available
    assert not store.bind_model("model-a", 4)
    mid = store.remember(NewMemory("rotate the build-cache key", project="p")).id
    assert store.bm25('"rotate"', project="p", limit=3)[0][0] == mid
    with pytest.raises(RuntimeError):
        store.knn(b"\x00" * 16, project="p", k=1)
    # No vec0 table was ever created.
    assert (
        not store._reader().execute("SELECT name FROM sqlite_master WHERE name = 'memories_vec'").fetchall()
    )


def test_knn_is_scoped_and_filters_kinds_inside_the_search(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db")
    assert store.bind_model("model-a", 2)
    rows = store.remember_many(
        [NewMemory(f"captured prompt {i}", kind="request", project="p") for i in range(30)]
        + [NewMemory("the real memory", project="p"), NewMemory("global memory"), NewMemory("other", project="q")]
    )
    vec = {r.id: np.array([1.0, 0.01 * i], dtype=np.float32) for i, r in enumerate(rows)}
    vec[rows[-3].id] = np.array([0.2, 1.0], dtype=np.float32)  # the real memory is the farthest in p
    store.set_embeddings([(mid, v.tobytes()) for mid, v in vec.items()])
    query = np.array([1.0, 0.0], dtype=np.float32).tobytes()
    found = [mid for mid, _ in store.knn(query, project="p", k=5, exclude_kinds=("request",))]
    assert sorted(found) == sorted([rows[-3].id, rows[-2].id])  # the real and the global memory only
    assert rows[-1].id not in found  # another project never leaks in
    assert len(store.knn(query, project="p", k=5)) == 5  # without the filter, prompts fill the top k


def test_doc_count_counts_only_memories_that_can_answer(tmp_path: Path) -> None:
    store = Store(tmp_path / "count.db", want_vec=False)
    try:
        kept = store.remember(NewMemory("Deploys are frozen on Fridays", kind="decision", project="p")).id
        store.remember(NewMemory("The CI cache key is rotated per release", project=""))  # global: counts
        old = store.remember(NewMemory("Staging listens on port 5432", project="p")).id
        store.update(old, NewMemory("Staging listens on port 5433", project="p"))  # the old row is superseded
        gone = store.remember(NewMemory("We ship from the release branch", project="p")).id
        store.forget([gone])
        for i in range(10):
            store.remember(NewMemory(f"prompt {i}: how do we cut invoices for account {i}?", kind="request",
                                     project="p"))
        store.remember(NewMemory("agent answer about invoices", kind="response", project="p"))
        store.remember(NewMemory("session started in p at 10:02", kind="event", project="p"))
        store.remember(NewMemory("session ended", project="p"))  # bookkeeping
        store.remember(NewMemory("Elsewhere: the build uses pnpm", project="q"))
        assert store.fetch([kept])[kept]["kind"] == "decision"
        assert store.doc_count("p") == 3, "the decision, the update and the global note"
        assert store.doc_count(None) == 4
    finally:
        store.close()
