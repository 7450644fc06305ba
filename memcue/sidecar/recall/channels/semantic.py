"""The semantic channel: nearest memories by cosine similarity to the query's embedding."""

from __future__ import annotations

from memcue.sidecar.recall.channels.base import SEMANTIC, ChannelContext, ChannelResult
from memcue.sidecar.recall.channels.vector_index import VectorIndex


class SemanticChannel:
    """Nearest memories to ``ctx.vector`` (embedded here when None) from the sidecar's in-memory index
    ``ctx.vectors`` (one matrix product; a fresh index read from the store when None). Items:
    ``(memory_id, cosine similarity)`` best first, at most ``ctx.k``. Status ``disabled`` (no sqlite-vec),
    ``warming`` / ``no_embedding`` / ``not_configured`` (model loading, failed, absent), ``empty`` (blank
    query), ``no_candidates`` (no embedded memory in scope) or ``ok``."""

    name = SEMANTIC

    def run(self, ctx: ChannelContext) -> ChannelResult:
        """Search the vector index (see the class docstring); embedding and index errors propagate."""
        store, embedder = ctx.store, ctx.embedder
        if store.vector_dim is None:
            status = "disabled" if not store.vec.available else "warming"
            if embedder is not None and embedder.state == "error":
                status = "no_embedding"
            note = store.vector_note or (embedder.error if embedder else "") or "the embedding model is loading"
            return ChannelResult(SEMANTIC, status, note=note)
        if embedder is None or embedder.state != "ready":
            state = embedder.state if embedder else "not_configured"
            status = {"warming": "warming", "error": "no_embedding"}.get(state, "not_configured")
            return ChannelResult(SEMANTIC, status, note=(embedder.error if embedder else "") or "model loading")
        if not ctx.query.strip():
            return ChannelResult(SEMANTIC, "empty", note="the query is empty")
        vector = ctx.vector if ctx.vector is not None else embedder.embed_query(ctx.query)
        index = ctx.vectors if ctx.vectors is not None else VectorIndex()
        rows = index.search(store, vector, project=ctx.project, k=ctx.k, exclude_kinds=ctx.exclude_kinds,
                            include_superseded=ctx.include_superseded)
        if not rows:
            return ChannelResult(SEMANTIC, "no_candidates", note="no embedded memories in scope")
        return ChannelResult(SEMANTIC, "ok", rows[:ctx.k])
