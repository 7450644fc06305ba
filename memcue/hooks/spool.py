"""The hook's write spool: captured prompts the sidecar could not take, one JSON line each (records are
built by ``memcue.core.spool_format``, the format the reader shares). No secret reaches the file: every record
goes through ``spool_format.redact_record`` (every text field redacted, the content cut) before it is written.

Standard library only. Each writer has its own file, ``spool_dir / "hook-<harness>-<session>.jsonl"``
(``<session>``: 12 hex digits of the session id's sha1), so harnesses and sessions never share one. The
sidecar ingests every ``*.jsonl`` in the folder when it is up, so a prompt typed while it is down is not
lost. Each record is written with one ``os.write`` on an ``O_APPEND`` descriptor (so concurrent hooks never
interleave lines) and fsynced, under a shared ``flock``: the sidecar deletes a fully ingested, idle file
only under an exclusive lock, and a writer that finds its file deleted meanwhile opens a new one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from memcue.core.paths import locations

#: Attempts to write a record when the sidecar deletes the file between our open and our lock.
_OPEN_ATTEMPTS = 3


def spool_path(harness: str, session_id: str) -> Path:
    """The spool file of one writer: ``hook-<harness>-<sha1(session_id)[:12]>.jsonl`` (may not exist yet;
    ``spool_format.spool_name``)."""
    from memcue.core.spool_format import spool_name  # the spool is the failure path: off every prompt's start-up

    return locations().spool_dir / spool_name(harness, session_id)


def append(record: dict[str, object], path: Path) -> Path:
    """Append ``record``, redacted (``spool_format.redact_record``), as one JSON line to the spool file ``path``,
    fsynced; returns ``path``.

    Creates the spool directory (mode 0700) and file (mode 0600) when missing. Raises ``OSError`` on
    failure (for example a full disk); the caller decides whether that matters.
    """
    import fcntl

    from memcue.core.spool_format import redact_record

    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    line = json.dumps(redact_record(record), ensure_ascii=False, separators=(",", ":")) + "\n"
    data = line.encode("utf-8", "replace")
    for _ in range(_OPEN_ATTEMPTS):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            if os.fstat(fd).st_nlink == 0:  # the sidecar removed it after we opened it: open anew
                continue
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(f"short write to spool: {written} of {len(data)} bytes")
            os.fsync(fd)
            return path
        finally:
            os.close(fd)
    raise OSError(f"the spool file {path} kept disappearing")
