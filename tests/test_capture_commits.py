"""Issue 14, the commit signal, through real parts: real git repositories, a real sidecar process (keyword recall),
the real hook as a subprocess for the prompt, Stop and SessionEnd payloads, the real SQLite store.

Commits made during a session become promoted ``change`` memories another session's question recalls; a commit
made before the session, a second Stop, a replayed Stop add nothing; a folder without git, a detached HEAD, a
rebase in progress and git missing from PATH capture nothing and leave the reason in the session's note; a token in
a commit message is redacted.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Sidecar, context_of, prompt_payload, run_hook, start_sidecar, wait_until

from memcue.cli.receipt import render
from memcue.sidecar.capture.commits import Commit, commit_text, parse_log

SESSION = "3f1c8a2e-5b7d-4e21-9c0a-1d2e3f4a5b6c"
OTHER_SESSION = "8d2b7c1a-0f3e-4a59-b6c7-2e1d0c9b8a7f"
EMAIL = "ana@example.com"
FAKE_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"




def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    full = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent), **(env or {})}
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                          env=full).stdout


def _commit(repo: Path, files: dict[str, str], message: str, env: dict[str, str] | None = None) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message, env=env)
    return _git(repo, "rev-parse", "HEAD").strip()


def _repo(tmp_path: Path, name: str = "billing") -> Path:
    repo = tmp_path / name
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", EMAIL)
    _git(repo, "config", "user.name", "Ana")
    an_hour_ago = f"@{int(time.time()) - 3600} +0000"
    _commit(repo, {"README.md": "billing\n"}, "Set up the billing skeleton",
            env={"GIT_COMMITTER_DATE": an_hour_ago, "GIT_AUTHOR_DATE": an_hour_ago})
    return repo


def _start_session(repo: Path, session_id: str = SESSION) -> None:
    """The session's first prompt (its first trace in the store), then a second so commits land after it."""
    run = run_hook(prompt_payload("let's work on the invoice exporter", str(repo), session_id=session_id))
    assert run.returncode == 0, run.stderr
    time.sleep(1.1)  # git dates are whole seconds: the session's commits come a second after its start


def _stop(repo: Path, answer: str, session_id: str = SESSION, event: str = "stop") -> None:
    payload: dict[str, Any] = {"session_id": session_id, "cwd": str(repo), "transcript_path": "/tmp/t.jsonl"}
    if event == "stop":
        payload.update(hook_event_name="Stop", stop_hook_active=False, last_assistant_message=answer)
    else:
        payload.update(hook_event_name="SessionEnd", reason="prompt_input_exit")
    run = run_hook(payload, event)
    assert run.returncode == 0 and run.stdout == b"", run.stderr


def _commit_candidates(sc: Sidecar) -> list[dict[str, Any]]:
    return [c for c in sc.client.candidates(limit=100)["results"] if c["signal"] == "commit-landed"]


def _note(home: Path, session_id: str = SESSION) -> dict[str, Any] | None:
    try:
        with sqlite3.connect(f"file:{home / 'memcue.db'}?mode=ro", uri=True) as conn:
            rows = conn.execute("SELECT value FROM meta WHERE key = ?", (f"commits:note:{session_id}",)).fetchall()
    except sqlite3.OperationalError:  # not created yet
        return None
    return json.loads(rows[0][0]) if rows else None




def test_commits_of_the_session_are_promoted_once_and_recalled_later(keyword_sidecar: Sidecar, tmp_path: Path
                                                                     ) -> None:
    repo = _repo(tmp_path)
    _start_session(repo)
    first = _commit(repo, {"export.py": "stream\n"}, "Stream the invoice CSV export\n\nLarge exports ran out of "
                    "memory, so rows are written with csv.writer as they are read instead of building the file.")
    second = _commit(repo, {"tax.py": "queue\n", "worker.py": "retry\n"},
                     "Call the tax API from the worker queue\n\nThe inline call timed out checkout.")
    _stop(repo, "I streamed the export and moved the tax call to the worker.")
    promoted = wait_until(lambda: [c for c in _commit_candidates(keyword_sidecar) if c["state"] == "promoted"]
                      if len(_commit_candidates(keyword_sidecar)) >= 2 else [])
    assert sorted(c["evidence"]["sha"] for c in promoted) == sorted([first, second])
    by_sha = {c["evidence"]["sha"]: c for c in promoted}
    assert by_sha[second]["content"] == ("Call the tax API from the worker queue\n\nThe inline call timed out "
                                         "checkout.\n\nFiles: tax.py, worker.py")
    assert by_sha[second]["evidence"]["branch"] == "main" and by_sha[second]["kind"] == "change"
    assert {c["reason"] for c in promoted} == {"commit-landed"}
    assert all(c["session_id"] == SESSION and c["harness"] == "claude-code" for c in promoted)
    assert all("skeleton" not in c["content"] for c in _commit_candidates(keyword_sidecar)), "made before it"

    _stop(repo, "Nothing else changed.")  # HEAD unmoved: nothing new
    _stop(repo, "Nothing else changed.")  # the same delivery again
    third = _commit(repo, {"export.py": "stream gzip\n"}, "Gzip the invoice export")
    _stop(repo, "", event="session-end")
    got = wait_until(lambda: len(_commit_candidates(keyword_sidecar)) >= 3 and _commit_candidates(keyword_sidecar))
    time.sleep(1.5)  # a late duplicate would show up by now
    assert sorted(c["evidence"]["sha"] for c in _commit_candidates(keyword_sidecar)) == sorted([first, second, third])
    assert all(c["state"] == "promoted" for c in got) and _note(keyword_sidecar.root) is None

    context = context_of(run_hook(prompt_payload("why did the invoice CSV export run out of memory?", str(repo),
                                                 session_id=OTHER_SESSION)))
    assert "csv.writer" in context and 'source="signal:commit-landed"' in context, context


