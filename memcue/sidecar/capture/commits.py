"""Commits that landed during a session -> candidates -> the gate: the commit signal, run off the hook path.

When the spool reader stores a session's Stop or SessionEnd record (kinds ``CLOSING_KINDS``, written by
``hooks/run.py._capture``), ``queue`` notes the session (a deque append and a wake); the worker's step calls
``run``, which reads git in the event's ``cwd`` (spooled with the record, kept in its ``metadata``; a linked
worktree's project is its main repository, but the session's commits are on the worktree's branch), else in the
project folder. Read-only git, never a write to the repository: ``git -C <folder>`` with
``GIT_OPTIONAL_LOCKS=0``, no pager, no prompt, the caller's ``GIT_*`` variables dropped, ``core.fsmonitor`` off
(``rev-parse``, ``log`` and ``config --get`` run no hooks), each call cut at ``GIT_TIMEOUT_S``.

What is read: commits reachable from HEAD on a branch, no merges, committed since the session was first seen
(``Store.session_first_seen``, at whole-second resolution, as git stores dates) and not reachable from the mark
of the previous read (meta ``commits:mark:<session>``, HEAD's sha then: a Stop with HEAD unmoved costs one
``rev-parse``); when the repository sets ``user.email``, only commits whose committer is that address (a pull's
commits by others are not this session's work). At most ``MAX_COMMITS`` per read.

Each commit becomes a candidate (signal ``SIGNAL``, turn ``commit:<sha>``: a commit is held once, whichever
session or Stop reads it again) of kind ``change`` (a commit records what changed and, in its body, why; it is
not always a decision, and ``change`` ranks as knowledge, not as an episode), text ``<subject>\\n\\n<body, cut
at BODY_MAX_CHARS>\\n\\nTests added: test_a, test_b\\n\\nFiles: a.py, b.py (+N more)``, evidence ``sha``,
``branch``, ``files``, ``tests``; promoted at once
with reason ``COMMIT_LANDED`` (the commit landing is the confirming signal); the text embedded for it leaves the
file list out (``capture.embed_text``). Secrets in the message are redacted
by the write preparation every candidate and memory passes. The tests a commit adds are read from the diff of
its test files (``capture.test_names``; one ``git show`` for each of at most ``MAX_TEST_READS`` commits that touch
a test file; a failed read only leaves the names out): "which test covers the cutoff?" is answered by the fix.

Nothing is read from git, and the reason is kept, for: a folder that is gone or not a git repository, git not on
PATH, a detached HEAD, a branch without commits, a rebase, merge, cherry-pick or revert in progress, a git call
that failed or timed out. A commit touching more than ``HUGE_COMMIT_FILES`` files is skipped (a vendored tree or a
mass reformat says nothing a later question needs) with its reason. The reason is the session's note, meta
``commits:note:<session>`` = ``{"at": <Unix s>, "reason": "..."}`` (``read_note``; the receipt shows it); a
read that captured normally clears nothing, a new reason replaces the old one.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from memcue.sidecar.capture.embed_text import commit_embedding_text
from memcue.sidecar.capture.gate import Gate
from memcue.sidecar.capture.test_names import added_tests, is_test_file
from memcue.sidecar.store import NewCandidate, NewMemory, StoreProtocol, WriteResult

log = logging.getLogger("memcue.capture")

#: The signal name of candidates made from commits, and the reason recorded on the memories they become.
SIGNAL = "commit-landed"
#: The kind of the memories it writes: what the code did.
KIND = "change"
COMMIT_LANDED = "commit-landed"
#: Spooled kinds that close a turn or a session: a Stop's answer (``response``, or ``episode``) and SessionEnd's
#: ``event``.
CLOSING_KINDS = ("response", "episode", "event")
#: Longest one git call may take (s); past it the read stops and says so.
GIT_TIMEOUT_S = 2.0
#: Most commits read per Stop; the newest are read first.
MAX_COMMITS = 50
#: A commit touching more files than this is skipped (and noted).
HUGE_COMMIT_FILES = 500
#: The body is cut at this many characters, the file list after this many names.
BODY_MAX_CHARS = 800
FILES_SHOWN = 15
#: Most commits of one read whose test files' diff is read for the tests they add (one git call each).
MAX_TEST_READS = 10
#: Most sessions waiting for the worker; past it the oldest are dropped (logged).
QUEUE_MAX = 1_000
#: Meta keys: the HEAD read last, and why nothing was read.
MARK_KEY = "commits:mark:"
NOTE_KEY = "commits:note:"

_IN_PROGRESS = (("rebase-merge", "a rebase"), ("rebase-apply", "a rebase"), ("MERGE_HEAD", "a merge"),
                ("CHERRY_PICK_HEAD", "a cherry-pick"), ("REVERT_HEAD", "a revert"))
_RECORD, _FIELD = "\x1e", "\x1f"
#: ``on_landed(project, session_id, harness, [(sha, files), ...])``: commits a read held, oldest first.
Landed = Callable[[str, str, str, list[tuple[str, tuple[str, ...]]]], object]


class GitUnusable(Exception):
    """git cannot be read for this session; the message is the reason kept in the session's note."""


