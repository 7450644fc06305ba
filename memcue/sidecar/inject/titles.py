"""The session-start block's older memories as titles, so more of what the project did stays in view.

The session-start block holds about 24 memories as ``brief``s in its 2,200 tokens; a project that has done more
loses its older memories from view altogether, and a task days later ("write the weekly post's timer") needs a
decision no recall of its words finds ("Move the weekly handoff to Monday 10:00"). When the offered memories do
not all fit whole, the oldest of them are shown as their ``title`` (first line or sentence, about half a brief's
line with its attributes), oldest first, as few as make every offered memory fit; pinned memories, standing rules
(any of ``STANDING_KINDS``, also past the block's ``SESSION_STANDING``), the newest ``SESSION_WHOLE`` others and
the notes and howtos a person or an agent wrote, whose words git does not keep (``brief.kept_by_git``), always stay
whole: only the older changes and what a capture signal took from git or a test run become titles. A title ends
in "…", so the block's shortened-note line says how to get it whole, and the
session's ledger does not count it as told: a prompt that needs it gets it whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from memcue.sidecar.inject.brief import title_of
from memcue.sidecar.inject.render import Block, memory_line

#: The newest memories of a session-start block (after its pinned memories and standing rules) never shown as
#: titles: about half the 24 the block holds whole, so what the last sessions did comes with its reasons.
SESSION_WHOLE = 12


def titled(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` (a session-start row, ``content`` its brief) shown as its title (``title_of``); ``shortened`` when
    the brief was, or the title is not the brief (also for a text that itself ends in "…", which ``was_cut`` cannot
    tell from a cut one)."""
    shown = title_of(row["content"], row.get("source", ""))
    return {**row, "content": shown, "shortened": row["shortened"] or shown != row["content"]}


def fit_titles(rows: list[dict[str, Any]], unbounded: Callable[[list[dict[str, Any]]], Block], *, max_tokens: int,
               max_chars: int, count_tokens: Callable[[str], int], dated: bool) -> list[dict[str, Any]]:
    """``rows`` of a session-start block (``may_title``: a row that may be shown as its title) as ``with_titles``
    shows them in a block of ``max_tokens`` tokens and ``max_chars`` characters; ``unbounded(some)``: the block of
    ``some`` rows with no budget and its left-out line (the frame the memory lines sit in)."""
    if not any(r.get("may_title") for r in rows):
        return rows
    frame = unbounded(rows[:1])
    tokens, chars = _size(rows[0], count_tokens, dated)
    return with_titles(rows, room_tokens=max_tokens - frame.tokens + tokens, room_chars=max_chars - frame.chars + chars,
                       count_tokens=count_tokens, dated=dated)


def with_titles(rows: Sequence[dict[str, Any]], *, room_tokens: int, room_chars: int,
                count_tokens: Callable[[str], int], dated: bool) -> list[dict[str, Any]]:
    """``rows`` (briefs, in block order) with the fewest of the last ones that may be (``may_title``) swapped for
    their ``titled`` form that lets every row fit in ``room_tokens`` tokens and ``room_chars`` characters (what the
    block leaves for its memory lines); all that may be titled are when even that does not fit (the block's budget
    then cuts the oldest). Line sizes are counted once each and summed (one newline each): an estimate, as tokens
    at a line's edge may merge; the block's own render still cuts at its hard budget."""
    full = [_size(r, count_tokens, dated) for r in rows]
    tokens, chars = sum(t for t, _ in full), sum(c for _, c in full)
    out = list(rows)
    for i in range(len(rows) - 1, -1, -1):
        if tokens <= room_tokens and chars <= room_chars:
            break
        if rows[i].get("may_title"):
            out[i] = titled(rows[i])
            t_tokens, t_chars = _size(out[i], count_tokens, dated)
            tokens += t_tokens - full[i][0]
            chars += t_chars - full[i][1]
    return out


def _size(row: dict[str, Any], count_tokens: Callable[[str], int], dated: bool) -> tuple[int, int]:
    """(tokens, characters) of ``row``'s line in a block, with its newline."""
    line = memory_line(row, dated=dated)
    return count_tokens(line) + 1, len(line) + 1
