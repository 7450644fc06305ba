"""Issue 16, finding 6 at the store: a line's ``source_id`` finds the memory it was written as, and a new version
written for it takes the id over (``by_source_id``, ``update(carry_source_id=True)``), on the real SQLite store."""

from __future__ import annotations

from pathlib import Path

from memcue.sidecar.store import NewMemory, Store


def test_finding6_source_id_lookup_and_carry(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db", want_vec=False)
    try:
        sid = "import:/data/a/notes.jsonl:3"
        first = store.remember_many([NewMemory(content="TTL is 300 s", project="p", source_id=sid)])[0]
        assert store.by_source_id(sid)["id"] == first.id and store.by_source_id("import:other:1") is None
        plain = store.update(first.id, NewMemory(content="TTL is 450 s", project="p", source_id=sid))
        assert store.by_source_id(sid)["id"] == first.id, "a plain update leaves the id where it was"
        carried = store.update(plain.id, NewMemory(content="TTL is 900 s", project="p", source_id=sid),
                               carry_source_id=True)
        assert store.by_source_id(sid)["id"] == carried.id and store.fetch([first.id])[first.id]["source_id"] is None
        assert store.fetch([plain.id])[plain.id]["superseded_by"] == carried.id
        # A delivery counted on an existing memory (same text) is found through it.
        other = store.remember_many([NewMemory(content="Logs go to Loki", project="p")])[0]
        again = store.remember_many([NewMemory(content="Logs go to Loki", project="p", source_id="import:x:1")])[0]
        assert again.duplicate and store.by_source_id("import:x:1")["id"] == other.id
        moved = store.update(other.id, NewMemory(content="Logs go to Grafana Loki", project="p",
                                                 source_id="import:x:1"), carry_source_id=True)
        assert store.by_source_id("import:x:1")["id"] == moved.id
    finally:
        store.close()
