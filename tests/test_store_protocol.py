"""The SQLite store implements the store Protocol: every member, with the same parameters."""

from __future__ import annotations

import inspect
from pathlib import Path

from memcue.sidecar.store import Store, StoreProtocol


def _members() -> list[str]:
    return [n for n in dir(StoreProtocol) if not n.startswith("_") and n in StoreProtocol.__dict__]


def test_sqlite_store_is_a_store(tmp_path: Path) -> None:
    store: StoreProtocol = Store(tmp_path / "m.db", want_vec=False)
    try:
        assert isinstance(store, StoreProtocol)
    finally:
        store.close()


def test_every_protocol_member_has_the_same_shape_on_the_sqlite_store() -> None:
    members = _members()
    assert {"remember_many", "fetch", "bm25", "scope_size", "all_vectors", "vector_journal"} <= set(members)
    for name in members:
        wanted, have = StoreProtocol.__dict__[name], inspect.getattr_static(Store, name)
        assert isinstance(have, property) == isinstance(wanted, property), name
        if isinstance(wanted, property):
            continue
        w, h = inspect.signature(wanted), inspect.signature(have)
        assert [(p.name, p.kind) for p in w.parameters.values()] == \
               [(p.name, p.kind) for p in h.parameters.values()], name
        assert [p.default is inspect.Parameter.empty for p in w.parameters.values()] == \
               [p.default is inspect.Parameter.empty for p in h.parameters.values()], name


def test_session_projects_are_the_projects_of_the_newest_sessions(tmp_path: Path) -> None:
    """What a sidecar start reads native memory files for: ``sessions``' projects, newest first, each once."""
    from memcue.sidecar.store import NewMemory

    store = Store(tmp_path / "m.db")
    for at, (session, project) in enumerate([("s1", "/a"), ("s2", "/b"), ("s3", "/a"), ("s4", "/c")]):
        store.remember(NewMemory(f"note {at} of {session}", project=project, session_id=session,
                                 created_at=1_000.0 + at))
    store.remember(NewMemory("no session", project="/d", created_at=2_000.0))
    assert store.session_projects(10) == ["/c", "/a", "/b"]
    assert store.session_projects(2) == ["/c", "/a"]
    assert store.session_projects(10) == list(dict.fromkeys(s["project"] for s in store.sessions(None, 10)))
