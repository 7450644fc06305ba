"""Issue 14, an episode confirmed by a later commit, through real parts: a real git repository, a real sidecar
process (keyword recall), the real hook as a subprocess for Claude Code's prompt, PostToolUse and Stop payloads,
the real SQLite store.

A turn fixes a bug without committing and explains it; the next turn commits with its own message. The commit
landed the first turn's edit, so that turn's answer becomes a ``change`` memory (the episode-committed signal),
without the sentence saying it was not committed. The committing turn's own answer stays an episode (its commit
tells its work); a turn the user turned down next ("no, scrap that") and a turn that only looked are not promoted.
Names the tool calls give, paths matched against a commit's files and the promoted text are unit-tested too.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Sidecar, prompt_payload, run_hook, wait_until

from memcue.sidecar.capture.gate import Gate
from memcue.sidecar.capture.turn_edits import (
    KEEP_S,
    SIGNAL,
    TurnEdits,
    edited_names,
    landed_text,
    names_file,
    rejects,
)
from memcue.sidecar.inject.service import SENT_AT_MAX_AGE_S
from memcue.sidecar.recall.classify import ASKED_KIND_SOURCES
from memcue.sidecar.store import NewMemory, Store

SESSION = "6b2e9d41-7c3a-4f85-a1d0-3e4f5a6b7c8d"
FIX = ("roster.csv has a space after the comma on Ana's row, and csv.DictReader keeps it, so her mention broke. "
       "load_roster() now reads with skipinitialspace=True. Not committed yet.")


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent)}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                          env=env).stdout


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "rota"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "ana@example.com")
    _git(repo, "config", "user.name", "Ana")
    for name in ("rota.py", "config.py", "server.py"):
        (repo / name).write_text("x = 1\n")
    _git(repo, "add", "-A")
    an_hour_ago = f"@{int(time.time()) - 3600} +0000"
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "Start the rota bot"], check=True,
                   env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent),
                        "GIT_COMMITTER_DATE": an_hour_ago, "GIT_AUTHOR_DATE": an_hour_ago})
    return repo


def _base(repo: Path, event: str) -> dict[str, Any]:
    return {"session_id": SESSION, "transcript_path": f"/home/dev/.claude/projects/x/{SESSION}.jsonl",
            "cwd": str(repo), "permission_mode": "default", "hook_event_name": event}


def _prompt(repo: Path, text: str) -> None:
    assert run_hook(prompt_payload(text, str(repo), session_id=SESSION)).returncode == 0


def _edit(repo: Path, name: str, call: str) -> None:
    """The file really changes, then Claude Code's PostToolUse for the Edit that changed it."""
    path = repo / name
    path.write_text(path.read_text() + f"# {call}\n")
    payload = {**_base(repo, "PostToolUse"), "tool_name": "Edit", "tool_use_id": call,
               "tool_input": {"file_path": str(path), "old_string": "x", "new_string": "x"},
               "tool_response": {"filePath": str(path), "structuredPatch": [], "userModified": False}}
    assert run_hook(payload, "post-tool-use").returncode == 0


def _bash(repo: Path, command: str, call: str) -> None:
    """Run ``command`` in the repository, then Claude Code's PostToolUse for it."""
    subprocess.run(command, shell=True, cwd=repo, check=True, capture_output=True,
                   env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent)})
    payload = {**_base(repo, "PostToolUse"), "tool_name": "Bash", "tool_use_id": call,
               "tool_input": {"command": command},
               "tool_response": {"stdout": "", "stderr": "", "interrupted": False, "isImage": False}}
    assert run_hook(payload, "post-tool-use").returncode == 0


def _stop(repo: Path, answer: str) -> None:
    payload = {**_base(repo, "Stop"), "stop_hook_active": False, "last_assistant_message": answer}
    assert run_hook(payload, "stop").returncode == 0


def _rows(home: Path) -> list[tuple[int, str, str, int | None]]:
    with sqlite3.connect(f"file:{home / 'memcue.db'}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT id, kind, content, superseded_by FROM memories WHERE kind IN ('episode', 'change')"
                            " ORDER BY id").fetchall()


def _promoted(sc: Sidecar) -> list[dict[str, Any]]:
    return [c for c in sc.client.candidates(limit=100)["results"] if c["signal"] == "episode-committed"]


