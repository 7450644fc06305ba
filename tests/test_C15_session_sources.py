"""C15: every SessionStart source through the real hook and sidecar; one full block per session at most."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import context_of, prompt_payload, run_hook, start_sidecar

from memcue.core.blocks import SESSION_HEADER


def _start(home: Path, project: Path, session_id: str, source: str) -> str:
    payload = {"session_id": session_id, "transcript_path": f"/tmp/{session_id}.jsonl", "cwd": str(project),
               "hook_event_name": "SessionStart", "source": source}
    proc = run_hook(payload, "session-start", env={**os.environ, "MEMCUE_HOME": str(home), "MEMCUE_HOOK_SPAWN": "0"})
    assert (proc.returncode, proc.stderr) == (0, b"")
    return context_of(proc)


def test_C15_every_source_and_one_full_block_per_session(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "billing-api"
    project.mkdir()
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        sc.client.remember("Deploys are frozen on Fridays; ask Priya before shipping", project=str(project),
                           pinned=True, kind="decision")
        first = _start(home, project, "s1", "startup")
        again = _start(home, project, "s1", "compact")  # the same session compacted: no second full block
        resumed = _start(home, project, "s2", "resume")  # the conversation already holds the block
        fresh = {source: _start(home, project, f"s-{source}", source) for source in ("clear", "fork", "odd-new")}
        empty = _start(home, tmp_path, "s9", "startup")  # a project with no memories
    finally:
        sc.stop()
    assert first.startswith(SESSION_HEADER) and "Deploys are frozen on Fridays" in first
    for pointer in (again, resumed):
        assert pointer.count("\n") == 0 and pointer.startswith("memcue: memory is on for this project (1 memory)")
    for source, block in fresh.items():  # clear and fork start a new session; an unknown source is startup
        assert block.startswith(SESSION_HEADER) and "Deploys are frozen on Fridays" in block, source
    assert empty == ""


def _ask(home: Path, project: Path, session_id: str, prompt: str) -> str:
    proc = run_hook(prompt_payload(prompt, str(project), session_id),
                    env={**os.environ, "MEMCUE_HOME": str(home), "MEMCUE_HOOK_SPAWN": "0"})
    assert (proc.returncode, proc.stderr) == (0, b"")
    return context_of(proc)


def test_C15_a_memory_reaches_a_conversation_once_until_it_is_compacted(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "billing-api"
    project.mkdir()
    fact = "Deploys are frozen on Fridays; ask Priya before shipping"
    question = "are deploys frozen on fridays?"
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        sc.client.remember(fact, project=str(project), pinned=True, kind="decision")
        opened = _start(home, project, "s1", "startup")
        asked_after_block = _ask(home, project, "s1", question)  # the session-start block already holds it
        other = [_ask(home, project, "s2", question) for _ in range(2)]  # no block: injected, then not again
        pointer = _start(home, project, "s1", "compact")  # s1 had its block: a pointer, and the memory is gone
        after_compact = _ask(home, project, "s1", question)
        anonymous = [_ask(home, project, "", question) for _ in range(2)]  # no session id: nothing to go by
    finally:
        sc.stop()
    assert fact in opened
    assert asked_after_block == ""
    assert fact in other[0] and other[1] == ""
    assert fact not in pointer and fact in after_compact
    assert all(fact in block for block in anonymous)
