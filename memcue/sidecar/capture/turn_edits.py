"""An episode whose turn's edits landed in a later commit -> a memory: the episode-committed signal.

A turn that finds and fixes a bug often ends uncommitted ("load_roster() now reads with skipinitialspace=True.
Not committed yet."), and the next turn commits it with its own message ("Address the channel by its ID"), which
never tells the earlier fix. The earlier turn's answer is then the only record of why the code changed, and as an
``episode`` it answers only prompts that ask what was done, while a later task ("add a --check for roster.csv")
needs it too. When a commit lands with a file that turn edited, the commit confirms the episode (issue 14's gate:
"its commit landed"): the episode is promoted to a ``change`` memory through the gate, as a new version of it.

What a turn edited is read from the spooled tool records (``record``, per session in the store's ``meta``): an
edit tool's files, and the files a shell command that does not only look (``test_runs.is_read_only``) or run a
test writes through a redirect or names (``rota.py`` in a ``python - <<EOF ... Path('rota.py')`` script,
``config.py`` in ``sed -i``).
A turn is the time from its captured prompt (``request``) to the session's next prompt, so a PostToolUse record
that an async hook wrote after the turn's Stop still belongs to it. A turn that ran ``git commit`` itself is
never promoted: its commit's message tells its work (``capture.commits``). At every read of the commit signal
for a session, ``confirm`` keeps the commits it read and promotes each episode of that session whose turn edited
a file of one of them (a whole path, or a path ending in ``/<file>``) and that the user has answered with a
prompt that does not turn the work down ("no, scrap that": ``rejects``); so a turn is confirmed at a later
Stop's read, also when its records reached the store after the commit was read. Events and commits of a session
silent for ``KEEP_S`` are deleted.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Sequence
from typing import Any

from memcue.sidecar.capture.gate import Gate
from memcue.sidecar.capture.statements import SENTENCE_END, find_statements
from memcue.sidecar.capture.test_runs import WRITES_FILE, is_read_only, is_test_command
from memcue.sidecar.store import NewCandidate, StoreProtocol

log = logging.getLogger("memcue.capture")

#: The signal name of an episode confirmed by a commit, and the promotion reason it carries.
SIGNAL = "episode-committed"
#: The kind of the memories it writes: a fix the code now holds.
KIND = "change"
EPISODE_COMMITTED = "episode-committed"
#: Most edit events kept per session, most file names kept per event, and how long an event is kept (s): work
#: left uncommitted for half a day is not the next commit's.
MAX_EVENTS = 100
NAMES_PER_EVENT = 8
KEEP_S = 12 * 3600.0
_META_PREFIX = "turn_edits:"
#: The ``meta`` key listing the sessions with events and when each last had one (Unix s): a session not heard of
#: for ``KEEP_S`` has its events deleted, so sessions that ended leave nothing behind.
_INDEX_KEY = "turn_edits_index"
#: Prefix (before a session's events key) of the ``meta`` key holding the session's commits read so far, and
#: how many are kept.
_LANDED_PREFIX = "landed:"
MAX_LANDED = 20
#: A file name in a shell command: a word with an extension (``rota.py``, ``deploy/rota-post.timer``).
_FILE_NAME = re.compile(r"[\w.~/-]*\w\.[A-Za-z][\w-]*")
#: A prompt that undoes the turn before it: it opens with "no"/"wait", or says scrap, revert, undo, roll back.
_UNDO = re.compile(r"^\W*(?:no|nope|wait|hmm+,?\s+no)\b|"
                   r"\b(?:scrap|revert|undo|roll\s*back|back\s+out|put\s+it\s+back)\b", re.IGNORECASE)
#: A sentence saying the work is not committed yet ("Not committed yet.", "I haven't committed it").
_UNCOMMITTED = re.compile(r"(?:\bnot|n't|\bnever)\s+(?:been\s+|yet\s+)?committed\b|\buncommitted\b|"
                          r"\b(?:haven't|have not|didn't|did not)\s+commit", re.IGNORECASE)
#: A shell command that commits: ``git commit``, also after ``git -C <dir>`` or ``-c key=value`` options.
_GIT_COMMIT = re.compile(r"\bgit(?:\s+-[Cc]\s+\S+|\s+--?[\w.-]+(?:=\S+)?)*\s+commit\b")


def edited_names(tool: dict[str, Any]) -> tuple[list[str], bool]:
    """``(file names the tool call may have changed, True when it ran git commit)`` for one spooled tool record's
    ``tool`` field (``memcue.adapters.tools``: ``{"type": "edit", "files"}`` or ``{"type": "shell",
    "command"}``). A shell command that only looks or runs tests changes nothing here."""
    if tool.get("type") == "edit":
        return [f for f in tool.get("files") or [] if isinstance(f, str) and f][:NAMES_PER_EVENT], False
    if tool.get("type") != "shell":
        return [], False
    command = " ".join(str(tool.get("command") or "").split())
    if not command or is_read_only(command):
        return [], False
    committed = bool(_GIT_COMMIT.search(command))
    if is_test_command(command) and not committed:
        return [], False
    written = [m.group(1) or m.group(2) for m in WRITES_FILE.finditer(command)]
    named = [m.group(0) for m in _FILE_NAME.finditer(command)]
    names = list(dict.fromkeys(n.strip("./") for n in [*written, *named]))
    return [n for n in names if n][:NAMES_PER_EVENT], committed


def rejects(prompt: str) -> bool:
    """True when ``prompt`` (the session's next prompt after a turn) turns the turn's work down: a correction
    (``capture.statements``: "no, use X instead") or words that undo it ("scrap that", "revert", "put it back")."""
    if _UNDO.search(prompt):
        return True
    return any(s.kind == "correction" for s in find_statements(prompt))


def landed_text(answer: str, sha: str) -> str:
    """The promoted memory's text: the episode's ``answer`` without the sentences saying its work is not committed
    (the commit made them wrong), then "Landed in commit <sha, 12 hex>."."""
    kept = " ".join(s for s in SENTENCE_END.split(answer.strip()) if s and not _UNCOMMITTED.search(s))
    if kept and kept[-1] not in ".!?":
        kept += "."
    return f"{kept} Landed in commit {sha[:12]}.".strip()


def names_file(names: Sequence[str], path: str) -> bool:
    """True when one of ``names`` (edited paths, absolute or relative) is the repository path ``path`` (as git
    prints it) or ends in ``/<path>``."""
    path = path.strip("/")
    return any(n.strip("/") == path or n.endswith("/" + path) for n in names)


class TurnEdits:
    """The episode-committed signal over ``store`` (events kept in its ``meta``) and ``gate`` (promotion)."""

    def __init__(self, store: StoreProtocol, gate: Gate) -> None:
        self._store = store
        self._gate = gate

    def record(self, rec: dict[str, Any]) -> None:
        """Note one spooled tool record (``memcue.core.spool_format.parse_tool``) that may have changed files;
        anything else is ignored."""
        tool = rec.get("tool")
        if not isinstance(tool, dict) or not rec.get("session_id"):
            return
        names, committed = edited_names(tool)
        if not names and not committed:
            return
        ts = rec.get("ts")
        ts = float(ts) if isinstance(ts, int | float) else time.time()
        key = _key(str(rec["session_id"]))
        events = self._events(key)
        events.append([ts, names, committed])
        self._save(key, events[-MAX_EVENTS:])
        self._touch(key)

    def confirm(self, project: str, session_id: str, harness: str, landed: Sequence[tuple[str, Sequence[str]]]) -> int:
        """Note the commits of ``session_id`` in ``landed`` (``(sha, files)`` pairs, oldest first, as the commit
        signal read them; it calls at every read, [] when nothing new landed), then promote the episodes of the
        session whose turn edited a file of a commit noted so far and did not commit itself; returns how many were
        promoted. The commits are kept (``MAX_LANDED``, ``KEEP_S``): a read can run before the spool holds the
        turns it confirms (the spool is read in batches, a PostToolUse record can come late), and a later Stop's
        read, with nothing new, confirms them then. Blocking (store reads and writes)."""
        key = _key(session_id)
        commits = self._landed(key, landed)
        events = self._events(key) if commits else []
        if not events:
            return 0
        promoted = 0
        for episode, names in _episode_edits(self._store.session_memories(session_id), events):
            sha, files = next(((s, [f for f in fs if names_file(names, f)]) for s, fs in commits
                               if any(names_file(names, f) for f in fs)), ("", []))
            if sha:
                promoted += self._promote(episode, project, session_id, harness, sha, files)
        return promoted

    def _landed(self, key: str, landed: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[str, list[str]]]:
        """The session's commits noted so far with ``landed`` added (oldest first, at most ``MAX_LANDED``); saved
        when ``landed`` adds one."""
        kept = self._meta_json(_LANDED_PREFIX + key, list)
        commits = [(str(c[0]), [str(f) for f in c[1]]) for c in kept if isinstance(c, list) and len(c) == 2
                   and isinstance(c[1], list)]
        known = {sha for sha, _ in commits}
        new = [(sha, list(files)) for sha, files in landed if sha not in known]
        if new:
            commits = [*commits, *new][-MAX_LANDED:]
            self._store.set_meta(_LANDED_PREFIX + key, json.dumps(commits))
            self._touch(key)
        return commits

    def _promote(self, episode: dict[str, Any], project: str, session_id: str, harness: str, sha: str,
                 files: list[str]) -> int:
        evidence = {"replaces": episode["id"], "sha": sha, "files": files}
        embed_text = (episode.get("metadata") or {}).get("embed_text")
        if isinstance(embed_text, str) and embed_text.strip():
            evidence["embed_text"] = embed_text
        new = NewCandidate(content=landed_text(episode["content"], sha), signal=SIGNAL, kind=KIND,
                           project=project or episode["project"], session_id=session_id, harness=harness,
                           turn=f"episode:{episode['id']}", evidence=evidence)
        got = self._store.add_candidates([new])[0]
        if not got.added:
            return 0  # read before: decided then
        try:
            self._gate.confirm(got.id, EPISODE_COMMITTED)
        except ValueError as exc:  # the episode was forgotten or replaced meanwhile
            log.info("episode %d not promoted: %s", episode["id"], exc)
            return 0
        log.info("episode %d promoted: its edits landed in commit %s", episode["id"], sha[:12])
        return 1

    def _touch(self, key: str) -> None:
        """Note that session ``key`` had an event or a commit now, and delete the events and commits of sessions
        silent for ``KEEP_S``."""
        index = self._meta_json(_INDEX_KEY, dict)
        now = time.time()
        index[key] = now
        for stale in [k for k, t in index.items() if not isinstance(t, int | float) or t < now - KEEP_S]:
            self._store.delete_meta(stale)
            self._store.delete_meta(_LANDED_PREFIX + stale)
            del index[stale]
        self._store.set_meta(_INDEX_KEY, json.dumps(index))

    def _meta_json(self, key: str, shape: type) -> Any:
        """The JSON value kept in ``meta`` under ``key`` when it is a ``shape`` (list or dict), else an empty one
        (missing, unreadable or of another shape)."""
        try:
            value = json.loads(self._store.get_meta(key) or "null")
        except ValueError:
            value = None
        return value if isinstance(value, shape) else shape()

    def _events(self, key: str) -> list[list[Any]]:
        events = self._meta_json(key, list)
        oldest = time.time() - KEEP_S
        return [e for e in events if isinstance(e, list) and len(e) == 3 and isinstance(e[0], int | float)
                and e[0] >= oldest]

    def _save(self, key: str, events: list[list[Any]]) -> None:
        if events:
            self._store.set_meta(key, json.dumps(events, ensure_ascii=False))
        else:
            self._store.delete_meta(key)


def _key(session_id: str) -> str:
    return f"{_META_PREFIX}{session_id}"


def _episode_edits(rows: list[dict[str, Any]], events: list[list[Any]]) -> list[tuple[dict[str, Any], list[str]]]:
    """``(episode row, file names its turn edited)`` for each current episode in ``rows`` (a session's memories,
    oldest first) whose turn edited something, ran no ``git commit`` and was followed by a prompt that does not
    turn it down (``rejects``). A turn runs from its prompt (the newest ``request`` row before the episode) to the
    next prompt."""
    prompts = [(float(r["created_at"]), str(r["content"])) for r in rows if r["kind"] == "request"]
    out = []
    for row in rows:
        if row["kind"] != "episode" or row["superseded_by"] is not None or row["forgotten"] or row["bookkeeping"]:
            continue
        at = float(row["created_at"])
        start = max((t for t, _ in prompts if t <= at), default=float("-inf"))
        following = [(t, p) for t, p in prompts if t > at]
        if not following or rejects(following[0][1]):
            continue  # the user has not answered this turn yet, or turned its work down: not what landed
        end = following[0][0]
        turn = [e for e in events if start <= e[0] < end]
        if turn and not any(e[2] for e in turn):
            names = [n for e in turn for n in e[1]]
            if names:
                out.append((row, names))
    return out
