"""Open SQLite connections through apsw, with sqlite-vec loaded when possible (case C18), and the
``Database`` the store's parts share.

Every connection runs ``PRAGMA busy_timeout`` as its first statement, then WAL mode. sqlite-vec is
checked with ``vec_version()``; when it cannot load, the connection still works and recall runs
keyword-only (the caller warns once).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

import apsw

from memcue.sidecar.store.write import VectorJournal

#: How long a statement waits for a lock before SQLITE_BUSY (ms).
BUSY_TIMEOUT_MS = 5000
#: Page cache of a reader connection (KiB). Every thread that reads has its own connection; SQLite's
#: default 2 MiB each adds up across the channel and request threads, and the OS caches the file anyway.
READER_CACHE_KIB = 512
#: Inserted rows between two refreshes of the query planner's statistics (``Database.optimize_if_due``).
OPTIMIZE_EVERY = 1000


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


class Database:
    """One SQLite file at ``path`` shared by the store's parts: the writer connection (``writer``, used under
    ``write_lock``), one reader connection per thread (``reader()``; WAL lets them run side by side), the
    sqlite-vec status ``vec``, and what the parts keep up to date: ``generation`` (bumped by every write, so
    caches can tell the store changed), ``vector_journal`` (ids whose vector or currency changed, for in-memory
    vector indexes) and ``rows_written`` (rows inserted through this store).

    Raises ``apsw.Error`` when the file cannot be opened.
    """

    def __init__(self, path: Path | str, *, want_vec: bool = True) -> None:
        self.path = str(path)
        self.write_lock = threading.Lock()
        self._local = threading.local()
        self.writer, self.vec = connect(self.path, want_vec=want_vec)
        self.generation = 0
        self.rows_written = 0
        self._optimized_at = 0
        self.vector_journal = VectorJournal()
        self._id_floor: int | None = None

    @property
    def id_floor(self) -> int:
        """The highest memory id ever purged (0: none), from ``meta``: new memories are numbered above it, so a
        purged id is never given to another memory (a ``memcue://`` address, a usage-log row or a session's
        "already shown" set may still name it)."""
        if self._id_floor is None:
            rows = self.writer.execute("SELECT value FROM meta WHERE key = 'id_floor'").fetchall()
            self._id_floor = int(rows[0][0]) if rows else 0
        return self._id_floor

    def raise_id_floor(self, memory_id: int) -> None:
        """Keep ``id_floor`` at least ``memory_id`` (inside the caller's write transaction)."""
        floor = max(self.id_floor, int(memory_id))
        self.writer.execute("INSERT INTO meta(key, value) VALUES ('id_floor', ?) ON CONFLICT(key) DO UPDATE SET"
                            " value = excluded.value", (str(floor),))
        self._id_floor = floor

    def reader(self) -> apsw.Connection:
        """This thread's reader connection (opened on first use, with a ``READER_CACHE_KIB`` page cache)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn, _ = connect(self.path, want_vec=self.vec.available, cache_kib=READER_CACHE_KIB)
            self._local.conn = conn
        return conn

    def optimize_at_open(self) -> None:
        """Query-planner statistics (SQLite's advice for long-lived connections: optimize with 0x10002 at
        open, then now and then); without them a pinned lookup scans the project's rows."""
        self.writer.execute("PRAGMA optimize=0x10002")

    def optimize_if_due(self, every: int = OPTIMIZE_EVERY) -> bool:
        """Refresh the query planner's statistics (``PRAGMA optimize``) once ``every`` rows were inserted
        since the last refresh; True when it ran. Cheap when nothing needs analysing."""
        if self.rows_written - self._optimized_at < every:
            return False
        with self.write_lock:
            self.writer.execute("PRAGMA optimize")
        self._optimized_at = self.rows_written
        return True

    def close(self) -> None:
        """Checkpoint the WAL and close the writer connection."""
        with self.write_lock:
            try:
                self.writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                self.writer.close()