def test_a_commit_names_the_tests_it_adds_so_recalling_the_fix_recalls_its_test(keyword_sidecar: Sidecar,
                                                                                tmp_path: Path) -> None:
    """"Which test covers the cutoff?" asked in a later session: the fix's memory names the test it added."""
    repo = _repo(tmp_path)
    _commit(repo, {"tests/test_orders.py": "import unittest\n\n\nclass OrdersTest(unittest.TestCase):\n"
                                            "    def test_parses_rows(self):\n        pass\n"}, "Add order tests",
            env={"GIT_COMMITTER_DATE": f"@{int(time.time()) - 3000} +0000"})
    _start_session(repo)
    sha = _commit(repo, {"orders.py": "cutoff = 13\n",
                         "tests/test_orders.py": "import unittest\n\n\nclass OrdersTest(unittest.TestCase):\n"
                                                 "    def test_parses_rows(self):\n        pass\n\n"
                                                 "    def test_late_order_skips_a_day(self):\n        pass\n"},
                  "Orders placed after the cutoff skip a day\n\nThe comparison used > instead of >=.")
    _stop(repo, "Fixed the cutoff comparison.")
    got = wait_until(lambda: [c for c in _commit_candidates(keyword_sidecar) if c["state"] == "promoted"])
    assert [c["evidence"]["sha"] for c in got] == [sha]
    assert got[0]["evidence"]["tests"] == ["test_late_order_skips_a_day"], got[0]  # added, not the one there before
    assert "Tests added: test_late_order_skips_a_day\n\nFiles: orders.py, tests/test_orders.py" in got[0]["content"]
    with sqlite3.connect(f"file:{keyword_sidecar.root / 'memcue.db'}?mode=ro", uri=True) as conn:
        meta = json.loads(conn.execute("SELECT metadata FROM memories WHERE id = ?",
                                       (got[0]["memory_id"],)).fetchone()[0])
    assert meta["embed_text"] == ("Orders placed after the cutoff skip a day\n\nThe comparison used > instead of >=."
                                  "\n\nTests added: test late order skips a day"), meta  # no file list
    context = context_of(run_hook(prompt_payload("which test covers the order cutoff?", str(repo),
                                                 session_id=OTHER_SESSION)))
    assert "test_late_order_skips_a_day" in context, context


