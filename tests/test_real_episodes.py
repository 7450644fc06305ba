"""Issue 14 through the real Claude Code (npm ``@anthropic-ai/claude-code``) with memcue installed by ``memcue
install``: the agent's final answer of one session is kept as an ``episode``; a later session asking what was
done about it gets it in the model's request; a later session asking an ordinary question on the same topic
does not. ``claude -p`` runs against a loopback Anthropic Messages server, which records what reached the model.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import Sidecar
from model_stubs import ModelStub
from real_harness import QUIET, explain, memcue_cli, private_env, program, project_dir, run, seeded_sidecar

from memcue.core.project import resolve_project

pytestmark = [pytest.mark.real_harness, pytest.mark.slow]

TASK = "fix the duplicate customers the CSV importer creates"
ANSWER = ("I fixed the CSV importer creating duplicate customers: it now deduplicates rows on the external "
          "customer id before the insert, and a regression test covers a file with the same customer twice.")
MARK = "deduplicates rows on the external customer id"
WORK_QUESTION = "what did we do about the CSV importer duplicate customers?"
ORDINARY_QUESTION = "how does the CSV importer deduplicate rows on the external customer id?"


def _claude(claude: Path, prompt: str, reply: str, project: Path, env: dict[str, str], sc: Sidecar) -> str:
    """Run ``claude -p prompt`` (a new session) answered with ``reply``; the text of the turn's model request."""
    with ModelStub("anthropic", reply=reply) as stub:
        proc = run([str(claude), "-p", prompt, "--output-format", "json"], cwd=project,
                   env={**env, "ANTHROPIC_BASE_URL": stub.url, "ANTHROPIC_API_KEY": "sk-ant-loopback"})
    assert proc.returncode == 0, explain(proc, sc)
    turns = stub.turns(prompt)
    assert len(turns) == 1, [r.path for r in stub.requests]
    return turns[0].text


def test_claude_code_keeps_the_answer_as_an_episode_for_what_was_done(home: Path, tmp_path: Path) -> None:
    claude = program("claude")
    env = private_env(tmp_path, home, **QUIET)
    memcue_cli("install", "claude-code", env=env)
    project = project_dir(tmp_path)
    sc = seeded_sidecar(home, project)
    try:
        _claude(claude, TASK, ANSWER, project, env, sc)
        deadline = time.monotonic() + 30
        while not (episodes := sc.client.list_recent(project=resolve_project(str(project)), kind="episode")
                   ["results"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        sc.client.wait_idle(timeout_s=120)
        asked = _claude(claude, WORK_QUESTION, "Noted.", project, env, sc)
        ordinary = _claude(claude, ORDINARY_QUESTION, "Noted.", project, env, sc)
    finally:
        sc.stop()
    assert [e["content"] for e in episodes] == [ANSWER]
    assert asked.count(MARK) == 1, "the episode reached the model for a question about what was done"
    assert MARK not in ordinary.replace(ORDINARY_QUESTION, ""), "an ordinary question never gets an episode"
    assert memcue_cli("uninstall", "claude-code", env=env)["data"][0]["restored"]
