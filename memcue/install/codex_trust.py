"""Codex hook trust through Codex's own ``codex app-server`` (JSON-RPC, one JSON object per line on stdio).

Codex runs a hook from ``hooks.json`` only when ``hooks.state."<key>".trusted_hash`` in its ``config.toml``
equals the hook's current hash, and skips an untrusted one without a word. memcue asks Codex itself for the
keys and hashes (``hooks/list``) and writes them with Codex's own config writer (``config/batchWrite``,
``keyPath: "hooks.state"``, ``mergeStrategy: "upsert"``), so the TOML file is edited by the harness that owns
it (DESIGN.md section 2). Facts checked against Codex 0.171.0: a hook key is
``<absolute hooks.json path>:<snake_case event>:<group index>:<handler index>``, a hash ``sha256:<hex>``;
``trustStatus`` is one of managed, untrusted, trusted, modified (any edit to a hook's command or timeout
makes it ``modified``); a dotted ``keyPath`` through the key splits it at its dots, hence the map upsert.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memcue.harnesses import HARNESSES
from memcue.install.doctor import OK, PROBLEM, WARN, finding
from memcue.install.edits.files import (
    InstallError,
    backup,
    drop_record,
    drop_spent_backup,
    load_record,
    read_bytes,
    save_record,
    sha256,
    write_atomic,
)
from memcue.install.edits.hooks_json import is_ours

#: Seconds one app-server request may take (a start and a hooks/list take about 0.3 s here).
REQUEST_TIMEOUT_S = 20.0
CLIENT_INFO = {"name": "memcue", "title": "memcue installer", "version": "1"}

#: Codex settings for the app-server memcue starts: no analytics, no plugin marketplace sync (which clones a
#: repository into CODEX_HOME). ``-c`` overrides last for that process only; nothing is written.
QUIET_FLAGS = ("-c", "analytics.enabled=false", "-c", "features.plugins=false")
#: Install-record name of the trust memcue wrote (``install.edits.files`` records).
RECORD = "codex-trust"
#: What to do before Codex runs memcue's hooks (the install's note, doctor's advice).
TRUST_NOTE = ("Codex runs these hooks only once you trust them: run `memcue install codex --trust`, or start "
              "`codex`, run /hooks and trust memcue's entries (`memcue doctor` says whether Codex trusts them now).")
#: The same advice when ``codex`` is not on PATH, which ``--trust`` needs.
TRUST_NOTE_NO_CODEX = ("Codex runs these hooks only once you trust them: put `codex` on PATH and run `memcue install "
                       "codex --trust`, or start `codex`, run /hooks and trust memcue's entries.")

__all__ = ["TRUST_NOTE", "AppServer", "codex_program", "our_hooks", "status", "trust", "trust_finding", "untrust"]


def codex_program() -> str | None:
    """The ``codex`` executable on PATH, or None."""
    return shutil.which(HARNESSES["codex"].program)


class AppServer:
    """A ``codex app-server`` process; a context manager. ``request`` sends one call and returns its result.

    Raises ``InstallError`` when Codex cannot start, exits, answers with an error, or takes longer than
    ``REQUEST_TIMEOUT_S`` seconds.
    """

    def __init__(self, codex: str, env: dict[str, str] | None = None, cwd: str | None = None) -> None:
        try:
            self._proc = subprocess.Popen([codex, *QUIET_FLAGS, "app-server"], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        except OSError as exc:
            raise InstallError(f"could not start `{codex} app-server`: {exc}") from None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            self._lines.put(raw.decode("utf-8", "replace"))
        self._lines.put(None)

    def _send(self, message: dict[str, Any]) -> None:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write((json.dumps(message) + "\n").encode())
            self._proc.stdin.flush()
        except OSError as exc:
            raise InstallError(f"codex app-server stopped: {exc}") from None

    def request(self, method: str, params: dict[str, Any]) -> Any:
        """Call ``method``; returns its ``result``. Notifications in between are skipped."""
        self._next_id += 1
        self._send({"id": self._next_id, "method": method, "params": params})
        while True:
            try:
                line = self._lines.get(timeout=REQUEST_TIMEOUT_S)
            except queue.Empty:
                raise InstallError(f"codex app-server did not answer {method} in {REQUEST_TIMEOUT_S:.0f} s") from None
            if line is None:
                raise InstallError(f"codex app-server exited during {method}")
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict) or message.get("id") != self._next_id:
                continue
            if "error" in message:
                raise InstallError(f"codex app-server refused {method}: {message['error']}")
            return message.get("result")

    def __enter__(self) -> AppServer:
        self.request("initialize", {"clientInfo": CLIENT_INFO, "capabilities": None})
        self._send({"method": "initialized"})
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


def our_hooks(server: AppServer, hooks_file: Path, cwd: str) -> list[dict[str, Any]]:
    """Codex's view (``hooks/list``) of memcue's hooks in ``hooks_file``: dicts with ``key``, ``eventName``,
    ``currentHash`` and ``trustStatus``."""
    result = server.request("hooks/list", {"cwds": [cwd]}) or {}
    wanted = os.path.realpath(hooks_file)
    found: dict[str, dict[str, Any]] = {}
    for entry in result.get("data", []):
        for hook in entry.get("hooks", []):
            source = hook.get("sourcePath")
            if source and os.path.realpath(source) == wanted and is_ours(hook):
                found[hook["key"]] = hook
    return list(found.values())


def _write_state(server: AppServer, value: dict[str, Any], strategy: str) -> Path:
    result = server.request("config/batchWrite", {"edits": [{"keyPath": "hooks.state", "value": value,
                                                             "mergeStrategy": strategy}], "reloadUserConfig": True})
    return Path((result or {}).get("filePath") or "")


def trust(codex: str, hooks_file: Path, state_dir: Path, env: dict[str, str] | None = None,
          before_write: Callable[[], object] = lambda: None) -> list[dict[str, Any]]:
    """Trust memcue's hooks in ``hooks_file`` in Codex (its ``config.toml``, written by Codex); returns the
    hooks as Codex lists them afterwards. ``before_write`` is called once Codex is known to have trust to write,
    before it writes (nothing is written, and it is not called, when every hook is trusted already). The first
    change is recorded in ``state_dir`` with a backup of ``config.toml``, so ``untrust`` can give the file back
    byte for byte. Raises ``InstallError`` when Codex fails, lists none of memcue's hooks, or still does not
    report every one as trusted."""
    cwd = str(hooks_file.parent)
    with AppServer(codex, env=env, cwd=cwd) as server:
        hooks = our_hooks(server, hooks_file, cwd)
        if not hooks:
            raise InstallError(f"Codex lists none of memcue's hooks from {hooks_file}; is CODEX_HOME the same "
                               "for memcue and Codex?")
        todo = {h["key"]: {"trusted_hash": h["currentHash"]} for h in hooks if h.get("trustStatus") != "trusted"}
        if todo:
            before_write()
            config = hooks_file.parent / "config.toml"
            before = read_bytes(config)
            record = load_record(state_dir, RECORD)
            if not record:
                record = {"config": str(config), "existed": before is not None,
                          "mode": config.stat().st_mode & 0o7777 if before is not None else None,
                          "backup": str(backup(config)) if before is not None else None,
                          "original_sha256": sha256(before) if before is not None else None, "keys": []}
            config = _write_state(server, todo, "upsert") or config
            after = read_bytes(config)
            record.update(config=str(config), keys=sorted({*record["keys"], *todo}),
                          written_sha256=sha256(after) if after is not None else None)
            save_record(state_dir, RECORD, record)
            hooks = our_hooks(server, hooks_file, cwd)
    untrusted = [h["key"] for h in hooks if h.get("trustStatus") != "trusted"]
    if untrusted:
        raise InstallError(f"Codex still does not trust {', '.join(untrusted)}; run /hooks in Codex")
    return hooks


def untrust(codex: str | None, state_dir: Path, env: dict[str, str] | None = None) -> str:
    """Take back the trust ``trust`` wrote: ``config.toml`` restored byte for byte when nothing else changed
    it since, else memcue's ``hooks.state`` entries removed through Codex. Returns what was done ("" when
    there was nothing to do). Raises ``InstallError`` when the file changed and Codex is not available."""
    record = load_record(state_dir, RECORD)
    if not record:
        return ""
    config = Path(record["config"])
    now = read_bytes(config)
    if now is not None and sha256(now) == record.get("written_sha256"):
        saved = read_bytes(Path(record["backup"])) if record.get("backup") else None
        if not record.get("existed"):
            config.unlink()
            drop_record(state_dir, RECORD)
            return f"removed {config} (memcue's trust entries were all it held)"
        if saved is not None and sha256(saved) == record.get("original_sha256"):
            write_atomic(config, saved)
            if record.get("mode") is not None:  # Codex's rewrite made it 0600; give the user's mode back
                config.chmod(record["mode"])
            drop_spent_backup(record.get("backup"), saved)
            drop_record(state_dir, RECORD)
            return f"restored {config} as it was before memcue trusted its hooks"
    if now is None:
        drop_record(state_dir, RECORD)
        return ""
    try:
        state = tomllib.loads(now.decode("utf-8")).get("hooks", {}).get("state", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, AttributeError):
        raise InstallError(f"{config} is not valid TOML; memcue's trust entries were left in it") from None
    ours = set(record.get("keys", []))
    if not isinstance(state, dict) or not ours & set(state):
        drop_record(state_dir, RECORD)
        return ""
    if codex is None:
        raise InstallError(f"{config} changed since memcue trusted its hooks and `codex` is not on PATH to edit "
                           f"it; remove these [hooks.state] entries yourself: {', '.join(sorted(ours & set(state)))}")
    with AppServer(codex, env=env, cwd=str(config.parent)) as server:
        written = _write_state(server, {k: v for k, v in state.items() if k not in ours}, "replace") or config
    if record.get("mode") is not None and written.exists():  # Codex's rewrite makes it 0600: the user's mode back
        written.chmod(record["mode"])
    drop_record(state_dir, RECORD)
    return f"removed memcue's trust entries from {config}"


def status(codex: str, hooks_file: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """memcue's hooks in ``hooks_file`` -> Codex's trust status (``trusted``, ``untrusted``, ``modified``,
    ``managed``), keyed by event name. Raises ``InstallError`` when Codex cannot be asked."""
    cwd = str(hooks_file.parent)
    with AppServer(codex, env=env, cwd=cwd) as server:
        return {h.get("eventName", h["key"]): str(h.get("trustStatus")) for h in our_hooks(server, hooks_file, cwd)}


def trust_finding(name: str, path: Path, version: str) -> dict[str, Any]:
    """Doctor's finding once memcue's hooks are current in ``path``: does Codex trust them (asked through
    ``codex app-server``)? ``version`` is Codex's, for the finding."""
    detail = {"path": str(path), "version": version, "installed": True}
    program = codex_program()
    if program is None:
        return finding(name, WARN, f"hooks current in {path}; trust not checked (codex is not on PATH). "
                                    f"{TRUST_NOTE_NO_CODEX}",
                       trust=None, **detail)
    try:
        trust = status(program, path)
    except InstallError as exc:
        return finding(name, WARN, f"hooks current in {path}; trust not checked: {exc}", trust=None, **detail)
    waiting = sorted(event for event, state in trust.items() if state not in ("trusted", "managed"))
    if waiting or not trust:
        return finding(name, PROBLEM, f"Codex will not run memcue's hooks ({', '.join(waiting) or 'none listed'} "
                                      f"not trusted): run `memcue install codex --trust`, or /hooks in Codex",
                       trust=trust, **detail)
    return finding(name, OK, f"hooks current in {path} and trusted by Codex", trust=trust, **detail)
