"""The keyword index (FTS5, ``memories_fts``): BM25 search, document frequencies and the scope's count of
memories that can answer.

Bookkeeping rows are never indexed (migration m002's triggers), so they cannot be a keyword candidate.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from memcue.sidecar.store.sqlite.db import Database
from memcue.sidecar.store.sqlite.rows import scope_conditions
from memcue.sidecar.store.write.records import CAPTURED_KINDS, EPISODE

#: Captured rows that never answer a recall (an ``episode`` may): left out of document frequencies.
_NOT_ANSWERING = tuple(k for k in CAPTURED_KINDS if k != EPISODE)

#: ``doc_frequencies`` stops counting here: a word in this many memories is common.
DF_CAP = 1000
#: How long a counted document frequency is reused (s), and how many (project, cap, term) counts are kept.
DF_CACHE_TTL_S = 30.0
DF_CACHE_SIZE = 8192


class KeywordIndex:
    """Keyword reads over ``db``; see the module docstring."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._df_cache: dict[tuple[str | None, int, str], tuple[int, float]] = {}
        self._df_lock = threading.Lock()

    def bm25(
        self, match: str, *, project: str | None, limit: int, exclude_kinds: Sequence[str] = (),
        include_superseded: bool = False,
    ) -> list[tuple[int, float]]:
        """FTS5 search: ``(id, score)`` best first, score = -bm25() (higher is better, > 0 for a match).

        ``match`` must already be a safe FTS5 expression (see ``recall.query``). Superseded rows only with
        ``include_superseded`` (an ``as_of`` recall).
        """
        where, args = scope_conditions("m", project=project, exclude_kinds=exclude_kinds,
                                       include_superseded=include_superseded)
        where, args = ["memories_fts MATCH ?", *where], [match, *args]
        sql = (
            # CROSS JOIN: the full-text match drives the join whatever the planner's statistics say (with stale
            # ones it ran the MATCH once per row of a project: 2.8 s at 27,000 memories).
            "SELECT m.id, -bm25(memories_fts) AS score FROM memories_fts"
            " CROSS JOIN memories m ON m.id = memories_fts.rowid"
            f" WHERE {' AND '.join(where)} ORDER BY bm25(memories_fts), m.id LIMIT ?"
        )
        return [(int(r[0]), float(r[1])) for r in self._db.reader().execute(sql, [*args, limit]).fetchall()]

    def doc_frequencies(self, terms: Sequence[str], cap: int = DF_CAP, *, project: str | None = None
                        ) -> dict[str, int]:
        """How many memories that can answer (in ``project`` and global rows; all projects when None; current,
        not bookkeeping, not a captured prompt, answer or session event) contain each term, through FTS5's own
        tokenizer. Counts stop at ``cap``: past that a word is simply common. ``terms`` must be plain words. A
        captured prompt does not count: every word of a question would otherwise be carried by the question's
        own copy, and none would be unknown.

        Counts above zero are reused for ``DF_CACHE_TTL_S`` (s) even across writes: a word's frequency barely
        moves in that time, and counting a common word costs about a millisecond per recall. A word no
        memory carries is counted every time, so a new word is known as soon as it is written."""
        conn = self._db.reader()
        out = {}
        now = time.monotonic()
        where, args = scope_conditions("m", project=project, exclude_kinds=_NOT_ANSWERING)
        for term in terms:
            key = (project, cap, term)
            hit = self._df_cache.get(key)
            if hit is not None and now - hit[1] < DF_CACHE_TTL_S:
                out[term] = hit[0]
                continue
            phrase = '"' + term.replace('"', '""') + '"'
            sql = ("SELECT 1 FROM memories_fts CROSS JOIN memories m ON m.id = memories_fts.rowid"
                   f" WHERE memories_fts MATCH ? AND {' AND '.join(where)} LIMIT ?")
            count = out[term] = int(conn.execute(f"SELECT count(*) FROM ({sql})", [phrase, *args, cap]
                                                 ).fetchall()[0][0])
            if count > 0:
                with self._df_lock:
                    self._df_cache[key] = (count, now)
                    while len(self._df_cache) > DF_CACHE_SIZE:
                        self._df_cache.pop(next(iter(self._df_cache)))
        return out

    def doc_count(self, project: str | None = None) -> int:
        """Memories that can answer a recall in ``project`` and global rows (all when None): current (not
        superseded, not forgotten), not bookkeeping, and not captured from a session (``CAPTURED_KINDS``:
        prompts, agent answers, session events). The session pointer's count. Reads the scope's rows (the
        kind is not in ``memories_scope``): about a millisecond per thousand rows."""
        where, args = scope_conditions(project=project, exclude_kinds=CAPTURED_KINDS)
        sql = f"SELECT count(*) FROM memories WHERE {' AND '.join(where)}"
        return int(self._db.reader().execute(sql, args).fetchall()[0][0])
