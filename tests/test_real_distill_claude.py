"""The optional distiller's ``command`` kind with the real Claude Code as the headless CLI (``claude -p``), memcue
installed into Claude Code as the user installs it: a user's real ``claude -p`` session ends, the sidecar runs
``claude -p`` itself with the transcript on stdin (against a second loopback Anthropic server), and the facts it
prints become pending candidates. The distiller's own Claude Code session fires memcue's installed hooks too:
they must do nothing (``MEMCUE_HOOKS_OFF``), or that session would be captured and distilled in turn.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import start_sidecar, wait_until
from model_stubs import ModelStub
from real_harness import QUIET, explain, memcue_cli, private_env, program, project_dir, run

pytestmark = [pytest.mark.real_harness, pytest.mark.slow]

PROMPT = "the invoice export times out: the tax API is called inline for every row, move it to the worker"
FACT = "The invoice export calls the tax API through the background worker, never inline."


def test_claude_p_distills_a_real_session_and_its_own_session_is_not_captured(home: Path, tmp_path: Path) -> None:
    claude = program("claude")
    env = private_env(tmp_path, home, **QUIET)
    memcue_cli("install", "claude-code", env=env)
    project = project_dir(tmp_path)
    facts = json.dumps({"facts": [{"kind": "decision", "text": FACT}]})
    with ModelStub("anthropic", reply="Moved the tax API call into the worker.") as user_model, \
            ModelStub("anthropic", reply=facts) as distill_model:
        (home / "config.toml").write_text(f'[distill]\nkind = "command"\ncommand = ["{claude}", "-p"]\n'
                                          "timeout_s = 120\n", encoding="utf-8")
        sc = start_sidecar(home, MEMCUE_NO_MODEL="1", HOME=env["HOME"], ANTHROPIC_BASE_URL=distill_model.url,
                           ANTHROPIC_API_KEY="sk-ant-loopback", **QUIET)
        try:
            proc = run([str(claude), "-p", PROMPT], cwd=project,
                       env={**env, "ANTHROPIC_BASE_URL": user_model.url, "ANTHROPIC_API_KEY": "sk-ant-loopback"})
            assert proc.returncode == 0, explain(proc, sc)
            ledger = wait_until(lambda: sc.client.ledger(1)["entries"], 120)
            time.sleep(3.0)  # what the distiller's own session end would need to be spooled and distilled
            ledger = sc.client.ledger(1)
            cands = [c for c in sc.client.candidates(limit=100)["results"] if c["signal"] == "distill"]
            sessions = sc.client.sessions(None, 20)["results"]
        finally:
            sc.stop()
    [entry] = ledger["entries"]
    assert (entry["outcome"], entry["runner"], entry["target"], entry["candidates"]) == (
        "ok", "command", str(claude), 1), (entry, explain(proc, sc))
    assert [(c["content"], c["kind"], c["state"]) for c in cands] == [(FACT, "decision", "pending")]
    asked = distill_model.turns("tax API is called inline")
    assert asked and "Reply with JSON only" in asked[0].text, [r.path for r in distill_model.requests]
    assert len(sessions) == 1, f"only the user's session is in the store: {sessions}"
