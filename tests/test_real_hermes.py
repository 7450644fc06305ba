"""The real Hermes Agent 0.19 (PyPI ``hermes-agent``, its own venv) with memcue installed by ``memcue install
hermes``: ``hermes chat -q`` against a loopback OpenAI Chat Completions server, which records what reached the
model.

Checks: the remembered fact reached the model once, inside Hermes' ``<memory-context>`` block in the user
message; the session-start block is in the system message of the same request, memcue's tools in its tool
list; the prompt, the answer (Stop) and the session's end were captured; the fact went nowhere else; uninstall
gives back config.yaml byte for byte and removes the plugin folder.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest
from model_stubs import ModelStub
from real_harness import (
    FACT,
    PINNED,
    QUESTION,
    explain,
    memcue_cli,
    private_env,
    program,
    project_dir,
    seeded_sidecar,
    wait_for_bookkeeping,
)

from memcue.core.blocks import PROMPT_HEADER, SESSION_HEADER, STANDING_NOTE_HERMES
from memcue.core.project import resolve_project

pytestmark = [pytest.mark.real_harness, pytest.mark.slow]

#: The user's config before memcue: a comment, and the `security` switch that keeps Hermes from downloading
#: its tirith scanner from GitHub at start-up. The model section is added to it per test (the stub's port).
CONFIG = """# my Hermes config
model:
  provider: custom   # an OpenAI-compatible server
  base_url: {url}/v1
  default: stub-model
  api_key: dummy-key
  context_length: 128000
security:
  tirith_enabled: false
"""


def _dead_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _offline(env: dict[str, str]) -> dict[str, str]:
    """``env`` with every non-loopback HTTP(S) request sent to a dead loopback proxy (so nothing leaves the
    machine, and an attempt fails at once)."""
    proxy = f"http://127.0.0.1:{_dead_port()}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = proxy
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def _last_user_text(body: dict) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    return content if isinstance(content, str) else json.dumps(content)


def hermes_env(tmp_path: Path, home: Path) -> tuple[dict[str, str], Path]:
    """An offline, private environment for the real Hermes and its ``$HOME/.hermes`` folder, made, with the
    update check's cache fresh: Hermes checks PyPI for updates at start unless its 6-hour cache is fresh
    (hermes_cli/banner.py:308)."""
    env = _offline(private_env(tmp_path, home, LANG="C.UTF-8", LC_ALL="C.UTF-8"))
    hermes_home = Path(env["HOME"]) / ".hermes"
    hermes_home.mkdir()
    (hermes_home / ".update_check").write_text(json.dumps({"ts": time.time(), "behind": 0, "rev": None,
                                                           "ver": "0.19.0"}))
    return env, hermes_home


def _system_text(body: dict) -> str:
    return "\n".join(m["content"] for m in body.get("messages", [])
                     if m.get("role") == "system" and isinstance(m.get("content"), str))


def test_hermes_gets_the_fact_once_in_memory_context_and_the_session_block(home: Path, tmp_path: Path) -> None:
    hermes = program("hermes")
    env, hermes_home = hermes_env(tmp_path, home)
    config = hermes_home / "config.yaml"
    project = project_dir(tmp_path)
    sc = seeded_sidecar(home, project)
    try:
        with ModelStub("chat") as stub:
            original = CONFIG.format(url=stub.url).encode()
            config.write_bytes(original)
            report = memcue_cli("install", "hermes", env=env)["data"][0]
            assert report["changed"] and report["path"] == str(config)
            plugin = hermes_home / "plugins" / "memcue" / "__init__.py"
            assert report["files"] == [str(plugin)] and plugin.is_file()
            proc = subprocess.run([str(hermes), "chat", "-q", QUESTION, "-Q", "--accept-hooks"], cwd=project,
                                  env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=180)
        assert proc.returncode == 0, explain(proc, sc)
        assert stub.reply in proc.stdout.decode(), explain(proc, sc)
        captured = sc.client.recall(QUESTION, project=resolve_project(str(project)), include_requests=True)
        bookkeeping = wait_for_bookkeeping(sc, 2)  # the answer (Stop) and the session's end
    finally:
        sc.stop()

    turns = stub.turns(QUESTION)
    assert len(turns) == 1, [(r.method, r.path) for r in stub.requests]
    body = turns[0].body
    user, system = _last_user_text(body), _system_text(body)
    assert turns[0].text.count(FACT) == 1, explain(proc, sc)  # by prefetch, once
    assert user.index("<memory-context>") < user.index(PROMPT_HEADER) < user.index(FACT) < \
        user.index("</memory-context>"), user
    assert SESSION_HEADER in system and PINNED in system and system.index(SESSION_HEADER) < system.index(PINNED)
    assert system.count(STANDING_NOTE_HERMES) == 1 and system.index(STANDING_NOTE_HERMES) < system.index(SESSION_HEADER)
    assert turns[0].text.count(PINNED) == 1
    assert sum(r.text.count(FACT) for r in stub.requests) == 1  # and nowhere else
    assert {"memcue_recall", "memcue_remember"} <= {t["function"]["name"] for t in body.get("tools", [])}
    assert any(r["memory_kind"] == "request" and r["content"] == QUESTION for r in captured["results"])
    assert bookkeeping == 2, "the answer (sync_turn: Stop) and the session's end (on_session_end) are recorded"

    removed = memcue_cli("uninstall", "hermes", env=env)["data"][0]
    assert removed["restored"] and config.read_bytes() == original
    assert not (hermes_home / "plugins" / "memcue").exists()
