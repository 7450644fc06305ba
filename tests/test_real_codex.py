"""The real Codex CLI (npm ``@openai/codex``) with memcue installed and trusted by ``memcue install codex
--trust``: ``codex exec`` against a loopback OpenAI Responses server, which records what reached the model.

Checks: hooks that are written but not trusted do not run (and memcue never says they are active); after
``--trust`` the remembered fact reaches the model once and the session-start block arrives; the user's
``config.toml`` keeps its comments through three installs and comes back byte for byte (C13, TOML side).
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from model_stubs import ModelStub
from real_harness import (
    CODEX_STUB_PROVIDER,
    FACT,
    PINNED,
    QUESTION,
    explain,
    memcue_cli,
    private_env,
    program,
    project_dir,
    run,
    seeded_sidecar,
    wait_for_bookkeeping,
)

from memcue.core.blocks import PROMPT_HEADER, SESSION_HEADER, STANDING_NOTE
from memcue.install.edits import hooks_json

pytestmark = [pytest.mark.real_harness, pytest.mark.slow]


def _config(url: str) -> str:
    """A user's config.toml: their comments, an MCP server, features; a provider that points at ``url``
    (the Codex settings that keep ``codex exec`` on loopback: no update check, no plugin sync, no analytics)."""
    return f"""# my Codex settings: keep this comment
model = "stub-model"   # the loopback model
model_provider = "stub"
check_for_update_on_startup = false

{CODEX_STUB_PROVIDER.format(url=url)}
[mcp_servers.notes]
command = "notes-mcp"   # another tool's server
args = ["--stdio"]

[features]
plugins = false

