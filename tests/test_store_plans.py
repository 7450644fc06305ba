"""Query plans that must not depend on the planner's statistics (issue 4: serving at 27,000 memories).

The benchmark found that after a project's rows were renamed (statistics gathered before), SQLite drove the
BM25 join from the scope index and ran the full-text MATCH once per row: 2.8 s per recall. Every join with
the full-text table or the entity links must start from the selective side, whatever ANALYZE said.
"""

from __future__ import annotations

from pathlib import Path

from memcue.sidecar.recall.channels import graph_counts as graph
from memcue.sidecar.store import NewMemory, Store


def _plan(store: Store, sql: str, args: list[object]) -> str:
    rows = store._reader().execute(f"EXPLAIN QUERY PLAN {sql}", args).fetchall()
    return " / ".join(str(r[3]) for r in rows)


def _stale_store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "plans.db", want_vec=False)
    store.remember_many([NewMemory(f"note {i}: the ledger worker retries step {i % 7}", project="/old")
                         for i in range(3000)])
    store._writer.execute("ANALYZE")  # statistics that know only /old
    store.remember_many([NewMemory(f"entry {i}: rotate the cache key OPS-{i}", project="/new") for i in range(300)])
    store._writer.execute("UPDATE memories SET project = '/new' WHERE project = '/old' AND id % 2 = 0")
    return store


def test_bm25_and_document_frequencies_start_from_the_full_text_match(tmp_path: Path) -> None:
    store = _stale_store(tmp_path)
    try:
        statements: list[tuple[str, list[object]]] = []

        def trace(cursor: object, sql: str, bindings: object) -> bool:  # the statements recall really runs
            if "memories_fts" in sql and not sql.startswith("EXPLAIN"):
                statements.append((sql, list(bindings or ())))  # type: ignore[call-overload]
            return True

        store._reader().exec_trace = trace
        assert store.bm25('"rotate" OR "ledger"', project="/new", limit=10, exclude_kinds=("request",))
        assert store.doc_frequencies(["rotate", "ledger"], project="/new", cap=100)["ledger"] == 100
        store._reader().exec_trace = None
        assert len(statements) == 3
        for sql, args in statements:
            steps = [step for step in _plan(store, sql, args).split(" / ") if step.startswith(("SCAN", "SEARCH"))]
            assert "VIRTUAL TABLE" in steps[0], (sql, steps)
    finally:
        store.close()


def test_entity_joins_start_from_the_entity_links(tmp_path: Path) -> None:
    store = _stale_store(tmp_path)
    try:
        ids = [eid for (eid,) in store._reader().execute("SELECT id FROM entities ORDER BY df LIMIT 3")]
        assert ids
        statements: list[tuple[str, list[object]]] = []

        def trace(cursor: object, sql: str, bindings: object) -> bool:
            if "memory_entities" in sql and not sql.startswith("EXPLAIN"):
                statements.append((sql, list(bindings or ())))  # type: ignore[call-overload]
            return True

        store._reader().exec_trace = trace
        assert graph.scoped_dfs(store, ids, project="/new", cap=50)
        store.memories_with_entities(ids, project="/new", limit=5)
        store._reader().exec_trace = None
        assert len(statements) == 2
        for sql, args in statements:
            steps = [step for step in _plan(store, sql, args).split(" / ") if step.startswith(("SCAN", "SEARCH"))]
            first_join = next(step for step in steps if " me " in f"{step} " or " m " in f"{step} ")
            assert " me " in f"{first_join} ", (sql, steps)
    finally:
        store.close()
