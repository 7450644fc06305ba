"""The memcue export format (``memcue export``, ``POST /export``) and its lossless restore (``memcue import`` of
an export, ``POST /restore``): a backup, or a store moved to another machine.

Format: JSON Lines, UTF-8, one JSON object per line, keys in a fixed order, so two exports of the same store are
byte-identical (nothing in it says when it was made). The first line is the header::

    {"format": "memcue-export", "version": 1, "memcue": "0.9.0", "schema": 16,
     "scope": {"project": null}, "id_floor": 0}

``version`` is this format's version (a reader refuses a newer one); ``schema`` the store's migration count and
``memcue`` the version that wrote it (informative); ``scope.project`` null for every project, else the project
key whose memories (and the global ones, project "") were exported; ``id_floor`` the highest memory id ever
purged there (ids at or below it are never given out again). Then one line per record, memories first (by id),
then capture candidates (by id), then deliveries (by source id); ``type`` says which:

- ``memory``: one line per memory *version*. ``id``; ``version`` (1 for the first, derived), ``supersedes`` (the
  id of the version it replaced, derived) and ``superseded_by`` / ``superseded_at`` (the newer version and when
  it replaced this one; null while current); ``kind``, ``content``; ``project`` ("" is global) and ``global``
  (derived: project is ""); ``session_id``; ``created_at``, ``updated_at`` (last sighting), ``valid_from``,
  ``valid_to`` (Unix seconds as stored, floats); ``pinned``; ``bookkeeping`` (never recalled); ``forgotten_at``
  (soft-deleted then, null when not); ``seen_count`` (sightings); provenance ``source`` ("cli", "mcp",
  "hook:claude-code", "import:notes.jsonl", "capture:…"), ``source_id`` (its idempotency key, or null) and
  ``metadata`` (any JSON object: a capture's harness, turn and evidence, an import's file and line); ``tags``
  (sorted).
- ``candidate``: a capture candidate with its review state: ``id``, ``state`` (pending, promoted, rejected,
  expired), ``reason`` (why promoted or rejected), ``decided_at``, ``memory_id`` (the memory it became), then
  ``signal``, ``kind``, ``content``, ``project``, ``session_id``, ``harness``, ``turn``, ``evidence``,
  ``created_at``, ``expires_at``.
- ``delivery``: ``source_id``, ``memory_id``, ``created_at``: a write delivered again with the same source id
  was counted as a sighting of that memory; kept so a redelivery after a restore stays a no-op.

Not exported, since they are derived or are logs rather than memory: vectors and baselines (computed again by
the sidecar's worker for its embedding model), the keyword index and the entity graph (rebuilt from the text),
the recall usage log, session receipts and the distillation ledger.

Restore (``restore``): into an empty store every record keeps its id, so exporting again gives the same bytes.
With ``merge`` into a store that holds memories already, records it holds (same source id, same id with the same
text and creation time, or the same current text in the project; a candidate of the same signal, turn and text)
are skipped as ``present``; the others keep their id when it is free and are renumbered when not, and links
(``superseded_by``, a candidate's ``memory_id``, a delivery's memory) follow the new ids. Texts pass through the
store's write preparation (an edited export is cleaned and its secrets redacted like any write).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memcue import __version__
from memcue.sidecar.store import Restored, RestoredCandidate, RestoredMemory, StoreProtocol

#: The header's ``format`` and the format ``version`` this module writes and reads.
FORMAT, VERSION = "memcue-export", 1
#: Rows read from the store per page while exporting.
PAGE = 1000
#: The keys of a memory line, in order.
MEMORY_KEYS = ("type", "id", "version", "supersedes", "superseded_by", "superseded_at", "kind", "content", "project",
               "global", "session_id", "created_at", "updated_at", "valid_from", "valid_to", "pinned", "bookkeeping",
               "forgotten_at", "seen_count", "source", "source_id", "metadata", "tags")
#: The keys of a candidate line, in order.
CANDIDATE_KEYS = ("type", "id", "state", "reason", "decided_at", "memory_id", "signal", "kind", "content", "project",
                  "session_id", "harness", "turn", "evidence", "created_at", "expires_at")


def line(record: Mapping[str, Any]) -> str:
    """One record as its export line (no newline): keys in the record's order, UTF-8 text kept as is."""
    return json.dumps(record, ensure_ascii=False)


