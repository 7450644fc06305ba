"""The coding-memory benchmark's data: the labelled memories and questions (``benchmarks/data/coding_*.jsonl``),
their checks, and the constants the run and the report share. Imported by ``coding_recall.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import REPO

DATA_DIR = REPO / "benchmarks" / "data"
DEFAULT_MEMORIES = DATA_DIR / "coding_memories.jsonl"
DEFAULT_QUESTIONS = DATA_DIR / "coding_questions.jsonl"
#: Results asked for per question (``limit`` of ``POST /recall``).
LIMIT = 10
#: recall@K is reported for this K.
TOP_K = 3
#: Results the prompt hook injects at most (``PROMPT_LIMIT`` of ``memcue.sidecar.inject.service``).
try:
    from memcue.sidecar.inject.service import PROMPT_LIMIT as HOOK_LIMIT
except Exception:  # moved or mid-edit: the documented default
    HOOK_LIMIT = 8
#: Answer tiers that count as abstaining.
ABSTAIN_TIERS = ("none", "related")
CATEGORIES = ("decision", "preference", "bug", "procedure", "time", "present_tense", "request_recall",
              "unanswerable")
ROLES = ("memory", "request", "bookkeeping")
#: Result fields that may echo the asking time sent as ``now`` (checked in this order).
NOW_FIELDS = ("now", "asked_at", "as_of_now", "reference_time", "query_time")
#: Questions asked between two progress lines.
PROGRESS_EVERY = 10


class DataError(ValueError):
    """The data files are missing or malformed; the message names the file and line."""


@dataclass
class Memory:
    """One labelled memory: ``created_at`` in Unix s; ``role`` memory, request or bookkeeping."""

    id: str
    project: str
    kind: str
    role: str
    created_at: int
    pinned: bool
    content: str


@dataclass
class Question:
    """One labelled question: ``relevant`` memory ids (empty for unanswerable), ``distractors`` near-miss
    ids (informational), ``asked_at`` in Unix s."""

    id: str
    project: str
    category: str
    text: str
    relevant: list[str]
    distractors: list[str] = field(default_factory=list)
    asked_at: int | None = None

    @property
    def answerable(self) -> bool:
        return self.category != "unanswerable"


# -- data ------------------------------------------------------------------------------------------


def read_jsonl(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``{"meta": ...}`` header (empty if absent) and the other rows of a JSON Lines file.
    Raises ``DataError`` naming the line of any bad row."""
    if not path.is_file():
        raise DataError(f"{path} not found")
    meta: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{n}: not JSON: {exc}") from None
        if not isinstance(row, dict):
            raise DataError(f"{path}:{n}: expected an object")
        if "meta" in row:
            meta = row["meta"]
        else:
            row["_line"] = n
            rows.append(row)
    return meta, rows


def _need(row: dict[str, Any], path: Path, key: str, kind: type | tuple[type, ...]) -> Any:
    value = row.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise DataError(f"{path}:{row['_line']}: field {key!r} missing or not {getattr(kind, '__name__', kind)}")
    return value


def load_memories(path: Path) -> tuple[dict[str, Any], list[Memory]]:
    """The memories file: its meta header and the memories. Raises ``DataError``."""
    meta, rows = read_jsonl(path)
    out: list[Memory] = []
    seen: set[str] = set()
    for r in rows:
        m = Memory(id=_need(r, path, "id", str), project=_need(r, path, "project", str),
                   kind=_need(r, path, "kind", str), role=_need(r, path, "role", str),
                   created_at=int(_need(r, path, "created_at", (int, float))), pinned=bool(r.get("pinned")),
                   content=_need(r, path, "content", str))
        if m.id in seen:
            raise DataError(f"{path}:{r['_line']}: duplicate id {m.id}")
        if m.role not in ROLES:
            raise DataError(f"{path}:{r['_line']}: role {m.role!r} is not one of {', '.join(ROLES)}")
        seen.add(m.id)
        out.append(m)
    if not out:
        raise DataError(f"{path}: no memories")
    return meta, out


def load_questions(path: Path, memories: list[Memory]) -> list[Question]:
    """The questions file, checked against the memories (ids exist, same project, no bookkeeping row is
    relevant, answerable questions have relevant ids and unanswerable ones none). Raises ``DataError``."""
    _, rows = read_jsonl(path)
    by_id = {m.id: m for m in memories}
    out: list[Question] = []
    for r in rows:
        where = f"{path}:{r['_line']}"
        q = Question(id=_need(r, path, "id", str), project=_need(r, path, "project", str),
                     category=_need(r, path, "category", str), text=_need(r, path, "question", str),
                     relevant=list(r.get("relevant") or []), distractors=list(r.get("distractors") or []),
                     asked_at=int(r["asked_at"]) if r.get("asked_at") is not None else None)
        if q.category not in CATEGORIES:
            raise DataError(f"{where}: category {q.category!r} is not one of {', '.join(CATEGORIES)}")
        if q.answerable != bool(q.relevant):
            raise DataError(f"{where}: {'no relevant ids' if q.answerable else 'unanswerable but has relevant ids'}")
        for mid in q.relevant + q.distractors:
            if mid not in by_id:
                raise DataError(f"{where}: unknown memory id {mid}")
        for mid in q.relevant:
            if by_id[mid].role == "bookkeeping" or by_id[mid].project != q.project:
                raise DataError(f"{where}: {mid} is bookkeeping or in another project")
        out.append(q)
    if not out:
        raise DataError(f"{path}: no questions")
    return out
