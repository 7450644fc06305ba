"""How much of a long text memcue keeps and reads: the one cap for captured prompts, agent answers, session-end
text and spool records, and the one way to cut a text to it; and the one cap on the text a recall reads of its
query (a prompt with a pasted log).

Standard library only (the hook's spool writer applies it, and so does the sidecar's write path,
``memcue.sidecar.store.write.prepare``, for the captured kinds whatever route brings them).

Captured text is whatever the user or agent happened to type or paste; a memory someone writes on purpose
(``POST /remember``, MCP ``remember``, ``memcue remember``) is refused above its own, larger limit instead
(``memcue.sidecar.api_models.MAX_CONTENT_CHARS``) and never cut.
"""

from __future__ import annotations

#: Tokens (o200k_base) of the session-start block, the note included. It is the one place a memory reaches the
#: model without a prompt naming it, so it shows as many memories as the harnesses keep whole: Claude Code
#: replaces additionalContext over 10,000 characters with a preview and Codex keeps about 2,500 tokens of hook
#: context (DESIGN.md section 3); 2,200 tokens of memcue's blocks are about 8,500-9,300 characters
#: (``tests/test_real_session_block_size.py`` sends one through both).
SESSION_BLOCK_TOKENS = 2_200
#: Tokens of Claude Code's session-start block. Claude Code caps hook context by characters (10,000), not tokens,
#: so its block may fill ``adapters.base.MAX_CHARS`` (9,500): that is 2,450 tokens at the densest text measured
#: above (3.9 characters a token); plainer text reaches the character cap first.
CLAUDE_CODE_SESSION_BLOCK_TOKENS = 2_450
#: Characters kept of one captured text, the marker included. An injected block shows at most 9,500
#: characters in all and the embedding model reads the first 256 tokens, so a captured text is recalled by
#: its opening; past this size a paste is data (a build log, a dump) whose middle is never shown and only
#: costs indexing time, spool space and a longer write. Long enough for a prompt with a sizeable code
#: excerpt or a full agent answer.
CAPTURE_MAX_CHARS = 16_000
#: Characters of a cut captured text kept from its end (within ``CAPTURE_MAX_CHARS``): the question or the
#: statement typed after a pasted log is what the prompt is about (case C22).
CAPTURE_TAIL_CHARS = 2_000
#: The line that stands where a cut text's middle (or end) was left out; ``{left_out}`` is the number of
#: characters left out, with thousands separators.
CUT_MARKER = "[memcue: cut here, {left_out} more characters left out]"
#: A captured text longer than this is cut to its two ends (at lines or words) before redaction
#: (``memcue.core.redaction.redact_captured``): twice the cap, so the kept text comes from well inside what was
#: redacted.
PRECUT_CHARS = 2 * CAPTURE_MAX_CHARS
#: After that cut, the kept text stays at least this many characters away from it on either side, so a
#: multi-line secret the cut split (a 4,096-bit RSA private key in PEM is about 3,300 characters) is never kept
#: in part, even when redaction shrank the text a lot.
PRECUT_GUARD_CHARS = 8_000


def _head(text: str, room: int) -> str:
    """The start of ``text`` in at most ``room`` characters, cut at its last line break (else space or tab) in
    the second half of the room; a hard cut when there is none."""
    head = text[:room]
    cut = head.rfind("\n")
    if cut < room // 2:
        cut = max(head.rfind(" "), head.rfind("\t"))
    return head[:cut].rstrip() if cut >= room // 2 else head


def _tail(text: str, room: int) -> str:
    """The end of ``text`` in at most ``room`` characters, starting after its first line break (else space or
    tab) in the first half of the room; a hard cut when there is none."""
    if room <= 0:
        return ""
    tail = text[-room:]
    cut = tail.find("\n")
    if not 0 <= cut < room // 2:
        cut = max(tail.find(" "), tail.find("\t"))
    return tail[cut + 1:].lstrip() if 0 <= cut < room // 2 else tail


def cut_ends(text: str, head_room: int, tail_room: int) -> tuple[str, str]:
    """The two ends of ``text`` that a cut keeps: ``(head, tail)``, at most ``head_room`` and ``tail_room``
    characters, each cut at a line (else a word). Never raises."""
    head = _head(text, head_room)
    return head, _tail(text[len(head):], tail_room)


def join_ends(head: str, tail: str, left_out: int) -> str:
    """``head``, a ``CUT_MARKER`` line counting ``left_out`` characters, and ``tail`` (when there is one)."""
    marker = CUT_MARKER.format(left_out=f"{left_out:,}")
    return f"{head}\n{marker}\n{tail}" if tail else f"{head}\n{marker}"


def cap_text(text: str, limit: int = CAPTURE_MAX_CHARS, *, full_chars: int | None = None, tail: int = 0) -> str:
    """``text`` unchanged when it has at most ``limit`` characters; otherwise its start cut at a line (else a
    word), a ``CUT_MARKER`` line, and with ``tail`` its last ``tail`` characters at most (at most half the room),
    cut at a line: at most ``limit`` characters in all. A cut text is never cut again (idempotent). ``limit``
    too small for the marker gives a hard cut at ``limit``. ``full_chars``: the length of the text ``text`` was
    itself cut from (default ``len(text)``), for the marker's count. Never raises."""
    if len(text) <= limit:
        return text
    total = max(full_chars or 0, len(text))
    room = limit - len(CUT_MARKER.format(left_out=f"{total:,}")) - 1
    if room <= 0:
        return text[:limit]
    tail = min(max(tail, 0), room // 2)
    head, end = cut_ends(text, room - (tail + 1 if tail else 0), tail)
    return join_ends(head, end, total - len(head) - len(end))


#: Characters of a query that recall reads at most: the first and last half of them, so the question around a
#: pasted log (usually before it or after it) is read and the log itself costs the keyword, entity and time
#: analysis nothing. The embedding model reads only the first 256 tokens (about 1,000 characters) anyway.
QUERY_MAX_CHARS = 4_000
#: What joins the two ends of a cut query.
QUERY_JOIN = " | "


def cap_query(text: str, limit: int = QUERY_MAX_CHARS) -> str:
    """``text`` unchanged when it has at most ``limit`` characters; otherwise its first and last ``limit // 2``
    characters joined by ``QUERY_JOIN``. Never raises."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + QUERY_JOIN + text[-half:]
