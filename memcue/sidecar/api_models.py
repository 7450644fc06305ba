"""Request and response models of the sidecar's HTTP API (pydantic; they give the OpenAPI spec)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator
from typing_extensions import TypedDict

from memcue.core.address import parse_id_list
from memcue.core.limits import SESSION_BLOCK_TOKENS
from memcue.sidecar.store import KIND_PATTERN, MAX_TAGS, normalize_tags

#: Longest text ``/remember`` and ``/update`` take (characters): a memory written on purpose is refused above
#: it (422), never cut. Captured kinds (``store.write.CAPTURED_KINDS``: prompts, agent answers, session events,
#: from the hook or its spool) are instead cut to ``memcue.core.limits.CAPTURE_MAX_CHARS`` when stored,
#: whichever route brings them, so a captured text under this limit may still be stored cut.
MAX_CONTENT_CHARS = 200_000
#: Most ids one ``/fetch``, ``/forget``, ``/purge`` or ``/expand`` takes.
MAX_IDS = 1000

# Shared field types: every id, time and number a request carries is bounded, so no input reaches the store or
# recall that they cannot hold (a bad value is a 422 naming the field, never a 500).

#: Largest row id (memory, fact, candidate): SQLite's INTEGER is a signed 64-bit number.
MAX_ROW_ID = 2**63 - 1
#: A memory (or fact, or candidate) id: a whole number 0..``MAX_ROW_ID``.
RowId = Annotated[int, Field(ge=0, le=MAX_ROW_ID)]
#: Times a request may carry (Unix seconds): 1970-01-01 to 3000-01-01 UTC.
MIN_UNIX_S, MAX_UNIX_S = 0.0, 32_503_680_000.0
#: A finite number (no NaN, no infinity).
Finite = Annotated[float, Field(allow_inf_nan=False)]
#: A time in Unix seconds, finite and within ``MIN_UNIX_S``..``MAX_UNIX_S``.
UnixTime = Annotated[float, Field(ge=MIN_UNIX_S, le=MAX_UNIX_S, allow_inf_nan=False)]


def _in_range(value: dt.datetime) -> dt.datetime:
    """``value`` when it lies within ``MIN_UNIX_S``..``MAX_UNIX_S``; else ``ValueError``."""
    seconds = unix_seconds(value)
    if seconds is None or not MIN_UNIX_S <= seconds <= MAX_UNIX_S:
        raise ValueError("the time must lie between 1970-01-01 and 3000-01-01 (UTC)")
    return value


#: A time as ISO 8601 or Unix seconds (pydantic's datetime), within 1970..3000 (UTC).
Moment = Annotated[dt.datetime, AfterValidator(_in_range)]


def _no_empty(value: Any) -> Any:
    """"" as None: an empty ``source_id`` means none."""
    return None if value == "" else value


#: A write's id at its source ("" and None: none; unique per source otherwise).
SourceId = Annotated[Annotated[str, Field(max_length=1000)] | None, BeforeValidator(_no_empty)]


def _plain_json(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` when it is plain JSON (finite numbers); else ``ValueError``."""
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        raise ValueError("metadata must be plain JSON: no NaN or infinite numbers") from None
    return value


#: Free-form metadata of a memory: a JSON object with finite numbers.
Metadata = Annotated[dict[str, Any], AfterValidator(_plain_json)]


def _tags(value: list[str]) -> list[str]:
    """``value`` normalised (``store.write.tags.normalize_tags``: sorted, each once); ``ValueError`` for a bad one."""
    return list(normalize_tags(value))


#: A memory's tags (or a filter's): at most ``MAX_TAGS``, each normalised ("Web UI" -> "web-ui").
Tags = Annotated[list[Annotated[str, Field(max_length=200)]], Field(max_length=MAX_TAGS), AfterValidator(_tags)]


