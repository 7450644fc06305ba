"""The one write-preparation path: what the store writes and what the near-duplicate check compares, redacted
once per remember."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcue.core import redaction
from memcue.core.limits import CAPTURE_TAIL_CHARS
from memcue.sidecar.dedup import find_near_duplicate
from memcue.sidecar.recall import VectorIndex
from memcue.sidecar.store import NewMemory, Store, prepare_write
from memcue.sidecar.store.write import prepare

GH = "ghp_" + "a1B2" * 9


def test_prepare_cleans_strips_redacts_flags_and_digests() -> None:
    p = prepare_write(NewMemory(content=f"deploy\r\nwith {GH}\x00", project="p\x07", kind="note",
                                metadata={"embed_text": f"[May] {GH}"}))
    assert p.content == "deploy\nwith [REDACTED:github-token]" and p.redacted == 1
    assert p.project == "p" and p.metadata["embed_text"] == "[May] [REDACTED:github-token]"
    assert not p.bookkeeping and len(p.digest) == 40
    assert prepare_write(NewMemory(content="File changed: src/app.py")).bookkeeping
    assert prepare_write(NewMemory(content="done", kind="response")).bookkeeping


def test_a_prepared_write_is_stored_as_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path / "m.db", want_vec=False)
    try:
        calls: list[str] = []
        real = redaction.redact

        def counting(text: str) -> object:
            calls.append(text)
            return real(text)

        monkeypatch.setattr(redaction, "redact", counting)
        memory = NewMemory(content=f"deploy with {GH}", project="p")
        check = find_near_duplicate(store, VectorIndex(), None, memory)  # no model: prepared, not compared
        assert check.memory_id is None and check.prepared is not None and len(calls) == 1
        result = store.remember_many([check.prepared])[0]
        assert len(calls) == 1 and result.redacted == 1
        assert store.fetch([result.id])[result.id]["content"] == "deploy with [REDACTED:github-token]"
        assert store.remember(memory).duplicate  # the same text again, prepared by the store
    finally:
        store.close()


def test_a_huge_capture_is_cut_before_redaction_and_guarded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A captured text far over the cap reaches the redactor cut to its two ends (``PRECUT_CHARS`` in all: a
    pasted megabyte costs no more than a long answer); the stored text is the original's start and end, within
    the cap, each at least ``PRECUT_GUARD_CHARS`` away from the pre-cut, and its marker counts the characters
    left out of the original."""
    seen: list[int] = []
    real = redaction.redact

    def measuring(text: str) -> object:
        seen.append(len(text))
        return real(text)

    monkeypatch.setattr(redaction, "redact", measuring)
    text = "\n".join(f"line {n} of a pasted build log, step {n % 9} ok" for n in range(20_000))
    text += "\nwhy does step 7 fail after this?"
    p = prepare_write(NewMemory(content=text, kind="request", project="p"))
    assert seen and sum(seen) <= prepare.PRECUT_CHARS
    head, rest = p.content.split("\n[memcue: cut here, ", 1)
    count, tail = rest.split(" more characters left out]\n", 1)
    assert len(p.content) <= prepare.CAPTURE_MAX_CHARS and text.startswith(head + "\n")
    assert text.endswith("\n" + tail) and tail.endswith("why does step 7 fail after this?")
    assert int(count.replace(",", "")) == len(text) - len(head) - len(tail)
    assert len(head) <= prepare.PRECUT_CHARS - CAPTURE_TAIL_CHARS - 2 * prepare.PRECUT_GUARD_CHARS
    assert len(tail) <= CAPTURE_TAIL_CHARS
    # A memory written on purpose is never cut, whatever its length.
    assert prepare_write(NewMemory(content=text[:50_000], kind="note")).content == text[:50_000]
