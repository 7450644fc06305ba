"""The BM25 channel: SQLite FTS5 ``bm25()`` over memory text, for the query's quoted keywords."""

from __future__ import annotations

from memcue.sidecar.recall.channels.base import BM25, ChannelContext, ChannelResult


class Bm25Channel:
    """Keyword matches of ``ctx.keywords`` (never raw user text). Items: ``(memory_id, -bm25)`` best first
    (score > 0 for any match), at most ``ctx.k``. Status ``empty`` (no searchable word), ``no_candidates``
    (no memory carries any of them) or ``ok``."""

    name = BM25

    def run(self, ctx: ChannelContext) -> ChannelResult:
        """Search the store's FTS5 index (see the class docstring); store errors propagate."""
        query = ctx.keywords
        if not query.match:
            return ChannelResult(BM25, "empty", note=query.note)
        items = ctx.store.bm25(query.match, project=ctx.project, limit=ctx.k, exclude_kinds=ctx.exclude_kinds,
                               include_superseded=ctx.include_superseded)
        if not items:
            return ChannelResult(BM25, "no_candidates", note="no memory contains any of: " + ", ".join(query.terms))
        return ChannelResult(BM25, "ok", items)
