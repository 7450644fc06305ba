"""The store's read queries for recall channels and context: time windows, session order and the entity
graph. Mixed into ``Store`` (``store.memories``), which provides ``_reader()``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from memcue.sidecar.store.rows import COLUMNS, row_dict, scope_conditions

if TYPE_CHECKING:
    import apsw


class RecallQueries:
    """Read-only queries used by recall; see the module docstring."""

    vector_dim: int | None

    def _reader(self) -> apsw.Connection:  # provided by Store
        raise NotImplementedError

    def session_neighbours(self, ids: Iterable[int]) -> dict[int, tuple[int | None, int | None]]:
        """For each memory, the previous and next non-bookkeeping memory of the same session (by
        ``created_at``, then id): ``id -> (previous id or None, next id or None)``. Memories without a
        session have no neighbours."""
        ids = list(dict.fromkeys(int(i) for i in ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        side = ("SELECT m.id FROM memories m WHERE m.session_id = s.session_id AND m.bookkeeping = 0"
                " AND (m.created_at, m.id) {op} (s.created_at, s.id)"
                " ORDER BY m.created_at {order}, m.id {order} LIMIT 1")
        sql = (f"SELECT s.id, ({side.format(op='<', order='DESC')}), ({side.format(op='>', order='ASC')})"
               f" FROM memories s WHERE s.id IN ({marks}) AND s.session_id != ''")
        rows = self._reader().execute(sql, ids).fetchall()
        return {int(r[0]): (r[1], r[2]) for r in rows}

    def in_window(
        self, start: float | None, end: float | None, *, project: str | None, limit: int,
        exclude_kinds: Sequence[str] = (), include_superseded: bool = False,
    ) -> list[dict[str, Any]]:
        """Non-bookkeeping memories created in ``[start, end)`` (Unix s; None = open), newest first."""
        where, args = scope_conditions(project=project, exclude_kinds=exclude_kinds,
                                       include_superseded=include_superseded)
        if start is not None:
            where.append("created_at >= ?")
            args.append(start)
        if end is not None:
            where.append("created_at < ?")
            args.append(end)
        sql = f"SELECT {COLUMNS} FROM memories WHERE {' AND '.join(where)} ORDER BY created_at DESC, id DESC LIMIT ?"
        return [row_dict(r) for r in self._reader().execute(sql, [*args, limit]).fetchall()]

    # -- entity graph ----------------------------------------------------------------------------
    def entity_ids(self, names: Sequence[str]) -> dict[str, tuple[int, int]]:
        """Known entities among ``names`` (lowercase): ``name -> (entity id, df)``."""
        names = list(dict.fromkeys(names))
        if not names:
            return {}
        marks = ",".join("?" * len(names))
        rows = self._reader().execute(f"SELECT name, id, df FROM entities WHERE name IN ({marks})", names).fetchall()
        return {r[0]: (int(r[1]), int(r[2])) for r in rows}

    def entity_neighbours(self, entity_ids: Sequence[int], limit: int = 200) -> list[tuple[int, int, int]]:
        """Co-occurrence edges leaving ``entity_ids``: ``(src, dst, weight)``, heaviest first, at most ``limit``."""
        ids = list(dict.fromkeys(int(i) for i in entity_ids))
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self._reader().execute(
            f"SELECT src, dst, weight FROM entity_edges WHERE src IN ({marks}) ORDER BY weight DESC, dst LIMIT ?",
            [*ids, limit]).fetchall()
        return [(int(a), int(b), int(w)) for a, b, w in rows]

    def entity_dfs(self, entity_ids: Sequence[int]) -> dict[int, int]:
        """``df`` (memories carrying it) per entity id."""
        ids = list(dict.fromkeys(int(i) for i in entity_ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self._reader().execute(f"SELECT id, df FROM entities WHERE id IN ({marks})", ids).fetchall()
        return {int(a): int(b) for a, b in rows}

    def memories_with_entities(
        self, entity_ids: Sequence[int], *, project: str | None, limit: int, exclude_kinds: Sequence[str] = (),
        include_superseded: bool = False,
    ) -> list[tuple[int, int]]:
        """``(memory id, entity id)`` links for memories carrying any of ``entity_ids`` (in scope, not
        bookkeeping), newest memories first, at most ``limit`` links."""
        ids = list(dict.fromkeys(int(i) for i in entity_ids))
        if not ids:
            return []
        where, args = scope_conditions("m", project=project, exclude_kinds=exclude_kinds,
                                       include_superseded=include_superseded)
        where, args = [f"me.entity_id IN ({','.join('?' * len(ids))})", *where], [*ids, *args]
        sql = (f"SELECT me.memory_id, me.entity_id FROM memory_entities me CROSS JOIN memories m ON m.id = me.memory_id"
               f" WHERE {' AND '.join(where)} ORDER BY m.created_at DESC, m.id DESC LIMIT ?")
        return [(int(a), int(b)) for a, b in self._reader().execute(sql, [*args, limit]).fetchall()]
