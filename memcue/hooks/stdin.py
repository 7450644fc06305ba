"""Read the hook payload from stdin once, within a deadline, and decode it leniently.

Standard library only. The harness normally writes one JSON object and closes stdin; this module also
copes with stdin held open (reading stops at the deadline, or as soon as a complete JSON object has
arrived), empty or truncated input, bytes that are not UTF-8, lone surrogates and raw control characters.
The deadline bounds only the wait for bytes not yet written: bytes already in the pipe are always read,
however late the hook gets to them (how long the runner waits: ``memcue.hooks.run.STDIN_RESERVE_S``).
"""

from __future__ import annotations

import json
import os
import select
import time

from memcue.core.text import clean_value

#: Input beyond this many bytes (16 MiB) is not read; the payload then fails to parse and counts as empty.
MAX_STDIN_BYTES = 16 << 20


def _complete_object(data: bytes) -> bool:
    """True when ``data`` already holds a whole JSON object, so a still-open stdin need not be waited on."""
    if not data.rstrip().endswith(b"}"):
        return False
    try:
        json.loads(data.decode("utf-8", "replace").lstrip("\ufeff"), strict=False)
    except ValueError:
        return False
    return True


def read_stdin(deadline: float, fd: int = 0) -> bytes:
    """All bytes on ``fd`` until EOF, a complete JSON object, or ``deadline`` with nothing more waiting.

    ``deadline`` is a ``time.monotonic()`` value (s) that limits only the wait for bytes that have not
    come yet: bytes already in the pipe are always read, even when the deadline passed before the first
    read (a hook that started late, or was starved of CPU, still gets the payload the harness wrote).
    After the deadline each read is preceded by a zero-timeout ``select``, so a reader never blocks past
    it. A closed or unreadable descriptor gives ``b""``.
    """
    chunks = bytearray()
    try:
        while len(chunks) < MAX_STDIN_BYTES:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks += chunk
            if _complete_object(chunks):
                break
    except (OSError, ValueError):
        pass
    return bytes(chunks)


def decode_payload(raw: bytes) -> tuple[object, str]:
    """Decode stdin bytes into ``(value, problem)``.

    ``value`` is the JSON value with every string cleaned (``memcue.core.text.clean_text``), or None
    when the input is empty or not JSON. Invalid UTF-8 becomes U+FFFD, a leading BOM is dropped, raw
    control characters inside strings are accepted. ``problem`` is "" or a short description for the log.
    """
    text = raw.decode("utf-8", "replace").lstrip("\ufeff")
    if not text.strip():
        return None, "empty stdin: no payload (stdin closed empty, or nothing written before the wait for it ended)"
    try:
        value = json.loads(text, strict=False)
        if not isinstance(value, dict):
            return None, f"stdin JSON is a {type(value).__name__}, not an object"
        return clean_value(value), ""
    except ValueError as exc:
        return None, f"stdin is not JSON ({exc}; {len(raw)} bytes)"
    except RecursionError:  # the parser's or the cleaner's: nesting no payload has
        return None, f"stdin is not a payload: JSON nested too deep ({len(raw)} bytes)"
