"""``memcue pin`` / ``unpin`` / ``unforget`` (issue 17, part 5): a person's marks, in place, through the real CLI
and a real sidecar."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import start_sidecar

from memcue.sidecar.store import NewMemory, Store


def _cli(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memcue", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "MEMCUE_HOME": str(home)}, timeout=60)


def test_pin_unpin_and_unforget_mark_a_memory_in_place(home: Path, tmp_path: Path) -> None:
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        memory = sc.client.remember("Deploys freeze on Fridays; ask Priya before shipping", project=str(tmp_path),
                                    kind="decision")["id"]
        pinned = _cli(home, tmp_path, "pin", f"#{memory}", "--json")
        fetched = sc.client.fetch([memory])["results"][0]
        unpinned = _cli(home, tmp_path, "unpin", str(memory))
        assert _cli(home, tmp_path, "forget", str(memory)).returncode == 0
        gone = sc.client.recall("deploys freeze fridays", project=str(tmp_path), mode="keyword")["results"]
        back = _cli(home, tmp_path, "unforget", str(memory))
        again = sc.client.recall("deploys freeze fridays", project=str(tmp_path), mode="keyword")["results"]
        missing = _cli(home, tmp_path, "pin", "999999")
        versions = sc.client.list_recent(project=str(tmp_path), include_forgotten=True)["results"]
    finally:
        sc.stop()
    assert pinned.returncode == 0 and json.loads(pinned.stdout)["data"]["changed"] == [memory]
    assert fetched["pinned"] is True and unpinned.returncode == 0 and "unpinned: #" in unpinned.stdout
    assert gone == [] and back.returncode == 0 and [r["memory_id"] for r in again] == [memory]
    assert missing.returncode == 1 and "not found: #999999" in missing.stdout
    assert [v["memory_id"] for v in versions] == [memory], "marked in place: no new version"


def test_list_says_where_it_looked_and_status_counts_what_can_answer(home: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        sc.client.remember("the staging bucket is shop-staging-eu", project=str(tmp_path / "shop"))
        sc.client.remember("please look at the flaky test", project=str(tmp_path / "shop"), kind="request")
        listed = _cli(home, elsewhere, "list")
        status = _cli(home, elsewhere, "status")
    finally:
        sc.stop()
    assert f"(no memories in project {elsewhere.resolve()}; --all-projects lists every project)" in listed.stdout
    assert "memories: 2 (1 that can answer, 1 captured prompts, answers and session events, 0 other bookkeeping, " \
        "0 forgotten or replaced;" \
        in status.stdout, status.stdout


def test_edit_opens_the_editor_and_saves_a_changed_text_as_a_new_version(home: Path, tmp_path: Path) -> None:
    editor = tmp_path / "editor.sh"  # an "editor" that changes the port in the file it is given
    editor.write_text("#!/bin/sh\nsed -i 's/5432/5433/' \"$1\"\n")
    editor.chmod(0o755)
    keep = tmp_path / "keep.sh"  # one that changes nothing
    keep.write_text("#!/bin/sh\ntrue\n")
    keep.chmod(0o755)
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        old = sc.client.remember("the invoices database is on port 5432", project=str(tmp_path))["id"]
        edited = subprocess.run([sys.executable, "-m", "memcue", "edit", str(old), "--json"], capture_output=True,
                                text=True, timeout=60, env={**os.environ, "MEMCUE_HOME": str(home),
                                                            "EDITOR": str(editor), "VISUAL": ""})
        new = json.loads(edited.stdout)["data"]["id"]
        unchanged = subprocess.run([sys.executable, "-m", "memcue", "edit", str(new)], capture_output=True,
                                   text=True, timeout=60, env={**os.environ, "MEMCUE_HOME": str(home),
                                                               "EDITOR": str(keep), "VISUAL": ""})
        current = sc.client.fetch([new])["results"][0]["content"]
        replaced = sc.client.fetch([old])["results"][0]["superseded_by"]
    finally:
        sc.stop()
    assert edited.returncode == 0 and current == "the invoices database is on port 5433" and replaced == new
    assert unchanged.returncode == 0 and "nothing saved" in unchanged.stdout


def test_edit_without_a_terminal_or_an_editor_refuses_before_starting_vi(home: Path) -> None:
    """Fresh-user finding: `memcue edit 1 </dev/null` started vim, which filled stdout with escape codes."""
    run = subprocess.run([sys.executable, "-m", "memcue", "edit", "1", "--json"], capture_output=True, text=True,
                         timeout=60, stdin=subprocess.DEVNULL,
                         env={**os.environ, "MEMCUE_HOME": str(home), "EDITOR": "", "VISUAL": ""})
    assert run.returncode == 2 and "no terminal for vi" in json.loads(run.stdout)["error"]
    assert not (home / "sidecar.sock").exists(), "refused before any sidecar was started"


def test_store_counts_split_every_row_once(tmp_path: Path) -> None:
    """``answering``, ``captured``, ``other_bookkeeping`` and ``inactive`` add up to ``memories``: a session event
    is captured and bookkeeping, and ``memcue status`` counted it in both."""
    store = Store(tmp_path / "memcue.db")
    try:
        ids = [store.remember(NewMemory(content=text, kind=kind, project="p")).id for text, kind in (
            ("Deploys are frozen on Fridays", "decision"), ("Invoices use integer cents", "decision"),
            ("session ended (reason: exit)", "event"), ("can you fix the export?", "request"),
            ("tool call: Edit src/app.py", "note"))]
        store.forget([ids[1]])
        counts = store.counts()
    finally:
        store.close()
    assert counts["memories"] == 5 and counts["answering"] == 1 and counts["captured"] == 2
    assert counts["other_bookkeeping"] == 1 and counts["inactive"] == 1, counts
    assert counts["answering"] + counts["captured"] + counts["other_bookkeeping"] + counts["inactive"] == 5
