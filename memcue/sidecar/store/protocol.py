"""What the rest of memcue uses of a store: the interface a backend implements (``store.sqlite.Store`` now, a
PostgreSQL one later), as a ``typing.Protocol`` (structural: a backend does not inherit from it).

Conventions for every backend: times are Unix seconds; a memory's scope is its ``project`` plus global rows
(``project`` ""), every project when ``project`` is None; recall reads leave out bookkeeping, superseded
(unless ``include_superseded``) and forgotten rows; rows come back as dicts with the columns of
``store.sqlite.rows.COLUMNS``; every write bumps ``generation`` and every vector or currency change is logged
in ``vector_journal``. Writes take a ``NewMemory`` and prepare it (``store.write.prepare_write``) unless given a
``PreparedWrite``. Capture candidates live apart from memories (no recall read sees them) and do not bump
``generation`` (no recall answer depends on them). Backend errors (``apsw.Error`` for SQLite) propagate.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

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


class VectorSupport(Protocol):
    """Whether the backend's vector search is available, its ``version`` and the ``error`` when not."""

    @property
    def available(self) -> bool:
        """True when vectors can be stored and searched."""
    @property
    def version(self) -> str:
        """The vector extension's version ("v0.1.9"), "" when unavailable."""
    @property
    def error(self) -> str:
        """Why it is unavailable ("" when available)."""


