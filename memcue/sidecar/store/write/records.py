"""What the store takes and gives back, whatever the backend: a memory to write (``NewMemory``), the outcome of
a write (``WriteResult``) or of a forget (``ForgetResult``), a recall served (``ServedRecall``, for the usage
log) and a capture candidate to hold (``NewCandidate``, ``CandidateAdded``). Times are Unix seconds."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

#: Kinds that are a record of the session rather than knowledge: stored as bookkeeping rows (never an answer,
#: never embedded). ``response``: an agent's answer as captured at Stop before answers were kept as episodes;
#: such rows stay as they were stored.
RECORD_KINDS = ("response",)
#: The kind of the agent's final answer of a turn, captured at Stop (hooks/run.py): recallable only for a
#: question that asks what was done (``recall.classify.WORK_RECALL``), ranked below saved memories, never
#: injected for other prompts and not counted by the session pointer (``Store.doc_count``). A trivial answer
#: (fewer than ``bookkeeping.MIN_EPISODE_WORDS`` words: "Done.", "ok") is stored as a bookkeeping row.
EPISODE = "episode"
#: Kinds captured from a session rather than written on purpose: a prompt (``request``), an agent's answer
#: (``episode``; ``response`` in older rows), a session event (``event``). Their text is cut to
#: ``memcue.core.limits.CAPTURE_MAX_CHARS`` when prepared (``store.write.prepare``), whichever route or spool
#: record brings them.
CAPTURED_KINDS = ("request", "response", "event", EPISODE)
#: The kinds that state how the project works (a rule, a decision, a preference, a correction of the agent):
#: the session-start block offers them however old (``inject.service``), and a task prompt that touches one is
#: shown it (``recall.support``).
STANDING_KINDS = ("decision", "preference", "correction", "convention", "rule")
#: The kinds a task can run into: the standing rules, what was learnt the hard way (a bug with its cause, a
#: lesson) and how a job is done here (a procedure). "Store the price as a float" runs into "money is integer
#: cents"; "bump react-native-maps" into the bug that pinned it; "backfill all of 2024" into "never more than
#: 31 days per backfill".
CONSTRAINING_KINDS = (*STANDING_KINDS, "bug", "lesson", "procedure")
#: What a memory's ``kind`` may be (a full match): one short lowercase word, ``_`` and ``-`` allowed. A kind is
#: shown as a label in injected blocks, so newlines, markup and capitals (a forged ``ASSISTANT:``) never pass
#: (case C24).
KIND_PATTERN = r"[a-z_-]{1,32}"


@dataclass
class NewMemory:
    """A memory to write. Times are Unix seconds; ``source_id`` makes a write idempotent (spool, import);
    ``tags`` as given (the store keeps them normalised: ``store.write.tags``)."""

    content: str
    kind: str = "note"
    project: str = ""
    session_id: str = ""
    pinned: bool = False
    source: str = ""
    source_id: str | None = None
    created_at: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    valid_from: float | None = None
    valid_to: float | None = None
    tags: tuple[str, ...] = ()


#: How long a pending candidate waits for a confirming signal before it expires (s): 30 days.
CANDIDATE_TTL_S = 30 * 86_400.0
#: A candidate's states: waiting for a signal or review, written as a memory, turned down, or timed out.
CANDIDATE_STATES = ("pending", "promoted", "rejected", "expired")


@dataclass
class NewCandidate:
    """Something a capture signal noticed that may become a memory, held apart from memories (it answers no
    recall). ``signal`` names the source ("prompt-statement"), ``turn`` the request it came from (the hook's
    request id), ``evidence`` why the signal thinks so (JSON-able). ``expires_at`` None: ``CANDIDATE_TTL_S``
    after ``created_at`` (None: now). The same ``(signal, turn, content)`` is held once."""

    content: str
    signal: str
    kind: str = "note"
    project: str = ""
    session_id: str = ""
    harness: str = ""
    turn: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    created_at: float | None = None
    expires_at: float | None = None


@dataclass(frozen=True)
class CandidateAdded:
    """Outcome of holding one candidate: its ``id`` and whether it was ``added`` now (False: held already)."""

    id: int
    added: bool


@dataclass(frozen=True)
class WriteResult:
    """Outcome of one write: the row ``id``, whether it was flagged ``bookkeeping``, and whether it was a
    ``duplicate`` of an earlier write (same ``source_id``, or same text in the same project): then nothing
    new was stored. ``redacted``: secrets replaced by markers in the text (``memcue.core.redaction``)."""

    id: int
    bookkeeping: bool
    duplicate: bool = False
    redacted: int = 0


@dataclass(frozen=True)
class ForgetResult:
    """Outcome of ``forget``: ids ``forgotten`` now, ``already`` forgotten before, ``not_found``; each in the
    order asked, without repeats."""

    forgotten: list[int] = field(default_factory=list)
    already: list[int] = field(default_factory=list)
    not_found: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class PurgeResult:
    """Outcome of ``purge``: ``purged`` every id deleted (the versions of those asked for included, ascending),
    ``not_found`` the ids asked for that no memory has; ``wal_truncated`` False when a reader kept the WAL from
    being checkpointed to empty (the deleted pages are zeroed in it all the same)."""

    purged: list[int] = field(default_factory=list)
    not_found: list[int] = field(default_factory=list)
    wal_truncated: bool = True


@dataclass(frozen=True)
class MarkResult:
    """Outcome of ``set_pinned`` / ``unforget``: ids ``changed`` now, ``unchanged`` (already so), ``not_found``;
    each in the order asked, without repeats."""

    changed: list[int] = field(default_factory=list)
    unchanged: list[int] = field(default_factory=list)
    not_found: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class ServedRecall:
    """One recall served: ``items`` are ``(memory_id, kind, channels)`` of the memories it showed; ``tokens``
    the block's size (o200k tokens, 0 when unknown); ``skipped`` why a hook injected nothing ("" when it did);
    ``project`` the project it was served in ("" when unknown)."""

    query_id: str
    session_id: str
    served_by: str
    block: str = ""
    created_at: float = field(default_factory=time.time)
    items: tuple[tuple[int, str, tuple[str, ...]], ...] = ()
    tokens: int = 0
    skipped: str = ""
    project: str = ""


@dataclass
class RestoredMemory:
    """A memory version as an export holds it (``sidecar.export``), to be written back as it was: its ``id``
    (kept when free in the store), times (Unix s) and flags as stored; ``superseded_by`` the id of its newer
    version *in this store* (already restored, or None); ``tags`` normalised."""

    id: int
    content: str
    kind: str
    project: str
    session_id: str
    created_at: float
    updated_at: float
    pinned: bool
    bookkeeping: bool
    source: str
    source_id: str | None
    metadata: dict[str, Any]
    seen_count: int
    valid_from: float | None = None
    valid_to: float | None = None
    superseded_by: int | None = None
    superseded_at: float | None = None
    forgotten_at: float | None = None
    tags: tuple[str, ...] = ()


@dataclass
class RestoredCandidate:
    """A capture candidate as an export holds it, to be written back with its review state: ``memory_id`` the
    memory it was promoted to *in this store* (None: none)."""

    id: int
    content: str
    kind: str
    project: str
    session_id: str
    harness: str
    turn: str
    signal: str
    evidence: dict[str, Any]
    created_at: float
    expires_at: float
    state: str
    reason: str = ""
    decided_at: float | None = None
    memory_id: int | None = None


@dataclass(frozen=True)
class Restored:
    """Outcome of restoring one record: ``status`` ``restored`` (written; ``renumbered`` when its id was taken and
    it got ``id`` instead), ``present`` (the store holds it already, as ``id``) or ``bad`` (``error`` says why)."""

    status: str
    id: int | None = None
    renumbered: bool = False
    error: str = ""