def test_an_uncommitted_fix_that_the_next_commit_lands_becomes_a_change(keyword_sidecar: Sidecar, tmp_path: Path
                                                                        ) -> None:
    repo = _repo(tmp_path)
    _prompt(repo, "ana's mention comes out as <@ U02ANA>, why?")
    time.sleep(1.1)  # git dates are whole seconds: the commit comes a second after the session's start
    _bash(repo, "cat roster.csv || true", "toolu_a1")  # only looks
    _edit(repo, "rota.py", "toolu_a2")
    _stop(repo, FIX)
    _prompt(repo, "the channel was renamed, address it by ID. commit")
    _edit(repo, "config.py", "toolu_b1")
    _bash(repo, "git add -A && git commit -q -m 'Address the channel by its ID'", "toolu_b2")
    sha = _git(repo, "rev-parse", "HEAD").strip()
    _stop(repo, "config.CHANNEL now comes from ROTA_CHANNEL_ID. Committed.")

    promoted = wait_until(lambda: _promoted(keyword_sidecar))
    assert [(c["state"], c["reason"], c["kind"], c["evidence"]["sha"], c["evidence"]["files"]) for c in promoted] == [
        ("promoted", "episode-committed", "change", sha, ["rota.py"])]
    rows = wait_until(lambda: [r for r in _rows(keyword_sidecar.root) if r[1] == "change" and "skipinitial" in r[2]])
    assert rows and rows[0][2] == landed_text(FIX, sha)
    assert "Not committed" not in rows[0][2] and rows[0][2].endswith(f"Landed in commit {sha[:12]}.")
    episodes = {r[2]: r[3] for r in _rows(keyword_sidecar.root) if r[1] == "episode"}
    assert episodes[FIX] == rows[0][0], "the episode is the promoted memory's older version"
    assert episodes["config.CHANNEL now comes from ROTA_CHANNEL_ID. Committed."] is None, "its commit tells it"
    got = keyword_sidecar.client.recall("why did the mention break for Ana's row in roster.csv?",
                                        project=promoted[0]["project"], limit=5)["results"]
    assert got and got[0]["memory_id"] == rows[0][0] and got[0]["memory_kind"] == "change", got
    # Still the record of what was done: "what did we do about X?" weighs it as the episode it was.
    asked = keyword_sidecar.client.recall("what did we do about Ana's mention in roster.csv?",
                                          project=promoted[0]["project"], limit=5)
    assert asked["query_type"] == "work_recall"
    assert [(r["memory_id"], r["tier"]) for r in asked["results"]][:1] == [(rows[0][0], "supported")], asked


def test_a_turn_the_user_turned_down_or_that_only_looked_is_not_promoted(keyword_sidecar: Sidecar, tmp_path: Path
                                                                         ) -> None:
    """The turn that put the work back and fixed the port is promoted: its edit of server.py landed."""
    repo = _repo(tmp_path)
    _prompt(repo, "convert the stage to metres in the server's parse")
    time.sleep(1.1)
    _edit(repo, "server.py", "toolu_c1")
    _stop(repo, "parse() now converts the stage to metres. Not committed yet.")
    _prompt(repo, "Hmm, no, scrap that and put it back. Then fix the port in server.py and commit")
    _bash(repo, "git checkout -- server.py", "toolu_c2")
    _edit(repo, "server.py", "toolu_c3")
    _stop(repo, "Put parse() back; the port is fixed.")
    _prompt(repo, "what does server.py do?")
    _bash(repo, "cat server.py", "toolu_c4")
    _stop(repo, "It serves the slash command.")
    _prompt(repo, "commit the rest")
    _bash(repo, "git add -A && git commit -q -m 'Fix the port'", "toolu_c5")
    _stop(repo, "Committed.")

    promoted = wait_until(lambda: _promoted(keyword_sidecar))
    time.sleep(1.0)  # a late promotion would show by now
    assert [(c["content"], c["evidence"]["files"]) for c in _promoted(keyword_sidecar)] == [
        (landed_text("Put parse() back; the port is fixed.", promoted[0]["evidence"]["sha"]), ["server.py"])]
    kinds = {r[2]: r[1] for r in _rows(keyword_sidecar.root) if r[3] is None}
    assert kinds["parse() now converts the stage to metres. Not committed yet."] == "episode", "turned down"
    assert kinds["It serves the slash command."] == "episode", "it only looked"


@pytest.mark.parametrize(("tool", "names", "committed"), [
    ({"type": "edit", "files": ["/w/rota/rota.py"]}, ["/w/rota/rota.py"], False),
    ({"type": "shell", "command": "python3 - <<'EOF'\np = Path('rota.py')\nEOF"}, ["rota.py"], False),
    ({"type": "shell", "command": "cat >> tests/test_x.py <<'EOF'\ndef test_y(): pass\nEOF"}, ["tests/test_x.py"],
     False),
    ({"type": "shell", "command": "sed -i 's/9/10/' config.py"}, ["config.py"], False),
    ({"type": "shell", "command": "cat rota.py | grep load 2>&1"}, [], False),
    ({"type": "shell", "command": "python3 -m pytest tests/test_rota.py"}, [], False),
    ({"type": "shell", "command": "git -C /w/rota commit -q -m 'x'"}, [], True),
])
def test_what_a_tool_call_may_have_changed(tool: dict[str, Any], names: list[str], committed: bool) -> None:
    assert edited_names(tool) == (names, committed)


