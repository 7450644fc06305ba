"""The embedded store: one SQLite file holding rows, the FTS5 index, the vec0 index, the entity graph and the
recall-usage log.

``Store`` is a facade: it opens the file (``db.Database``: one writer connection under a lock, one reader per
thread), migrates it, and delegates each public method to the part that owns its SQL: ``memories`` (rows),
``keywords`` (FTS5), ``vectors`` (vec0), ``graph`` (entities), ``timeline`` (time and session reads),
``forgetting``, ``usage`` (the usage log), ``candidates`` (capture candidates), ``sessions`` (a session's
receipt, capture freshness), ``transfer`` (export reads, restore writes) and ``meta``.
It satisfies ``store.protocol.StoreProtocol``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import apsw

from memcue.sidecar.store.sqlite.candidates import CandidateRows
from memcue.sidecar.store.sqlite.db import OPTIMIZE_EVERY, Database, VecStatus
from memcue.sidecar.store.sqlite.forgetting import Forgetting
from memcue.sidecar.store.sqlite.graph import EntityGraph
from memcue.sidecar.store.sqlite.keywords import DF_CAP, KeywordIndex
from memcue.sidecar.store.sqlite.ledger import DistillLedger
from memcue.sidecar.store.sqlite.marks import Marks
from memcue.sidecar.store.sqlite.memories import MemoryRows
from memcue.sidecar.store.sqlite.meta import MetaTable
from memcue.sidecar.store.sqlite.migrations import migrate
from memcue.sidecar.store.sqlite.purging import Purging
from memcue.sidecar.store.sqlite.reindex import ReindexRows
from memcue.sidecar.store.sqlite.sessions import SessionReads
from memcue.sidecar.store.sqlite.timeline import Timeline
from memcue.sidecar.store.sqlite.transfer import Transfer
from memcue.sidecar.store.sqlite.usage import UsageLog
from memcue.sidecar.store.sqlite.vectors import ScopeFields, VectorRows
from memcue.sidecar.store.write import (
    CandidateAdded,
    DistillEntry,
    ForgetResult,
    MarkResult,
    NewCandidate,
    NewMemory,
    PreparedWrite,
    PurgeResult,
    Restored,
    RestoredCandidate,
    RestoredMemory,
    ServedRecall,
    VectorJournal,
    WriteResult,
)


class Store:
    """Rows, keyword index and vector index in one SQLite file at ``path`` (see the module docstring).

    Raises ``apsw.Error`` when the file cannot be opened or migrated.
    """

    def __init__(self, path: Path | str, *, want_vec: bool = True) -> None:
        self._db = db = Database(path, want_vec=want_vec)
        migrate(db.writer)
        db.optimize_at_open()
        self._meta = MetaTable(db)
        self._memories = MemoryRows(db)
        self._keywords = KeywordIndex(db)
        self._vectors = VectorRows(db, self._meta)
        self._graph = EntityGraph(db)
        self._timeline = Timeline(db)
        self._forgetting = Forgetting(db)
        self._marks = Marks(db)
        self._purging = Purging(db)
        self._usage = UsageLog(db)
        self._candidates = CandidateRows(db)
        self._sessions = SessionReads(db)
        self._ledger = DistillLedger(db)
        self._reindex = ReindexRows(db, self._meta)
        self._transfer = Transfer(db)

    # -- the file and its state --------------------------------------------------------------
    @property
    def path(self) -> str:
        """The database file's path."""
        return self._db.path

    @property
    def vec(self) -> VecStatus:
        """Whether sqlite-vec loaded (``available``, ``version``, ``error``)."""
        return self._db.vec

    @property
    def generation(self) -> int:
        """Bumped by every write: caches compare it to tell the store changed."""
        return self._db.generation

    @property
    def vector_journal(self) -> VectorJournal:
        """Ids whose vector or currency changed, for in-memory vector indexes (``recall.vector_index``)."""
        return self._db.vector_journal

    @property
    def vector_dim(self) -> int | None:
        """The bound embedding dimension; None until ``bind_model`` succeeds."""
        return self._vectors.vector_dim

    @property
    def vector_note(self) -> str:
        """Why vector search is off ("" when it is on or not yet asked for)."""
        return self._vectors.vector_note

    @property
    def schema_version(self) -> int:
        """Number of migrations applied."""
        return self._meta.schema_version()

    @property
    def _writer(self) -> apsw.Connection:
        return self._db.writer

    def _reader(self) -> apsw.Connection:
        return self._db.reader()

    def close(self) -> None:
        """Checkpoint the WAL and close the writer connection."""
        self._db.close()

    def optimize_if_due(self, every: int = OPTIMIZE_EVERY) -> bool:
        """See ``Database.optimize_if_due``."""
        return self._db.optimize_if_due(every)

    # -- meta and model ----------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        """The ``meta`` value of ``key``, None when absent."""
        return self._meta.get(key)

    def set_meta(self, key: str, value: str) -> None:
        """Store ``value`` for ``key`` in ``meta``."""
        self._meta.set(key, value)

    def delete_meta(self, key: str) -> None:
        """Forget ``key`` in the ``meta`` table (no error when absent)."""
        self._meta.delete(key)

    def bind_model(self, model_id: str, dim: int) -> bool:
        """See ``VectorRows.bind_model``."""
        return self._vectors.bind_model(model_id, dim)

    def bound_model(self) -> tuple[str, int] | None:
        """``(model id, dim)`` the stored vectors were made with, None before any model was bound."""
        model = self._meta.get("embedding_model")
        return (model, int(self._meta.get("embedding_dim") or 0)) if model else None

    # -- re-index to another model -------------------------------------------------------------
    def reindex_target(self) -> tuple[str, int, str] | None:
        """See ``ReindexRows.target``."""
        return self._reindex.target()

    def start_reindex(self, model_id: str, dim: int) -> bool:
        """See ``ReindexRows.start``."""
        return self._reindex.start(model_id, dim)

    def set_reindex_state(self, state: str) -> None:
        """See ``ReindexRows.set_state``."""
        self._reindex.set_state(state)

    def reindex_counts(self) -> tuple[int, int]:
        """See ``ReindexRows.counts``."""
        return self._reindex.counts()

    def reindex_pending(self, limit: int, after: int = 0) -> list[tuple[int, str, str, dict[str, Any]]]:
        """See ``ReindexRows.pending``."""
        return self._reindex.pending(limit, after)

    def add_reindex_vectors(self, items: Sequence[tuple[int, bytes, float | None]]) -> int:
        """See ``ReindexRows.add``."""
        return self._reindex.add(items)

    def finish_reindex(self, model_id: str, dim: int) -> int:
        """See ``ReindexRows.finish``; then binds the store to ``model_id`` (``bind_model``)."""
        swapped = self._reindex.finish(model_id, dim)
        self._vectors.bind_model(model_id, dim)
        return swapped

    # -- writes ------------------------------------------------------------------------------
    def remember(self, memory: NewMemory | PreparedWrite) -> WriteResult:
        """Store one memory at once (keyword-searchable on return); its vector comes later. A convenience
        beyond ``StoreProtocol`` (the sidecar writes through ``remember_many``)."""
        return self._memories.remember_many([memory])[0]

    def remember_many(self, memories: Iterable[NewMemory | PreparedWrite]) -> list[WriteResult]:
        """See ``MemoryRows.remember_many``."""
        return self._memories.remember_many(memories)

    def reinforce(self, memory_id: int, tags: Sequence[str] = ()) -> None:
        """See ``MemoryRows.reinforce``."""
        self._memories.reinforce(memory_id, tags)

    def update(self, memory_id: int, memory: NewMemory, *, carry_source_id: bool = False) -> WriteResult:
        """See ``MemoryRows.update``."""
        return self._memories.update(memory_id, memory, carry_source_id=carry_source_id)

    def forget(self, ids: Iterable[int], *, now: float | None = None) -> ForgetResult:
        """See ``Forgetting.forget``."""
        return self._forgetting.forget(ids, now=now)

    def purge(self, ids: Iterable[int]) -> PurgeResult:
        """See ``Purging.purge``."""
        return self._purging.purge(ids)

    def set_pinned(self, ids: Iterable[int], pinned: bool) -> MarkResult:
        """See ``Marks.set_pinned``."""
        return self._marks.set_pinned(ids, pinned)

    def unforget(self, ids: Iterable[int]) -> MarkResult:
        """See ``Marks.unforget``."""
        return self._marks.unforget(ids)

    # -- rows --------------------------------------------------------------------------------
    def fetch(self, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """See ``MemoryRows.fetch``."""
        return self._memories.fetch(ids)

    def by_source_id(self, source_id: str) -> dict[str, Any] | None:
        """See ``MemoryRows.by_source_id``."""
        return self._memories.by_source_id(source_id)

    def list_memories(
        self, *, project: str | None = None, limit: int = 50, include_bookkeeping: bool = True,
        kinds_excluded: Sequence[str] = (), pinned_only: bool = False, kind: str | None = None,
        include_forgotten: bool = False, tags: Sequence[str] = (),
    ) -> list[dict[str, Any]]:
        """See ``MemoryRows.list_memories``."""
        return self._memories.list_memories(
            project=project, limit=limit, include_bookkeeping=include_bookkeeping, kinds_excluded=kinds_excluded,
            pinned_only=pinned_only, kind=kind, include_forgotten=include_forgotten, tags=tags)

    def counts(self) -> dict[str, int]:
        """See ``MemoryRows.counts``."""
        return self._memories.counts()

    # -- keywords ----------------------------------------------------------------------------
    def bm25(
        self, match: str, *, project: str | None, limit: int, exclude_kinds: Sequence[str] = (),
        include_superseded: bool = False,
    ) -> list[tuple[int, float]]:
        """See ``KeywordIndex.bm25``."""
        return self._keywords.bm25(match, project=project, limit=limit, exclude_kinds=exclude_kinds,
                                   include_superseded=include_superseded)

    def doc_frequencies(self, terms: Sequence[str], cap: int = DF_CAP, *, project: str | None = None
                        ) -> dict[str, int]:
        """See ``KeywordIndex.doc_frequencies``."""
        return self._keywords.doc_frequencies(terms, cap, project=project)

    def doc_count(self, project: str | None = None) -> int:
        """See ``KeywordIndex.doc_count``."""
        return self._keywords.doc_count(project)

    # -- time and session --------------------------------------------------------------------
    def session_neighbours(self, ids: Iterable[int]) -> dict[int, tuple[int | None, int | None]]:
        """See ``Timeline.session_neighbours``."""
        return self._timeline.session_neighbours(ids)

    def in_window(
        self, start: float | None, end: float | None, *, project: str | None, limit: int,
        exclude_kinds: Sequence[str] = (), include_superseded: bool = False,
    ) -> list[dict[str, Any]]:
        """See ``Timeline.in_window``."""
        return self._timeline.in_window(start, end, project=project, limit=limit, exclude_kinds=exclude_kinds,
                                        include_superseded=include_superseded)

    def session_context(self, session_id: str, memory_id: int, created_at: float, limit: int
                        ) -> list[tuple[int, str]]:
        """See ``Timeline.session_context``."""
        return self._timeline.session_context(session_id, memory_id, created_at, limit)

    def session_first_seen(self, session_id: str) -> float | None:
        """See ``Timeline.session_first_seen``."""
        return self._timeline.session_first_seen(session_id)

    # -- entity graph ------------------------------------------------------------------------
    def scope_size(self, project: str | None, include_superseded: bool = False) -> int:
        """See ``EntityGraph.scope_size``."""
        return self._graph.scope_size(project, include_superseded)

    def known_entities(self, names: Sequence[str]) -> dict[str, tuple[int, int, str]]:
        """See ``EntityGraph.known_entities``."""
        return self._graph.known_entities(names)

    def dfs_in_scope(self, global_df: dict[int, int], project: str | None, include_superseded: bool, cap: int,
                     n_scope: int) -> dict[int, int]:
        """See ``EntityGraph.dfs_in_scope``."""
        return self._graph.dfs_in_scope(global_df, project, include_superseded, cap, n_scope)

    def heaviest_edges(self, sources: Sequence[int], fanout: int) -> dict[int, tuple[int, list[tuple[int, int, int]]]]:
        """See ``EntityGraph.heaviest_edges``."""
        return self._graph.heaviest_edges(sources, fanout)

    def memories_with_entities(
        self, entity_ids: Sequence[int], *, project: str | None, limit: int, exclude_kinds: Sequence[str] = (),
        include_superseded: bool = False,
    ) -> list[tuple[int, int]]:
        """See ``EntityGraph.memories_with_entities``."""
        return self._graph.memories_with_entities(entity_ids, project=project, limit=limit,
                                                  exclude_kinds=exclude_kinds, include_superseded=include_superseded)

    def entity_links(self, memory_ids: Iterable[int], entity_ids: Iterable[int]) -> list[tuple[int, int, str]]:
        """See ``EntityGraph.entity_links``."""
        return self._graph.entity_links(memory_ids, entity_ids)

    def related_memories(self, memory_id: int, project: str, limit: int) -> list[tuple[int, str]]:
        """See ``EntityGraph.related_memories``."""
        return self._graph.related_memories(memory_id, project, limit)

    # -- vectors -----------------------------------------------------------------------------
    def pending_embeddings(self, limit: int = 64) -> list[tuple[int, str, str, dict[str, Any]]]:
        """See ``VectorRows.pending_embeddings``."""
        return self._vectors.pending_embeddings(limit)

    def reembed_with(self, items: Sequence[tuple[int, str]]) -> int:
        """See ``VectorRows.reembed_with``."""
        return self._vectors.reembed_with(items)

    def set_embeddings(self, items: Sequence[tuple[int, bytes]]) -> None:
        """See ``VectorRows.set_embeddings``."""
        self._vectors.set_embeddings(items)

    def knn(self, vector: bytes, *, project: str | None, k: int, exclude_kinds: Sequence[str] = ()
            ) -> list[tuple[int, float]]:
        """See ``VectorRows.knn``: sqlite-vec's own search, beyond ``StoreProtocol`` (recall searches
        ``recall.VectorIndex``; tests hold the two to the same answers)."""
        return self._vectors.knn(vector, project=project, k=k, exclude_kinds=exclude_kinds)

    def vectors(self, ids: Iterable[int]) -> dict[int, bytes]:
        """See ``VectorRows.vectors``."""
        return self._vectors.vectors(ids)

    def all_vectors(self, batch: int, cache_kib: int) -> Iterator[list[tuple[int, bytes]]]:
        """See ``VectorRows.all_vectors``."""
        return self._vectors.all_vectors(batch, cache_kib)

    def scope_fields(self, ids: Sequence[int]) -> dict[int, ScopeFields]:
        """See ``VectorRows.scope_fields``."""
        return self._vectors.scope_fields(ids)

    def all_scope_fields(self) -> dict[int, ScopeFields]:
        """See ``VectorRows.all_scope_fields``."""
        return self._vectors.all_scope_fields()

    def set_baselines(self, items: Sequence[tuple[int, float]]) -> None:
        """See ``VectorRows.set_baselines``."""
        self._vectors.set_baselines(items)

    def missing_baselines(self, limit: int = 256) -> list[int]:
        """See ``VectorRows.missing_baselines``."""
        return self._vectors.missing_baselines(limit)

    # -- usage log ---------------------------------------------------------------------------
    def log_recalls(self, served: Sequence[ServedRecall], *, now: float | None = None) -> None:
        """See ``UsageLog.log_recalls``."""
        self._usage.log_recalls(served, now=now)

    def mark_used(self, memory_ids: Iterable[int], *, query_id: str = "", session_id: str = "",
                  now: float | None = None) -> int:
        """See ``UsageLog.mark_used``."""
        return self._usage.mark_used(memory_ids, query_id=query_id, session_id=session_id, now=now)

    def usage_stats(self, since: float) -> dict[str, Any]:
        """See ``UsageLog.usage_stats``."""
        return self._usage.usage_stats(since)

    # -- capture candidates ------------------------------------------------------------------
    def add_candidates(self, candidates: Iterable[NewCandidate]) -> list[CandidateAdded]:
        """See ``CandidateRows.add``."""
        return self._candidates.add(candidates)

    def get_candidate(self, candidate_id: int) -> dict[str, Any] | None:
        """See ``CandidateRows.get``."""
        return self._candidates.get(candidate_id)

    def list_candidates(self, *, state: str | None = None, project: str | None = None,
                        session_id: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """See ``CandidateRows.list``."""
        return self._candidates.list(state=state, project=project, session_id=session_id, limit=limit)

    def decide_candidate(self, candidate_id: int, state: str, *, reason: str, memory_id: int | None = None,
                         now: float | None = None) -> bool:
        """See ``CandidateRows.decide``."""
        return self._candidates.decide(candidate_id, state, reason=reason, memory_id=memory_id, now=now)

    def expire_candidates(self, now: float | None = None, limit: int = 500) -> int:
        """See ``CandidateRows.expire``."""
        return self._candidates.expire(now, limit)

    def next_candidate_expiry(self) -> float | None:
        """See ``CandidateRows.next_expiry``."""
        return self._candidates.next_expiry()

    def pending_candidates_after(self, after_id: int, signals: Sequence[str], limit: int = 100
                                 ) -> list[dict[str, Any]]:
        """See ``CandidateRows.pending_after``."""
        return self._candidates.pending_after(after_id, signals, limit)

    def candidate_peers(self, project: str, kind: str, *, other_than: str, signals: Sequence[str], digest: str = "",
                        limit: int = 2000) -> list[dict[str, Any]]:
        """See ``CandidateRows.peers``."""
        return self._candidates.peers(project, kind, other_than=other_than, signals=signals, digest=digest,
                                      limit=limit)

    def set_candidate_vectors(self, items: Sequence[tuple[int, bytes]], model: str) -> None:
        """See ``CandidateRows.set_vectors``."""
        self._candidates.set_vectors(items, model)

    # -- sessions ----------------------------------------------------------------------------
    def session_memories(self, session_id: str) -> list[dict[str, Any]]:
        """See ``SessionReads.session_memories``."""
        return self._sessions.session_memories(session_id)

    def turn_request(self, session_id: str, before: float) -> str | None:
        """See ``SessionReads.turn_request``."""
        return self._sessions.turn_request(session_id, before)

    def episodes_without_context(self, after_id: int, limit: int) -> list[tuple[int, str, str | None]]:
        """See ``SessionReads.episodes_without_context``."""
        return self._sessions.episodes_without_context(after_id, limit)

    def session_recalls(self, session_id: str) -> list[dict[str, Any]]:
        """See ``SessionReads.session_recalls``."""
        return self._sessions.session_recalls(session_id)

    def sessions(self, project: str | None, limit: int) -> list[dict[str, Any]]:
        """See ``SessionReads.sessions``."""
        return self._sessions.sessions(project, limit)

    def session_projects(self, limit: int) -> list[str]:
        """See ``SessionReads.session_projects``."""
        return self._sessions.session_projects(limit)

    def last_captures(self, sources: Sequence[str]) -> dict[str, float | None]:
        """See ``SessionReads.last_captures``."""
        return self._sessions.last_captures(sources)

    # -- distillation ledger -----------------------------------------------------------------
    def add_distill_entry(self, entry: DistillEntry) -> int:
        """See ``DistillLedger.add``."""
        return self._ledger.add(entry)

    def distill_entries(self, *, since: float | None = None, session_id: str | None = None,
                        limit: int = 200) -> list[dict[str, Any]]:
        """See ``DistillLedger.entries``."""
        return self._ledger.entries(since=since, session_id=session_id, limit=limit)

    def distill_spent(self, since: float) -> int:
        """See ``DistillLedger.spent``."""
        return self._ledger.spent(since)

    # -- export and restore ------------------------------------------------------------------
    def export_memories(self, after_id: int, limit: int, project: str | None) -> list[dict[str, Any]]:
        """See ``Transfer.memories_after``."""
        return self._transfer.memories_after(after_id, limit, project)

    def export_version_links(self, project: str | None) -> dict[int, int]:
        """See ``Transfer.version_links``."""
        return self._transfer.version_links(project)

    def export_candidates(self, after_id: int, limit: int, project: str | None) -> list[dict[str, Any]]:
        """See ``Transfer.candidates_after``."""
        return self._transfer.candidates_after(after_id, limit, project)

    def export_deliveries(self, after: str, limit: int, project: str | None) -> list[dict[str, Any]]:
        """See ``Transfer.deliveries_after``."""
        return self._transfer.deliveries_after(after, limit, project)

    def restore_memories(self, items: Sequence[RestoredMemory], *, merge: bool,
                         known: Mapping[int, int]) -> list[Restored]:
        """See ``Transfer.restore_memories``."""
        return self._transfer.restore_memories(items, merge=merge, known=known)

    def restore_candidates(self, items: Sequence[RestoredCandidate], *, merge: bool) -> list[Restored]:
        """See ``Transfer.restore_candidates``."""
        return self._transfer.restore_candidates(items, merge=merge)

    def restore_deliveries(self, items: Sequence[tuple[str, int, float]]) -> list[Restored]:
        """See ``Transfer.restore_deliveries``."""
        return self._transfer.restore_deliveries(items)

    def raise_id_floor(self, memory_id: int) -> None:
        """See ``Transfer.raise_id_floor``."""
        self._transfer.raise_id_floor(memory_id)
