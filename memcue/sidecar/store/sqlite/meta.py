"""The ``meta`` table (key -> text: the embedding model bound, the index's settings) and the schema version."""

from __future__ import annotations

from memcue.sidecar.store.sqlite.db import Database
from memcue.sidecar.store.sqlite.migrations import schema_version


class MetaTable:
    """Reads and writes of ``meta`` over ``db``; see the module docstring."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, key: str) -> str | None:
        """The value stored for ``key``, None when absent."""
        rows = self._db.reader().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchall()
        return rows[0][0] if rows else None

    def set(self, key: str, value: str) -> None:
        """Store ``value`` for ``key`` (replacing any)."""
        db = self._db
        with db.write_lock, db.writer:
            db.writer.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def delete(self, key: str) -> None:
        """Forget ``key`` (no error when absent)."""
        db = self._db
        with db.write_lock, db.writer:
            db.writer.execute("DELETE FROM meta WHERE key = ?", (key,))

    def schema_version(self) -> int:
        """Number of migrations applied."""
        return schema_version(self._db.reader())
