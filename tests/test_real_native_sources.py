"""Issue 17's done-when for native memory sources, with the real harness programs against loopback model servers:
a decision written in a project's ``CLAUDE.md`` reaches Codex's model context through memcue (Codex 0.171 does
not read ``CLAUDE.md``), is not put into Claude Code's context a second time by memcue (Claude Code 2.1.332 loads
``CLAUDE.md`` itself), and an edit of that line supersedes the memory: the next Codex session gets the new text
and not the old one."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import Sidecar, start_sidecar, wait_until
from model_stubs import ModelStub
from real_harness import CODEX_STUB_PROVIDER, QUIET, explain, memcue_cli, private_env, program, project_dir, run

from memcue.core.blocks import BLOCK_CLOSE, BLOCK_TAG, SESSION_HEADER
from memcue.core.project import resolve_project
from memcue.sidecar.capture.native import ClaudeCodeSource, CodexMemoriesSource
from memcue.sidecar.capture.native.claude_code import auto_memory_dir

pytestmark = [pytest.mark.real_harness, pytest.mark.slow]

DECISION = "We chose SQLite in WAL mode for the invoice ledger because readers must never block the writer"
EDITED = "We chose PostgreSQL 16 for the invoice ledger because three services now write to it"
QUESTION = "which database does the invoice ledger use, and why?"
OTHER = "Invoice numbers restart every January per tenant"


def _claude_md(text: str) -> str:
    return f"# Billing\n\nThe billing service issues invoices.\n\n## Decisions\n- {text}\n"


def _codex_config(url: str, features: str = "") -> str:
    return (f'model = "stub-model"\nmodel_provider = "stub"\ncheck_for_update_on_startup = false\n\n'
            f"{CODEX_STUB_PROVIDER.format(url=url)}\n[features]\nplugins = false\n{features}\n[analytics]\n"
            "enabled = false\n")


def _memcue_part(text: str) -> str:
    """What memcue injected into a request: its ``<memcue-memories>`` elements, joined ("" when none)."""
    return "\n".join(re.findall(f"<{BLOCK_TAG}.*?{BLOCK_CLOSE}", text, re.S))


def _codex_turn(env: dict[str, str], project: Path, sc: Sidecar | None) -> str:
    """Run ``codex exec QUESTION`` in ``project`` against a fresh stub; the model request that carried it."""
    codex_home = Path(env["HOME"]) / ".codex"
    with ModelStub("responses") as stub:
        config = codex_home / "config.toml"
        text = config.read_text()
        config.write_text(text[:text.index("[model_providers.stub]")] + CODEX_STUB_PROVIDER.format(url=stub.url)
                          + text[text.index("[features]") - 1:])
        proc = run([str(program("codex")), "exec", "--skip-git-repo-check", QUESTION], env=env, cwd=project)
    assert proc.returncode == 0, explain(proc, sc) if sc else proc.stderr.decode()
    [turn] = stub.turns(QUESTION)
    return turn.text


def test_claude_md_decision_reaches_codex_not_twice_into_claude_code_and_an_edit_supersedes(
        home: Path, tmp_path: Path) -> None:
    env = private_env(tmp_path, home, STUB_API_KEY="loopback", **QUIET)
    env["PATH"] = f"{program('codex').parent}{os.pathsep}{env.get('PATH', '')}"  # `--trust` runs codex
    codex_home = Path(env["HOME"]) / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(_codex_config("http://127.0.0.1:9"))
    project = project_dir(tmp_path, "billing")
    (project / "CLAUDE.md").write_text(_claude_md(DECISION))
    scope = resolve_project(str(project))
    memcue_cli("install", "codex", "--trust", env=env)
    memcue_cli("install", "claude-code", env=env)
    sc = start_sidecar(home, MEMCUE_NATIVE_HOME=env["HOME"])
    try:
        sc.client.remember(OTHER, project=scope, kind="decision")  # so Claude Code's session block has a memory
        sc.client.wait_idle(timeout_s=120)
        codex_sent = _codex_turn(env, project, sc)
        with ModelStub("anthropic") as stub:
            proc = run([str(program("claude")), "-p", QUESTION, "--output-format", "json"], cwd=project,
                       env={**env, "ANTHROPIC_BASE_URL": stub.url, "ANTHROPIC_API_KEY": "sk-ant-loopback"})
        assert proc.returncode == 0, explain(proc, sc)
        [claude_turn] = stub.turns(QUESTION)
        claude_sent = claude_turn.text

        (project / "CLAUDE.md").write_text(_claude_md(EDITED))  # the sidecar's watcher sees the edit
        found = wait_until(lambda: [r for r in sc.client.recall(QUESTION, project=scope)["results"]
                                    if r["content"] == EDITED])
        assert found, sc.log()
        again = _codex_turn(env, project, sc)
        old = [m for m in sc.client.list_recent(project=scope, limit=50, include_forgotten=True)["results"]
               if m["content"] == DECISION]
    finally:
        sc.stop()

    assert codex_sent.count(DECISION) == 1, "Codex got the CLAUDE.md decision once"
    assert DECISION in _memcue_part(codex_sent), "through memcue's block (Codex does not read CLAUDE.md)"
    assert claude_sent.count(DECISION) == 1, "Claude Code has it once: from its own CLAUDE.md loading"
    assert SESSION_HEADER in claude_sent and OTHER in _memcue_part(claude_sent)
    assert DECISION not in _memcue_part(claude_sent), "memcue did not add it a second time"
    assert EDITED in _memcue_part(again) and DECISION not in again, "the edit superseded the old line"
    assert not old or old[0]["superseded_by"] is not None


def test_codex_does_not_read_claude_md_itself(home: Path, tmp_path: Path) -> None:
    """The premise of the test above, checked on the real binary: without memcue, Codex never sees CLAUDE.md; it
    reads AGENTS.md, or AGENTS.override.md instead when there is one (what ``AgentsMdSource`` says)."""
    env = private_env(tmp_path, home, STUB_API_KEY="loopback")
    codex_home = Path(env["HOME"]) / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(_codex_config("http://127.0.0.1:9"))
    project = project_dir(tmp_path, "billing")
    (project / "CLAUDE.md").write_text(_claude_md(DECISION))
    (project / "AGENTS.md").write_text("- Codex reads this agents line\n")
    sent = _codex_turn(env, project, None)
    assert "Codex reads this agents line" in sent and DECISION not in sent
    (project / "AGENTS.override.md").write_text("- Codex reads the override instead\n")
    sent = _codex_turn(env, project, None)
    assert "Codex reads the override instead" in sent and "Codex reads this agents line" not in sent


def test_claude_code_loads_the_files_the_reader_finds(home: Path, tmp_path: Path) -> None:
    """Every file ``ClaudeCodeSource`` finds for a project is one Claude Code 2.1.332 loads itself (the auto-memory
    index at the folder the reader computes and a file CLAUDE.md imports included), so none of them is injected
    into it; the one-fact files beside the index are not loaded, Claude Code reads them when relevant."""
    env = private_env(tmp_path, home, **QUIET)
    project = project_dir(tmp_path, "my.ledger_x")
    root, cfg = Path(project), Path(env["HOME"]) / ".claude"
    (root / ".claude" / "rules").mkdir(parents=True)
    (cfg / "rules").mkdir(parents=True)
    marks = {cfg / "CLAUDE.md": "MARK_USER_CLAUDE", cfg / "rules" / "u.md": "MARK_USER_RULE",
             root / "CLAUDE.md": "MARK_PROJECT_CLAUDE", root / ".claude" / "CLAUDE.md": "MARK_DOT_CLAUDE",
             root / "CLAUDE.local.md": "MARK_LOCAL", root / ".claude" / "rules" / "r.md": "MARK_PROJECT_RULE"}
    memory = auto_memory_dir(resolve_project(str(project)), Path(env["HOME"]), {})
    memory.mkdir(parents=True)
    marks[memory / "MEMORY.md"] = "MARK_AUTO_INDEX"
    (root / "docs").mkdir()
    marks[root / "docs" / "imp.md"] = "MARK_IMPORTED"
    for path, mark in marks.items():
        path.write_text(f"- {mark}\n")
    (root / "CLAUDE.md").write_text("- MARK_PROJECT_CLAUDE\nSee @docs/imp.md\n")
    (memory / "db.md").write_text("---\nname: db\ndescription: MARK_AUTO_DESC\nmetadata:\n  type: project\n---\n"
                                  "MARK_AUTO_BODY\n")
    found = {f.path for src in (ClaudeCodeSource(),) for p in (None, resolve_project(str(project)))
             for f in src.discover(p, Path(env["HOME"]), {})}
    assert found == {*marks, memory / "db.md"}
    with ModelStub("anthropic") as stub:
        proc = run([str(program("claude")), "-p", QUESTION, "--output-format", "json"], cwd=project,
                   env={**env, "ANTHROPIC_BASE_URL": stub.url, "ANTHROPIC_API_KEY": "sk-ant-loopback"})
    assert proc.returncode == 0, proc.stderr.decode()
    [turn] = stub.turns(QUESTION)
    assert [m for m in marks.values() if m not in turn.text] == []
    assert "MARK_AUTO_BODY" not in turn.text

    (root / ".claude" / "settings.local.json").write_text('{"autoMemoryEnabled": false}')
    [index] = [f for f in ClaudeCodeSource().discover(resolve_project(str(project)), Path(env["HOME"]), {})
               if f.path.name == "MEMORY.md"]
    assert index.loaded_by == set(), "the reader says Claude Code does not load it now"
    with ModelStub("anthropic") as stub:
        proc = run([str(program("claude")), "-p", QUESTION, "--output-format", "json"], cwd=project,
                   env={**env, "ANTHROPIC_BASE_URL": stub.url, "ANTHROPIC_API_KEY": "sk-ant-loopback"})
    assert proc.returncode == 0, proc.stderr.decode()
    [turn] = stub.turns(QUESTION)
    assert "MARK_AUTO_INDEX" not in turn.text and "MARK_PROJECT_CLAUDE" in turn.text, "and it does not"


def test_codex_injects_its_memory_summary_when_memories_are_on(home: Path, tmp_path: Path) -> None:
    """Codex 0.171 with ``[features] memories = true`` puts ``$CODEX_HOME/memories/memory_summary.md`` into the
    session (``CodexMemoriesSource`` reads it and marks it loaded by Codex) and not ``MEMORY.md``."""
    env = private_env(tmp_path, home, STUB_API_KEY="loopback")
    codex_home = Path(env["HOME"]) / ".codex"
    (codex_home / "memories").mkdir(parents=True)
    (codex_home / "config.toml").write_text(_codex_config("http://127.0.0.1:9", "memories = true\n"))
    (codex_home / "memories" / "memory_summary.md").write_text("## What's in Memory\n- MARK_SUMMARY\n")
    (codex_home / "memories" / "MEMORY.md").write_text("- MARK_HANDBOOK\n")
    [summary, handbook] = CodexMemoriesSource().discover(None, Path(env["HOME"]), {})
    assert summary.path.name == "memory_summary.md" and summary.loaded_by == {"codex"}
    sent = _codex_turn(env, project_dir(tmp_path, "p"), None)
    assert "MARK_SUMMARY" in sent and "MARK_HANDBOOK" not in sent


def test_hermes_loads_its_memory_files_and_claude_md_only_without_agents_md(home: Path, tmp_path: Path) -> None:
    """Hermes 0.19 puts ``$HERMES_HOME/memories/MEMORY.md`` and ``USER.md`` into its system prompt, and a project's
    ``CLAUDE.md`` only while the project has no ``AGENTS.md`` (the first of .hermes.md, AGENTS.md, CLAUDE.md
    wins): what ``HermesSource``, ``ClaudeCodeSource`` and ``AgentsMdSource`` say Hermes loads."""
    from test_real_hermes import CONFIG, hermes_env

    env, hermes_home = hermes_env(tmp_path, home)
    (hermes_home / "memories").mkdir()
    (hermes_home / "memories" / "MEMORY.md").write_text("MARK_HERMES_MEMORY\n§\nMARK_HERMES_SECOND")
    (hermes_home / "memories" / "USER.md").write_text("MARK_HERMES_USER")
    project = project_dir(tmp_path, "p")
    (project / "CLAUDE.md").write_text("- MARK_CLAUDE_MD\n")
    scope = resolve_project(str(project))
    sent = []
    for agents in (False, True):
        if agents:
            (project / "AGENTS.md").write_text("- MARK_AGENTS_MD\n")
        [claude_md] = [f for f in ClaudeCodeSource().discover(scope, Path(env["HOME"]), {})
                       if f.path.name == "CLAUDE.md"]
        assert ("hermes" in claude_md.loaded_by) is not agents
        with ModelStub("chat") as stub:
            (hermes_home / "config.yaml").write_text(CONFIG.format(url=stub.url))
            proc = subprocess.run([str(program("hermes")), "chat", "-q", QUESTION, "-Q"], cwd=project, env=env,
                                  stdin=subprocess.DEVNULL, capture_output=True, timeout=180)
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        sent.append(stub.turns(QUESTION)[0].text)
    assert all(m in sent[0] for m in ("MARK_HERMES_MEMORY", "MARK_HERMES_SECOND", "MARK_HERMES_USER",
                                      "MARK_CLAUDE_MD"))
    assert "MARK_AGENTS_MD" in sent[1] and "MARK_CLAUDE_MD" not in sent[1]
