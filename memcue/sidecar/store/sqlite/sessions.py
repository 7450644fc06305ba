"""Reads for a session's receipt and for capture freshness: what a session stored (``memories`` rows with its
``session_id``), what was injected into it or skipped (``recall_log`` and ``recall_items``), recent sessions of a
project with their counts, and the newest capture per source (``memcue doctor``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memcue.sidecar.store.sqlite.db import Database

#: Rows of one session a receipt reads, at most (a long session stores a few hundred).
SESSION_ROWS_MAX = 2000
#: The usage log's ``served_by`` of the blocks hooks give a session: its session-start block, its prompts' blocks
#: and those beside its tool calls (``inject``); a person's ``memcue recall`` logs under a ``cli:`` session instead.
HOOK_SERVED = ("session", "hook", "tool")


class SessionReads:
    """Session and capture reads over ``db``; see the module docstring."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def session_memories(self, session_id: str) -> list[dict[str, Any]]:
        """Rows stored with ``session_id``, oldest first: ``{"id", "content", "kind", "project", "source",
        "source_id", "created_at", "bookkeeping", "forgotten", "superseded_by", "metadata"}`` (times Unix s)."""
        rows = self._db.reader().execute(
            "SELECT id, content, kind, project, source, source_id, created_at, bookkeeping, forgotten_at,"
            " superseded_by, metadata FROM memories WHERE session_id = ? ORDER BY created_at, id LIMIT ?",
            (session_id, SESSION_ROWS_MAX)).fetchall()
        return [{"id": int(r[0]), "content": r[1], "kind": r[2], "project": r[3], "source": r[4],
                 "source_id": r[5], "created_at": r[6], "bookkeeping": bool(r[7]), "forgotten": r[8] is not None,
                 "superseded_by": r[9], "metadata": json.loads(r[10] or "{}")} for r in rows]

    def turn_request(self, session_id: str, before: float) -> str | None:
        """The text of the captured prompt (``request``) that opened the turn whose answer ``session_id`` stored
        at ``before`` (Unix s): the session's newest request or episode row created at or before ``before``, when
        that row is a request (a newer episode means the turn's prompt was not captured); None otherwise, and
        for a forgotten request."""
        row = self._db.reader().execute(
            "SELECT kind, content, forgotten_at FROM memories WHERE session_id = ? AND created_at <= ?"
            " AND kind IN ('request', 'episode') ORDER BY created_at DESC, id DESC LIMIT 1",
            (session_id, before)).fetchone()
        if row is None or row[0] != "request" or row[2] is not None:
            return None
        return str(row[1])

    def episodes_without_context(self, after_id: int, limit: int) -> list[tuple[int, str, str | None]]:
        """Current, non-bookkeeping episodes with a session and no ``metadata["embed_text"]``, by id above
        ``after_id``: ``(id, content, turn prompt)``, at most ``limit``, oldest first. The turn prompt is the
        session's newest request or episode row before the episode (by ``created_at``, then id) when that row is a
        request not forgotten, else None (``turn_request`` for a stored episode)."""
        rows = self._db.reader().execute(
            "SELECT e.id, e.content, (SELECT CASE WHEN p.kind = 'request' AND p.forgotten_at IS NULL"
            " THEN p.content END FROM memories p WHERE p.session_id = e.session_id"
            " AND p.kind IN ('request', 'episode')"
            " AND (p.created_at < e.created_at OR (p.created_at = e.created_at AND p.id < e.id))"
            " ORDER BY p.created_at DESC, p.id DESC LIMIT 1)"
            " FROM memories e WHERE e.id > ? AND e.kind = 'episode' AND coalesce(e.session_id, '') != ''"
            " AND e.forgotten_at IS NULL AND e.bookkeeping = 0"
            " AND json_extract(coalesce(e.metadata, '{}'), '$.embed_text') IS NULL ORDER BY e.id LIMIT ?",
            (after_id, limit)).fetchall()
        return [(int(r[0]), str(r[1]), None if r[2] is None else str(r[2])) for r in rows]

    def session_recalls(self, session_id: str) -> list[dict[str, Any]]:
        """Recalls logged for ``session_id``, oldest first: ``{"query_id", "created_at", "served_by", "block",
        "tokens", "skipped", "project", "items": [{"memory_id", "kind", "used", "content", "source"}]}``
        (``content`` and ``source`` "" when the memory is gone; ``project`` "" when not logged)."""
        conn = self._db.reader()
        logs = conn.execute(
            "SELECT query_id, created_at, served_by, block, tokens, skipped, project FROM recall_log"
            " WHERE session_id = ? ORDER BY created_at, id LIMIT ?", (session_id, SESSION_ROWS_MAX)).fetchall()
        items: dict[str, list[dict[str, Any]]] = {}
        for qid, mid, kind, used, content, source in conn.execute(
                "SELECT i.query_id, i.memory_id, i.kind, i.used_at IS NOT NULL, coalesce(m.content, ''),"
                " coalesce(m.source, '')"
                " FROM recall_items i JOIN recall_log l USING (query_id) LEFT JOIN memories m ON m.id = i.memory_id"
                " WHERE l.session_id = ?", (session_id,)).fetchall():
            items.setdefault(qid, []).append({"memory_id": int(mid), "kind": kind, "used": bool(used),
                                              "content": content, "source": source})
        return [{"query_id": q, "created_at": at, "served_by": by, "block": block, "tokens": int(tokens),
                 "skipped": skipped, "project": project or "", "items": items.get(q, [])}
                for q, at, by, block, tokens, skipped, project in logs]

    def sessions(self, project: str | None, limit: int) -> list[dict[str, Any]]:
        """Sessions that stored something or were given a block by a hook, newest activity first (of ``project``
        exactly; every project when None): ``{"session_id", "project", "first_at", "last_at", "stored" (rows),
        "captured" (rows a hook captured: source ``hook:*``), "by_kind", "candidates", "recalls"}``. A session that
        stored nothing (a SessionStart alone, a prompt that repeated an earlier one) is one by its hooks' entries in
        the usage log (``HOOK_SERVED``), of the project its hooks were served in (``_served_project``)."""
        where, args = ("AND project = ?", [project]) if project is not None else ("", [])
        conn = self._db.reader()
        rows = conn.execute(
            "SELECT session_id, project, min(created_at), max(created_at), count(*),"
            " coalesce(sum(source LIKE 'hook:%'), 0) FROM memories"
            f" WHERE session_id != '' {where} GROUP BY session_id ORDER BY max(created_at) DESC LIMIT ?",
            (*args, int(limit))).fetchall()
        found = {sid: [proj, first, last, count, captured] for sid, proj, first, last, count, captured in rows}
        for sid, first, last in self._served_sessions(int(limit)):
            if sid not in found:
                stored = self._stored(sid)
                entry = stored or [self._served_project(sid), first, last, 0, 0]
                if project is not None and entry[0] != project:
                    continue
                found[sid] = entry
            found[sid][1], found[sid][2] = min(found[sid][1], first), max(found[sid][2], last)
        newest = sorted(found.items(), key=lambda item: -item[1][2])[:int(limit)]
        return [self._session_counts(conn, sid, *values) for sid, values in newest]

    def _served_sessions(self, limit: int) -> list[tuple[str, float, float]]:
        """``(session_id, first_at, last_at)`` of the sessions hooks gave blocks to (``HOOK_SERVED`` entries of the
        usage log), newest first: a few times ``limit`` of them, as some belong to other projects."""
        marks = ",".join("?" * len(HOOK_SERVED))
        return [(str(r[0]), float(r[1]), float(r[2])) for r in self._db.reader().execute(
            f"SELECT session_id, min(created_at), max(created_at) FROM recall_log WHERE session_id != ''"
            f" AND served_by IN ({marks}) GROUP BY session_id ORDER BY max(created_at) DESC LIMIT ?",
            (*HOOK_SERVED, limit * 4 + 20)).fetchall()]

    def _served_project(self, session_id: str) -> str:
        """The project ``session_id``'s hooks were served in (the usage log's ``project``, most often); for recalls
        logged without one, the project most memories given to it belong to; "" when neither is known."""
        conn = self._db.reader()
        row = conn.execute(
            "SELECT project FROM recall_log WHERE session_id = ? AND project != '' GROUP BY project"
            " ORDER BY count(*) DESC LIMIT 1", (session_id,)).fetchone()
        row = row or conn.execute(
            "SELECT m.project FROM recall_log l JOIN recall_items i USING (query_id) JOIN memories m"
            " ON m.id = i.memory_id WHERE l.session_id = ? GROUP BY m.project ORDER BY count(*) DESC LIMIT 1",
            (session_id,)).fetchone()
        return "" if row is None else str(row[0])

    def _stored(self, session_id: str) -> list[Any] | None:
        """``[project, first_at, last_at, rows, captured rows]`` of what ``session_id`` stored; None when nothing."""
        row = self._db.reader().execute(
            "SELECT project, min(created_at), max(created_at), count(*), coalesce(sum(source LIKE 'hook:%'), 0)"
            " FROM memories WHERE session_id = ?", (session_id,)).fetchone()
        return None if row is None or not row[3] else list(row)

    @staticmethod
    def _session_counts(conn: Any, sid: str, proj: str, first: float, last: float, count: int,
                        captured: int) -> dict[str, Any]:
        """One ``sessions`` entry: the session's times and row counts, with its kinds, candidates and recalls."""
        kinds = dict(conn.execute("SELECT kind, count(*) FROM memories WHERE session_id = ? GROUP BY kind",
                                  (sid,)).fetchall())
        [(candidates,)] = conn.execute("SELECT count(*) FROM candidates WHERE session_id = ?", (sid,)).fetchall()
        [(recalls,)] = conn.execute("SELECT count(*) FROM recall_log WHERE session_id = ?", (sid,)).fetchall()
        return {"session_id": sid, "project": proj, "first_at": first, "last_at": last, "stored": int(count),
                "captured": int(captured), "by_kind": {str(k): int(n) for k, n in kinds.items()},
                "candidates": int(candidates), "recalls": int(recalls)}

    def session_projects(self, limit: int) -> list[str]:
        """The projects of the ``limit`` sessions with the newest activity (as ``sessions`` orders them), newest
        first, each once: ``sessions``' projects without its per-session counts."""
        rows = self._db.reader().execute(
            "SELECT project FROM (SELECT project, max(created_at) AS last FROM memories WHERE session_id != ''"
            " GROUP BY session_id ORDER BY last DESC LIMIT ?)", (int(limit),)).fetchall()
        return list(dict.fromkeys(str(r[0]) for r in rows))

    def last_captures(self, sources: Sequence[str]) -> dict[str, float | None]:
        """The newest ``created_at`` (Unix s) of a row per source in ``sources`` (such as ``hook:claude-code``);
        None for a source with no row. Session events (kind ``event``) do not count: a harness fires SessionEnd
        for commands that do no work (``claude mcp list``), so a "Session ended" row says nothing was captured."""
        wanted = list(dict.fromkeys(sources))
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        found = dict(self._db.reader().execute(
            f"SELECT source, max(created_at) FROM memories WHERE source IN ({marks}) AND kind != 'event' "
            "GROUP BY source",
            wanted).fetchall())
        return {s: found.get(s) for s in wanted}
