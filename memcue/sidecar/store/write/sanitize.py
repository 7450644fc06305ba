"""Make any text safe to store, index and embed (case C06).

Invalid Unicode (lone surrogates) becomes U+FFFD; ANSI escape sequences are removed whole; control
characters other than newline and tab are dropped; CR/CRLF line ends become LF. Everything else,
including backslashes, quotes and non-Latin scripts, is kept exactly.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x9f]")


def sanitize_text(text: str) -> str:
    """Return ``text`` with lone surrogates replaced and control bytes removed. Never raises."""
    if not isinstance(text, str):
        text = str(text)
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _ANSI.sub("", text)
    return _CONTROL.sub("", text)
