"""memcue's own injected text out of a captured prompt, so recalled memories are not stored again as new ones.

A user may paste (or a harness may echo) what memcue injected: the session-start block's standing note (one
line; a copy a terminal wrapped into several lines goes whole, each piece being a part of the note); a full
block: its header (``PROMPT_HEADER`` / ``SESSION_HEADER`` / ``TOOL_HEADER``, recognised by its lead, wrapped
pieces of its ``DATA_NOTE`` too) and the ``<memcue-memories>…</memcue-memories>`` element (a copy cut before its
closing tag loses the lines that look like the block's: ``<memory …>`` lines, the left-out line), or the one-line
session pointer; the compact block ``<memcue-recall session_id="…" query_id="…">…</memcue-recall>``
(``render.render_compact``; likewise when cut); or Hermes' ``<memory-context>…</memory-context>`` wrapper
around a prefetch result. ``strip_injected`` removes those and keeps everything else of the prompt.

The wording comes from ``memcue.core.blocks``, the definition the sidecar's renderer writes with.
"""

from __future__ import annotations

import re

from memcue.core.blocks import (
    BLOCK_TAG,
    COMPACT_LEAD,
    COMPACT_TAG,
    DATA_NOTE,
    LEFT_OUT_START,
    MEMORY_TAG,
    POINTER_START,
    PROMPT_LEAD,
    SESSION_LEAD,
    STANDING_NOTES,
    TOOL_LEAD,
)

_HEADERS = re.compile(r"^[ \t>]*(?:" + "|".join(re.escape(h) for h in (PROMPT_LEAD, SESSION_LEAD, TOOL_LEAD)) + r")")
_DATA_NOTE_WORDS = " ".join(DATA_NOTE.split())
_POINTER = re.compile(r"^[ \t>]*" + re.escape(POINTER_START) + r".*$")
#: Each standing note with its spaces collapsed, which a wrapped piece of a pasted copy is part of.
_NOTES_WORDS = tuple(" ".join(note.split()) for note in STANDING_NOTES.values())
#: Characters a line must hold to be taken for the note's start ("memcue is this project's": 24).
_NOTE_START_CHARS = 20
#: The memories' element of a full block, whole; and a line of one cut before its close: the opening tag, a
#: memory line (``render.memory_line``), the left-out line or the closing tag.
_FULL = re.compile(rf"<{re.escape(BLOCK_TAG)}>.*?</{re.escape(BLOCK_TAG)}>[ \t]*\n?", re.DOTALL)
_BLOCK_LINE = re.compile(rf"^[ \t>]*(?:</?{re.escape(BLOCK_TAG)}>\s*$|<{re.escape(MEMORY_TAG)} |"
                         + LEFT_OUT_START + ")")
#: The compact block, whole, and its opening tag alone.
_TAG = re.escape(COMPACT_TAG)
_COMPACT = re.compile(rf"<{_TAG}\b[^>\n]*>.*?</{_TAG}>", re.DOTALL)
_COMPACT_OPEN = re.compile(rf"^[ \t>]*<{_TAG}\b[^>\n]*>[ \t]*$")
#: A line of a compact block (``render.compact_line``, the instruction line, the left-out line).
_COMPACT_LINE = re.compile(r"^[ \t>]*(?:\d+\.\d\d memcue://\S*(?: \[[^\]\n]*\])?\s*$|" + re.escape(COMPACT_LEAD)
                           + "|" + LEFT_OUT_START + ")")
_HERMES = re.compile(r"<\s*memory-context\s*>.*?<\s*/\s*memory-context\s*>", re.IGNORECASE | re.DOTALL)
_BLANK_RUNS = re.compile(r"\n{3,}")


def _words(line: str) -> str:
    return " ".join(line.lstrip(" \t>").split())


def _note_start(line: str) -> bool:
    """Whether ``line`` is the standing note or, wrapped, its first words (``_NOTE_START_CHARS`` or more)."""
    words = _words(line)
    return len(words) >= _NOTE_START_CHARS and any(note.startswith(words) for note in _NOTES_WORDS)


def _after_note(lines: list[str], start: int) -> int:
    """The index after a standing note that begins at ``lines[start]`` (``_note_start``): the following lines,
    quote markers aside, are taken while they go on continuing one note word for word, so a line after the
    note that merely shares a word with it is the user's."""
    seen, i = _words(lines[start]), start + 1
    while i < len(lines):
        joined = f"{seen} {_words(lines[i])}"
        if not _words(lines[i]) or not any(note.startswith(joined) for note in _NOTES_WORDS):
            break
        seen, i = joined, i + 1
    return i


def _data_note_piece(line: str) -> bool:
    """Whether ``line`` is a wrapped piece of a header's ``DATA_NOTE`` (three or more of its words in order)."""
    words = _words(line)
    return len(words.split(" ")) >= 3 and words in _DATA_NOTE_WORDS


def strip_injected(text: str) -> str:
    """``text`` without memcue blocks and Hermes ``<memory-context>`` spans (see the module docstring); the
    same text when there are none. The result may be empty (the prompt was only a pasted block)."""
    if "memcue" not in text and "memory-context" not in text.lower():
        return text
    out = _FULL.sub("", _COMPACT.sub("", _HERMES.sub("", text)))
    lines = out.split("\n")
    kept: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _POINTER.match(line):
            i += 1
            continue
        if _note_start(line):  # the note, and the rest of it when a terminal wrapped it
            i = _after_note(lines, i)
            continue
        if _COMPACT_OPEN.match(line):  # a compact block without its closing tag
            i += 1
            while i < len(lines) and _COMPACT_LINE.match(lines[i]):
                i += 1
            continue
        if not _HEADERS.match(line):
            kept.append(line)
            i += 1
            continue
        i += 1  # the header (and the rest of its note when wrapped), then the lines of a cut block
        while i < len(lines) and (_BLOCK_LINE.match(lines[i]) or _data_note_piece(lines[i])):
            i += 1
    if len(kept) == len(lines) and out is text:
        return text
    return _BLANK_RUNS.sub("\n\n", "\n".join(kept)).strip()
