"""One spool file per writer, ingested exactly once, and idle files removed without losing a line (issue 4)."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest

from memcue.core.spool_format import remember_prompt
from memcue.hooks import spool
from memcue.sidecar.capture.spool import IDLE_REMOVE_S, SpoolReader
from memcue.sidecar.store import Store


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMCUE_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _record(text: str, session: str) -> dict[str, object]:
    return remember_prompt(text, project="/w/p", session_id=session, harness="claude-code")


def _age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


def test_each_writer_has_its_own_file(home: Path) -> None:
    a = spool.append(_record("one", "s1"), spool.spool_path("claude-code", "s1"))
    b = spool.append(_record("two", "s2"), spool.spool_path("claude-code", "s2"))
    c = spool.append(_record("three", "s1"), spool.spool_path("codex", "s1"))
    again = spool.append(_record("four", "s1"), spool.spool_path("claude-code", "s1"))
    assert len({a, b, c}) == 3 and again == a
    assert a.parent == home / "spool"
    assert a.name.startswith("hook-claude-code-") and c.name.startswith("hook-codex-")
    assert spool.spool_path("../../etc", "x").parent == home / "spool", "a harness name cannot leave the folder"


def test_ingest_reads_every_writer_once_and_removes_only_idle_read_files(home: Path) -> None:
    s1 = spool.append(_record("first session prompt", "s1"), spool.spool_path("claude-code", "s1"))
    s2 = spool.append(_record("second session prompt", "s2"), spool.spool_path("claude-code", "s2"))
    store = Store(home / "memcue.db", want_vec=False)
    try:
        reader = SpoolReader(home / "spool", store)
        assert reader.ingest() == 2
        assert reader.ingest() == 0, "read again, nothing new is stored"
        assert s1.exists() and s2.exists(), "recent files stay"

        _age(s1, IDLE_REMOVE_S + 60)
        _age(s2, IDLE_REMOVE_S + 60)
        held = os.open(s2, os.O_RDONLY)
        fcntl.flock(held, fcntl.LOCK_SH)  # a writer is appending to s2 right now
        try:
            assert reader.remove_idle() == [s1.name]
        finally:
            os.close(held)
        assert not s1.exists() and s2.exists()
        assert store.get_meta(f"spool_offset:{s1.name}") is None

        # A writer of the removed session comes back: a new file, read from its start.
        spool.append(_record("the session resumed", "s1"), spool.spool_path("claude-code", "s1"))
        # s2 got a line after it was read: it is not removed before that line is stored.
        spool.append(_record("late line", "s2"), s2)
        _age(s2, IDLE_REMOVE_S + 60)
        assert reader.remove_idle() == []
        assert reader.ingest() == 2
        contents = sorted(r["content"] for r in store.list_memories(limit=10))
        assert contents == ["first session prompt", "late line", "second session prompt", "the session resumed"]
    finally:
        store.close()


def test_writer_reopens_a_file_removed_under_it(home: Path) -> None:
    path = spool.append(_record("before", "s9"), spool.spool_path("claude-code", "s9"))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    path.unlink()  # as the sidecar would, between a writer's open and its lock
    assert os.fstat(fd).st_nlink == 0
    os.close(fd)
    spool.append(_record("after", "s9"), path)
    assert path.exists() and b"after" in path.read_bytes()


def test_a_line_that_fails_through_a_fault_of_ours_is_kept_not_dropped(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug while loading a line (a TypeError, not bad data) keeps the line in held/ and the rest goes on."""
    path = spool.append(_record("the line memcue cannot load today", "s1"), spool.spool_path("claude-code", "s1"))
    spool.append(_record("a line that loads", "s1"), path)
    import memcue.sidecar.capture.spool as reader_module
    real = reader_module.parse_record

    def faulty(line: bytes) -> dict[str, object] | None:
        if b"cannot load today" in line:
            raise TypeError("a bug in memcue, not in the line")
        return real(line)

    monkeypatch.setattr(reader_module, "parse_record", faulty)
    store = Store(home / "memcue.db", want_vec=False)
    try:
        assert SpoolReader(home / "spool", store).ingest() == 1
        held = (home / "spool" / "held" / path.name).read_bytes()
        assert b"cannot load today" in held and held.endswith(b"\n")
        assert store.get_meta("spool_broken:" + path.name) is None, "a fault of ours is not a broken line"
    finally:
        store.close()


def test_a_spool_time_that_is_not_a_finite_number_is_ignored(home: Path) -> None:
    """NaN or an infinite ``ts`` (Python's json reads both) must not become a memory's time."""
    path = spool.spool_path("claude-code", "s1")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'{"op":"remember","content":"a prompt from a NaN clock","ts":NaN}\n'
                     b'{"op":"remember","content":"a prompt from before time","ts":-Infinity}\n')
    store = Store(home / "memcue.db", want_vec=False)
    try:
        before = time.time()
        assert SpoolReader(home / "spool", store).ingest() == 2
        rows = store.list_memories(limit=10)
        assert len(rows) == 2 and all(before - 5 <= r["created_at"] <= time.time() + 5 for r in rows)
    finally:
        store.close()