[analytics]
enabled = false
"""


def _env(tmp_path: Path, home: Path) -> dict[str, str]:
    codex = program("codex")
    env = private_env(tmp_path, home, STUB_API_KEY="loopback")
    env["PATH"] = f"{codex.parent}{os.pathsep}{env.get('PATH', '')}"  # `--trust` runs the codex on PATH
    return env


def test_codex_runs_trusted_hooks_only_and_gets_the_fact_once(home: Path, tmp_path: Path) -> None:
    env = _env(tmp_path, home)
    codex_home = Path(env["HOME"]) / ".codex"
    codex_home.mkdir()
    project = project_dir(tmp_path)
    sc = seeded_sidecar(home, project)
    try:
        with ModelStub("responses") as stub:
            (codex_home / "config.toml").write_text(_config(stub.url))
            original = (codex_home / "config.toml").read_bytes()
            argv = [str(program("codex")), "exec", "--skip-git-repo-check", QUESTION]

            written = memcue_cli("install", "codex", env=env)["data"][0]
            assert "only once you trust them" in written["note"]
            untrusted = run(argv, env=env, cwd=project)
            assert untrusted.returncode == 0, explain(untrusted, sc)
            assert FACT not in stub.turns(QUESTION)[-1].text, "Codex skips untrusted hooks"

            trusted = memcue_cli("install", "codex", "--trust", env=env)["data"][0]
            assert len(trusted["trusted"]) == 7 and "trusts memcue's 7 hooks" in trusted["note"]
            doctor = memcue_cli("doctor", env=env)  # exit 0 asserted by memcue_cli
            codex_finding = next(f for f in doctor["data"]["findings"] if f["area"] == "codex")
            assert codex_finding["status"] == "ok" and set(codex_finding["trust"].values()) == {"trusted"}
            before = len(stub.requests)
            proc = run(argv, env=env, cwd=project)
            assert proc.returncode == 0, explain(proc, sc)
            assert stub.reply in proc.stdout.decode()
            sent = [r for r in stub.requests[before:] if QUESTION in r.text]
            bookkeeping = wait_for_bookkeeping(sc, 2)  # the trusted run's answer (Stop) and session end
    finally:
        sc.stop()

    assert len(sent) == 1, [r.path for r in stub.requests]
    text = sent[0].text
    assert text.count(FACT) == 1, explain(proc, sc)  # by the prompt hook, once
    assert text.count(PINNED) == 1 and SESSION_HEADER in text and PROMPT_HEADER in text
    assert text.count(STANDING_NOTE) == 1 and text.index(STANDING_NOTE) < text.index(SESSION_HEADER)
    assert sum(r.text.count(FACT) for r in stub.requests[before:]) == 1
    assert bookkeeping == 2, "Stop and SessionEnd are recorded (the untrusted run recorded nothing)"

    memcue_cli("uninstall", "codex", env=env)
    assert (codex_home / "config.toml").read_bytes() == original
    assert not (codex_home / "hooks.json").exists()


def test_C13_codex_config_toml_keeps_comments_through_three_trusted_installs(home: Path, tmp_path: Path) -> None:
    env = _env(tmp_path, home)
    config = Path(env["HOME"]) / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(_config("http://127.0.0.1:9"))
    config.chmod(0o644)
    original = config.read_bytes()
    backups: list[int] = []
    for _ in range(3):
        memcue_cli("install", "codex", "--trust", env=env)
        backups.append(len(list(config.parent.glob("config.toml.memcue-backup-*"))))
        text = config.read_text()
        parsed = tomllib.loads(text)  # strict parse after every run
        assert text.startswith(original.decode()), "Codex appends its trust table; the rest stays as it was"
        assert len(parsed["hooks"]["state"]) == 7, "one trust entry per memcue hook, never duplicated"
        hooks = json.loads((config.parent / "hooks.json").read_text())["hooks"]
        assert sum(hooks_json.is_ours(h) for groups in hooks.values() for g in groups for h in g["hooks"]) == 7
    assert backups[0] >= 1 and backups[1:] == [backups[0]] * 2, ("a re-run with every hook trusted changes "
                                                                  f"nothing and backs nothing up: {backups}")
    memcue_cli("uninstall", "codex", env=env)
    assert config.read_bytes() == original
    assert config.stat().st_mode & 0o777 == 0o644, "Codex's rewrite made it 0600; the user's mode comes back"


def test_C13_mcp_server_and_trust_in_config_toml_come_off_byte_for_byte(home: Path, tmp_path: Path) -> None:
    env = _env(tmp_path, home)
    config = Path(env["HOME"]) / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(_config("http://127.0.0.1:9"))
    original = config.read_bytes()
    for _ in range(2):
        memcue_cli("install", "codex", "--trust", "--mcp", env=env)
        server = tomllib.loads(config.read_text())["mcp_servers"]["memcue"]
        assert server["args"] == ["-P", "-m", "memcue", "mcp"] and server["env"] == {"MEMCUE_HOME": str(home)}
        lines = iter(config.read_text().splitlines())
        assert all(line in lines for line in original.decode().splitlines()), "every line of the user's, in order"
    codex_finding = next(f for f in memcue_cli("doctor", env=env)["data"]["findings"] if f["area"] == "codex")
    assert codex_finding["mcp"] is True and "MCP server registered" in codex_finding["message"]
    assert memcue_cli("uninstall", "codex", env=env)["data"][0]["mcp"] == "MCP server 'memcue' removed"
    assert config.read_bytes() == original


def test_C13_a_second_trusted_install_says_what_it_did_and_an_edit_keeps_the_mode(home: Path, tmp_path: Path) -> None:
    """A repeated ``--trust`` install says the MCP server was already registered (it is put back at the file's end
    after Codex writes its trust); a plain install afterwards does not tell the user to trust again; after the
    user edits config.toml, the uninstall takes memcue's trust entries off and gives the file the user's mode back
    (Codex's own rewrite makes it 0600)."""
    env = _env(tmp_path, home)
    config = Path(env["HOME"]) / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(_config("http://127.0.0.1:9"))
    config.chmod(0o644)
    first = memcue_cli("install", "codex", "--trust", env=env)["data"][0]
    assert "added" in first["mcp"]
    again = memcue_cli("install", "codex", "--trust", env=env)["data"][0]
    assert again["mcp"].startswith("MCP server 'memcue' already registered"), again["mcp"]
    assert "mcp_put_back" not in again
    plain = memcue_cli("install", "codex", env=env)["data"][0]
    assert "--trust`" not in plain["note"].split("earlier")[0] and "earlier" in plain["note"], plain["note"]
    config.write_text(config.read_text() + "\n# the user's own line\n")
    memcue_cli("uninstall", "codex", env=env)
    text = config.read_text()
    assert "# the user's own line" in text and "trusted_hash" not in text and "mcp_servers.memcue" not in text
    assert config.stat().st_mode & 0o777 == 0o644