class RememberIn(BaseModel):
    """``POST /remember``: one memory. ``created_at`` in Unix seconds (default now; 1970..3000, finite).
    ``content``: at most ``MAX_CONTENT_CHARS`` characters (422 above); a captured kind is cut to
    ``CAPTURE_MAX_CHARS`` when stored. ``source_id`` "" is none."""

    content: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS)
    kind: str = Field(default="note", pattern=f"^{KIND_PATTERN}$",
                      description="one lowercase word (a-z, _ and -, at most 32 characters)")
    project: str = ""
    session_id: str = ""
    pinned: bool = False
    source: str = "api"
    source_id: SourceId = None
    created_at: UnixTime | None = None
    metadata: Metadata = Field(default_factory=dict)
    tags: Tags = Field(default_factory=list, description="labels to filter by later (recall/list --tag)")

    @field_validator("content")
    @classmethod
    def _has_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the memory text is empty")
        return value


class RememberBatchIn(BaseModel):
    """``POST /remember/batch``: many memories in one transaction (import)."""

    memories: list[RememberIn] = Field(max_length=10_000)


class RememberOut(BaseModel):
    """A write's outcome: ``duplicate`` when an existing memory was reinforced instead of a row added,
    ``redacted`` the number of secrets replaced by markers. ``held``: why an agent's write waits for the user's
    review instead of being stored (``id`` None then; ``candidate_id`` the candidate in ``memcue review``)."""

    id: int | None
    bookkeeping: bool
    duplicate: bool = False
    redacted: int = 0
    held: str = ""
    candidate_id: int | None = None


class ImportOut(BaseModel):
    """``POST /import``: one memory's outcome, ``status`` stored, updated (a new version of ``replaced``),
    unchanged or bad (``error`` says why; ``id`` None)."""

    status: str
    id: int | None = None
    replaced: int | None = None
    error: str = ""
    redacted: int = 0


def unix_seconds(value: dt.datetime | None) -> float | None:
    """A datetime as Unix seconds; a naive one is taken as UTC."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.timestamp()


class Window(BaseModel):
    """A time window: ISO 8601 or Unix seconds; either side may be left out (open)."""

    from_: Moment | None = Field(default=None, alias="from")
    to: Moment | None = None


class RecallIn(BaseModel):
    """``POST /recall``. ``project`` None searches every project. ``mode`` "keyword" runs BM25 only.
    ``budget_s`` (s): answer within this time, racing a keyword search as the hook does. ``window``,
    ``as_of``, ``valid_at`` and ``now`` (the asking time for relative dates) take ISO 8601 or Unix seconds, within
    1970..3000; ``weights`` finite numbers. ``kind`` and ``tags`` keep only memories of that kind and carrying
    every one of those tags."""

    query: str = Field(max_length=100_000)
    project: str | None = None
    limit: int = Field(default=10, ge=1, le=100)
    session_id: str = ""
    mode: Literal["full", "keyword"] = "full"
    include_requests: bool = False
    budget_s: float | None = Field(default=None, gt=0, le=60)
    weights: dict[str, Finite] | None = None
    window: Window | None = None
    as_of: Moment | None = None
    valid_at: Moment | None = None
    now: Moment | None = None
    depth: int = Field(default=1, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=100_000)
    kind: str | None = Field(default=None, pattern=f"^{KIND_PATTERN}$", description="only memories of this kind")
    tags: Tags = Field(default_factory=list, description="only memories carrying every one of these tags")


class ExpandIn(BaseModel):
    """``POST /expand``: memory (or fact) ids as a list or a comma-separated string (``memcue://`` addresses
    too). ``session_id`` and ``query_id`` name the recall whose results are being opened, if any."""

    ids: list[RowId] = Field(max_length=MAX_IDS)
    session_id: str = ""
    query_id: str = ""

    @field_validator("ids", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return parse_ids(value)

    def id_list(self) -> list[int]:
        """The ids as integers."""
        return self.ids


class UpdateIn(BaseModel):
    """``POST /update``: a new version of memory ``memory_id`` (the old one is superseded, kept for as_of)."""

    memory_id: RowId
    content: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS)
    kind: str | None = None
    pinned: bool | None = None
    valid_from: Moment | None = None
    metadata: Metadata = Field(default_factory=dict)
    source: str = Field(default="update", max_length=64, description="who writes: mcp for an agent")


class HookEventIn(TypedDict, total=False):
    """A normalised ``HookEvent`` (``memcue.adapters.base``) as the hook sends it: its named fields text (or
    null), ``extra`` an object; other keys are kept as sent."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc]
    harness: str | None
    event: str | None
    session_id: str | None
    cwd: str | None
    project: str | None
    prompt: str | None
    source: str | None
    transcript_path: str | None
    extra: dict[str, Any]


