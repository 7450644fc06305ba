"""Ingesting the spool: JSON lines written by hooks while the sidecar could not be reached.

Each spool file is append-only and read from a remembered byte offset (kept in the store's ``meta``
table), and each record carries a ``spool_id`` that becomes the memory's ``source_id``, so a record is
stored exactly once even if a file is read twice. Broken lines are logged and skipped, never fatal.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from memcue.sidecar.store.memories import NewMemory, Store

log = logging.getLogger("memcue.spool")


class SpoolReader:
    """Reads ``*.jsonl`` files in ``spool_dir`` into ``store``."""

    def __init__(self, spool_dir: Path, store: Store) -> None:
        self.spool_dir = spool_dir
        self.store = store

    def ingest(self) -> int:
        """Store every complete, new record; return how many memories were written."""
        if not self.spool_dir.is_dir():
            return 0
        written = 0
        for path in sorted(self.spool_dir.glob("*.jsonl")):
            key = f"spool_offset:{path.name}"
            offset = int(self.store.get_meta(key) or 0)
            size = path.stat().st_size
            if size < offset:  # the file was replaced: start again (ids keep it exactly-once)
                offset = 0
            if size == offset:
                continue
            with open(path, "rb") as fh:
                fh.seek(offset)
                data = fh.read(size - offset)
            end = data.rfind(b"\n") + 1
            if end == 0:
                continue
            memories = [m for m in (_parse(line, path) for line in data[:end].splitlines()) if m is not None]
            if memories:
                results = self.store.remember_many(memories)
                written += sum(1 for r in results if not r.duplicate)
            self.store.set_meta(key, str(offset + end))
        if written:
            log.info("ingested %d spooled memories", written)
        return written


def _parse(line: bytes, path: Path) -> NewMemory | None:
    if not line.strip():
        return None
    try:
        rec = json.loads(line.decode("utf-8", "replace"))
        if not isinstance(rec, dict) or rec.get("op", "remember") != "remember" or not rec.get("content"):
            raise ValueError("not a remember record")
        return NewMemory(
            content=str(rec["content"]),
            kind=str(rec.get("kind") or "request"),
            project=str(rec.get("project") or ""),
            session_id=str(rec.get("session_id") or ""),
            source=str(rec.get("source") or "spool"),
            source_id=str(rec.get("spool_id") or "") or None,
            created_at=float(rec["ts"]) if isinstance(rec.get("ts"), int | float) else None,
        )
    except (ValueError, TypeError, KeyError) as exc:
        log.warning("skipping a broken spool line in %s: %s", path.name, exc)
        return None
