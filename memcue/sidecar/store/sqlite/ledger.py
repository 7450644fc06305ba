"""The distillation ledger (``distill_ledger`` table): one row per session the optional model distiller
considered (``store.write.DistillEntry``), the tokens spent and what came of it. The day's spend (the budget
check) is a sum over it, so the budget holds across sidecar restarts. Rows older than ``RETENTION_DAYS`` go on
write."""

from __future__ import annotations

import dataclasses
from typing import Any

from memcue.sidecar.store.sqlite.db import Database
from memcue.sidecar.store.write import DistillEntry, redact, sanitize_text

#: Ledger rows older than this are pruned on write (days).
RETENTION_DAYS = 365
_FIELDS = tuple(f.name for f in dataclasses.fields(DistillEntry))
_COLUMNS = ("id", *_FIELDS)


class DistillLedger:
    """Writes and reads of ``distill_ledger`` over ``db``; see the module docstring."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, entry: DistillEntry) -> int:
        """Store ``entry``, its ``error`` cleaned (control characters and escape sequences out, secrets redacted:
        it may quote a model's answer or a command's stderr); returns its row id."""
        values = dataclasses.astuple(dataclasses.replace(entry, error=redact(sanitize_text(entry.error)).text))
        db = self._db
        with db.write_lock, db.writer:
            db.writer.execute("DELETE FROM distill_ledger WHERE created_at < ?",
                              (entry.created_at - RETENTION_DAYS * 86_400.0,))
            rows = db.writer.execute(
                f"INSERT INTO distill_ledger({', '.join(_FIELDS)}) VALUES ({', '.join('?' * len(_FIELDS))})"
                " RETURNING id", values).fetchall()
        return int(rows[0][0])

    def entries(self, *, since: float | None = None, session_id: str | None = None,
                limit: int = 200) -> list[dict[str, Any]]:
        """Rows newest first (``id`` plus ``DistillEntry``'s fields), created at or after ``since`` (Unix s)
        and of ``session_id`` when given, at most ``limit``."""
        where, args = [], []
        if since is not None:
            where.append("created_at >= ?")
            args.append(since)
        if session_id is not None:
            where.append("session_id = ?")
            args.append(session_id)
        sql = (f"SELECT {', '.join(_COLUMNS)} FROM distill_ledger{' WHERE ' + ' AND '.join(where) if where else ''}"
               " ORDER BY created_at DESC, id DESC LIMIT ?")
        return [dict(zip(_COLUMNS, r, strict=True)) for r in self._db.reader().execute(sql, (*args, int(limit)))]

    def spent(self, since: float) -> int:
        """Tokens spent (prompt plus completion) by rows created at or after ``since`` (Unix s)."""
        rows = self._db.reader().execute(
            "SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM distill_ledger WHERE created_at >= ?",
            (since,)).fetchall()
        return int(rows[0][0])