class HookIn(BaseModel):
    """``POST /hooks/{harness}/{event}``: a normalised ``HookEvent`` and the block's budgets. ``sent_at``: the
    hook's wall clock (Unix s) when it sent the request; the time the request waited before the sidecar took it
    up (a busy, stopped or swapped-out sidecar) comes off ``budget_s``."""

    event: HookEventIn
    budget_s: float = Field(default=2.25, gt=0, le=60)
    sent_at: float | None = Field(default=None, ge=0)
    max_tokens: int = Field(default=600, ge=1, le=100_000)
    max_chars: int = Field(default=9500, ge=1, le=1_000_000)


class HookOut(BaseModel):
    """What the hook injects: ``context`` ("" for nothing), how it was produced, and the sidecar's ``version``."""

    context: str
    version: str
    answered_by: Literal["full", "keyword", "none", "session"]
    tier: str
    retrieval_time_ms: float
    query_id: str
    included: int = 0
    left_out: int = 0
    tokens: int = 0


def parse_ids(value: Any) -> Any:
    """Memory ids given as a list, a comma-separated string ("12, 15") or a single number, as a list of ints
    (``memcue.core.address.parse_id_list``: ``memcue://<project>/<id>`` addresses count as their id; no
    ``#12`` here; an empty list is left to the model to judge). Any other value is passed on for pydantic
    to check. Raises ``ValueError`` naming a part that is not a memory id."""
    if isinstance(value, str | int | list) and not isinstance(value, bool):
        return parse_id_list(value, allow_empty=True, hash_ok=False)
    return value


