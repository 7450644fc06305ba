"""Native memory files kept in step with the store: each entry of a source file (``NativeSource.read``) is one
memory, written at once (the user or their harness wrote it: it answers without review).

A file's entries are diffed against what the last sync stored for it, by identity: ``source_id`` =
``native:`` + a digest of the file's path, the entry's heading and its normalised text (whitespace collapsed,
case folded). An unchanged entry is left alone (re-import writes nothing); an entry whose text changed in place
(a ``replace`` run of the diff, paired in order) is written as a new version of its memory
(``StoreProtocol.update``: the old one stops answering); an entry that went, or a file that went, retires its
memory (``forget``), unless another file still states it; a new entry is remembered. In a file a harness's agent
writes (``SourceFile.agent_written``), an entry that reads like instructions to a model (``instruction_like``)
is not imported (counted as ``skipped``). A memory someone else
changed since (``memcue edit``) is followed to its newest version; one someone forgot stays forgotten, unless the
file says it again. memcue never writes to the files.

What was stored for each file is kept in the store's ``meta`` (``STATE_KEY``): the source, project, the
harnesses that load the file themselves, the last sync and each entry's ``(source_id, memory id, line,
heading)``. ``loaded_by`` answers, per memory, which harnesses already have it in their context
(``not_loaded_by`` filters injected results with it). Watching (``start``): the folders the sources name, with
watchfiles (not recursive: a rules sub-folder or a new auto-memory folder is picked up by the re-sync every
``RESYNC_S``), and everything again every ``RESYNC_S``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from memcue.sidecar.capture.native.base import NativeSource, SourceFile
from memcue.sidecar.capture.native.markdown import Entry
from memcue.sidecar.store import NewMemory, StoreProtocol, instruction_like, prepare_write, redact

log = logging.getLogger("memcue.native")

#: The store ``meta`` key holding what each source file was synced as (JSON).
STATE_KEY = "native_sources"
#: Every source is read again this often (s) while the sidecar runs, whatever the watcher saw.
RESYNC_S = 60.0
#: How often the watcher of the native memory files looks for a change (ms; watchfiles' ``step``, see
#: ``worker.SPOOL_WATCH_STEP_MS``): a person's edit of CLAUDE.md is read within about a second.
NATIVE_WATCH_STEP_MS = 500
#: Projects (with sessions) read at start, newest first.
START_PROJECTS = 200
#: Entry identities kept in memory before the cache starts afresh.
ID_CACHE = 50_000
#: The ``source`` of a native memory: this prefix and the source's name.
SOURCE_PREFIX = "native:"


def source_id(path: Path, entry: Entry, project: str = "") -> str:
    """An entry's identity (see the module docstring; ``project``: the memcue project the file is read for, as a
    parent folder's ``CLAUDE.md`` is read for each project below it), computed over the redacted text: no digest
    of a secret is kept."""
    text = " ".join(redact(entry.text).text.split()).casefold()
    heading = redact(entry.heading).text.casefold()
    scope = f"{project}\0" if project else ""
    digest = hashlib.sha1(f"{scope}{path}\0{heading}\0{text}".encode()).hexdigest()
    return f"{SOURCE_PREFIX}{digest[:24]}"


class NativeSync:
    """Keeps ``sources`` in step with ``store`` (see the module docstring); ``off``: names of sources not read.
    ``home``/``env``: where the sources look. ``after_write(ids)`` runs after a sync changed memories (``ids``:
    the versions superseded or forgotten), for the caller's caches and worker. Thread-safe."""

    def __init__(self, store: StoreProtocol, sources: Sequence[NativeSource], *, home: Path,
                 env: Mapping[str, str], off: Collection[str] = (),
                 after_write: Callable[[list[int]], None] = lambda ids: None) -> None:
        self.store = store
        self.sources = {s.name: s for s in sources}
        self.home, self.env = home, dict(env)
        self.off = set(off)
        self.after_write = after_write
        self._lock = threading.RLock()
        self._state = _load(store)
        self._loaded: dict[int, frozenset[str]] = {}
        self._saved = ""
        self._ids: dict[tuple[str, Path, str, str], str] = {}
        self._index()
        self._stop = threading.Event()
        self._rewatch = threading.Event()
        self._thread: threading.Thread | None = None
        #: How the files are followed: "watchfiles", or why they are only re-read every ``RESYNC_S``.
        self.watch_status = "not started"

    # -- syncing --------------------------------------------------------------------------------
    def sync_all(self) -> None:
        """Read the user-level files and every known project's (blocking)."""
        with self._lock:
            projects = list(self._state["projects"])
        for project in [None, *projects]:
            self.sync(project)

    def sync(self, project: str | None) -> dict[str, int]:
        """Read the user-level files (``project`` None) or ``project``'s (a project key, an absolute directory)
        and bring the store in step; a new project is remembered (and watched). Returns counts: ``stored``,
        ``updated``, ``retired``, ``unchanged``. Never raises for a file's fault (its ``error`` says it)."""
        counts = {"stored": 0, "updated": 0, "retired": 0, "unchanged": 0}
        if project is not None and (not project or not os.path.isabs(project)):
            return counts
        with self._lock:
            if project is not None and project not in self._state["projects"]:
                self._state["projects"].append(project)
                self._rewatch.set()
            found = {_key(f): (name, f) for name, src in self.sources.items() if name not in self.off
                     for f in self._discover(src, project)}
            scope = "" if project is None else project
            gone = [path for path, rec in self._state["files"].items()
                    if rec["scope"] == scope and path not in found]
            retire: list[int] = []
            for path in gone:
                retire += [e[1] for e in self._state["files"].pop(path)["entries"]]
            for name, file in found.values():
                retire += self._sync_file(name, file, scope, counts)
            counts["retired"] += self._retire(retire)
            self._save()
        return counts

    def _discover(self, source: NativeSource, project: str | None) -> list[SourceFile]:
        try:
            return source.discover(project, self.home, self.env)
        except OSError as exc:
            log.warning("native source %s: cannot look for files (%s)", source.name, exc)
            return []

    def _sync_file(self, name: str, file: SourceFile, scope: str, counts: dict[str, int]) -> list[int]:
        """Bring one file's memories in step; returns the memory ids its gone entries leave to retire."""
        key = _key(file)
        old = self._state["files"].get(key) or {"entries": []}
        record = {"path": str(file.path), "source": name, "scope": scope, "project": file.project,
                  "loaded_by": sorted(file.loaded_by),
                  "synced_at": time.time(), "error": "", "entries": old["entries"], "skipped": 0}
        self._state["files"][key] = record
        try:
            # Headings are kept (state, metadata) apart from the text, which the store's write preparation redacts.
            entries = self.sources[name].read(file)
            headings = {h: redact(h).text for h in {e.heading for e in entries}}
            entries = [Entry(e.text, headings[e.heading], e.line, e.kind) for e in entries]
        except OSError as exc:
            record["error"] = str(exc)
            log.warning("native source %s: cannot read %s (%s)", name, key, exc)
            return []
        if file.agent_written:  # an agent wrote it: instruction-shaped text is not passed on to other harnesses
            kept = [e for e in entries if not instruction_like(e.text)]
            record["skipped"] = len(entries) - len(kept)
            entries = kept
        new_ids = [self._source_id(file, e) for e in entries]
        out_entries: list[list[Any]] = []
        retire: list[int] = []
        ops = SequenceMatcher(a=[e[0] for e in old["entries"]], b=new_ids, autojunk=False).get_opcodes()
        for tag, i1, i2, j1, j2 in ops:
            olds, news = old["entries"][i1:i2], list(range(j1, j2))
            if tag == "equal":
                out_entries += [[sid, o[1], entries[j].line, entries[j].heading] for o, j, sid in
                                zip(olds, news, new_ids[j1:j2], strict=True)]
                counts["unchanged"] += len(news)
                continue
            paired = min(len(olds), len(news)) if tag == "replace" else 0
            for o, j in zip(olds[:paired], news[:paired], strict=True):
                out_entries.append(self._replace(o[1], name, file, entries[j], new_ids[j], counts))
            retire += [o[1] for o in olds[paired:]]
            for j in news[paired:]:
                out_entries.append(self._add(name, file, entries[j], new_ids[j], counts))
        record["entries"] = [e for e in out_entries if e[1] is not None]
        return retire

    def _source_id(self, file: SourceFile, entry: Entry) -> str:
        """``source_id``, remembered (redacting every entry of every file each minute would cost a core ~25 ms
        per 400 entries)."""
        key = (file.project, file.path, entry.heading, entry.text)
        sid = self._ids.get(key)
        if sid is None:
            if len(self._ids) >= ID_CACHE:
                self._ids.clear()
            sid = self._ids[key] = source_id(file.path, entry, file.project)
        return sid

    def _memory(self, name: str, file: SourceFile, entry: Entry, sid: str) -> NewMemory:
        """The memory an entry is written as: its provenance (file, heading, line) in ``metadata["native"]``, and
        the heading before the text for its embedding (the text redacted: metadata is not prepared with it)."""
        native = {"source": name, "file": str(file.path), "heading": entry.heading, "line": entry.line}
        metadata: dict[str, Any] = {"native": native}
        if entry.heading:
            metadata["embed_text"] = f"{entry.heading}: {redact(entry.text).text}"
        return NewMemory(content=entry.text, kind=entry.kind, project=file.project, source=f"{SOURCE_PREFIX}{name}",
                         source_id=sid, metadata=metadata)

    def _add(self, name: str, file: SourceFile, entry: Entry, sid: str, counts: dict[str, int]) -> list[Any]:
        """Remember a new entry (or find the memory its identity was written as); ``[sid, id, line, heading]``."""
        memory = self._memory(name, file, entry, sid)
        try:
            seen = self.store.by_source_id(sid)
            if seen is None:
                result = self.store.remember_many([memory])[0]
                mid = result.id
                counts["unchanged" if result.duplicate else "stored"] += 1
            else:
                mid = self._current(seen["id"]) or seen["id"]
                counts["unchanged"] += 1
            self._revive(mid)
        except (ValueError, OSError) as exc:  # an entry empty after cleaning: nothing to remember
            log.info("native source %s: entry at %s:%d not stored (%s)", name, file.path, entry.line, exc)
            mid = None
        return [sid, mid, entry.line, entry.heading]

    def _replace(self, old_id: int, name: str, file: SourceFile, entry: Entry, sid: str,
                 counts: dict[str, int]) -> list[Any]:
        """An entry changed in place: a new version of its memory's newest version (a new memory when that one
        is gone or forgotten); ``[sid, id, line, heading]``."""
        current = self._current(old_id)
        row = self.store.fetch([current]).get(current) if current is not None else None
        if row is None or row["forgotten_at"] is not None:
            return self._add(name, file, entry, sid, counts)
        memory = self._memory(name, file, entry, sid)
        prepared = prepare_write(memory)
        if prepared.content == row["content"] and prepared.kind == row["kind"]:
            counts["unchanged"] += 1
            return [sid, row["id"], entry.line, entry.heading]
        try:
            result = self.store.update(row["id"], memory, carry_source_id=True)
        except (KeyError, ValueError) as exc:
            log.info("native source %s: %s:%d written as new (%s)", name, file.path, entry.line, exc)
            return self._add(name, file, entry, sid, counts)
        counts["updated"] += 1
        self.after_write([row["id"]])
        return [sid, result.id, entry.line, entry.heading]

    def _current(self, memory_id: int) -> int | None:
        """The newest version of ``memory_id`` (None when it is gone)."""
        seen: set[int] = set()
        current: int | None = memory_id
        while current is not None and current not in seen:
            seen.add(current)
            row = self.store.fetch([current]).get(current)
            if row is None:
                return None
            if row["superseded_by"] is None:
                return current
            current = int(row["superseded_by"])
        return current

    def _revive(self, memory_id: int) -> None:
        """A memory a sync retired that a file states again answers again."""
        retired: list[int] = self._state["retired"]
        if memory_id in retired:
            self.store.unforget([memory_id])
            retired.remove(memory_id)

    def _retire(self, ids: Iterable[int]) -> int:
        """Forget the newest versions of ``ids`` that no file states any more; returns how many."""
        stated = {e[1] for rec in self._state["files"].values() for e in rec["entries"]}
        current = {c for i in dict.fromkeys(ids) if i not in stated and (c := self._current(i)) is not None}
        current -= stated
        if not current:
            return 0
        done = self.store.forget(sorted(current)).forgotten
        self._state["retired"] = sorted(set(self._state["retired"]) | set(done))
        self.after_write(list(done))
        return len(done)

    # -- switching a source off and on ----------------------------------------------------------
    def set_enabled(self, name: str, enabled: bool) -> None:
        """Read source ``name`` again (``enabled``) or stop reading it: its files are dropped and their memories
        retired. Raises ``KeyError`` for an unknown name."""
        if name not in self.sources:
            raise KeyError(name)
        with self._lock:
            if enabled:
                self.off.discard(name)
            else:
                self.off.add(name)
                retire: list[int] = []
                for path in [p for p, rec in self._state["files"].items() if rec["source"] == name]:
                    retire += [e[1] for e in self._state["files"].pop(path)["entries"]]
                self._retire(retire)
                self._save()
        if enabled:
            self.sync_all()

    # -- what each harness loads itself -------------------------------------------------------------
    def loaded_by(self, memory_id: int) -> frozenset[str]:
        """The harnesses that load a file stating ``memory_id`` themselves (empty for any other memory)."""
        return self._loaded.get(int(memory_id), frozenset())

    def not_loaded_by(self, harness: str, items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """``items`` (results or rows with ``memory_id`` or ``id``) without the memories ``harness`` loads from
        its own files already."""
        return [i for i in items if harness not in self.loaded_by(i.get("memory_id", i.get("id", 0)) or 0)]

    def listing(self) -> list[dict[str, Any]]:
        """Per source: ``name``, ``harness``, ``enabled``, ``files`` (``path``, ``project``, ``loaded_by``,
        ``memories``, ``synced_at``, ``error``, ``skipped``: entries an agent wrote that read like instructions),
        ``memories`` and ``last_sync`` (Unix s, None before one)."""
        with self._lock:
            out = []
            for name, src in self.sources.items():
                files = [{"path": rec["path"], "project": rec["project"], "loaded_by": rec["loaded_by"],
                          "memories": len({e[1] for e in rec["entries"]}), "synced_at": rec["synced_at"],
                          "error": rec["error"], "skipped": rec.get("skipped", 0)}
                         for _, rec in sorted(self._state["files"].items()) if rec["source"] == name]
                out.append({"name": name, "harness": src.harness, "enabled": name not in self.off, "files": files,
                            "memories": len({e[1] for rec in self._state["files"].values()
                                             if rec["source"] == name for e in rec["entries"]}),
                            "last_sync": max((f["synced_at"] for f in files), default=None)})
            return out

    def _index(self) -> None:
        loaded: dict[int, frozenset[str]] = {}
        for rec in self._state["files"].values():
            for entry in rec["entries"]:
                loaded[entry[1]] = loaded.get(entry[1], frozenset()) | frozenset(rec["loaded_by"])
        self._loaded = loaded

    def _save(self) -> None:
        """Store the state when more than sync times changed (an unchanged re-sync writes nothing)."""
        self._index()
        files = {p: {k: v for k, v in rec.items() if k != "synced_at"} for p, rec in self._state["files"].items()}
        shape = json.dumps({**self._state, "files": files}, sort_keys=True)
        if shape != self._saved:
            self.store.set_meta(STATE_KEY, json.dumps(self._state, separators=(",", ":")))
            self._saved = shape

    # -- watching ----------------------------------------------------------------------------------
    def start(self, known_projects: Callable[[], Iterable[str]] = list) -> None:
        """On a thread of its own (returns at once): add ``known_projects()`` (the projects to read besides those
        read before), sync everything, then follow the files."""
        self._thread = threading.Thread(target=self._run, args=(known_projects,), name="memcue-native-sources",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop following the files (waits up to 5 s)."""
        self._stop.set()
        self._rewatch.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def add_known_projects(self, projects: Iterable[str]) -> None:
        """Projects to read at start (and watch) besides those read before."""
        with self._lock:
            for p in projects:
                if p and os.path.isabs(p) and p not in self._state["projects"]:
                    self._state["projects"].append(p)

    def _run(self, known_projects: Callable[[], Iterable[str]]) -> None:
        try:
            self.add_known_projects(known_projects())
            self.sync_all()
        except Exception:  # noqa: BLE001 - the sidecar goes on without native sources
            log.exception("native sources: first sync failed")
        while not self._stop.is_set():
            try:
                self._watch_round()
            except Exception as exc:  # noqa: BLE001 - re-read on a timer instead
                self.watch_status = f"re-read every {RESYNC_S:g} s ({type(exc).__name__}: {exc})"
                log.warning("native sources: watching off (%s)", exc)
                self._stop.wait(RESYNC_S)
                self._sync_quietly()

    def _places(self) -> list[str]:
        with self._lock:
            projects = [None, *self._state["projects"]]
        dirs = {str(p) for src in self.sources.values() for proj in projects
                for p in src.places(proj, self.home, self.env)}
        return sorted(d for d in dirs if os.path.isdir(d))

    def _watch_round(self) -> None:
        """Watch the current folders until stopped or a new folder is to be watched; re-sync on every change."""
        from watchfiles import watch

        self._rewatch.clear()
        places = self._places()
        stop = _Either(self._stop, self._rewatch)
        self.watch_status = "watchfiles"
        if not places:  # nothing to watch yet: a new project (``sync``) or the timer ends the wait
            if not self._rewatch.wait(RESYNC_S):
                self._sync_quietly()
            return
        for _changes in watch(*places, stop_event=stop, recursive=False, debounce=200, step=NATIVE_WATCH_STEP_MS,
                              rust_timeout=int(RESYNC_S * 1000), yield_on_timeout=True, raise_interrupt=False,
                              watch_filter=lambda _change, path: path.endswith(".md") or "." not in Path(path).name):
            self._sync_quietly()
            if self._places() != places:
                return

    def _sync_quietly(self) -> None:
        try:
            self.sync_all()
        except Exception:  # noqa: BLE001 - the next change or timer tries again
            log.exception("native sources: sync failed")


def _key(file: SourceFile) -> str:
    """A file's key in the state: one record per file and project it is read for."""
    return f"{file.project}\n{file.path}"


class _Either:
    """Set when either event is (watchfiles' ``stop_event``)."""

    def __init__(self, a: threading.Event, b: threading.Event) -> None:
        self.a, self.b = a, b

    def is_set(self) -> bool:
        return self.a.is_set() or self.b.is_set()


def _load(store: StoreProtocol) -> dict[str, Any]:
    """The stored sync state, a fresh one when absent or unreadable."""
    fresh: dict[str, Any] = {"files": {}, "projects": [], "retired": []}
    raw = store.get_meta(STATE_KEY)
    if not raw:
        return fresh
    try:
        state = json.loads(raw)
        return {**fresh, **state} if isinstance(state, dict) else fresh
    except ValueError:
        log.warning("native sources: stored state unreadable; starting afresh")
        return fresh
