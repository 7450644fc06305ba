"""Text hygiene: the one cleaner for text that enters memcue, and the one one-line preview.

Standard library only (the hook path imports it). Text reaches recall and storage exactly as typed except
for what would poison storage or output (case C06): lone UTF-16 surrogates become U+FFFD, and control
characters other than newline and tab are removed, together with whole ANSI escape sequences.

- ``clean_text``: a hook payload's strings (``hooks/stdin.py``); ``stored=True`` for the store's write path
  (``sanitize_text``), which also keeps line breaks as LF and removes escape sequences more eagerly.
- ``scrub_surrogates``: surrogates only (the sidecar's answer, a command-line argument).
- ``preview``: a text on one line, cut to a number of characters (recall's depth-0 preview, MCP and CLI lists).
"""

from __future__ import annotations

import re

#: CSI sequences such as ``ESC[31m`` (ECMA-48: parameter bytes 0x30-0x3F, intermediate 0x20-0x2F, final
#: 0x40-0x7E).
_CSI = r"\x1b\[[0-?]*[ -/]*[@-~]"
#: Any C0/C1 control character except TAB (0x09) and LF (0x0A).
_C0_C1 = r"[\x00-\x08\x0b-\x1f\x7f-\x9f]"
#: Hook input: CSI, and OSC only when ended by BEL or ST within 512 characters, so an unended OSC cannot
#: swallow a prompt; a lone ESC goes on its own and the text after it is kept.
_CONTROL = re.compile(rf"{_CSI}|\x1b\][^\x07\x1b]{{0,512}}(?:\x07|\x1b\\)|{_C0_C1}")
#: Stored text: CSI; OSC up to BEL, ST, the next ESC or the end of the text; ESC with one Fe byte
#: (``ESC M``, ``ESC _``).
_STORED_CONTROL = re.compile(rf"{_CSI}|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|{_C0_C1}")
#: Marks a preview that was cut.
ELLIPSIS = "…"


def scrub_surrogates(text: str, *, escaped_bytes: bool = False) -> str:
    """``text`` with no lone surrogate, so it encodes to UTF-8: each becomes U+FFFD, and a high and low
    surrogate written as two code points are joined into their character. ``escaped_bytes``: the
    surrogates stand for bytes that were not UTF-8 (Python's ``surrogateescape``, as in ``sys.argv``);
    they are decoded again as UTF-8, each invalid sequence becoming one U+FFFD. Never raises."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        if escaped_bytes:
            try:
                return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            except UnicodeEncodeError:  # a surrogate that stands for no byte: scrub it as any other
                pass
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def clean_text(text: str, *, stored: bool = False) -> str:
    """``text`` safe to store and echo: surrogates replaced (``scrub_surrogates``), ANSI escape sequences
    and control characters other than ``\\n`` and ``\\t`` removed; every other character (backslashes,
    quotes, any script) is kept exactly.

    ``stored`` (the store's rules, ``sanitize_text``): CR and CRLF line ends become LF instead of being
    removed, an OSC sequence without its terminator is removed up to the next ESC or BEL or the end of the
    text, and an ESC with one following byte in 0x40-0x5F (``ESC M``) goes whole. Never raises."""
    text = scrub_surrogates(text)
    if stored:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    pattern = _STORED_CONTROL if stored else _CONTROL
    if pattern.search(text) is None:
        return text
    return pattern.sub("", text)


def sanitize_text(text: object) -> str:
    """Any value as text safe to store, index and embed: ``str(text)`` cleaned by ``clean_text(...,
    stored=True)`` (case C06). Never raises."""
    return clean_text(text if isinstance(text, str) else str(text), stored=True)


def clean_value(value: object) -> object:
    """A decoded JSON value with ``clean_text`` applied to every string in it, keys included."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k) if isinstance(k, str) else k: clean_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_value(v) for v in value]
    return value


def preview(text: str, chars: int | None = None, *, trim: bool = True) -> str:
    """``text`` on one line: every run of whitespace (newlines included) becomes one space, none at either
    end. With ``chars``, at most ``chars`` characters: a longer line keeps its first ``chars - 1``
    characters, then ``ELLIPSIS``; ``trim`` drops a space left right before the mark."""
    line = " ".join(text.split())
    if chars is None or len(line) <= chars:
        return line
    kept = line[: chars - 1]
    return (kept.rstrip() if trim else kept) + ELLIPSIS
