"""Tool records -> a test or build that failed and then passed -> a promoted memory: the test-transition signal.

The PostToolUse hooks spool one compact record per shell command and file edit (``memcue.adapters.tools``); the
spool reader hands each to ``TestRuns.record``. Per session (harness, project, session id) it keeps, in the
store's ``meta`` table (so a sidecar restart between the failure and the pass loses nothing): the files edited
so far and, per failing test or build command (whitespace normalised), its first failure's key line and where
the edits stood then; also the other shell commands run after a failure (an edit made through the shell: ``sed
-i``, a ``python - <<EOF`` script, a shell-run ``apply_patch``; inspection commands such as ``cat``, ``grep`` or
``git diff`` are left out, ``READ_ONLY``). When the same command later passes, a candidate (signal ``SIGNAL``) says
"`<command>` failed with `<key line>`; it passed after editing <files> and running `<commands>`" (or "on a later
run" when memcue saw neither: it never claims that nothing was edited), with provenance (harness, session, turn:
the passing record's spool id), the text embedded for it (``capture.embed_text``) and the failure in its
evidence (secrets in the command and the key line are redacted before anything is kept), and the gate promotes
it at once with reason ``TEST_PASSED``: the passing run is the objective signal. A command that is not a test or
build (``TEST_COMMANDS``), or a pass without an earlier failure, makes nothing.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from memcue.sidecar.capture.embed_text import transition_embedding_text
from memcue.sidecar.capture.gate import Gate
from memcue.sidecar.store import NewCandidate, StoreProtocol, redact

log = logging.getLogger("memcue.capture")

#: The signal name of a test or build that failed and then passed, and the promotion reason it carries.
SIGNAL = "test-passed"
#: The kind of the memories it writes.
KIND = "note"
TEST_PASSED = "test-passed"
#: Commands that run tests or builds, by name: a command is one when any of its ``&&``/``;``/``|`` parts
#: starts (after ``env VAR=x``, ``uv run``, ``poetry run``, ``python -m``, ``npx`` and the like) with one.
TEST_COMMANDS: dict[str, str] = {
    "pytest": r"py\.?test",
    "python unittest": r"python[0-9.]* -m (pytest|unittest)\b",
    "tox / nox": r"(tox|nox)\b",
    "npm / pnpm / yarn / bun test or build": r"(npm|pnpm|yarn|bun)( run)? (test|build|lint|typecheck)\b",
    "jest / vitest / mocha": r"(jest|vitest|mocha)\b",
    "cargo": r"cargo (test|build|check|clippy|nextest)\b",
    "go": r"go (test|build|vet)\b",
    "make / ninja / cmake": r"(make|gmake|ninja|ctest)\b|cmake --build\b",
    "gradle / maven": r"(\./)?(gradlew?|mvnw?) ",
    "dotnet": r"dotnet (test|build)\b",
    "mypy / tsc / ruff": r"(mypy|tsc|ruff check|pyright)\b",
    "rspec / rake / phpunit / mix": r"(rspec|rake( test| spec)?|phpunit|mix test|swift (test|build))\b",
    # A project's own test script, run by its interpreter or directly: a file in a tests/spec/checks folder, or
    # named test_*, check_*, *_test or test.sh (python3 tests/check_retention.py, ./scripts/test.sh).
    "a test script": r"((python[0-9.]*|node|deno run|bun|bash|sh|zsh|ruby|perl)\s+)?(\./)?([\w.-]+/)*"
                     r"((tests?|specs?|checks?)/[\w./-]+|(test|check)[\w-]*\.(py|m?js|ts|sh|rb|pl)|"
                     r"[\w-]+_(test|spec)\.(py|m?js|ts|sh|rb))(\s|$)",
}
_WRAPPERS = (r"((env\s+)?([A-Za-z_][A-Za-z0-9_]*=\S*\s+)*)((uv|poetry|pipenv|hatch|pdm) run\s+|npx\s+|bunx\s+)?"
             r"([\w.~-]*/)*")  # a path to the program: .venv/bin/pytest, ./node_modules/.bin/jest
_TEST_RE = re.compile(r"^" + _WRAPPERS + "(" + "|".join(f"(?:{p})" for p in TEST_COMMANDS.values()) + ")")
#: Files kept per session, other shell commands kept per session, and failing commands remembered per session
#: (the oldest go first).
MAX_EDITS = 200
MAX_COMMANDS = 50
MAX_FAILURES = 50
#: Files named in a memory's text (the rest are counted); commands named, and characters shown of each.
FILES_SHOWN = 8
COMMANDS_SHOWN = 3
COMMAND_SHOWN_CHARS = 160
#: Shell commands that only look (a part of a compound command that is one of these changes nothing): not kept
#: as what fixed a failure.
READ_ONLY = re.compile(r"^(cat|ls|ll|grep|egrep|rg|ag|head|tail|less|more|pwd|echo|printf|find|fd|wc|which|type|"
                       r"tree|stat|file|diff|sort|uniq|nl|true|git (status|diff|log|show|branch|blame|grep))\b")
_META_PREFIX = "test_runs:"
#: An output redirect that writes a file (``> fix.py``, ``>> notes.txt``, ``tee``); ``2>&1`` and ``> /dev/null``
#: write none. The file is group 1 (a redirect) or group 2 (``tee``).
WRITES_FILE = re.compile(r"(?<![0-9&])>>?\s*(?!&|/dev/null\b)([\w.~/-]+)|\btee\s+(?:-a\s+)?([\w.~/-]+)")


def is_test_command(command: str) -> bool:
    """True when ``command`` (whitespace normalised) runs a test or build (``TEST_COMMANDS``) in any of its
    ``&&``, ``||``, ``;`` or ``|`` parts."""
    for part in re.split(r"&&|\|\||;|\|", command):
        part = part.strip()
        if part.startswith("cd ") or not part:
            continue
        if _TEST_RE.match(part):
            return True
    return False


def is_read_only(command: str) -> bool:
    """True when every ``&&``/``||``/``;``/``|`` part of ``command`` only looks (``READ_ONLY``; ``cd`` too) and
    none writes a file through a redirect (``WRITES_FILE``: ``cat > fix.py <<EOF`` edits)."""
    if WRITES_FILE.search(command):
        return False
    parts = [p.strip() for p in re.split(r"&&|\|\||;|\|", command) if p.strip()]
    return all(p.startswith("cd ") or READ_ONLY.match(p) for p in parts)


def _shown(command: str) -> str:
    text = " ".join(command.split())
    return text if len(text) <= COMMAND_SHOWN_CHARS else text[:COMMAND_SHOWN_CHARS].rstrip() + " …"


def _fix_text(files: list[str], commands: list[str]) -> str:
    """How the pass came about: "after editing a.py and running `sed …`", or "on a later run" when memcue saw
    no edit and no other command (it may have come from outside the session's tools)."""
    said = []
    if files:
        more = f" and {len(files) - FILES_SHOWN} more" if len(files) > FILES_SHOWN else ""
        said.append(f"editing {', '.join(files[:FILES_SHOWN])}{more}")
    if commands:
        more = f" and {len(commands) - COMMANDS_SHOWN} more" if len(commands) > COMMANDS_SHOWN else ""
        said.append("running " + ", ".join(f"`{_shown(c)}`" for c in commands[:COMMANDS_SHOWN]) + more)
    return "after " + " and ".join(said) if said else "on a later run"


def transition_text(command: str, key_line: str, files: list[str], commands: list[str] | None = None) -> str:
    """The memory's text for ``command`` that failed with ``key_line`` and passed after ``files`` were edited
    and ``commands`` (other shell commands) ran."""
    failure = f" with `{key_line}`" if key_line else ""
    return f"`{command}` failed{failure}; it passed {_fix_text(files, commands or [])}."


def _keep(state: dict[str, Any], name: str, value: str, most: int) -> None:
    """Append ``value`` to ``state[name]`` (``edits`` or ``commands``), keeping the newest ``most``; each
    failure's ``<name>_at`` mark moves with a drop, so it still points where the list stood at its failure."""
    state[name].append(value)
    drop = len(state[name]) - most
    if drop > 0:
        del state[name][:drop]
        for failure in state["failures"].values():
            failure[f"{name}_at"] = max(0, int(failure.get(f"{name}_at") or 0) - drop)


class TestRuns:
    """The test-transition signal over ``store`` (its ``meta`` table holds each session's state) and ``gate``."""

    __test__ = False  # not a pytest class

    def __init__(self, store: StoreProtocol, gate: Gate) -> None:
        self._store = store
        self._gate = gate

    def record(self, rec: dict[str, Any]) -> int:
        """Take one spooled tool record (``memcue.core.spool_format.parse_tool``); returns the candidates added
        (0 or 1). A malformed record is logged and ignored."""
        tool = rec.get("tool")
        if not isinstance(tool, dict) or not rec.get("session_id"):
            return 0
        source = str(rec.get("source") or "")
        harness = source.split(":", 1)[1] if source.startswith("hook:") else source
        key = f"{_META_PREFIX}{harness}\x00{rec.get('project', '')}\x00{rec['session_id']}"
        state = self._load(key)
        added = 0
        if tool.get("type") == "edit":
            if not state["failures"]:
                return 0  # only edits after a failure count
            for f in tool.get("files") or []:
                if isinstance(f, str):
                    _keep(state, "edits", f, MAX_EDITS)
        elif tool.get("type") == "shell":
            command = " ".join(str(tool.get("command") or "").split())
            if not command:
                return 0
            if not is_test_command(command):
                if not state["failures"] or is_read_only(command):
                    return 0  # only what ran after a failure may have fixed it
                _keep(state, "commands", redact(command).text, MAX_COMMANDS)
                self._save(key, state)
                return 0
            command = redact(command).text  # the state is stored: no secret in it (the same marker both times)
            if tool.get("failed"):
                failures = state["failures"]
                key_line = redact(str(tool.get("key_line") or "")).text
                failures.setdefault(command, {"key_line": key_line, "turn": rec.get("turn"),
                                              "edits_at": len(state["edits"]),
                                              "commands_at": len(state["commands"]), "ts": rec.get("ts")})
                for old in list(failures)[:-MAX_FAILURES]:
                    del failures[old]
            elif command in state["failures"]:
                failure = state["failures"].pop(command)
                added = self._promote(rec, harness, command, failure, state)
            else:
                return 0
        else:
            return 0
        self._save(key, state)
        return added

    def _promote(self, rec: dict[str, Any], harness: str, command: str, failure: dict[str, Any],
                 state: dict[str, Any]) -> int:
        edits_at = min(int(failure.get("edits_at") or 0), len(state["edits"]))
        files = list(dict.fromkeys(state["edits"][edits_at:]))
        commands_at = min(int(failure.get("commands_at") or 0), len(state["commands"]))
        commands = list(dict.fromkeys(state["commands"][commands_at:]))
        new = NewCandidate(content=transition_text(command, failure.get("key_line", ""), files, commands),
                           signal=SIGNAL,
                           kind=KIND, project=str(rec.get("project") or ""), session_id=str(rec["session_id"]),
                           harness=harness, turn=str(rec.get("spool_id") or rec.get("turn") or command),
                           evidence={"command": command, "key_line": failure.get("key_line", ""), "files": files,
                                     "commands": commands,
                                     "failed_turn": failure.get("turn"), "passed_turn": rec.get("turn"),
                                     "failed_at": failure.get("ts"), "passed_at": rec.get("ts"),
                                     "embed_text": transition_embedding_text(str(failure.get("key_line") or ""))})
        got = self._store.add_candidates([new])[0]
        if not got.added:
            return 0  # the same passing record read again: decided the first time
        self._gate.confirm(got.id, TEST_PASSED)
        log.info("test-passed candidate %d promoted: %s", got.id, command)
        return 1

    def _load(self, key: str) -> dict[str, Any]:
        raw = self._store.get_meta(key)
        try:
            state = json.loads(raw) if raw else {}
        except ValueError:
            state = {}
        if not isinstance(state, dict):
            state = {}
        state.setdefault("edits", [])
        state.setdefault("commands", [])
        state.setdefault("failures", {})
        return state

    def _save(self, key: str, state: dict[str, Any]) -> None:
        if not state["failures"]:
            self._store.delete_meta(key)  # nothing waits for a pass: edits before a failure never count
        else:
            self._store.set_meta(key, json.dumps(state, ensure_ascii=False))
