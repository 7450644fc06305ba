"""What a session was shown survives a sidecar restart (its idle exit, a crash, ``memcue stop``): the ledger of
a session it has not seen is seeded from the usage log (``sidecar.inject.shown``). Real sidecar, restarted over
the same data dir; the real hook as a subprocess with Claude Code's payloads. Found by a fresh-clone trial: after
``memcue stop`` the memories of a session's start block came again with its next prompts (580 tokens)."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import context_of, prompt_payload, run_hook, start_sidecar
from hookutil import hook_env

from memcue.core.blocks import POINTER_START, PROMPT_HEADER, SESSION_HEADER
from memcue.core.project import resolve_project

SESSION = "7b0e2c1d-4f5a-4b6c-8d9e-0a1b2c3d4e5f"
FACT = "The invoices live in PostgreSQL 16 on port 5433, behind pgbouncer."
QUESTION = "which port do the invoices use in PostgreSQL?"


def _start(cwd: str, source: str) -> dict:
    return {"session_id": SESSION, "transcript_path": "", "cwd": cwd, "hook_event_name": "SessionStart",
            "source": source}


def test_a_restarted_sidecar_does_not_repeat_what_a_session_was_shown(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = os.path.realpath(tmp_path / "billing")
    os.makedirs(project)
    env = hook_env(home, MEMCUE_HOOK_SPAWN="0")
    sc = start_sidecar(home)
    try:
        sc.client.remember(FACT, project=resolve_project(project), kind="decision")
        sc.client.wait_idle(timeout_s=120)
        block = context_of(run_hook(_start(project, "startup"), "session-start", env=env))
        assert SESSION_HEADER in block and FACT in block
    finally:
        sc.stop()
    sc = start_sidecar(home)
    try:
        sc.client.wait_idle(timeout_s=120)
        again = context_of(run_hook(prompt_payload(QUESTION, project, SESSION), env=env))
        second_start = context_of(run_hook(_start(project, "startup"), "session-start", env=env))
        other = context_of(run_hook(prompt_payload(QUESTION, project, "another-session-0001"), env=env))
        compacted = context_of(run_hook(_start(project, "compact"), "session-start", env=env))
    finally:
        sc.stop()
    assert again == "", "the fact is in the conversation already (its session-start block)"
    assert second_start.startswith(POINTER_START), "one full block per session, also across a restart"
    assert PROMPT_HEADER in other and FACT in other, "another session was shown nothing"
    assert compacted.startswith(POINTER_START)
    sc = start_sidecar(home)
    try:
        sc.client.wait_idle(timeout_s=120)
        after_compaction = context_of(run_hook(prompt_payload(QUESTION, project, SESSION), env=env))
    finally:
        sc.stop()
    assert FACT in after_compaction, "a compacted conversation lost the block: the prompt brings the fact again"
