"""A person's marks on memories, kept in place (no new version): ``set_pinned`` pins or unpins, ``unforget``
takes a ``forget`` back (the memory answers again). Each change bumps ``generation`` (answer caches drop);
``unforget`` also logs the ids in ``vector_journal``, so vector indexes take the memories back.
"""

from __future__ import annotations

from collections.abc import Iterable

from memcue.sidecar.store.sqlite.db import Database
from memcue.sidecar.store.write import MarkResult


class Marks:
    """Pin, unpin and unforget over ``db``; see the module docstring."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def set_pinned(self, ids: Iterable[int], pinned: bool) -> MarkResult:
        """Set ``pinned`` on memories ``ids``; those already so are ``unchanged``."""
        return self._mark(ids, "pinned", 1 if pinned else 0, journal=False)

    def unforget(self, ids: Iterable[int]) -> MarkResult:
        """Clear ``forgotten_at`` on memories ``ids``; those not forgotten are ``unchanged``."""
        return self._mark(ids, "forgotten_at", None, journal=True)

    def _mark(self, ids: Iterable[int], column: str, value: int | None, *, journal: bool) -> MarkResult:
        wanted = list(dict.fromkeys(int(i) for i in ids))
        if not wanted:
            return MarkResult()
        db = self._db
        with db.write_lock, db.writer:
            found = dict(db.writer.execute(  # column is one of two names fixed above, never input
                f"SELECT id, {column} FROM memories WHERE id IN ({','.join('?' * len(wanted))})", wanted).fetchall())
            changed = [i for i in wanted if i in found and found[i] != value]
            if changed:
                db.writer.execute(f"UPDATE memories SET {column} = ? WHERE id IN ({','.join('?' * len(changed))})",
                                  [value, *changed])
                db.generation += 1
        if changed and journal:
            db.vector_journal.record(changed)
        return MarkResult(changed=changed, unchanged=[i for i in wanted if i in found and i not in changed],
                          not_found=[i for i in wanted if i not in found])