def header(store: StoreProtocol, project: str | None) -> dict[str, Any]:
    """The header record of an export of ``project`` (None: every project)."""
    return {"format": FORMAT, "version": VERSION, "memcue": __version__, "schema": store.schema_version,
            "scope": {"project": project}, "id_floor": int(store.get_meta("id_floor") or 0)}


def export_lines(store: StoreProtocol, project: str | None) -> Iterator[str]:
    """Every line of an export of ``project`` (None: every project), newline-terminated, header first, read page
    by page (blocking: iterate in a worker thread)."""
    yield line(header(store, project)) + "\n"
    links = store.export_version_links(project)
    older = {new: old for old, new in sorted(links.items(), reverse=True)}  # the lowest id wins a (rare) tie
    after = 0
    while rows := store.export_memories(after, PAGE, project):
        for row in rows:
            yield line(memory_record(row, older)) + "\n"
        after = rows[-1]["id"]
    after = 0
    while rows := store.export_candidates(after, PAGE, project):
        for row in rows:
            yield line({"type": "candidate", **{k: row[k] for k in CANDIDATE_KEYS[1:]}}) + "\n"
        after = rows[-1]["id"]
    cursor = ""
    while rows := store.export_deliveries(cursor, PAGE, project):
        for row in rows:
            yield line({"type": "delivery", **row}) + "\n"
        cursor = rows[-1]["source_id"]


def memory_record(row: Mapping[str, Any], older: Mapping[int, int]) -> dict[str, Any]:
    """A memory row (``Store.fetch`` shape) as its export record; ``older`` maps a version to the one it
    replaced (for ``version`` and ``supersedes``)."""
    version, cursor = 1, row["id"]
    while cursor in older and version <= len(older):
        cursor = older[cursor]
        version += 1
    derived = {"type": "memory", "version": version, "supersedes": older.get(row["id"]),
               "global": row["project"] == ""}
    return {k: derived[k] if k in derived else row[k] for k in MEMORY_KEYS}


@dataclass
class RestoreReport:
    """What one ``restore`` call did: one outcome per memory, candidate and delivery given, in order, and the
    export ids of the memories mapped to their ids here (``ids``: for the links of later calls)."""

    memories: list[Restored] = field(default_factory=list)
    candidates: list[Restored] = field(default_factory=list)
    deliveries: list[Restored] = field(default_factory=list)
    ids: dict[int, int] = field(default_factory=dict)


def restore(store: StoreProtocol, memories: Sequence[RestoredMemory], candidates: Sequence[RestoredCandidate],
            deliveries: Sequence[tuple[str, int, float]], *, known: Mapping[int, int], merge: bool,
            id_floor: int | None = None) -> RestoreReport:
    """Write a part of an export back (see the module docstring). ``known`` maps export memory ids restored by
    earlier calls to their ids here; a memory's newer version must be known or come before it in ``memories``.
    A candidate or delivery whose memory is not known is ``bad``. ``id_floor`` raises the store's id floor after
    the writes. Raises ``ValueError`` for a bad tag."""
    report = RestoreReport()
    report.memories = store.restore_memories(memories, merge=merge, known=known)
    ids = dict(known)
    for m, out in zip(memories, report.memories, strict=True):
        if out.id is not None:
            ids[m.id] = report.ids[m.id] = out.id
    ready, failed = [], {}
    for i, c in enumerate(candidates):
        if c.memory_id is not None and c.memory_id not in ids:
            failed[i] = Restored("bad", error=f"its memory #{c.memory_id} was not restored")
        else:
            ready.append(dataclasses.replace(c, memory_id=None if c.memory_id is None else ids[c.memory_id]))
    written = iter(store.restore_candidates(ready, merge=merge) if ready else [])
    report.candidates = [failed[i] if i in failed else next(written) for i in range(len(candidates))]
    mapped = [(s, ids[m], t) for s, m, t in deliveries if m in ids]
    delivered = iter(store.restore_deliveries(mapped) if mapped else [])
    report.deliveries = [next(delivered) if m in ids else Restored("bad", error=f"memory #{m} was not restored")
                         for _, m, _ in deliveries]
    if id_floor:
        store.raise_id_floor(id_floor)
    return report


def is_empty(store: StoreProtocol) -> bool:
    """True when the store holds no memory and no capture candidate (a plain restore needs that)."""
    return not store.counts()["memories"] and not store.list_candidates(limit=1)