@runtime_checkable
class StoreProtocol(Protocol):
    """The store as the sidecar and recall use it (see the module docstring for shared conventions)."""

    @property
    def path(self) -> str:
        """Where the store lives (a file path or a connection string)."""
    @property
    def vec(self) -> VectorSupport:
        """Whether vector search could be enabled at all."""
    @property
    def generation(self) -> int:
        """Bumped by every write: caches compare it to tell the store changed."""
    @property
    def vector_journal(self) -> VectorJournal:
        """Ids whose vector or currency changed (``recall.vector_index`` refreshes just those)."""
    @property
    def vector_dim(self) -> int | None:
        """The bound embedding dimension; None until ``bind_model`` succeeds."""
    @property
    def vector_note(self) -> str:
        """Why vector search is off ("" when on)."""
    @property
    def schema_version(self) -> int:
        """Number of migrations applied."""

    def close(self) -> None:
        """Flush and release the store."""
    def optimize_if_due(self, every: int = ...) -> bool:
        """Refresh planner statistics once ``every`` rows were inserted since the last time; True when it ran."""
    def get_meta(self, key: str) -> str | None:
        """The stored value of ``key``, None when absent."""
    def set_meta(self, key: str, value: str) -> None:
        """Store ``value`` for ``key``."""
    def delete_meta(self, key: str) -> None:
        """Forget ``key`` (no error when absent)."""
    def bind_model(self, model_id: str, dim: int) -> bool:
        """Record or check the embedding model; True when vectors can be used (else ``vector_note`` says why)."""
    def bound_model(self) -> tuple[str, int] | None:
        """``(model id, dim)`` the stored vectors were made with; None before any model was bound."""

    # -- re-index to another embedding model (the old vectors stay until the swap)
    def reindex_target(self) -> tuple[str, int, str] | None:
        """``(model id, dim, "running" | "paused")`` of the re-index started, None when none was."""
    def start_reindex(self, model_id: str, dim: int) -> bool:
        """Run a re-index to ``model_id``; True when one to that model goes on where it stopped."""
    def set_reindex_state(self, state: str) -> None:
        """Mark the started re-index "running" or "paused"; ``ValueError`` for another state."""
    def reindex_counts(self) -> tuple[int, int]:
        """``(memories with their new vector, memories to embed)``."""
    def reindex_pending(self, limit: int, after: int = 0) -> list[tuple[int, str, str, dict[str, Any]]]:
        """Memories still without their new vector (ids above ``after``), oldest first."""
    def add_reindex_vectors(self, items: Sequence[tuple[int, bytes, float | None]]) -> int:
        """Keep ``(id, float32 bytes, baseline)`` new vectors; returns how many were kept."""
    def finish_reindex(self, model_id: str, dim: int) -> int:
        """Swap the new vectors in and bind ``model_id``; returns how many; ``ValueError`` without that re-index."""

    # -- writes
    def remember_many(self, memories: Iterable[NewMemory | PreparedWrite]) -> list[WriteResult]:
        """Store memories in one transaction; the same text again in a project (or a known ``source_id``) is a
        ``duplicate``. Raises ``ValueError`` for text empty after preparation."""
    def reinforce(self, memory_id: int, tags: Sequence[str] = ()) -> None:
        """Count one more sighting of ``memory_id`` (a near-duplicate) and add ``tags`` (normalised) to it."""
    def update(self, memory_id: int, memory: NewMemory, *, carry_source_id: bool = False) -> WriteResult:
        """Write ``memory`` as a new version of ``memory_id`` (``carry_source_id``: the new version takes
        ``memory.source_id`` over from the row holding it). Raises ``KeyError`` (unknown id), ``ValueError``
        (already superseded or forgotten, empty text)."""
    def forget(self, ids: Iterable[int], *, now: float | None = None) -> ForgetResult:
        """Soft-delete ``ids`` (idempotent)."""
    def set_pinned(self, ids: Iterable[int], pinned: bool) -> MarkResult:
        """Pin or unpin ``ids`` in place (no new version)."""
    def unforget(self, ids: Iterable[int]) -> MarkResult:
        """Take a ``forget`` of ``ids`` back: they answer again."""
    def purge(self, ids: Iterable[int]) -> PurgeResult:
        """Hard-delete ``ids`` and every version of them, from rows, keyword index, vectors, entity graph,
        candidates and usage log, leaving their text in neither the database file nor its WAL."""

    # -- rows
    def fetch(self, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """Rows by id (any state); unknown ids are absent."""
    def by_source_id(self, source_id: str) -> dict[str, Any] | None:
        """The row ``source_id`` was written as (carrying it, or counted as its duplicate delivery), any state;
        None when never delivered."""
    def list_memories(
        self, *, project: str | None = None, limit: int = 50, include_bookkeeping: bool = True,
        kinds_excluded: Sequence[str] = (), pinned_only: bool = False, kind: str | None = None,
        include_forgotten: bool = False, tags: Sequence[str] = (),
    ) -> list[dict[str, Any]]:
        """Rows newest first, filtered as the arguments say."""
    def counts(self) -> dict[str, int]:
        """``memories``, ``bookkeeping``, ``pending_embeddings`` and ``embedded`` row counts."""

    # -- keywords
    def bm25(self, match: str, *, project: str | None, limit: int, exclude_kinds: Sequence[str] = (),
             include_superseded: bool = False) -> list[tuple[int, float]]:
        """Keyword search for a safe FTS5 expression: ``(id, score)``, best first, score > 0."""
    def doc_frequencies(self, terms: Sequence[str], cap: int = ..., *, project: str | None = None
                        ) -> dict[str, int]:
        """Memories in scope that can answer (current, not bookkeeping, not captured prompts, answers or events;
        episodes count) containing each plain-word term, counted up to ``cap`` (the backend's default)."""
    def doc_count(self, project: str | None = None) -> int:
        """Memories in scope that can answer: current, not bookkeeping, not captured (prompts, answers, events)."""

    # -- time and session
    def session_neighbours(self, ids: Iterable[int]) -> dict[int, tuple[int | None, int | None]]:
        """Each memory's previous and next non-bookkeeping memory of its session."""
    def in_window(self, start: float | None, end: float | None, *, project: str | None, limit: int,
                  exclude_kinds: Sequence[str] = (), include_superseded: bool = False) -> list[dict[str, Any]]:
        """Memories in scope created in ``[start, end)``, newest first."""
    def session_context(self, session_id: str, memory_id: int, created_at: float, limit: int
                        ) -> list[tuple[int, str]]:
        """Other current memories of the session nearest to ``created_at``: ``(id, content)``."""
    def session_first_seen(self, session_id: str) -> float | None:
        """The session's earliest stored memory or logged recall (Unix s); None when unknown."""

    # -- entity graph
    def scope_size(self, project: str | None, include_superseded: bool = False) -> int:
        """N: non-bookkeeping memories in scope (may be reused for a few seconds after a write)."""
    def known_entities(self, names: Sequence[str]) -> dict[str, tuple[int, int, str]]:
        """Known entities among ``names``: name -> (id, store-wide df, kind)."""
    def dfs_in_scope(self, global_df: dict[int, int], project: str | None, include_superseded: bool, cap: int,
                     n_scope: int) -> dict[int, int]:
        """df in scope, stopped at ``cap``, for the entity ids of ``global_df`` (id -> store-wide df)."""
    def heaviest_edges(self, sources: Sequence[int], fanout: int) -> dict[int, tuple[int, list[tuple[int, int, int]]]]:
        """Per source entity: (total out-weight, its ``fanout`` heaviest edges as (dst, weight, dst's df))."""
    def memories_with_entities(self, entity_ids: Sequence[int], *, project: str | None, limit: int,
                               exclude_kinds: Sequence[str] = (), include_superseded: bool = False
                               ) -> list[tuple[int, int]]:
        """``(memory id, entity id)`` links in scope, newest memories first."""
    def entity_links(self, memory_ids: Iterable[int], entity_ids: Iterable[int]) -> list[tuple[int, int, str]]:
        """Which of ``entity_ids`` each memory carries: ``(memory id, entity id, name)``."""
    def related_memories(self, memory_id: int, project: str, limit: int) -> list[tuple[int, str]]:
        """Current memories in scope naming an entity ``memory_id`` names: ``(id, content)``."""

    # -- vectors
    def pending_embeddings(self, limit: int = 64) -> list[tuple[int, str, str, dict[str, Any]]]:
        """Rows waiting for a vector: ``(id, content, project, metadata)``, oldest first."""
    def reembed_with(self, items: Sequence[tuple[int, str]]) -> int:
        """Set ``(memory id, text)``'s ``embed_text`` and mark the rows for embedding again; rows changed."""
    def set_embeddings(self, items: Sequence[tuple[int, bytes]]) -> None:
        """Store float32 vectors ``(memory id, bytes)``."""
    def vectors(self, ids: Iterable[int]) -> dict[int, bytes]:
        """Stored float32 vectors by memory id."""
    def all_vectors(self, batch: int, cache_kib: int) -> Iterator[list[tuple[int, bytes]]]:
        """Every stored vector, in lists of ``batch``."""
    def scope_fields(self, ids: Sequence[int]) -> dict[int, tuple[str, str, bool]]:
        """id -> (project, kind, current) for the non-bookkeeping rows among ``ids``."""
    def all_scope_fields(self) -> dict[int, tuple[str, str, bool]]:
        """id -> (project, kind, current) for every embedded, non-bookkeeping row."""
    def set_baselines(self, items: Sequence[tuple[int, float]]) -> None:
        """Store each memory's baseline cosine ``(memory id, value)``."""
    def missing_baselines(self, limit: int = 256) -> list[int]:
        """Embedded memories without a baseline, oldest first."""

    # -- usage log
    def log_recalls(self, served: Sequence[ServedRecall], *, now: float | None = None) -> None:
        """Log recalls served (and prune old ones)."""
    def mark_used(self, memory_ids: Iterable[int], *, query_id: str = "", session_id: str = "",
                  now: float | None = None) -> int:
        """Mark memories used in a recall; returns the pairs newly marked."""
    def usage_stats(self, since: float) -> dict[str, Any]:
        """Used and unused memories shown by recalls since ``since``."""

    # -- capture candidates
    def add_candidates(self, candidates: Iterable[NewCandidate]) -> list[CandidateAdded]:
        """Hold candidates (text through ``prepare_write``); the same ``(signal, turn, text)`` is held once.
        Raises ``ValueError`` for text empty after preparation."""
    def get_candidate(self, candidate_id: int) -> dict[str, Any] | None:
        """One candidate (``id, content, kind, project, session_id, harness, turn, signal, evidence, created_at,
        expires_at, state, memory_id, reason, decided_at``), None when unknown."""
    def list_candidates(self, *, state: str | None = None, project: str | None = None,
                        session_id: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """Candidates newest first, filtered by state, project and session when given."""
    def decide_candidate(self, candidate_id: int, state: str, *, reason: str, memory_id: int | None = None,
                         now: float | None = None) -> bool:
        """Move a pending candidate to ``state``; False when it is not pending."""
    def expire_candidates(self, now: float | None = None, limit: int = ...) -> int:
        """Mark pending candidates past ``expires_at`` expired; returns how many."""
    def next_candidate_expiry(self) -> float | None:
        """The earliest ``expires_at`` of a pending candidate, None when none is pending."""

    def pending_candidates_after(self, after_id: int, signals: Sequence[str], limit: int = ...
                                 ) -> list[dict[str, Any]]:
        """Pending, not held candidates of ``signals`` with an id above ``after_id``, oldest first, with
        ``content_sha1``, ``vector`` (float32 bytes or None) and ``vector_model``."""
    def candidate_peers(self, project: str, kind: str, *, other_than: str, signals: Sequence[str], digest: str = ...,
                        limit: int = ...) -> list[dict[str, Any]]:
        """Pending, not held candidates of ``signals`` in ``project`` and ``kind`` from a known session other than
        ``other_than``: those with ``content_sha1`` ``digest`` first, then newest first: ``id``, ``content``,
        ``session_id``, ``content_sha1``, ``vector``, ``vector_model``."""
    def set_candidate_vectors(self, items: Sequence[tuple[int, bytes]], model: str) -> None:
        """Store candidates' embeddings ``(id, float32 bytes)`` made by ``model``."""

    # -- sessions
    def session_memories(self, session_id: str) -> list[dict[str, Any]]:
        """Rows stored with ``session_id``, oldest first."""
    def turn_request(self, session_id: str, before: float) -> str | None:
        """The captured prompt that opened the turn whose answer ``session_id`` stored at ``before`` (Unix s), or
        None (no such prompt, or an episode came after it)."""
    def episodes_without_context(self, after_id: int, limit: int) -> list[tuple[int, str, str | None]]:
        """Current episodes with a session and no ``embed_text``, id above ``after_id``: ``(id, content, the
        turn's prompt or None)``, oldest first."""
    def session_recalls(self, session_id: str) -> list[dict[str, Any]]:
        """Recalls logged for ``session_id`` (tokens, skipped, items with content and source), oldest first."""
    def sessions(self, project: str | None, limit: int) -> list[dict[str, Any]]:
        """Sessions that stored something, newest activity first, with their counts."""
    def session_projects(self, limit: int) -> list[str]:
        """The projects of the ``limit`` sessions with the newest activity, newest first, each once."""
    def last_captures(self, sources: Sequence[str]) -> dict[str, float | None]:
        """The newest row's ``created_at`` per source, None for a source with no row."""

    # -- distillation ledger
    def add_distill_entry(self, entry: DistillEntry) -> int:
        """Store one distillation ledger row; returns its id."""
    def distill_entries(self, *, since: float | None = None, session_id: str | None = None,
                        limit: int = 200) -> list[dict[str, Any]]:
        """Ledger rows newest first (``id`` plus ``DistillEntry``'s fields), filtered when given."""
    def distill_spent(self, since: float) -> int:
        """Tokens (prompt plus completion) the ledger's rows since ``since`` spent."""

    # -- export and restore (``sidecar.export``)
    def export_memories(self, after_id: int, limit: int, project: str | None) -> list[dict[str, Any]]:
        """Rows in scope (``project`` and global ones; every project when None) with an id above ``after_id``,
        ascending, at most ``limit``."""
    def export_version_links(self, project: str | None) -> dict[int, int]:
        """Old version id -> the id of the version that replaced it, for the superseded rows in scope."""
    def export_candidates(self, after_id: int, limit: int, project: str | None) -> list[dict[str, Any]]:
        """Candidates in scope with an id above ``after_id``, ascending (``get_candidate``'s fields)."""
    def export_deliveries(self, after: str, limit: int, project: str | None) -> list[dict[str, Any]]:
        """Source ids counted as a duplicate delivery of a memory in scope (``source_id``, ``memory_id``,
        ``created_at``), above ``after``, ascending."""
    def restore_memories(self, items: Sequence[RestoredMemory], *, merge: bool,
                         known: Mapping[int, int]) -> list[Restored]:
        """Write exported memory versions back with their ids (when free), times, flags, links and tags; with
        ``merge`` those held already are ``present``. ``superseded_by`` names an export id that ``known`` (export
        id -> id here) or an earlier item maps. One outcome per item, in order."""
    def restore_candidates(self, items: Sequence[RestoredCandidate], *, merge: bool) -> list[Restored]:
        """Write exported candidates back with their review state. One outcome per item, in order."""
    def restore_deliveries(self, items: Sequence[tuple[str, int, float]]) -> list[Restored]:
        """Record delivered source ids ``(source_id, memory id, created_at)`` again."""
    def raise_id_floor(self, memory_id: int) -> None:
        """Never give out a memory id at or below ``memory_id`` (ids purged where an export came from)."""
