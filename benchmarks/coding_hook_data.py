"""The hook benchmark's data (``benchmarks/data/coding2/<split>/``): reading and checking one split.

Each split folder holds two JSON Lines files whose first line is ``{"meta": {...}}`` (``reference_unix``, int
Unix s; ``author``; a short ``description``):

- ``memories.jsonl``: ``{"id": "m001", "project": name, "kind": KINDS, "content": str, "created_at": Unix s,
  "pinned": bool, "supersedes": null | older id}``. Kind ``request`` is a captured user prompt, ``bookkeeping``
  a tool's receipt ("File changed: src/x.py"). A row with ``supersedes`` replaces the older row, which must
  never be injected.
- ``questions.jsonl``: ``{"id": "q001", "project": name, "category": CATEGORIES, "prompt": str, "relevant":
  [memory ids], "asked_at": Unix s}``; ``relevant`` is empty exactly for ``no_answer``.

Imported by ``coding_hook.py`` (the script runs as a file, with ``benchmarks`` on ``sys.path``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import REPO
from coding_data import DataError, read_jsonl

DATA_ROOT = REPO / "benchmarks" / "data" / "coding2"
SPLITS = ("dev", "test")
KINDS = ("decision", "preference", "bug", "convention", "procedure", "note", "request", "bookkeeping")
CATEGORIES = ("question", "paraphrase", "task_conflict", "identifier", "no_answer")
#: Kinds whose rows must never be injected for these prompts (captured prompts and tool receipts).
NOISE_KINDS = ("request", "bookkeeping")


@dataclass(frozen=True)
class Memory:
    """One labelled memory row; ``created_at`` in Unix s; ``supersedes`` the label it replaces, or None."""

    id: str
    project: str
    kind: str
    content: str
    created_at: int
    pinned: bool
    supersedes: str | None


@dataclass(frozen=True)
class Prompt:
    """One labelled prompt; ``relevant`` memory labels (empty for ``no_answer``); ``asked_at`` in Unix s."""

    id: str
    project: str
    category: str
    prompt: str
    relevant: tuple[str, ...]
    asked_at: int

    @property
    def answerable(self) -> bool:
        """True unless the category is ``no_answer``."""
        return self.category != "no_answer"


@dataclass(frozen=True)
class Split:
    """One split's rows and meta headers: ``reference_unix`` (Unix s) from the memories' header."""

    name: str
    folder: Path
    meta: dict[str, Any]
    memories: list[Memory]
    prompts: list[Prompt]
    warnings: list[str]

    @property
    def reference_unix(self) -> int:
        """The split's reference time (Unix s)."""
        return int(self.meta["reference_unix"])

    def superseded(self) -> set[str]:
        """Labels of the rows a later row replaces."""
        return {m.supersedes for m in self.memories if m.supersedes}


def _rows(path: Path, need_reference: bool = True) -> tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]:
    """The meta header and the other rows with their line numbers (``coding_data.read_jsonl``); ``need_reference``:
    the header must carry ``reference_unix`` (a number of Unix s). Raises ``DataError``."""
    meta, rows = read_jsonl(path)
    ref = meta.get("reference_unix")
    if need_reference and (not isinstance(ref, int | float) or isinstance(ref, bool)):
        raise DataError(f"{path}: the first line must be {{\"meta\": {{\"reference_unix\": <int>, ...}}}}")
    return meta, [(row.pop("_line"), row) for row in rows]