def test_a_token_in_a_commit_message_is_redacted(keyword_sidecar: Sidecar, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _start_session(repo)
    _commit(repo, {"deploy.sh": "push\n"}, f"Deploy with the bot token\n\nUsed {FAKE_TOKEN} for the registry.")
    _stop(repo, "Deployed.")
    got = wait_until(lambda: [c for c in _commit_candidates(keyword_sidecar) if c["state"] == "promoted"])
    assert len(got) == 1 and FAKE_TOKEN not in got[0]["content"] and "Deploy with the bot token" in got[0]["content"]
    rows = keyword_sidecar.client.list_recent(all_projects=True, kind="change")["results"]
    assert [r["memory_id"] for r in rows] == [got[0]["memory_id"]] and FAKE_TOKEN not in json.dumps(rows), rows


def _detached(repo: Path) -> None:
    _commit(repo, {"a.py": "1\n"}, "Work on a detached HEAD")
    _git(repo, "checkout", "-q", "--detach")


def _rebasing(repo: Path) -> None:
    _git(repo, "checkout", "-q", "-b", "other")
    _commit(repo, {"a.txt": "other\n"}, "Other side")
    _git(repo, "checkout", "-q", "main")
    _commit(repo, {"a.txt": "main\n"}, "Main side of a conflicting change")
    done = subprocess.run(["git", "-C", str(repo), "rebase", "-q", "other"], capture_output=True,
                          env={**os.environ, "GIT_EDITOR": "true", "HOME": str(repo.parent)})
    assert done.returncode != 0 and (repo / ".git" / "rebase-merge").is_dir(), "a conflict stops the rebase"


def _no_git(repo: Path) -> None:
    import shutil

    shutil.rmtree(repo / ".git")


@pytest.mark.parametrize(("make", "reason"), [(_no_git, "not a git repository"),
                                              (_detached, "detached HEAD"),
                                              (_rebasing, "a rebase is in progress")])
def test_no_usable_git_captures_nothing_and_says_why(keyword_sidecar: Sidecar, tmp_path: Path,
                                                     make: Callable[[Path], None], reason: str) -> None:
    repo = _repo(tmp_path)
    _start_session(repo)
    make(repo)
    _stop(repo, "Done.")
    note = wait_until(lambda: _note(keyword_sidecar.root))
    assert note is not None and reason in note["reason"], note
    assert _commit_candidates(keyword_sidecar) == []
    receipt = keyword_sidecar.client.receipt(SESSION)
    skipped = receipt["skipped"]["items"]
    assert [i["reason"] for i in skipped if i["what"] == "git"] == [f"commits not read: {note['reason']}"]
    told = [line for line in render(receipt).splitlines() if line.startswith("  ") and "commits not read" in line]
    assert len(told) == 1 and told[0].startswith("  git at ") and "prompt" not in told[0], told


def test_git_missing_from_path_captures_nothing_and_says_why(home: Path, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1", PATH=str(empty_bin))
    try:
        _start_session(repo)
        _commit(repo, {"a.py": "1\n"}, "A commit git cannot be asked about")
        _stop(repo, "Done.")
        note = wait_until(lambda: _note(home))
        assert note is not None and note["reason"] == "git is not on PATH", note
        assert _commit_candidates(sc) == []
    finally:
        sc.stop()


def test_commit_text_cuts_long_bodies_and_file_lists() -> None:
    commit = Commit("a" * 40, EMAIL, "Vendor the parser", "word " * 400, tuple(f"f{i}.py" for i in range(40)))
    text = commit_text(commit)
    assert text.startswith("Vendor the parser\n\nword word") and " ...\n\nFiles: f0.py, f1.py" in text
    assert text.endswith("f14.py (+25 more)") and len(text) < 1200
    raw = "\x1e" + "\x1f".join(["b" * 40, EMAIL, "Subject", "Body line\n", "\n\nx.py\ny.py\n"])
    assert parse_log(raw) == [Commit("b" * 40, EMAIL, "Subject", "Body line", ("x.py", "y.py"))]



def test_a_huge_commit_and_a_pulled_commit_are_left_out(keyword_sidecar: Sidecar, tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _start_session(repo)
    _commit(repo, {f"vendor/lib{i}.js": f"{i}\n" for i in range(501)}, "Vendor the charting library")
    _commit(repo, {"team.py": "x\n"}, "A teammate's change, pulled in",
            env={"GIT_COMMITTER_EMAIL": "bo@example.com", "GIT_AUTHOR_EMAIL": "bo@example.com"})
    mine = _commit(repo, {"chart.py": "use vendor\n"}, "Draw invoice charts with the vendored library")
    _stop(repo, "Charts done.")
    got = wait_until(lambda: _commit_candidates(keyword_sidecar))
    assert [c["evidence"]["sha"] for c in got] == [mine]
    note = _note(keyword_sidecar.root)
    assert note is not None and "501 files changed" in note["reason"], note


def test_commits_in_a_linked_worktree_are_read_on_its_branch(keyword_sidecar: Sidecar, tmp_path: Path) -> None:
    """A linked worktree's project is its main repository; its commits are on its own branch, read in its cwd."""
    repo = _repo(tmp_path)
    tree = tmp_path / "billing-feature"
    _git(repo, "worktree", "add", "-q", "-b", "feature", str(tree))
    _start_session(tree)
    sha = _commit(tree, {"refund.py": "partial\n"}, "Allow partial refunds on paid invoices")
    _stop(tree, "Partial refunds work.")
    got = wait_until(lambda: _commit_candidates(keyword_sidecar))
    assert [(c["evidence"]["sha"], c["evidence"]["branch"], c["project"]) for c in got] == [
        (sha, "feature", str(repo.resolve()))]


def test_a_read_that_broke_off_is_promoted_by_the_next_stop(tmp_path: Path) -> None:
    """In process, on a real store: the first promotion fails (the mark stays), the next read promotes the
    candidate it held instead of leaving it pending."""
    from memcue.sidecar.capture.commits import CommitSignal
    from memcue.sidecar.capture.gate import Gate
    from memcue.sidecar.store import NewMemory
    from memcue.sidecar.store.sqlite.store import Store

    repo = _repo(tmp_path)
    store = Store(tmp_path / "m.db", want_vec=False)
    store.remember_many([NewMemory(content="start", kind="request", project=str(repo), session_id=SESSION,
                                   created_at=time.time() - 2)])
    _commit(repo, {"a.py": "1\n"}, "Cache the exchange rates for an hour")
    broken = [True]

    def remember(memory: NewMemory) -> Any:
        if broken.pop() if broken else False:
            raise OSError("disk full")
        return store.remember_many([memory])[0]

    signal = CommitSignal(store, Gate(store, remember))
    with pytest.raises(OSError):
        signal.capture(str(repo), SESSION, "claude-code")
    assert [c["state"] for c in store.list_candidates()] == ["pending"]
    assert signal.capture(str(repo), SESSION, "claude-code") == 0  # held already: nothing added
    assert [c["state"] for c in store.list_candidates()] == ["promoted"]
    store.close()
