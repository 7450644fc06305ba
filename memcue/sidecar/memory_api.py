"""Memories by id and newest first, as ``/fetch`` and ``/list`` return them (``models.MemoryOut``).

Blocking (SQLite): the HTTP app calls these from worker threads.
"""

from __future__ import annotations

import time
from typing import Any

from memcue.sidecar.api_models import ListIn
from memcue.sidecar.recall import age_label
from memcue.sidecar.store import Store


def memory_item(row: dict[str, Any], now: float) -> dict[str, Any]:
    """One memory (a ``Store.fetch`` row) in the ``MemoryOut`` shape; ``now`` (Unix s) for its age label."""
    return {
        "memory_id": row["id"],
        "content": row["content"],
        "memory_kind": row["kind"],
        "project": row["project"],
        "session_id": row["session_id"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "age_label": age_label(row["created_at"], now),
        "pinned": row["pinned"],
        "bookkeeping": row["bookkeeping"],
        "forgotten": row.get("forgotten_at") is not None,
        "forgotten_at": row.get("forgotten_at"),
        "superseded_by": row["superseded_by"],
        "seen_count": row.get("seen_count") or 1,
    }


def fetch(store: Store, ids: list[int]) -> dict[str, Any]:
    """Memories by id, in the order asked, each id once, forgotten and superseded ones too:
    ``{"success", "results", "not_found"}``; ``success`` is False when no id resolves."""
    wanted = list(dict.fromkeys(ids))
    rows, now = store.fetch(wanted), time.time()
    results = [memory_item(rows[i], now) for i in wanted if i in rows]
    return {"success": bool(results), "results": results, "not_found": [i for i in wanted if i not in rows]}


def list_recent(store: Store, body: ListIn) -> dict[str, Any]:
    """The newest memories in ``body``'s scope (see ``ListIn``): ``{"results": [...]}``."""
    project = None if body.all_projects else body.project
    rows = store.list_memories(project=project, limit=body.limit, include_bookkeeping=body.include_bookkeeping,
                               kind=body.kind, include_forgotten=body.include_forgotten)
    now = time.time()
    return {"results": [memory_item(row, now) for row in rows]}
