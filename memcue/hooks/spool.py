"""The hook's write spool: captured prompts the sidecar could not take, one JSON line each.

Standard library only. The sidecar ingests ``locations().spool_dir / "hook.jsonl"`` when it is up, so a
prompt typed while it is down is not lost. Each record is written with one ``os.write`` on an
``O_APPEND`` descriptor (so concurrent hooks never interleave lines) and fsynced.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from memcue.hooks.locations import locations

SPOOL_FILE = "hook.jsonl"


def new_id() -> str:
    """A random id in the same form as ``uuid.uuid4().hex`` (32 hex digits), without importing uuid."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return raw.hex()


def spool_path() -> Path:
    """The hook spool file (may not exist yet)."""
    return locations().spool_dir / SPOOL_FILE


def append(record: dict[str, object]) -> Path:
    """Append ``record`` as one JSON line to the spool, fsynced; returns the file's path.

    Creates the spool directory (mode 0700) and file (mode 0600) when missing. Raises ``OSError`` on
    failure (for example a full disk); the caller decides whether that matters.
    """
    path = spool_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
    data = line.encode("utf-8", "replace")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        written = os.write(fd, data)
        if written != len(data):
            raise OSError(f"short write to spool: {written} of {len(data)} bytes")
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def remember_prompt(
    content: str, *, project: str, session_id: str, harness: str, spool_id: str | None = None
) -> dict[str, object]:
    """The spool record for a captured prompt (``op: remember``, ``kind: request``).

    ``spool_id`` defaults to a new id; the hook passes the id it also sent to the sidecar as
    ``event.extra["request_id"]`` so the two can be matched if both arrive.
    """
    return {
        "spool_id": spool_id or new_id(),
        "op": "remember",
        "ts": time.time(),
        "content": content,
        "kind": "request",
        "project": project,
        "session_id": session_id,
        "source": f"hook:{harness}",
    }
