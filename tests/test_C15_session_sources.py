"""C15: every SessionStart source through the real hook and sidecar; one full block per session at most. Every
session-start block opens with memcue's standing note, also for a project with no memory yet; a resumed session
gets the one-line pointer, whose count holds only memories that can answer."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import context_of, prompt_payload, run_hook, start_sidecar

from memcue.core.blocks import SESSION_HEADER, STANDING_NOTE, pointer_line


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
        empty_resumed = _start(home, tmp_path, "s10", "resume")
    finally:
        sc.stop()
    opening = f"{STANDING_NOTE}\n\n{SESSION_HEADER}\n"
    assert first.startswith(opening) and "Deploys are frozen on Fridays" in first
    for pointer in (again, resumed):  # the conversation holds the first block and its note: not repeated
        assert pointer == pointer_line(1)
        assert pointer.startswith("memcue: memory is on for this project (1 memory)") and "remember" in pointer
    for source, block in fresh.items():  # clear and fork start a new session; an unknown source is startup
        assert block.startswith(opening) and "Deploys are frozen on Fridays" in block, source
    assert empty == STANDING_NOTE, "a project with no memory yet gets the note alone"
    assert empty_resumed == pointer_line(0) and "(no memories yet)" in empty_resumed


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


def test_C15_the_resumed_pointer_counts_only_memories_that_can_answer(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "billing-api"
    project.mkdir()
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        sc.client.remember("Deploys are frozen on Fridays; ask Priya before shipping", project=str(project),
                           kind="decision")
        old = sc.client.remember("The staging database listens on port 5433", project=str(project))["id"]
        sc.client.forget([old])
        for i in range(10):  # ten prompts, captured as ``request`` rows: not memories that can answer
            _ask(home, project, "s1", f"question {i}: what is the cron schedule of job {i}?")
        sc.client.remember("session ended", project=str(project))  # bookkeeping
        for kind in ("event", "response", "episode"):
            sc.client.remember(f"a captured {kind} of the session about invoices", project=str(project), kind=kind)
        rows = sc.client.list_recent(project=str(project), include_bookkeeping=True, limit=100)["results"]
        resumed = _start(home, project, "s1", "resume")
    finally:
        sc.stop()
    assert sum(r["memory_kind"] == "request" for r in rows) == 10 and len(rows) >= 13
    assert resumed == pointer_line(1), "one decision; not the prompts, the bookkeeping, the records or the forgotten"


def test_C15_the_note_and_pointer_name_only_tools_the_session_has(home: Path, tmp_path: Path) -> None:
    """After `memcue install claude-code --no-mcp` a Claude Code session has none of memcue's tools: its note and
    pointer name none (the real CLI writes the install record the sidecar reads). Codex, installed by default,
    keeps the MCP note; Hermes' note names its provider's tools."""
    import subprocess
    import sys

    from memcue.core.blocks import STANDING_NOTE_HERMES, STANDING_NOTE_NO_TOOLS

    env = {**os.environ, "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "CODEX_HOME": str(tmp_path / "codex"), "MEMCUE_HOME": str(home), "PATH": "/usr/bin:/bin"}
    for args in (["claude-code", "--no-mcp"], ["codex"]):
        run = subprocess.run([sys.executable, "-m", "memcue", "install", *args], env=env, capture_output=True,
                             text=True, timeout=60)
        assert run.returncode == 0, run.stderr
    project = tmp_path / "billing-api"
    project.mkdir()
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        no_tools = _start(home, project, "n1", "startup")
        no_tools_resumed = _start(home, project, "n2", "resume")
        codex_start = run_hook({"session_id": "c1", "cwd": str(project), "hook_event_name": "SessionStart",
                                "source": "startup", "model": "gpt-5"}, "session-start", harness="codex",
                               env={**os.environ, "MEMCUE_HOME": str(home), "MEMCUE_HOOK_SPAWN": "0"})
        hermes_note = sc.client.session_context(project=str(project), session_id="h1", harness="hermes")["context"]
    finally:
        sc.stop()
    assert no_tools == STANDING_NOTE_NO_TOOLS and "remember`" in no_tools and "MCP" not in no_tools
    assert no_tools_resumed == pointer_line(0, "none") and "tool" not in no_tools_resumed
    assert STANDING_NOTE in context_of(codex_start)
    assert hermes_note == STANDING_NOTE_HERMES and "memcue_remember" in hermes_note
