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

#: Characters kept of one captured text, the marker included. An injected block shows at most 9,500
#: characters in all and the embedding model reads the first 256 tokens, so a captured text is recalled by
#: its opening; past this size a paste is data (a build log, a dump) whose tail is never shown and only
#: costs indexing time, spool space and a longer write. Long enough for a prompt with a sizeable code
#: excerpt or a full agent answer.
CAPTURE_MAX_CHARS = 16_000
#: The line that ends a cut text; ``{left_out}`` is the number of characters left out, with thousands
#: separators.
CUT_MARKER = "[memcue: cut here, {left_out} more characters left out]"
#: A captured text longer than this is cut (at a line or word) before redaction
#: (``memcue.core.redaction.redact_captured``): twice the cap, so the kept text comes from well inside what was
#: redacted.
PRECUT_CHARS = 2 * CAPTURE_MAX_CHARS
#: After that cut, the kept text ends at least this many characters before its end, so a multi-line secret the
#: cut split (a 4,096-bit RSA private key in PEM is about 3,300 characters) is never kept in part, even when
#: redaction shrank the text a lot.
PRECUT_GUARD_CHARS = 8_000


def cap_text(text: str, limit: int = CAPTURE_MAX_CHARS, *, full_chars: int | None = None) -> str:
    """``text`` unchanged when it has at most ``limit`` characters; otherwise its start cut at the last line
    break (else the last space or tab) in the second half of the room left, followed by a new line and
    ``CUT_MARKER``, at most ``limit`` characters in all. A cut text is never cut again (idempotent).
    ``limit`` too small for the marker gives a hard cut at ``limit``. ``full_chars``: the length of the text
    ``text`` was itself cut from (default ``len(text)``), for the marker's count. Never raises."""
    if len(text) <= limit:
        return text
    total = max(full_chars or 0, len(text))
    room = limit - len(CUT_MARKER.format(left_out=f"{total:,}")) - 1
    if room <= 0:
        return text[:limit]
    head = text[:room]
    cut = head.rfind("\n")
    if cut < room // 2:
        cut = max(head.rfind(" "), head.rfind("\t"))
    head = head[:cut].rstrip() if cut >= room // 2 else head
    return f"{head}\n{CUT_MARKER.format(left_out=f'{total - len(head):,}')}"


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