@dataclass(frozen=True)
class Commit:
    """One commit read from git: ``sha`` (40 hex), committer ``email``, ``subject``, ``body``, ``files``
    (paths, as git prints them) and the ``tests`` it adds (names, ``capture.test_names``)."""

    sha: str
    email: str
    subject: str
    body: str
    files: tuple[str, ...]
    tests: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Closing:
    project: str
    folder: str
    session_id: str
    harness: str


class CommitSignal:
    """The commit signal over ``store`` and ``gate``; ``wake`` asks the worker for a step. ``git`` is the git
    executable's name or path (looked up on PATH at each read). ``on_landed(project, session_id, harness, [(sha,
    files), ...])`` is told at every read of the commits it held, oldest first ([] when HEAD had not moved:
    ``capture.turn_edits`` confirms turns read since with the commits it was told before); its failure is logged
    and costs the commits nothing."""

    def __init__(self, store: StoreProtocol, gate: Gate, wake: Callable[[], None] = lambda: None,
                 git: str = "git", on_landed: Landed | None = None) -> None:
        self._store = store
        self._gate = gate
        self._wake = wake
        self._git = git
        self._on_landed = on_landed
        self._queue: collections.deque[_Closing] = collections.deque()
        self._lock = threading.Lock()
        #: Wall time (ms) of the git calls of the last read, for measurement.
        self.last_git_ms = 0.0

    def queue(self, memory: NewMemory, result: WriteResult) -> None:
        """Note a stored Stop/SessionEnd record (``memory`` as spooled) for ``run``; anything else is ignored.
        Cheap: no git here."""
        source = memory.source or ""
        if memory.kind not in CLOSING_KINDS or not source.startswith("hook:") or not memory.session_id:
            return
        folder = str(memory.metadata.get("cwd") or "") or memory.project
        if not folder.startswith("/"):
            return
        item = _Closing(memory.project, folder, memory.session_id, source.split(":", 1)[1])
        with self._lock:
            if item in self._queue:
                return
            if len(self._queue) >= QUEUE_MAX:
                self._queue.popleft()
                log.warning("commit queue full: the oldest closed turn was not read for commits")
            self._queue.append(item)
        self._wake()

    @property
    def waiting(self) -> bool:
        """True when closed turns wait for ``run``."""
        return bool(self._queue)

    def run(self) -> int:
        """Read git for every queued session; returns the candidates added. Never raises: a failure is logged
        and kept as the session's note."""
        added = 0
        while True:
            with self._lock:
                if not self._queue:
                    return added
                item = self._queue.popleft()
            try:
                added += self.capture(item.project, item.session_id, item.harness, folder=item.folder)
            except GitUnusable as exc:
                self._note(item.session_id, str(exc))
            except Exception as exc:  # noqa: BLE001 - one bad repository must not stop the worker
                log.exception("reading commits for session %s failed", item.session_id)
                self._note(item.session_id, f"capturing commits failed: {type(exc).__name__}")

    def capture(self, project: str, session_id: str, harness: str, *, folder: str = "") -> int:
        """Hold and promote the commits of ``session_id`` now (blocking): git is read in ``folder`` (the event's
        cwd; default ``project``), the candidates belong to ``project``. Returns the candidates added. Raises
        ``GitUnusable`` with the reason when git cannot be read."""
        spent = time.perf_counter()
        try:
            return self._capture(project, folder or project, session_id, harness)
        finally:
            self.last_git_ms = (time.perf_counter() - spent) * 1000

    def _capture(self, project: str, folder: str, session_id: str, harness: str) -> int:
        since = self._store.session_first_seen(session_id)
        if since is None:
            return 0
        head, branch = self._head(folder)
        mark = self._store.get_meta(MARK_KEY + session_id)
        if mark == head:
            self._tell(project, session_id, harness, [])  # what landed before may confirm turns read since
            return 0
        commits = self._log(folder, int(since), mark)
        mine = self._committer(folder)
        if mine:
            commits = [c for c in commits if c.email.lower() == mine]
        huge = [c for c in commits if len(c.files) > HUGE_COMMIT_FILES]
        if huge:
            self._note(session_id, f"commit {huge[0].sha[:12]} skipped: {len(huge[0].files)} files changed "
                                   f"(more than {HUGE_COMMIT_FILES})")
        kept = self._with_tests(folder, [c for c in commits if c not in huge])
        added = self._hold(kept, project, session_id, harness, branch)
        self._store.set_meta(MARK_KEY + session_id, head)
        self._tell(project, session_id, harness, kept)
        return added

    def _tell(self, project: str, session_id: str, harness: str, kept: list[Commit]) -> None:
        """``on_landed`` with ``kept`` (newest first here, told oldest first); its failure is logged."""
        if self._on_landed is None:
            return
        try:
            self._on_landed(project, session_id, harness, [(c.sha, c.files) for c in reversed(kept)])
        except Exception:  # noqa: BLE001 - the commits are held already; what they confirm is extra
            log.exception("what the commits of session %s confirm was not read", session_id)

    def _hold(self, commits: list[Commit], project: str, session_id: str, harness: str, branch: str) -> int:
        news = [NewCandidate(content=commit_text(c), signal=SIGNAL, kind=KIND, project=project,
                             session_id=session_id, harness=harness, turn=f"commit:{c.sha}",
                             evidence={"sha": c.sha, "branch": branch, "files": list(c.files[:FILES_SHOWN]),
                                       "files_changed": len(c.files), "tests": list(c.tests),
                                       "embed_text": commit_embedding_text(c.subject, _cut_body(c.body), c.tests)})
                for c in reversed(commits)]  # oldest first: memories in the order the commits landed
        if not news:
            return 0
        count = 0
        for got in self._store.add_candidates(news):
            count += got.added
            # A commit read before (another Stop, another session) is promoted only if that read broke off
            # before promoting it: ``confirm`` leaves a decided candidate as it is.
            self._gate.confirm(got.id, COMMIT_LANDED)
        return count

    def _with_tests(self, folder: str, commits: list[Commit]) -> list[Commit]:
        """``commits`` with the tests each adds, read for the newest ``MAX_TEST_READS`` that touch a test file."""
        out: list[Commit] = []
        reads = 0
        for c in commits:  # newest first
            tests_touched = [f for f in c.files if is_test_file(f)]
            if tests_touched and reads < MAX_TEST_READS:
                reads += 1
                try:
                    diff = self._run(folder, "show", "--format=", "--unified=0", "--no-color", "--no-ext-diff",
                                     "--no-renames", c.sha, "--", *tests_touched)
                except GitUnusable as exc:
                    log.info("tests of commit %s not read: %s", c.sha[:12], exc)
                else:
                    c = dataclasses.replace(c, tests=tuple(added_tests(diff)))
            out.append(c)
        return out

    def _head(self, project: str) -> tuple[str, str]:
        """``(HEAD sha, branch name)``; raises ``GitUnusable`` for a detached HEAD, no commits, an operation in
        progress, no repository."""
        if not os.path.isdir(project):
            raise GitUnusable("the project folder is gone")
        out = self._run(project, "rev-parse", "--absolute-git-dir", "HEAD", "--symbolic-full-name", "HEAD")
        lines = out.splitlines()
        if len(lines) != 3:
            raise GitUnusable("git rev-parse gave an unexpected answer")
        git_dir, head, ref = lines
        for name, what in _IN_PROGRESS:
            if os.path.exists(os.path.join(git_dir, name)):
                raise GitUnusable(f"{what} is in progress")
        if not ref.startswith("refs/heads/"):
            raise GitUnusable("detached HEAD (not on a branch)")
        return head, ref.removeprefix("refs/heads/")

    def _log(self, project: str, since: int, mark: str | None) -> list[Commit]:
        args = ["log", "--no-merges", "--no-renames", "--no-color", f"--max-count={MAX_COMMITS}",
                f"--since=@{since}", f"--format={_RECORD}%H{_FIELD}%ce{_FIELD}%s{_FIELD}%b{_FIELD}", "--name-only",
                "HEAD"]
        if mark:
            try:
                return parse_log(self._run(project, *args, f"^{mark}", "--"))
            except GitUnusable:
                pass  # the mark is gone (gc after a rewrite): read by date alone; ids keep it once
        return parse_log(self._run(project, *args, "--"))

    def _committer(self, project: str) -> str:
        """The repository's configured ``user.email`` (lowercase), "" when none is set."""
        try:
            return self._run(project, "config", "--get", "user.email").strip().lower()
        except GitUnusable:
            return ""

    def _run(self, project: str, *args: str) -> str:
        """stdout of ``git -C project args`` (read-only settings, see the module docstring); raises
        ``GitUnusable`` when git is missing, fails or times out."""
        git = shutil.which(self._git)
        if git is None:
            raise GitUnusable("git is not on PATH")
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", PAGER="cat", LC_ALL="C")
        try:
            proc = subprocess.run([git, "-C", project, "--no-pager", "-c", "core.fsmonitor=false", *args],
                                  capture_output=True, env=env, timeout=GIT_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            raise GitUnusable(f"git {args[0]} took longer than {GIT_TIMEOUT_S:g} s") from exc
        except OSError as exc:
            raise GitUnusable(f"git could not run: {exc.strerror or exc}") from exc
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            first = err[0] if err else f"exit status {proc.returncode}"
            if "not a git repository" in first:
                raise GitUnusable("not a git repository")
            if args[0] == "rev-parse" and "HEAD" in first:
                raise GitUnusable("no commits on this branch yet")
            raise GitUnusable(f"git {args[0]} failed: {first[:160]}")
        return proc.stdout.decode("utf-8", "replace")

    def _note(self, session_id: str, reason: str) -> None:
        log.info("commits of session %s: %s", session_id, reason)
        self._store.set_meta(NOTE_KEY + session_id, json.dumps({"at": time.time(), "reason": reason}))


def read_note(store: StoreProtocol, session_id: str) -> dict[str, object] | None:
    """Why commits were not (all) read for ``session_id``, as kept in ``store``'s meta: ``{"at": Unix s,
    "reason": str}``, or None (no note, or an unreadable one)."""
    raw = store.get_meta(NOTE_KEY + session_id)
    try:
        note = json.loads(raw) if raw else None
    except ValueError:
        return None
    return note if isinstance(note, dict) else None


def parse_log(out: str) -> list[Commit]:
    """The commits in ``git log`` output written with ``--format=<RS>%H<US>%ce<US>%s<US>%b<US> --name-only``,
    newest first. Records that do not parse are left out."""
    commits: list[Commit] = []
    for record in out.split(_RECORD)[1:]:
        parts = record.split(_FIELD)
        if len(parts) != 5 or len(parts[0]) < 40:
            continue
        sha, email, subject, body, names = parts
        files = tuple(line for line in names.splitlines() if line.strip())
        commits.append(Commit(sha.strip(), email.strip(), subject.strip(), body.strip(), files))
    return commits


#: How a commit's memory names the tests it adds: ``TESTS_LABEL`` and the names joined by ", " (``commit_text``).
TESTS_LABEL = "Tests added: "
#: How a commit's memory lists the files it changed (``commit_text``).
FILES_LABEL = "Files: "
_TESTS_LINE = re.compile(r"^" + re.escape(TESTS_LABEL) + r"(.+)$", re.MULTILINE)


def tests_named(text: str) -> list[str]:
    """The test names a commit's memory ``text`` lists on its ``TESTS_LABEL`` line, in order ([] without one)."""
    line = _TESTS_LINE.search(text)
    return [n.strip() for n in line.group(1).split(",") if n.strip()] if line else []


def commit_text(commit: Commit) -> str:
    """A commit as a memory's text: subject, body cut at ``BODY_MAX_CHARS`` (at a word, with ``...``), and
    ``Tests added:`` (when it adds tests), ``Files:`` with at most ``FILES_SHOWN`` names and how many more."""
    parts = [commit.subject or f"commit {commit.sha[:12]}"]
    body = _cut_body(commit.body)
    if body:
        parts.append(body)
    if commit.tests:
        parts.append(TESTS_LABEL + ", ".join(commit.tests))
    if commit.files:
        shown = ", ".join(commit.files[:FILES_SHOWN])
        more = len(commit.files) - FILES_SHOWN
        parts.append(f"{FILES_LABEL}{shown}{f' (+{more} more)' if more > 0 else ''}")
    return "\n\n".join(parts)


def _cut_body(body: str) -> str:
    """``body`` cut at ``BODY_MAX_CHARS``, at a word, with `` ...``."""
    if len(body) <= BODY_MAX_CHARS:
        return body
    return body[:BODY_MAX_CHARS].rsplit(None, 1)[0].rstrip() + " ..."
