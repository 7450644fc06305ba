"""Request and response models of the sidecar's HTTP API (pydantic; they give the OpenAPI spec)."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator


class RememberIn(BaseModel):
    """``POST /remember``: one memory. ``created_at`` in Unix seconds (default now)."""

    content: str = Field(min_length=1, max_length=200_000)
    kind: str = "note"
    project: str = ""
    session_id: str = ""
    pinned: bool = False
    source: str = "api"
    source_id: str | None = None
    created_at: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

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
    id: int
    bookkeeping: bool
    duplicate: bool = False


def unix_seconds(value: dt.datetime | None) -> float | None:
    """A datetime as Unix seconds; a naive one is taken as UTC."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.timestamp()


class Window(BaseModel):
    """A time window: ISO 8601 or Unix seconds; either side may be left out (open)."""

    from_: dt.datetime | None = Field(default=None, alias="from")
    to: dt.datetime | None = None


class RecallIn(BaseModel):
    """``POST /recall``. ``project`` None searches every project. ``mode`` "keyword" runs BM25 only.
    ``budget_s`` (s): answer within this time, racing a keyword search as the hook does. ``window``,
    ``as_of``, ``valid_at`` and ``now`` (the asking time for relative dates) take ISO 8601 or Unix seconds."""

    query: str = Field(max_length=100_000)
    project: str | None = None
    limit: int = Field(default=10, ge=1, le=100)
    session_id: str = ""
    mode: Literal["full", "keyword"] = "full"
    include_requests: bool = False
    budget_s: float | None = Field(default=None, gt=0, le=60)
    weights: dict[str, float] | None = None
    window: Window | None = None
    as_of: dt.datetime | None = None
    valid_at: dt.datetime | None = None
    now: dt.datetime | None = None
    depth: int = Field(default=1, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=100_000)


class ExpandIn(BaseModel):
    """``POST /expand``: memory (or fact) ids as a list or a comma-separated string."""

    ids: list[int] | str

    def id_list(self) -> list[int]:
        """The ids as integers. Raises ``ValueError`` for a part that is not a number."""
        if isinstance(self.ids, list):
            return self.ids
        return [int(part) for part in self.ids.replace(" ", "").split(",") if part]


class UpdateIn(BaseModel):
    """``POST /update``: a new version of memory ``memory_id`` (the old one is superseded, kept for as_of)."""

    memory_id: int
    content: str = Field(min_length=1, max_length=200_000)
    kind: str | None = None
    pinned: bool | None = None
    valid_from: dt.datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class HookIn(BaseModel):
    """``POST /hooks/{harness}/{event}``: a normalised ``HookEvent`` and the block's budgets."""

    event: dict[str, Any]
    budget_s: float = Field(default=2.25, gt=0, le=60)
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


class ErrorOut(BaseModel):
    code: str
    message: str
    retryable: bool = False
