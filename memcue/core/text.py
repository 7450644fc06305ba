"""Text hygiene for everything that enters the hook: no lone surrogates, no stray control characters.

Standard library only. Prompts reach recall exactly as typed except for two things that would poison
storage or output (case C06): lone UTF-16 surrogates (``"\\ud800"`` in JSON) become U+FFFD, and control
characters other than newline and tab are removed, together with whole ANSI escape sequences.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")

#: Whole ANSI sequences (CSI such as ``ESC[31m``; OSC ended by BEL or ST), then any other C0/C1 control
#: character except TAB (0x09) and LF (0x0A). An ESC that starts no such sequence goes on its own, so
#: ordinary text after it is kept.
_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def scrub_surrogates(text: str) -> str:
    """``text`` with every lone surrogate code point replaced by U+FFFD, so it encodes to UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def clean_text(text: str) -> str:
    """``text`` safe to store and echo: surrogates replaced, ANSI sequences and control characters
    other than ``\\n`` and ``\\t`` removed; every other character is kept byte for byte."""
    text = scrub_surrogates(text)
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub("", text)


def clean_value(value: object) -> object:
    """A decoded JSON value with ``clean_text`` applied to every string in it, keys included."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k) if isinstance(k, str) else k: clean_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_value(v) for v in value]
    return value