class IdsIn(BaseModel):
    """Memory ids as a list (``[12, 15]``) or a comma-separated string (``"12, 15"``); 1 to ``MAX_IDS``."""

    ids: list[RowId]

    @field_validator("ids", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return parse_ids(value)

    @field_validator("ids")
    @classmethod
    def _some(cls, value: list[RowId]) -> list[RowId]:
        if not value:
            raise ValueError("give at least one memory id")
        if len(value) > MAX_IDS:
            raise ValueError(f"at most {MAX_IDS} ids at once (got {len(value)})")
        return value


class FetchIn(IdsIn):
    """``POST /fetch``: memories by id, forgotten and superseded ones included. ``session_id`` and
    ``query_id`` name the recall whose results are being opened (from a recall block), if any."""

    session_id: str = ""
    query_id: str = ""


class MemoryOut(BaseModel):
    """One stored memory as ``/fetch`` and ``/list`` return it. Times in Unix seconds; ``age_label`` is the
    human age ("today", "3 weeks ago"); ``forgotten`` with ``forgotten_at`` (Unix s) after a ``/forget``;
    ``superseded_by`` the newer version's id after an ``/update``; ``seen_count`` how often it was written;
    ``source`` who wrote it (``cli``, ``mcp``, ``hook:<harness>``, ``capture:<signal>``, …) and ``promoted_by`` why a
    captured candidate was kept (``user-statement``, ``commit-landed``, ``test-passed``, ``reviewed``, …; None for a
    memory written directly)."""

    memory_id: int
    content: str
    memory_kind: str
    project: str
    session_id: str
    created_at: float
    updated_at: float
    age_label: str
    pinned: bool
    bookkeeping: bool
    forgotten: bool
    forgotten_at: float | None = None
    superseded_by: int | None = None
    seen_count: int = 1
    tags: list[str] = Field(default_factory=list)
    source: str = ""
    promoted_by: str | None = None


class FetchOut(BaseModel):
    """``results`` in the order asked (each id once); ``not_found`` the ids no memory has; ``success``
    is False when no id resolves."""

    success: bool
    results: list[MemoryOut]
    not_found: list[int]


class ListIn(BaseModel):
    """``POST /list``: newest memories first. Scope as ``/recall``: ``project`` gives that project plus global
    ("") memories; no project, or ``all_projects``, gives every project. ``kind`` keeps one kind, ``tags`` the
    memories carrying all of them; forgotten and bookkeeping rows only when asked; captured prompts (kind
    ``request``) unless ``include_captured`` is false (``memcue list`` asks for them with ``--include-captured``)."""

    project: str | None = None
    all_projects: bool = False
    limit: int = Field(default=20, ge=1, le=500)
    kind: str | None = None
    include_forgotten: bool = False
    include_bookkeeping: bool = False
    include_captured: bool = Field(default=True, description="also captured prompts (kind request); a kind asked "
                                   "for is always listed")
    tags: Tags = Field(default_factory=list, description="only memories carrying every one of these tags")


class ListOut(BaseModel):
    """Memories newest first, with their full text (clients cut it)."""

    results: list[MemoryOut]


class ForgetIn(IdsIn):
    """``POST /forget``: soft-delete memories by id (idempotent)."""


class ForgetOut(BaseModel):
    """Ids ``forgotten`` by this call, ``already`` forgotten before, and ``not_found``; in the order asked."""

    forgotten: list[int]
    not_found: list[int]
    already: list[int]


class PinIn(IdsIn):
    """``POST /pin``: pin (``pinned`` true) or unpin memories by id, in place."""

    pinned: bool = True


class UnforgetIn(IdsIn):
    """``POST /unforget``: take a ``forget`` of memories back."""


class MarkOut(BaseModel):
    """Ids ``changed`` by this call, ``unchanged`` (already so) and ``not_found``; in the order asked."""

    changed: list[int]
    unchanged: list[int]
    not_found: list[int]


class PurgeIn(IdsIn):
    """``POST /purge``: hard-delete memories (and every version of them) by id, for good."""


class PurgeOut(BaseModel):
    """Every id ``purged`` (versions included, ascending), the ids asked for that are ``not_found``, and
    ``wal_truncated`` (False when a reader kept the WAL from being emptied)."""

    purged: list[int]
    not_found: list[int]
    wal_truncated: bool


class SessionContextIn(BaseModel):
    """``POST /session_context``: the session-start block a SessionStart hook gets, once per session (the
    same session asking again gets a one-line pointer, or "" when the project holds nothing). ``session_id``
    "" makes a new one; ``harness`` names the ledger the session is kept in (pass the harness's own name to
    share its hook's record). ``budget_s`` (s) bounds the work; ``max_tokens`` and ``max_chars`` the block."""

    session_id: str = Field(default="", max_length=200)
    project: str = ""
    harness: str = Field(default="mcp", min_length=1, max_length=40)
    max_tokens: int = Field(default=SESSION_BLOCK_TOKENS, ge=1, le=100_000)
    max_chars: int = Field(default=9500, ge=1, le=1_000_000)
    budget_s: float = Field(default=5.0, gt=0, le=60)


class SessionContextOut(BaseModel):
    """The block (``context``, "" for nothing), the ``session_id`` it was given for, memories ``included``, its
    size in ``tokens``, the ids of the memories it shows in order (``memory_ids``) and of those shown shortened,
    as a brief cut short or a title (``shortened_ids``: the MCP tool ``fetch`` gives them whole)."""

    session_id: str
    context: str
    included: int
    tokens: int
    memory_ids: list[int] = []
    shortened_ids: list[int] = []


class StatsIn(BaseModel):
    """``POST /stats``: recall usage over the last ``days`` days (``store.usage``)."""

    days: float = Field(default=30, gt=0, le=3650)


class CandidatesIn(BaseModel):
    """``POST /candidates``: capture candidates newest first, filtered by ``state`` (pending, promoted, rejected,
    expired; None: all), ``project`` (exactly; None: every project) and ``session_id`` (None: every session)."""

    state: Literal["pending", "promoted", "rejected", "expired"] | None = None
    project: str | None = None
    session_id: str | None = None
    limit: int = Field(default=50, ge=1, le=500)


class CandidateOut(BaseModel):
    """One capture candidate: its text, the memory ``kind`` it would be, where it came from (``project``,
    ``session_id``, ``harness``, ``turn``: the request id), the ``signal`` that found it and its ``evidence``;
    times in Unix seconds; ``state`` and, once decided, ``reason``, ``decided_at`` and (promoted) ``memory_id``.
    ``duplicate``: set by an accept when the memory existed already and was reinforced."""

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
    memory_id: int | None = None
    reason: str = ""
    decided_at: float | None = None
    duplicate: bool | None = None


class CandidatesOut(BaseModel):
    """Candidates newest first."""

    results: list[CandidateOut]


class CandidateAcceptIn(BaseModel):
    """``POST /candidates/accept``: promote candidate ``id`` (pending only) into a memory, with ``content`` as
    edited by the reviewer when given (at most ``MAX_CONTENT_CHARS``); ``by_agent``: an agent decides it (MCP), not
    allowed for a candidate held for a person's review (403)."""

    id: RowId
    content: str | None = Field(default=None, min_length=1, max_length=MAX_CONTENT_CHARS)
    reason: str = Field(default="reviewed", max_length=200)
    by_agent: bool = False


class CandidateRejectIn(BaseModel):
    """``POST /candidates/reject``: turn down candidate ``id`` (pending only); ``by_agent`` as for accept."""

    id: RowId
    reason: str = Field(default="rejected in review", max_length=200)
    by_agent: bool = False


class ReceiptIn(BaseModel):
    """``POST /receipt``: the receipt of ``session_id``; without one, of ``project``'s most recent session (every
    project's when ``project`` is None too)."""

    session_id: str | None = Field(default=None, max_length=500)
    project: str | None = None


class SessionsIn(BaseModel):
    """``POST /receipt/sessions``: recent sessions that stored something, of ``project`` (None: every project)."""

    project: str | None = None
    limit: int = Field(default=10, ge=1, le=200)


class LastCapturesIn(BaseModel):
    """``POST /receipt/last_captures``: the newest row per source (such as ``hook:claude-code``)."""

    sources: list[str] = Field(min_length=1, max_length=50)


class LedgerIn(BaseModel):
    """``POST /ledger``: the distillation ledger's rows of the last ``days`` days (and today's spend)."""

    days: float = Field(default=7.0, gt=0, le=365)


class LedgerEntryOut(BaseModel):
    """One distillation ledger row (``store.write.DistillEntry``): when (Unix s), which session, where the
    transcript went (``runner``: endpoint | command, ``target``, ``model``), the tokens spent (``tokens_from``:
    api | tiktoken | "" when nothing was sent), the ``outcome`` (ok | no-facts | refused | malformed | failed |
    skipped), the candidates made and why not (``error``)."""

    id: int
    created_at: float
    session_id: str
    project: str
    harness: str
    runner: str
    target: str
    model: str
    trigger: str
    prompt_tokens: int
    completion_tokens: int
    tokens_from: str
    outcome: str
    candidates: int
    error: str


class LedgerTodayOut(BaseModel):
    """Today's spend (local day from ``since``, Unix s): tokens ``spent`` and ``left`` of the daily budget, and
    the ``calls`` that spent some."""

    since: float
    spent: int
    left: int
    calls: int


class LedgerOut(BaseModel):
    """``POST /ledger``: whether distillation is on (``off_reason`` when not), its model, the daily budget
    (tokens), today's spend and the rows of the last ``days`` days, newest first."""

    enabled: bool
    off_reason: str
    runner: str
    target: str
    model: str
    daily_tokens: int
    today: LedgerTodayOut
    days: float
    entries: list[LedgerEntryOut]


class ReindexIn(BaseModel):
    """``POST /reindex``: ``action`` "start" (or resume), "pause" or "status" of the re-index to the configured
    embedding model. The answer is ``sidecar.reindex.Reindexer.status``'s dict."""

    action: Literal["start", "pause", "status"] = "status"


class ExportIn(BaseModel):
    """``POST /export``: the export lines (``sidecar.export``) of ``project`` and the global memories, or of every
    project (``project`` None or ``all_projects``)."""

    project: str | None = None
    all_projects: bool = False


class ExportMemoryIn(BaseModel):
    """A ``memory`` line of an export (``sidecar.export``); the derived keys (``version``, ``supersedes``,
    ``global``) are ignored."""

    id: RowId
    content: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS)
    kind: str = Field(pattern=f"^{KIND_PATTERN}$")
    project: str = ""
    session_id: str = ""
    created_at: UnixTime
    updated_at: UnixTime
    valid_from: UnixTime | None = None
    valid_to: UnixTime | None = None
    pinned: bool = False
    bookkeeping: bool = False
    superseded_by: RowId | None = None
    superseded_at: UnixTime | None = None
    forgotten_at: UnixTime | None = None
    seen_count: int = Field(default=1, ge=1, le=2**62)
    source: str = Field(default="", max_length=1000)
    source_id: SourceId = None
    metadata: Metadata = Field(default_factory=dict)
    tags: Tags = Field(default_factory=list)


