"""Open SQLite connections through apsw, with sqlite-vec loaded when possible (case C18).

Every connection runs ``PRAGMA busy_timeout`` as its first statement, then WAL mode. sqlite-vec is
checked with ``vec_version()``; when it cannot load, the connection still works and recall runs
keyword-only (the caller warns once).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import apsw

#: How long a statement waits for a lock before SQLITE_BUSY (ms).
BUSY_TIMEOUT_MS = 5000
#: Page cache of a reader connection (KiB). Every thread that reads has its own connection; SQLite's
#: default 2 MiB each adds up across the channel and request threads, and the OS caches the file anyway.
READER_CACHE_KIB = 512


@dataclass(frozen=True)
class VecStatus:
    """Whether sqlite-vec loaded: ``available``, its ``version`` ("v0.1.9") or the ``error`` text."""

    available: bool
    version: str = ""
    error: str = ""


def _load_vec(conn: apsw.Connection) -> VecStatus:
    if os.environ.get("MEMCUE_DISABLE_VEC") == "1":
        return VecStatus(False, error="sqlite-vec disabled by MEMCUE_DISABLE_VEC=1")
    try:
        import sqlite_vec

        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
        version = conn.execute("SELECT vec_version()").fetchall()[0][0]
        return VecStatus(True, version=str(version))
    except Exception as exc:  # noqa: BLE001 - any failure means keyword-only
        text = str(exc)
        return VecStatus(False, error=text if text.startswith(type(exc).__name__) else f"{type(exc).__name__}: {text}")


def connect(path: Path | str, *, want_vec: bool = True, cache_kib: int | None = None
            ) -> tuple[apsw.Connection, VecStatus]:
    """Open ``path`` (created if absent) and return the connection and sqlite-vec status. ``cache_kib``
    sets the page cache (KiB; SQLite's default when None).

    Raises ``apsw.Error`` when the file cannot be opened or is not a database.
    """
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = apsw.Connection(str(path))
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    if cache_kib is not None:
        conn.execute(f"PRAGMA cache_size = -{int(cache_kib)}")
    status = _load_vec(conn) if want_vec else VecStatus(False, error="not requested")
    return conn, status