def _field(path: Path, n: int, row: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = row.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise DataError(f"{path}:{n}: field {key!r} missing or of the wrong type")
    return value


def load_memories(path: Path) -> tuple[dict[str, Any], list[Memory]]:
    """The memories file: header and rows, checked (unique ids, known kinds, ``supersedes`` names another row
    of the same project, each row replaced at most once, no cycle). Raises ``DataError``."""
    meta, rows = _rows(path)
    out: list[Memory] = []
    seen: dict[str, Memory] = {}
    for n, r in rows:
        m = Memory(id=_field(path, n, r, "id", str), project=_field(path, n, r, "project", str),
                   kind=_field(path, n, r, "kind", str), content=_field(path, n, r, "content", str),
                   created_at=int(_field(path, n, r, "created_at", (int, float))),
                   pinned=bool(r.get("pinned", False)), supersedes=r.get("supersedes"))
        if m.id in seen:
            raise DataError(f"{path}:{n}: duplicate id {m.id}")
        if m.kind not in KINDS:
            raise DataError(f"{path}:{n}: kind {m.kind!r} is not one of {', '.join(KINDS)}")
        seen[m.id] = m
        out.append(m)
    if not out:
        raise DataError(f"{path}: no memories")
    _check_supersedes(path, seen)
    return meta, out


def _check_supersedes(path: Path, rows: dict[str, Memory]) -> None:
    """Every ``supersedes`` names another row of the same project, no row is replaced twice, no chain loops.
    Raises ``DataError``."""
    replaced: set[str] = set()
    for m in rows.values():
        if m.supersedes is None:
            continue
        older = rows.get(m.supersedes)
        if older is None or older.project != m.project or m.supersedes in replaced or older.id == m.id:
            raise DataError(f"{path}: {m.id} supersedes {m.supersedes!r}: not another row of {m.project}, or "
                            "that row is replaced twice")
        replaced.add(m.supersedes)
    for m in rows.values():
        if chain_depth(m, rows) > len(rows):
            raise DataError(f"{path}: {m.id}: its supersedes chain loops")


def chain_depth(m: Memory, rows: dict[str, Memory]) -> int:
    """How many rows ``m`` replaces in turn (0: it supersedes none); stops past ``len(rows)`` (a loop)."""
    depth = 0
    while m.supersedes and depth <= len(rows):
        m = rows[m.supersedes]
        depth += 1
    return depth


def load_prompts(path: Path, memories: list[Memory], reference: int) -> tuple[list[Prompt], list[str]]:
    """The questions file, checked against the memories: known category; relevant ids exist and are in the
    prompt's project; ``no_answer`` exactly when none (else ``DataError``). A relevant row that is replaced or
    noise (``NOISE_KINDS``) can never count as a right injection: it is kept, with a warning (returned).
    A missing ``asked_at`` is ``reference`` (Unix s)."""
    _, rows = _rows(path, need_reference=False)
    by_id = {m.id: m for m in memories}
    replaced = {m.supersedes for m in memories if m.supersedes}
    out: list[Prompt] = []
    warnings: list[str] = []
    ids: set[str] = set()
    for n, r in rows:
        asked = r.get("asked_at", reference)
        p = Prompt(id=_field(path, n, r, "id", str), project=_field(path, n, r, "project", str),
                   category=_field(path, n, r, "category", str), prompt=_field(path, n, r, "prompt", str),
                   relevant=tuple(_field(path, n, r, "relevant", list)),
                   asked_at=int(_field(path, n, {"asked_at": asked}, "asked_at", (int, float))))
        if p.id in ids:
            raise DataError(f"{path}:{n}: duplicate id {p.id}")
        ids.add(p.id)
        if p.category not in CATEGORIES:
            raise DataError(f"{path}:{n}: category {p.category!r} is not one of {', '.join(CATEGORIES)}")
        if p.answerable != bool(p.relevant):
            raise DataError(f"{path}:{n}: {'no relevant ids' if p.answerable else 'no_answer with relevant ids'}")
        for mid in p.relevant:
            m = by_id.get(mid)
            if m is None or m.project != p.project:
                raise DataError(f"{path}:{n}: relevant {mid} is unknown or in another project")
            if m.kind in NOISE_KINDS or mid in replaced:
                warnings.append(f"{p.id}: relevant {mid} is {'replaced' if mid in replaced else m.kind}")
        out.append(p)
    if not out:
        raise DataError(f"{path}: no prompts")
    return out, warnings


def load_split(root: Path, name: str) -> Split:
    """Split ``name`` of the data folder ``root`` (``<root>/<name>/memories.jsonl`` and ``questions.jsonl``).
    Raises ``DataError``."""
    folder = root / name
    meta, memories = load_memories(folder / "memories.jsonl")
    prompts, warnings = load_prompts(folder / "questions.jsonl", memories, int(meta["reference_unix"]))
    return Split(name=name, folder=folder, meta=meta, memories=memories, prompts=prompts, warnings=warnings)
