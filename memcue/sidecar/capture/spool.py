"""Ingesting the spool: JSON lines written by hooks while the sidecar could not be reached.

Each spool file is append-only and read from a remembered byte offset (kept in the store's ``meta``
table), and each record carries a ``spool_id`` that becomes the memory's ``source_id``, so a record is
stored exactly once even if a file is read twice or the same request also reached the sidecar live (the hook's
``request_id`` is the ``spool_id``); a record whose text was already stored counts as one sighting of that row,
once (the store keeps the id in ``delivered_ids``). A stored record's metadata says ``captured_via: spool``.
Broken lines (not JSON, not a record: ``ValueError``) are logged, counted per file in ``meta`` (``BROKEN_KEY``)
and skipped, never fatal. A line that fails for any other reason is a fault of memcue's, not of the line: it is
logged with its traceback and copied, byte for byte, to ``held/<file>`` in the spool folder (``HELD_DIR``), so a
fixed version can read it again; it is never dropped.

Every writer has its own file (``memcue.hooks.spool.spool_path``). A file read to its end and untouched
for ``IDLE_REMOVE_S`` is deleted under an exclusive ``flock`` (writers append under a shared one and
reopen a file deleted under them), so the folder does not grow with every session ever spooled.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from memcue.core.spool_format import parse_record, parse_tool
from memcue.sidecar.capture.episodes import with_turn_requests
from memcue.sidecar.store import NewMemory, Store, WriteResult

log = logging.getLogger("memcue.spool")

#: A fully ingested spool file untouched this long (s) is deleted; idle files are looked for this often (s).
#: Spool records go once ingested (DESIGN.md section 8); the short wait only spares a file that a session's
#: next hook is about to append to from being deleted and made again.
IDLE_REMOVE_S = 120.0
SWEEP_EVERY_S = 60.0
#: ``meta`` key prefix (then the spool file's name) of the count of lines that file held that could not be read.
BROKEN_KEY = "spool_broken:"
#: Subfolder of the spool folder where lines that failed through a fault of memcue's are kept (see the module).
HELD_DIR = "held"


class SpoolReader:
    """Reads ``*.jsonl`` files in ``spool_dir`` into ``store``; ``on_stored(memory, result)`` is told of each
    record written (duplicates too: the capture signals tell a second delivery by its id). Tool-call records
    (``op: tool``) are never stored as memories: each goes to ``on_tool(record)`` (``spool_format.parse_tool``'s
    fields), in file order, or is dropped without one."""

    def __init__(self, spool_dir: Path, store: Store,
                 on_stored: Callable[[NewMemory, WriteResult], None] | None = None,
                 on_tool: Callable[[dict[str, object]], object] | None = None) -> None:
        self.spool_dir = spool_dir
        self.store = store
        self.on_stored = on_stored
        self.on_tool = on_tool
        self._last_sweep = float("-inf")

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
            lines = data[:end].splitlines()
            parsed = [self._dispatch(line, path) for line in lines]
            memories = with_turn_requests([m for m in parsed if isinstance(m, NewMemory)], self.store.turn_request)
            self._count_broken(path, sum(1 for line, m in zip(lines, parsed, strict=True)
                                         if m is None and line.strip()))
            if memories:
                results = self.store.remember_many(memories)
                written += sum(1 for r in results if not r.duplicate)
                if self.on_stored is not None:
                    for memory, result in zip(memories, results, strict=True):
                        self.on_stored(memory, result)
            self.store.set_meta(key, str(offset + end))
        if written:
            log.info("ingested %d spooled memories", written)
        if time.monotonic() - self._last_sweep >= SWEEP_EVERY_S:  # idle files: no need to look every tick
            self._last_sweep = time.monotonic()
            self.remove_idle()
        return written

    def _dispatch(self, line: bytes, path: Path) -> NewMemory | bool | None:
        """The memory ``line`` asks for; a tool-call record goes to ``on_tool`` instead (True); None for a blank or
        broken line; False for a line kept in ``HELD_DIR`` after a fault of ours (in loading it or in ``on_tool``):
        logged with its traceback: one bad record must not stop the spool."""
        try:
            tool = parse_tool(line)
        except ValueError as exc:
            log.warning("skipping a broken tool record in %s: %s", path.name, exc)
            return None
        if tool is None:
            try:
                return _parse(line, path)
            except Exception:  # noqa: BLE001 - a fault of ours: keep the line, never drop it
                log.exception("a spool line of %s failed to load; kept in %s/ for a later version", path.name,
                              HELD_DIR)
                self._hold(path, line)
                return False
        if self.on_tool is not None:
            try:
                self.on_tool(tool)
            except Exception:  # noqa: BLE001 - a fault of ours: keep the line, never drop it
                log.exception("a tool record from %s could not be read; kept in %s/", path.name, HELD_DIR)
                self._hold(path, line)
        return True

    def _hold(self, path: Path, line: bytes) -> None:
        """Append ``line`` to ``HELD_DIR/<path's name>`` in the spool folder (created 0700). An OSError is logged:
        the line is then still in ``path`` until that file's idle sweep."""
        held = self.spool_dir / HELD_DIR
        try:
            held.mkdir(mode=0o700, exist_ok=True)
            with open(held / path.name, "ab") as fh:
                fh.write(line.rstrip(b"\n") + b"\n")
        except OSError as exc:
            log.error("could not keep a failed spool line of %s: %s", path.name, exc)

    def _count_broken(self, path: Path, broken: int) -> None:
        """Add ``broken`` lines of ``path`` to its ``BROKEN_KEY`` count in ``meta`` (the session's receipt)."""
        if broken:
            key = BROKEN_KEY + path.name
            self.store.set_meta(key, str(int(self.store.get_meta(key) or 0) + broken))

    def remove_idle(self, idle_s: float = IDLE_REMOVE_S) -> list[str]:
        """Delete spool files read to their end and untouched for ``idle_s`` (s); returns their names.
        A file a writer holds (shared lock) or appended to since it was read is kept."""
        removed: list[str] = []
        now = time.time()
        for path in sorted(self.spool_dir.glob("*.jsonl")):
            key = f"spool_offset:{path.name}"
            try:
                st = path.stat()
                if now - st.st_mtime < idle_s or st.st_size != int(self.store.get_meta(key) or -1):
                    continue
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except (OSError, ValueError):
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if os.fstat(fd).st_size != st.st_size:
                    continue  # appended meanwhile: read it first
                path.unlink()
                self.store.delete_meta(key)
                removed.append(path.name)
            except OSError:
                continue  # a writer holds it
            finally:
                os.close(fd)
        return removed


def _parse(line: bytes, path: Path) -> NewMemory | None:
    """The memory one spool line asks for (``memcue.core.spool_format.parse_record``); None for a blank or
    broken line (``ValueError``, logged). Any other exception is a fault of memcue's and propagates."""
    try:
        fields = parse_record(line)
    except ValueError as exc:
        log.warning("skipping a broken spool line in %s: %s", path.name, exc)
        return None
    if fields is None:
        return None
    return NewMemory(**{**fields, "metadata": {**(fields.get("metadata") or {}), "captured_via": "spool"}})
