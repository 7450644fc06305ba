"""``memcue import``'s write path (``POST /import``): each memory of a batch is stored, updated, left unchanged or
reported bad on its own, so one bad line never costs the others.

A memory with a ``source_id`` (an imported line: ``import:<absolute path>:<line>``) that was written before is
compared with the version that id was last written as: the same text and kind is ``unchanged`` (a re-import
stores nothing twice, and a correction the user made since with ``memcue update`` stays); a changed text is
written as a new version of the memory's current version (``StoreProtocol.update``, which then carries the id),
as ``memcue update`` does: ``updated``. A forgotten memory is left forgotten (``unchanged``). New memories are
written in one transaction (``remember_many``: the same text already stored in the project counts as
``unchanged``); when that transaction refuses one of them (empty text after cleaning, a store error) they are
written one by one and the refused ones are ``bad`` with the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memcue.sidecar.store import NewMemory, PreparedWrite, StoreProtocol, WriteResult, prepare_write

log = logging.getLogger("memcue.imports")

#: The outcomes of one imported memory.
IMPORT_STATUSES = ("stored", "updated", "unchanged", "bad")


@dataclass(frozen=True)
class ImportResult:
    """One imported memory's outcome: ``status`` (``IMPORT_STATUSES``), the memory ``id`` it is now (None when
    bad), ``replaced`` the version an update superseded, ``error`` why a bad one was refused, ``redacted`` secrets
    replaced by markers."""

    status: str
    id: int | None = None
    replaced: int | None = None
    error: str = ""
    redacted: int = 0


def import_memories(store: StoreProtocol, memories: Sequence[NewMemory]) -> list[ImportResult]:
    """Write ``memories`` as the module docstring says; one ``ImportResult`` per memory, in order. Never raises
    for one memory's fault (it is ``bad``)."""
    results: list[ImportResult | None] = [None] * len(memories)
    new: list[tuple[int, PreparedWrite]] = []
    for i, memory in enumerate(memories):
        try:
            prepared = prepare_write(memory)
            if not prepared.content.strip():
                results[i] = ImportResult("bad", error="the text is empty after cleaning")
                continue
            seen = store.by_source_id(memory.source_id) if memory.source_id else None
            if seen is None:
                new.append((i, prepared))
            else:
                results[i] = _again(store, memory, prepared, seen)
        except Exception as exc:  # noqa: BLE001 - one memory's failure is reported, the rest go on
            log.exception("import: memory %d of the batch refused", i)
            results[i] = ImportResult("bad", error=str(exc) or type(exc).__name__)
    for i, result in zip([i for i, _ in new], _write_new(store, [p for _, p in new]), strict=True):
        results[i] = result
    return [r if r is not None else ImportResult("bad", error="not written") for r in results]


def _again(store: StoreProtocol, memory: NewMemory, prepared: PreparedWrite, seen: dict[str, Any]) -> ImportResult:
    """A memory whose ``source_id`` was written before as row ``seen``: unchanged, or a new version of the current
    version of ``seen``. Raises what ``StoreProtocol.update`` raises."""
    current = seen
    while current["superseded_by"] is not None:
        nxt = store.fetch([current["superseded_by"]]).get(current["superseded_by"])
        if nxt is None:
            break
        current = nxt
    same = any(row["content"] == prepared.content and row["kind"] == prepared.kind for row in (seen, current))
    if same or current["forgotten_at"] is not None or current["superseded_by"] is not None:
        return ImportResult("unchanged", id=current["id"])
    out = store.update(current["id"], memory, carry_source_id=True)
    return ImportResult("updated", id=out.id, replaced=current["id"], redacted=out.redacted)


def _write_new(store: StoreProtocol, prepared: list[PreparedWrite]) -> list[ImportResult]:
    """Store ``prepared`` in one transaction, or one by one when that is refused (each refusal ``bad``)."""
    if not prepared:
        return []
    try:
        return [_outcome(r) for r in store.remember_many(prepared)]
    except Exception:  # noqa: BLE001 - find which memory was refused by writing them one at a time
        log.warning("import: a batch of %d was refused; writing it one by one", len(prepared))
    out: list[ImportResult] = []
    for p in prepared:
        try:
            out.append(_outcome(store.remember_many([p])[0]))
        except Exception as exc:  # noqa: BLE001 - one memory's failure is reported, the rest go on
            log.exception("import: one memory refused")
            out.append(ImportResult("bad", error=str(exc) or type(exc).__name__))
    return out


def _outcome(result: WriteResult) -> ImportResult:
    """A ``WriteResult`` as an ``ImportResult``: a duplicate (the same text stored already) is unchanged."""
    return ImportResult("unchanged" if result.duplicate else "stored", id=result.id, redacted=result.redacted)