class ExportCandidateIn(BaseModel):
    """A ``candidate`` line of an export, with its review state."""

    id: RowId
    state: Literal["pending", "promoted", "rejected", "expired"]
    reason: str = Field(default="", max_length=1000)
    decided_at: UnixTime | None = None
    memory_id: RowId | None = None
    signal: str = Field(min_length=1, max_length=200)
    kind: str = Field(pattern=f"^{KIND_PATTERN}$")
    content: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS)
    project: str = ""
    session_id: str = ""
    harness: str = ""
    turn: str = ""
    evidence: Metadata = Field(default_factory=dict)
    created_at: UnixTime
    expires_at: UnixTime


class ExportDeliveryIn(BaseModel):
    """A ``delivery`` line of an export: ``source_id`` was counted as a sighting of memory ``memory_id``."""

    source_id: str = Field(min_length=1, max_length=1000)
    memory_id: RowId
    created_at: UnixTime


class RestoreIn(BaseModel):
    """``POST /restore``: part of an export written back (``sidecar.export.restore``). ``start`` on the first call
    of an import: without ``merge`` it is refused (409) unless the store is empty. ``known``: export memory ids
    restored by earlier calls -> their ids here. ``id_floor``: the export header's, applied after the writes."""

    merge: bool = False
    start: bool = False
    memories: list[ExportMemoryIn] = Field(default_factory=list, max_length=10_000)
    candidates: list[ExportCandidateIn] = Field(default_factory=list, max_length=10_000)
    deliveries: list[ExportDeliveryIn] = Field(default_factory=list, max_length=10_000)
    known: dict[RowId, RowId] = Field(default_factory=dict)
    id_floor: RowId | None = None


class RestoredOut(BaseModel):
    """One record's outcome: ``status`` restored (``renumbered`` when its id was taken), present (held already:
    skipped) or bad (``error``); ``id`` its id here."""

    status: str
    id: int | None = None
    renumbered: bool = False
    error: str = ""


class RestoreOut(BaseModel):
    """``POST /restore``: one outcome per record sent, by type, in order; ``ids`` export id -> id here for the
    memories restored or present."""

    memories: list[RestoredOut]
    candidates: list[RestoredOut]
    deliveries: list[RestoredOut]
    ids: dict[int, int]


class SourcesIn(BaseModel):
    """``POST /sources``: list the native memory sources; with ``name`` and ``enabled``, turn that one on or off
    first (kept in ``config.toml``)."""

    name: str | None = Field(default=None, max_length=64)
    enabled: bool = True
