"""The output both command-hook harnesses accept (Claude Code, Codex): one ``hookSpecificOutput`` object.

Standard library only (the hook imports it). Exactly ``{"hookSpecificOutput": {"hookEventName": ...,
"additionalContext": ...}}`` and nothing else: Codex rejects any field its schema does not list (its
``*.command.output`` schemas have ``additionalProperties: false``). A block over the character budget is cut
at a memory boundary as a last guard (the sidecar already fits it), ending with a line that says how many
memories were left out (case C07).
"""

from __future__ import annotations

import json

from memcue.core.blocks import BLOCK_CLOSE, BLOCK_OPEN, LEFT_OUT, MEMORY_LINE_START, left_out_line

#: Said instead of a count when the text that was cut held no memory lines at all.
_CUT_MARKER = "[memcue: cut to fit the context limit]"


def _dropped_memories(lines: list[str]) -> int:
    """How many memories ``lines`` hold: memory lines (``<memory ...``) plus the counts of left-out lines."""
    n = 0
    for line in lines:
        if line.startswith(MEMORY_LINE_START):
            n += 1
        else:
            found = LEFT_OUT.fullmatch(line)
            n += int(found.group(1)) if found else 0
    return n


def cap(context: str, max_chars: int) -> str:
    """``context`` cut to ``max_chars`` characters at a memory boundary, ending with a left-out line.

    Keeps whole lines (a memory is one line). The marker says how many memories were dropped, counting memory
    lines and any left-out line of the sidecar's that was cut with them. When the kept lines opened the
    memories' element (``BLOCK_OPEN``) the cut closes it (``BLOCK_CLOSE`` after the marker), so the block stays
    closed explicitly (case C24).
    """
    if len(context) <= max_chars:
        return context
    lines = context.split("\n")
    # Room for the longest marker this context can need (the count has at most that many digits), and the close.
    worst = max(len(_CUT_MARKER), len(left_out_line(_dropped_memories(lines)))) + 1 + len(BLOCK_CLOSE)
    room = max_chars - 1 - worst
    end, used = 0, -1
    for line in lines:
        if used + 1 + len(line) > room:
            break
        used += 1 + len(line)
        end += 1
    if end == 0:  # not even the first line fits: a hard cut is all that is left
        dropped = _dropped_memories(lines[1:])
        return context[: max(0, room)] + "\n" + (left_out_line(dropped) if dropped else _CUT_MARKER)
    dropped = _dropped_memories(lines[end:])
    tail = [left_out_line(dropped) if dropped else _CUT_MARKER]
    if BLOCK_OPEN in lines[:end] and BLOCK_CLOSE not in lines[:end]:
        tail.append(BLOCK_CLOSE)
    return "\n".join([*lines[:end], *tail])


def hook_specific_output(hook_event_name: str | None, context: str, max_chars: int) -> str:
    """The stdout for ``context``: "" when it is blank or the event injects nothing (``hook_event_name``
    None), else one JSON object on one line with non-ASCII kept (the caller writes UTF-8), the context cut
    to ``max_chars`` characters."""
    if not context or not context.strip() or hook_event_name is None:
        return ""
    body = {"hookSpecificOutput": {"hookEventName": hook_event_name,
                                   "additionalContext": cap(context, max_chars)}}
    return json.dumps(body, ensure_ascii=False)