def test_a_committed_path_is_matched_whole_and_a_correction_turns_the_turn_down() -> None:
    assert names_file(["/w/rota/deploy/rota.timer"], "deploy/rota.timer")
    assert names_file(["rota.py"], "rota.py") and not names_file(["myrota.py"], "rota.py")
    assert not names_file(["rota.py"], "deploy/rota.py")
    assert rejects("no, use zstd instead of gzip") and rejects("Revert that please")
    assert not rejects("add a --check to rota.py and commit")
    assert landed_text("Fixed. It isn't committed yet", "0123456789abcdef") == "Fixed. Landed in commit 0123456789ab."


def test_the_edits_of_a_session_silent_for_half_a_day_are_deleted(tmp_path: Path) -> None:
    store = Store(tmp_path / "memcue.db")
    edits = TurnEdits(store, Gate(store, lambda memory: store.remember_many([memory])[0]))
    edit = {"type": "edit", "files": ["/w/rota/rota.py"]}
    edits.record({"session_id": "old", "ts": time.time(), "tool": edit})
    assert store.get_meta("turn_edits:old")
    index = json.loads(store.get_meta("turn_edits_index") or "{}")
    store.set_meta("turn_edits_index", json.dumps({k: v - KEEP_S - 1 for k, v in index.items()}))
    edits.record({"session_id": "new", "ts": time.time(), "tool": edit})
    assert store.get_meta("turn_edits:old") is None and store.get_meta("turn_edits:new")
    assert list(json.loads(store.get_meta("turn_edits_index") or "{}")) == ["turn_edits:new"]


def test_recall_knows_the_source_a_promoted_episode_is_stored_under() -> None:
    """The gate stores a promoted candidate as ``capture:<signal>``; recall names that source to weigh it as the
    episode it was (``recall.classify.ASKED_KIND_SOURCES``): the two must not drift apart."""
    assert f"capture:{SIGNAL}" in ASKED_KIND_SOURCES["episode"]


def test_a_captured_prompt_is_dated_when_the_hook_sent_it(keyword_sidecar: Sidecar, tmp_path: Path) -> None:
    """The sidecar stores a prompt after its recall, up to the hook's budget later, while the agent may already run
    the turn's tools; dated at the store's clock, the turn would start after its own tool calls and the
    episode-committed signal would miss it. The prompt is dated by the hook's ``sent_at`` instead (a clock off by
    more than ``SENT_AT_MAX_AGE_S`` is not trusted)."""
    transport = httpx.HTTPTransport(uds=str(keyword_sidecar.loc.socket))
    with httpx.Client(transport=transport, base_url="http://memcue", timeout=30, trust_env=False) as http:
        for prompt, ago in (("fix the roster parser", 2.0), ("add the friday heads-up", SENT_AT_MAX_AGE_S + 60)):
            sent = time.time() - ago
            event = {"prompt": prompt, "session_id": SESSION, "project": str(tmp_path), "extra": {"request_id": prompt}}
            got = http.post("/hooks/claude-code/user-prompt-submit",
                            json={"event": event, "budget_s": min(60.0, 2.5 + ago), "sent_at": sent})
            assert got.status_code == 200, got.text
            with sqlite3.connect(f"file:{keyword_sidecar.loc.database}?mode=ro", uri=True) as conn:
                (stored,) = conn.execute("SELECT created_at FROM memories WHERE kind = 'request' AND content = ?",
                                         (prompt,)).fetchone()
            expected = sent if ago < SENT_AT_MAX_AGE_S else time.time()
            assert abs(stored - expected) < 1.0, (prompt, stored - sent)


def test_a_commit_read_before_the_turns_it_lands_confirms_them_at_a_later_read(tmp_path: Path) -> None:
    """The spool is read in batches and a PostToolUse record can come late, so the commit signal may read a commit
    before the turn that made its edit is stored: the commit is kept, and the next read (HEAD unmoved: nothing new
    landed) confirms the turn then."""
    store = Store(tmp_path / "memcue.db")
    gate = Gate(store, lambda memory: store.remember_many([memory])[0], store.update)
    edits = TurnEdits(store, gate)
    assert edits.confirm("shop", SESSION, "claude-code", [("a" * 40, ("rota.py",))]) == 0, "nothing stored yet"
    now = time.time()
    store.remember_many([NewMemory(content="why does ana's mention break?", kind="request", project="shop",
                                   session_id=SESSION, created_at=now - 3)])
    edits.record({"session_id": SESSION, "ts": now - 2, "tool": {"type": "edit", "files": ["/w/shop/rota.py"]}})
    store.remember_many([NewMemory(content=FIX, kind="episode", project="shop", session_id=SESSION,
                                   created_at=now - 1),
                         NewMemory(content="thanks, now the channel", kind="request", project="shop",
                                   session_id=SESSION, created_at=now)])
    assert edits.confirm("shop", SESSION, "claude-code", []) == 1
    changes = [r for r in store.session_memories(SESSION) if r["kind"] == "change"]
    assert [r["content"] for r in changes] == [landed_text(FIX, "a" * 40)]
    assert edits.confirm("shop", SESSION, "claude-code", []) == 0, "promoted once"
