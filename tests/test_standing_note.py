"""Issue 14: memcue's standing note opens every session-start block (DESIGN.md section 7, "the agent saves").

It stays short (under 120 o200k tokens, counted with the sidecar's own counter), reads as information about a
tool (no "MUST", no shouting), stands before and outside the block of recalled memories, and gives way only after
every memory did when the budget is tight. The real hook and sidecar paths are in test_C15_session_sources.py,
test_adapter_codex.py, test_adapter_hermes.py, test_memory_api.py and test_sidecar_e2e.py.
"""

from __future__ import annotations

import json
import re

import pytest

from memcue.adapters import claude_code, codex, hermes
from memcue.core.blocks import (
    SESSION_HEADER,
    STANDING_NOTE,
    STANDING_NOTE_HERMES,
    STANDING_NOTE_NO_TOOLS,
    STANDING_NOTES,
    pointer_line,
)
from memcue.sidecar.inject import render_block
from memcue.sidecar.runtime.tokenizer import TokenCounter

ROWS = [{"memory_id": i, "content": f"decision {i}: invoices are cut on day {i} by ops/cron.yml",
         "memory_kind": "decision", "age_label": "2 days ago", "tier": "supported"} for i in range(30)]


@pytest.fixture(scope="module")
def counter(tmp_path_factory: pytest.TempPathFactory) -> TokenCounter:
    counter = TokenCounter(tmp_path_factory.mktemp("tiktoken"))
    assert counter.mode == "tiktoken", counter.error  # the real o200k_base count, not the estimate
    return counter


def test_the_note_is_short_plain_and_says_what_to_save(counter: TokenCounter) -> None:
    assert counter.count(STANDING_NOTE) < 120
    assert "\n" not in STANDING_NOTE
    shouted = [w for w in re.findall(r"\b[A-Z]{2,}\b", STANDING_NOTE) if w != "MCP"]
    assert shouted == [] and "!" not in STANDING_NOTE
    for words in ("remember", "recall", "update", "decision", "reason", "cause", "fix", "command", "preference",
                  "environment", "duplicate"):
        assert words in STANDING_NOTE, words
    assert counter.count(pointer_line(27_000)) < 60 and "\n" not in pointer_line(0)


def test_every_variant_of_the_note_is_short_plain_and_names_only_its_tools(counter: TokenCounter) -> None:
    """The notes of a Hermes session (its provider's two tools) and of one without memcue's tools (``--no-mcp``)
    obey the same rules, and each pointer names the saving tool of its note or none."""
    for tools, note in STANDING_NOTES.items():
        assert counter.count(note) < 120 and "\n" not in note and "!" not in note, tools
        assert [w for w in re.findall(r"\b[A-Z]{2,}\b", note) if w != "MCP"] == [], tools
        assert note.startswith("memcue is this project's memory across sessions"), tools
    assert "update_memory" not in STANDING_NOTE_HERMES and "memcue_remember" in STANDING_NOTE_HERMES
    assert "MCP" not in STANDING_NOTE_NO_TOOLS and "`memcue remember`" in STANDING_NOTE_NO_TOOLS
    assert "memcue_remember" in pointer_line(3, "hermes") and "tool" not in pointer_line(3, "none")
    assert pointer_line(3) == pointer_line(3, "mcp") and "MCP tool remember" in pointer_line(3)


def test_memories_give_way_before_the_note(counter: TokenCounter) -> None:
    def render(max_tokens: int, max_chars: int = 9500) -> str:
        return render_block(SESSION_HEADER, ROWS, count_tokens=counter.count, max_tokens=max_tokens,
                            max_chars=max_chars, preface=STANDING_NOTE).text

    note_tokens = counter.count(STANDING_NOTE)
    roomy = render(600)
    assert roomy.startswith(f"{STANDING_NOTE}\n\n{SESSION_HEADER}\n<memcue-memories>\n<memory id=")
    assert counter.count(roomy) <= 600 and 'kind="decision"' in roomy
    assert roomy.endswith("left out of this block; recall finds them]\n</memcue-memories>")
    assert render(note_tokens + 5) == STANDING_NOTE, "no memory fits: the note alone"
    assert render(note_tokens - 1) == "", "not even the note fits: nothing"
    assert render(600, max_chars=len(STANDING_NOTE) - 1) == ""
    empty = render_block(SESSION_HEADER, [], count_tokens=counter.count, max_tokens=600, max_chars=9500,
                         preface=STANDING_NOTE)
    assert (empty.text, empty.included, empty.tokens) == (STANDING_NOTE, 0, note_tokens)


def test_the_adapters_keep_the_note_when_they_cut_a_long_block(counter: TokenCounter) -> None:
    long_rows = [{**row, "content": row["content"] + " " + "x" * 400} for row in ROWS]
    block = render_block(SESSION_HEADER, long_rows, count_tokens=counter.count, max_tokens=100_000,
                         max_chars=100_000, preface=STANDING_NOTE).text
    assert len(block) > 9500
    payload = {"session_id": "s1", "cwd": "/tmp", "hook_event_name": "SessionStart", "source": "startup"}
    for adapter in (claude_code, codex):
        out = adapter.render(adapter.parse("session-start", payload), block)
        context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
        assert context.startswith(f"{STANDING_NOTE}\n\n{SESSION_HEADER}\n") and len(context) <= 9500, adapter
        assert context.endswith("left out of this block; recall finds them]\n</memcue-memories>")
    text = hermes.render(hermes.parse("session-start", payload), block)
    assert text.startswith(f"{STANDING_NOTE}\n\n{SESSION_HEADER}\n") and len(text) <= hermes.MAX_CHARS
