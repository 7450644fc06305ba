"""The real Codex CLI offers memcue's MCP tools in the first (and only) turn of a ``codex exec`` run.

Codex starts a turn without an optional MCP server that has not answered ``initialize`` and ``tools/list`` within
its grace (1 s); importing the MCP SDK alone takes most of that, so memcue's server answers them early from the
SDK's earlier answers (``mcp.early``), which ``memcue install codex`` has it learn. The loopback model records the
tools Codex offers: memcue's are the ``mcp__memcue`` namespace.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import start_sidecar
from model_stubs import ModelStub
from real_harness import explain, memcue_cli, program, project_dir, run
from test_real_codex import _config, _env

from memcue.mcp.early import CACHE_NAME

pytestmark = [pytest.mark.real_harness, pytest.mark.slow]


def test_codex_exec_first_turn_offers_memcues_tools(home: Path, tmp_path: Path) -> None:
    env = _env(tmp_path, home)
    codex_home = Path(env["HOME"]) / ".codex"
    codex_home.mkdir()
    project = project_dir(tmp_path)
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        with ModelStub("responses") as stub:
            (codex_home / "config.toml").write_text(_config(stub.url))
            memcue_cli("install", "codex", "--trust", env=env)  # registers the MCP server by default
            assert (home / CACHE_NAME).exists(), "the install did not start the server once"
            proc = run([str(program("codex")), "exec", "--skip-git-repo-check", "-s", "danger-full-access",
                        "hello"], env=env, cwd=project, timeout=180)
            assert proc.returncode == 0, explain(proc, sc)
            turns = [r.body for r in stub.requests if r.method == "POST" and isinstance(r.body, dict)]
    finally:
        sc.stop()
    assert turns, explain(proc, sc)
    offered = [t.get("name") for t in turns[0].get("tools") or []]
    assert "mcp__memcue" in offered, offered
    assert "remember" in json.dumps(turns[0]["tools"])
