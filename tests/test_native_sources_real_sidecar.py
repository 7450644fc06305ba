"""Native memory sources in a real sidecar through the real hook (issue 17, part 1): a decision in a project's
``CLAUDE.md`` is read at session start, injected into Codex's session block and prompt, never into Claude Code's
(it loads the file itself); an edit of the line, seen by the watcher, supersedes the memory; ``memcue sources``
lists the file and ``--off`` retires its memories, kept in ``config.toml``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO, Sidecar, context_of, prompt_payload, run_hook, start_sidecar, wait_until

from memcue.core.project import resolve_project

DECISION = "We chose SQLite in WAL mode for the invoice ledger because readers must never block the writer"
EDITED = "We chose PostgreSQL 16 for the invoice ledger because three services now write to it"
QUESTION = "which database does the invoice ledger use, and why?"


def _session_start(cwd: Path, harness: str, session_id: str) -> dict:
    return {"session_id": session_id, "transcript_path": f"/tmp/{session_id}.jsonl", "cwd": str(cwd),
            "hook_event_name": "SessionStart", "source": "startup", "model": "stub"}


def _cli(sc: Sidecar, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "memcue", "sources", *args, "--json"], capture_output=True,
                          env=sc.env, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode() + proc.stdout.decode()
    return json.loads(proc.stdout)["data"]


def test_claude_md_decision_reaches_codex_not_claude_code_and_an_edit_supersedes(sidecar: Sidecar,
                                                                               tmp_path: Path) -> None:
    """The same prompt in the same store: Codex gets the decision, Claude Code (which loads CLAUDE.md) does not."""
    project = tmp_path / "billing"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    claude_md = project / "CLAUDE.md"
    claude_md.write_text(f"# Billing\n\n## Decisions\n- {DECISION}\n")
    env = sidecar.env

    codex_start = context_of(run_hook(_session_start(project, "codex", "s-codex-1"), "session-start", env=env,
                                      harness="codex"))
    assert DECISION in codex_start, "read at session start and offered to Codex, which does not load CLAUDE.md"
    sidecar.client.wait_idle(120)  # its vector: the prompt recall below is a full one
    claude_start = context_of(run_hook(_session_start(project, "claude-code", "s-claude-1"), "session-start",
                                       env=env))
    assert claude_start and DECISION not in claude_start, "Claude Code loads CLAUDE.md itself"
    claude_prompt = context_of(run_hook(prompt_payload(QUESTION, str(project), "s-claude-1"), env=env))
    assert DECISION not in claude_prompt
    codex_prompt = context_of(run_hook(prompt_payload(QUESTION, str(project), "s-codex-2"), env=env,
                                       harness="codex"))
    assert DECISION in codex_prompt, "a Codex session that has not seen it gets it with the prompt"

    scope = resolve_project(str(project))
    [source] = [s for s in _cli(sidecar)["sources"] if s["name"] == "claude-code"]
    [file] = source["files"]
    assert file["path"] == str(claude_md) and file["project"] == scope and file["memories"] == 1
    assert file["loaded_by"] == ["claude-code", "hermes"] and source["last_sync"]
    [old] = [r for r in sidecar.client.recall(QUESTION, project=scope)["results"] if r["content"] == DECISION]

    claude_md.write_text(f"# Billing\n\n## Decisions\n- {EDITED}\n")  # the watcher sees the edit
    answers = wait_until(lambda: [r for r in sidecar.client.recall(QUESTION, project=scope)["results"]
                                  if r["content"] == EDITED])
    assert answers, sidecar.log()
    assert all(r["content"] != DECISION for r in sidecar.client.recall(QUESTION, project=scope)["results"])
    [fetched] = sidecar.client.fetch([old["memory_id"]])["results"]
    assert fetched["superseded_by"] == answers[0]["memory_id"]

    off = _cli(sidecar, "--off", "claude-code")
    assert [s["enabled"] for s in off["sources"] if s["name"] == "claude-code"] == [False]
    assert all(r["content"] != EDITED for r in sidecar.client.recall(QUESTION, project=scope)["results"])
    assert 'off = ["claude-code"]' in (sidecar.root / "config.toml").read_text()
    on = _cli(sidecar, "--on", "claude-code")
    assert [s["memories"] for s in on["sources"] if s["name"] == "claude-code"] == [1]
    assert any(r["content"] == EDITED for r in sidecar.client.recall(QUESTION, project=scope)["results"])


def test_sidecar_start_reads_the_projects_it_knows(home: Path, tmp_path: Path) -> None:
    """A file written while the sidecar was down is read when it starts again, before any session starts; the
    user's own files (under the native home) are read too, as global memories."""
    project = tmp_path / "billing"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    native_home = tmp_path / "home"
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1", MEMCUE_NATIVE_HOME=str(native_home))
    try:
        run_hook(prompt_payload("hello there", str(project), "s-1"), env=sc.env)  # the project gets a session
        wait_until(lambda: sc.client.list_recent(project=resolve_project(str(project)), limit=5,
                                                 include_bookkeeping=True)["results"])
    finally:
        sc.stop()
    (project / "AGENTS.md").write_text("## Testing\n- Run the contract tests with make contract\n")
    (native_home / ".hermes" / "memories").mkdir(parents=True)
    (native_home / ".hermes" / "memories" / "USER.md").write_text("Prefers answers in German")
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1", MEMCUE_NATIVE_HOME=str(native_home))
    try:
        def stored() -> dict[str, dict]:
            rows = sc.client.list_recent(project=resolve_project(str(project)), limit=20)["results"]
            return {r["content"]: r for r in rows}

        wanted = {"Run the contract tests with make contract", "Prefers answers in German"}
        # Both files, not any two rows: the session's captured prompt is a row too, and the files are read in turn.
        found = wait_until(lambda: (rows := stored()) and wanted <= set(rows) and rows)
    finally:
        sc.stop()
    assert found, sc.log()
    assert found["Run the contract tests with make contract"]["memory_kind"] == "howto"
    assert found["Prefers answers in German"]["project"] == "" and found["Prefers answers in German"][
        "memory_kind"] == "preference"
