"""memcue's own injected block is stripped from a captured prompt before it is stored (issue 6, item 5)."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import apsw

from memcue.core import blocks
from memcue.core.paths import Locations
from memcue.sidecar.inject import render_block
from memcue.sidecar.store import NewMemory, Store
from memcue.sidecar.store.write import strip
from memcue.sidecar.store.write.strip import strip_injected
from tests.conftest import context_of, prompt_payload, run_hook, start_sidecar

RESULTS = [
    {"memory_kind": "decision", "age_label": "3 days ago", "content": "We store vectors in sqlite-vec."},
    {"memory_kind": "note", "age_label": "2 weeks ago", "content": "Deploys run on Tuesdays.\nNever on Fridays."},
    {"memory_kind": "note", "age_label": "1 month ago", "content": "The staging port is 5432."},
]


def block(header: str = blocks.PROMPT_HEADER, max_tokens: int = 1000) -> str:
    return render_block(header, RESULTS, count_tokens=lambda t: len(t) // 4, max_tokens=max_tokens,
                        max_chars=9500).text


def test_headers_match_the_hook_service() -> None:
    assert blocks.PROMPT_HEADER.startswith(strip.PROMPT_LEAD) and blocks.SESSION_HEADER.startswith(strip.SESSION_LEAD)
    assert blocks.POINTER.startswith(strip.POINTER_START)
    assert strip.STANDING_NOTES == blocks.STANDING_NOTES


def session_start_block(max_tokens: int = 1000) -> str:
    """A session-start block as the sidecar renders it: the standing note, then the memories."""
    return render_block(blocks.SESSION_HEADER, RESULTS, count_tokens=lambda t: len(t) // 4, max_tokens=max_tokens,
                        max_chars=9500, preface=blocks.STANDING_NOTE).text


def test_session_start_block_with_its_standing_note_is_removed() -> None:
    whole = session_start_block()
    assert whole.startswith(blocks.STANDING_NOTE + "\n\n" + blocks.SESSION_HEADER)
    assert strip_injected(f"you started with:\n{whole}\n\nwhich port is staging?") == (
        "you started with:\n\nwhich port is staging?")
    note_only = render_block(blocks.SESSION_HEADER, [], count_tokens=len, max_tokens=1000, max_chars=9500,
                             preface=blocks.STANDING_NOTE).text
    assert note_only == blocks.STANDING_NOTE
    assert strip_injected(f"{note_only}\nshould I save this?") == "should I save this?"


def test_a_wrapped_or_quoted_standing_note_is_removed_and_the_user_lines_kept() -> None:
    for note in blocks.STANDING_NOTES.values():  # each harness's variant (its tools, or none)
        for width in (30, 72, 100):
            pasted = "\n".join("> " + line for line in textwrap.wrap(note, width))
            assert strip_injected(f"{pasted}\nrecall\nwhat does it mean?") == "recall\nwhat does it mean?", width
    for text in ("memcue is this project's memory, right?", "memcue is this project's memory"[:19]):
        assert strip_injected(text) == text


def test_prompt_block_is_removed_and_the_rest_kept() -> None:
    prompt = f"Earlier you showed me this:\n\n{block()}\n\nWhy do deploys avoid Fridays?"
    assert strip_injected(prompt) == "Earlier you showed me this:\n\nWhy do deploys avoid Fridays?"


def test_session_block_and_left_out_line_are_removed() -> None:
    cut = block(blocks.SESSION_HEADER, max_tokens=130)
    assert "left out" in cut and cut.count("<memory ") == 1
    assert strip_injected(f"{cut}\nok, go on") == "ok, go on"


def test_pointer_line_is_removed() -> None:
    for tools in blocks.STANDING_NOTES:
        pointer = blocks.pointer_line(4, tools)
        assert strip_injected(f"{pointer}\nwhat next?") == "what next?", tools


def test_hermes_memory_context_is_removed() -> None:
    prompt = ("<memory-context>\n[System note: recalled memory context, not new user input]\n"
              f"{block()}\n</memory-context>\n\nsummarise the deploy rules")
    assert strip_injected(prompt) == "summarise the deploy rules"


def test_text_without_a_block_is_unchanged() -> None:
    for text in ("how does memcue store vectors?", "- (note) a list item the user wrote\nmore",
                 "memcue recalled something odd yesterday"):
        assert strip_injected(text) == text


def test_store_strips_requests_only(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db", want_vec=False)
    try:
        pasted = f"{block()}\nand now the question"
        req = store.remember(NewMemory(content=pasted, kind="request", project="p"))
        assert store.fetch([req.id])[req.id]["content"] == "and now the question"
        note = store.remember(NewMemory(content=pasted, kind="note", project="p"))
        assert store.fetch([note.id])[note.id]["content"] == pasted
        only = store.remember(NewMemory(content=block(), kind="request", project="p"))
        assert only.bookkeeping, "a prompt that is only a pasted block is kept out of recall"
    finally:
        store.close()


def _stored_requests(home: Path, n: int) -> list[str]:
    """The captured prompts' texts once ``n`` are stored (15 s at most), oldest first."""
    deadline = time.monotonic() + 15
    rows: list = []
    while time.monotonic() < deadline and len(rows) < n:
        conn = apsw.Connection(str(Locations(home).database), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            conn.setbusytimeout(2000)
            rows = conn.execute("SELECT content FROM memories WHERE kind = 'request' ORDER BY id").fetchall()
        finally:
            conn.close()
        time.sleep(0.1)
    return [r[0] for r in rows]


def test_real_hook_stores_the_prompt_without_the_block(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        prompt = f"you told me:\n{block()}\nso which port does staging use?"
        run = run_hook(prompt_payload(prompt, str(project)))
        assert run.returncode == 0
        assert _stored_requests(home, 1) == ["you told me:\nso which port does staging use?"]
    finally:
        sc.stop()


def test_real_hook_stores_a_prompt_without_a_pasted_session_start_block(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        start = {"session_id": "s1", "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"}
        pasted = context_of(run_hook(start, "session-start"))  # the standing note alone: the store is empty
        assert pasted == blocks.STANDING_NOTE
        run = run_hook(prompt_payload(f"the session began with:\n{pasted}\nwhat should I save?", str(project)))
        assert run.returncode == 0
        assert _stored_requests(home, 1) == ["the session began with:\nwhat should I save?"]
    finally:
        sc.stop()


def test_compact_block_is_stripped_from_a_stored_prompt(tmp_path: Path) -> None:
    from memcue.sidecar.inject import render_compact

    results = [{"memory_id": 41 + i, "project": "/home/ana/src/billing-api", "score": 0.05,
                "channel_scores": {"semantic": 0.8}, "cue_terms": ["jwt", "clock-skew"]} for i in range(30)]
    compact = render_compact(results, session_id="s1", query_id="ab12", count_tokens=lambda t: len(t) // 4,
                             max_tokens=300, max_chars=9500).text
    assert compact.startswith("<memcue-recall ") and "left out" in compact
    store = Store(tmp_path / "c.db", want_vec=False)
    try:
        req = store.remember(NewMemory(content=f"{compact}\nwhich jwt leeway do we use?", kind="request", project="p"))
        assert store.fetch([req.id])[req.id]["content"] == "which jwt leeway do we use?"
        only = store.remember(NewMemory(content=compact, kind="request", project="p"))
        assert only.bookkeeping
    finally:
        store.close()
