"""``memcue install claude-code|codex`` registers memcue's MCP server by default (issue 14): Claude Code's
settings allow memcue's own MCP tools (``mcp__memcue__*``, nothing broader) and an uninstall takes back exactly
that; ``--no-mcp`` opts out; a missing harness program does not fail the default install; doctor says whether
the server is registered and allowed. Real files in a temporary HOME, through the real CLI; no harness program
on PATH (the real ``claude`` is driven in tests/test_real_claude_code.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

USER = ('{\n  "permissions": {\n    "allow": ["Bash(git status)", "Read(~/notes/**)"],\n    "deny": ["WebFetch"]\n'
        '  }\n}\n')


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "CODEX_HOME": str(tmp_path / "codex"), "MEMCUE_HOME": str(tmp_path / "home"),
           "PATH": "/usr/bin:/bin"}  # no claude, no codex
    return subprocess.run([sys.executable, "-m", "memcue", *args], env=env, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)


def _settings(tmp_path: Path) -> Path:
    path = tmp_path / "claude" / "settings.json"
    path.parent.mkdir(exist_ok=True)
    return path


def test_default_install_allows_memcues_tools_and_survives_a_missing_claude(tmp_path: Path) -> None:
    path = _settings(tmp_path)
    path.write_text(USER)
    run = _cli(tmp_path, "install", "claude-code", "--json")
    assert run.returncode == 0, run.stderr
    (report,) = json.loads(run.stdout)["data"]
    assert report["mcp_registered"] is False
    assert "not registered" in report["mcp"] and "`claude` program on PATH" in report["mcp"]
    settings = json.loads(path.read_text())
    assert settings["permissions"] == {"allow": ["Bash(git status)", "Read(~/notes/**)", "mcp__memcue__*"],
                                       "deny": ["WebFetch"]}
    assert "UserPromptSubmit" in settings["hooks"], "the hooks are installed all the same"
    text = _cli(tmp_path, "install", "claude-code")
    assert text.returncode == 0 and "claude-code: MCP server not registered" in text.stdout
    assert _cli(tmp_path, "uninstall", "claude-code").returncode == 0
    assert path.read_text() == USER
    explicit = _cli(tmp_path, "install", "claude-code", "--mcp")  # asked for by name: still an error
    assert explicit.returncode == 1 and "`claude` program on PATH" in explicit.stderr
    assert _cli(tmp_path, "install", "claude-code", "--mcp", "--no-mcp").returncode == 2  # one or the other


def test_no_mcp_adds_no_permission_and_registers_nothing(tmp_path: Path) -> None:
    path = _settings(tmp_path)
    path.write_text(USER)
    run = _cli(tmp_path, "install", "claude-code", "--no-mcp", "--json")
    assert run.returncode == 0, run.stderr
    (report,) = json.loads(run.stdout)["data"]
    assert report["mcp_registered"] is False and "mcp" not in report
    assert json.loads(path.read_text())["permissions"] == json.loads(USER)["permissions"]
    codex = _cli(tmp_path, "install", "codex", "--no-mcp")
    assert codex.returncode == 0 and not (tmp_path / "codex" / "config.toml").exists()


def test_surgical_uninstall_takes_back_only_what_memcue_added(tmp_path: Path) -> None:
    """The file edited after the install (so no byte-for-byte restore): the user's rules stay (one that already
    allowed memcue's tools too), ours goes, and the ``permissions``/``allow`` memcue created go with it."""
    path = _settings(tmp_path)
    mine = {"permissions": {"allow": ["mcp__memcue__*", "Bash(ls)"]}}
    for original, allow in ((USER, ["Bash(git status)", "Read(~/notes/**)", "mcp__memcue__*"]),
                            ('{"model": "opus"}\n', ["mcp__memcue__*"]),
                            ('{"permissions": {"deny": []}}\n', ["mcp__memcue__*"]),
                            (json.dumps(mine), ["mcp__memcue__*", "Bash(ls)"])):
        path.write_text(original)
        assert _cli(tmp_path, "install", "claude-code").returncode == 0
        edited = json.loads(path.read_text())
        assert edited["permissions"]["allow"] == allow, original
        edited["env"] = {"A": "1"}  # the user changes something after the install
        path.write_text(json.dumps(edited, indent=4) + "\n")
        assert _cli(tmp_path, "uninstall", "claude-code").returncode == 0
        assert json.loads(path.read_text()) == {**json.loads(original), "env": {"A": "1"}}, original


def test_codex_gets_the_server_by_default_and_config_toml_back_byte_for_byte(tmp_path: Path) -> None:
    config = tmp_path / "codex" / "config.toml"
    config.parent.mkdir()
    original = '# mine\nmodel = "o5"\n\n[mcp_servers.other]\ncommand = "other"  # keep\n'
    config.write_text(original)
    run = _cli(tmp_path, "install", "codex", "--json")
    assert run.returncode == 0, run.stderr
    (report,) = json.loads(run.stdout)["data"]
    assert report["mcp_registered"] is True and "[mcp_servers.memcue]" in config.read_text()
    assert config.read_text().startswith(original)
    (kept,) = config.parent.glob("config.toml.memcue-backup-*")
    assert kept.read_text() == original and str(kept) in run.stdout, "the file before the append is kept beside it"
    assert _cli(tmp_path, "uninstall", "codex").returncode == 0
    assert config.read_text() == original
    assert not list(config.parent.glob("config.toml.memcue-backup-*")), "the copy goes once the file is back"
    config.write_text(original)  # the user edits it while memcue is installed: the copy of before stays
    assert _cli(tmp_path, "install", "codex").returncode == 0
    config.write_text(config.read_text().replace('model = "o5"', 'model = "o6"'))
    assert _cli(tmp_path, "uninstall", "codex").returncode == 0
    assert config.read_text() == original.replace('model = "o5"', 'model = "o6"')
    assert len(list(config.parent.glob("config.toml.memcue-backup-*"))) == 1


def test_a_codex_config_that_would_break_gets_no_append_and_no_backup(tmp_path: Path) -> None:
    config = tmp_path / "codex" / "config.toml"
    config.parent.mkdir()
    original = 'model = "o5"\n[mcp_servers]\nmemcue = 3\n'  # a table of ours after it would not parse
    config.write_text(original)
    run = _cli(tmp_path, "install", "codex", "--json")
    assert "would break" in run.stdout and config.read_text() == original
    assert not list(config.parent.glob("config.toml.memcue-backup-*")), "no copy of a file memcue did not change"


def test_doctor_says_registered_and_whether_allowed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    entry = {"type": "stdio", "command": sys.executable, "args": ["-m", "memcue", "mcp"],
             "env": {"MEMCUE_HOME": str(home)}}
    path = _settings(tmp_path)
    assert _cli(tmp_path, "install", "claude-code", "--no-mcp").returncode == 0

    def claude_finding() -> dict:
        out = _cli(tmp_path, "doctor", "--json")
        return {f["area"]: f for f in json.loads(out.stdout)["data"]["findings"]}["claude-code"]

    found = claude_finding()
    assert found["mcp"] is False and "MCP server not registered" in found["message"]
    # Registered (as `claude mcp add -s user` writes it) but not allowed: claude -p would deny its tools.
    (tmp_path / "claude" / ".claude.json").write_text(json.dumps({"mcpServers": {"memcue": entry}}))
    found = claude_finding()
    assert found["status"] == "warn" and found["mcp_allowed"] is False and "mcp__memcue__*" in found["message"]
    assert _cli(tmp_path, "install", "claude-code").returncode == 0  # the default adds the rule
    found = claude_finding()
    assert found["status"] == "ok" and found["mcp_allowed"] is True
    assert "MCP server registered and its tools allowed" in found["message"]
    assert "mcp__memcue__*" in json.loads(path.read_text())["permissions"]["allow"]
    # Registered for another data dir (an install made under another MEMCUE_HOME): the agent saves elsewhere.
    elsewhere = {**entry, "env": {"MEMCUE_HOME": str(tmp_path / "other")}}
    (tmp_path / "claude" / ".claude.json").write_text(json.dumps({"mcpServers": {"memcue": elsewhere}}))
    found = claude_finding()
    assert found["status"] == "warn" and "another data dir" in found["message"]
    assert "registers it for this one, with the harness's program on PATH" in found["message"]
    assert str(tmp_path / "other") in found["message"] and "its tools allowed" in found["message"]


def test_a_dry_run_shows_what_registering_the_server_would_do_and_changes_nothing(tmp_path: Path) -> None:
    config = tmp_path / "codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "o5"\n')
    run = _cli(tmp_path, "install", "codex", "--dry-run")
    assert run.returncode == 0, run.stderr
    assert f"codex: MCP server: would append to {config}:" in run.stdout
    assert "[mcp_servers.memcue]" in run.stdout and f'MEMCUE_HOME = "{tmp_path / "home"}"' in run.stdout
    assert config.read_text() == 'model = "o5"\n', "a dry run writes nothing"
    claude = _cli(tmp_path, "install", "claude-code", "--dry-run")
    assert "claude-code: MCP server: would run `claude mcp add -s user memcue" in claude.stdout
    assert "`claude` is not on PATH" in claude.stdout
    assert not (tmp_path / "claude" / "settings.json").exists()
    assert "not registered" not in _cli(tmp_path, "install", "codex", "--dry-run", "--no-mcp").stdout
    assert "MCP server" not in _cli(tmp_path, "install", "codex", "--dry-run", "--no-mcp").stdout


def test_a_dry_run_says_what_the_install_then_does_for_another_data_dir(tmp_path: Path) -> None:
    """Codex's table written for one data dir: a dry run under another says the real install needs `codex`
    (to replace an entry this data dir did not write), as the install then does; under the same data dir, that
    nothing is to be done."""
    assert _cli(tmp_path, "install", "codex").returncode == 0
    config = (tmp_path / "codex" / "config.toml").read_text()
    assert config.startswith("[mcp_servers.memcue]\n"), "a config.toml memcue creates does not open blank"
    assert _cli(tmp_path, "install", "codex", "--dry-run").stdout.endswith(
        "codex: MCP server: 'memcue' already registered; nothing to do\n")
    env = {**os.environ, "HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "codex"),
           "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "MEMCUE_HOME": str(tmp_path / "other"),
           "PATH": "/usr/bin:/bin"}

    def other(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "memcue", "install", "codex", *args], env=env,
                              capture_output=True, text=True, timeout=60, cwd=tmp_path)

    preview = other("--dry-run").stdout
    assert "would append" not in preview and "`codex` is not on PATH" in preview, preview
    assert "the install will skip the MCP server" in preview
    real = other()
    assert real.returncode == 0 and "MCP server not registered" in real.stdout, real.stdout
    assert (tmp_path / "codex" / "config.toml").read_text() == config, "the first data dir's table is kept"


def test_doctor_times_the_codex_server_against_codexs_optional_server_grace(tmp_path: Path) -> None:
    """The real server started as Codex starts it (its registered command, a cleared environment): with
    Codex's 1 s default or a generous grace the timing is reported; with a grace no start can meet, doctor warns
    and names the setting. Doctor never writes it."""
    config = tmp_path / "codex" / "config.toml"
    config.parent.mkdir()
    config.write_text("mcp_optional_startup_grace_ms = 60000\n")
    assert _cli(tmp_path, "install", "codex").returncode == 0

    def mcp_finding() -> dict:
        out = _cli(tmp_path, "doctor", "--json")
        return {f["area"]: f for f in json.loads(out.stdout)["data"]["findings"]}["codex mcp"]

    found = mcp_finding()
    assert found["status"] == "ok" and found["grace_ms"] == 60000 and 0 < found["start_ms"] < 60000
    assert "started in" in found["message"]
    text = config.read_text().replace("= 60000", "= 1")
    config.write_text(text)
    found = mcp_finding()
    assert found["status"] == "warn" and found["grace_ms"] == 1
    assert "mcp_optional_startup_grace_ms = 3000" in found["message"]
    assert config.read_text() == text, "doctor changes nothing"
    assert not (tmp_path / "home" / "sidecar.pid").exists(), "and starts no sidecar"


def test_doctor_warns_when_the_registered_codex_server_cannot_start(tmp_path: Path) -> None:
    """A server table of memcue's whose interpreter is gone (memcue's environment removed without an uninstall):
    a warning, not a crash, within the start timeout."""
    config = tmp_path / "codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('[mcp_servers.memcue]\ncommand = "/gone/venv/bin/python"\nargs = ["-m", "memcue", "mcp"]\n')
    out = _cli(tmp_path, "doctor", "--json")
    found = {f["area"]: f for f in json.loads(out.stdout)["data"]["findings"]}["codex mcp"]
    assert found["status"] == "warn" and "did not start" in found["message"]
    assert found["grace_ms"] == 1000, "Codex's default when config.toml does not set it"


def test_an_older_registration_without_dash_p_is_replaced_and_the_uninstall_still_restores(tmp_path: Path) -> None:
    """An install by an older memcue registered ``python -m memcue mcp`` (no ``-P``: a project holding a memcue
    folder was imported from); installing again replaces it, and the uninstall gives the file back."""
    config = tmp_path / "codex" / "config.toml"
    config.parent.mkdir()
    original = '# mine\nmodel = "o5"\n'
    config.write_text(original)
    assert _cli(tmp_path, "install", "codex").returncode == 0
    record = tmp_path / "home" / "install" / "mcp-codex.json"
    for path in (config, record):  # as the older memcue wrote them
        path.write_text(path.read_text().replace('"-P", ', '').replace('\\"-P\\", ', ''))
    assert '"-P"' not in config.read_text()
    again = _cli(tmp_path, "install", "codex", "--json")
    assert again.returncode == 0, again.stderr
    assert f"replaced memcue's earlier MCP entry (`{sys.executable}`, MEMCUE_HOME={tmp_path / 'home'})" in again.stdout
    assert config.read_text().count("[mcp_servers.memcue]") == 1
    assert 'args = ["-P", "-m", "memcue", "mcp"]' in config.read_text()
    assert _cli(tmp_path, "install", "codex", "--json").stdout.count("already registered") == 1
    assert _cli(tmp_path, "uninstall", "codex").returncode == 0
    assert config.read_text() == original


def test_one_data_dir_serves_one_codex_config_folder(tmp_path: Path) -> None:
    """A second Codex config folder (another CODEX_HOME) with the same MEMCUE_HOME would share the first one's
    install record: its install and uninstall would work on the first one's MCP table. Both are refused, saying
    why, and the first folder still comes back byte for byte."""
    original = '# mine\nmodel = "o5"\n'
    for name in ("codex", "codex-b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.toml").write_text(original)

    def cli(folder: str, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / folder),
               "MEMCUE_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
        return subprocess.run([sys.executable, "-m", "memcue", *args], env=env, capture_output=True, text=True,
                              timeout=60, cwd=tmp_path)

    assert cli("codex", "install", "codex").returncode == 0
    second = cli("codex-b", "install", "codex")
    assert second.returncode != 0 and "one data dir serves one codex config folder" in second.stderr, second.stderr
    assert (tmp_path / "codex-b" / "config.toml").read_text() == original
    assert not (tmp_path / "codex-b" / "hooks.json").exists()
    refused = cli("codex-b", "uninstall", "codex")
    assert refused.returncode != 0 and str(tmp_path / "codex" / "hooks.json") in refused.stderr
    assert "[mcp_servers.memcue]" in (tmp_path / "codex" / "config.toml").read_text(), "the first install stands"
    assert cli("codex", "uninstall", "codex").returncode == 0
    assert (tmp_path / "codex" / "config.toml").read_text() == original
    assert cli("codex-b", "install", "codex").returncode == 0, "the data dir is free again"


def test_an_uninstall_under_another_data_dir_says_what_it_leaves_and_the_first_takes_the_rest(tmp_path: Path) -> None:
    """Codex wired under one data dir, uninstalled under another: the hooks come out (they are memcue's whichever
    data dir wrote them), the MCP table the first data dir registered stays, and the answer names that data dir and
    the command that takes it off; its dry run says so first. That command then leaves nothing: the config.toml and
    the hooks.json memcue created both go."""
    assert _cli(tmp_path, "install", "codex").returncode == 0
    codex = tmp_path / "codex"
    env = {**os.environ, "HOME": str(tmp_path), "CODEX_HOME": str(codex), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "MEMCUE_HOME": str(tmp_path / "other"), "PATH": "/usr/bin:/bin"}

    def other(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "memcue", "uninstall", "codex", *args], env=env,
                              capture_output=True, text=True, timeout=60, cwd=tmp_path)

    told = f"the data dir {tmp_path / 'home'} registered it; `MEMCUE_HOME={tmp_path / 'home'} memcue uninstall codex`"
    preview = other("--dry-run").stdout
    assert told in preview and "would remove MCP server" not in preview, preview
    assert "would remove MCP server 'memcue' (registered by this data dir)" in _cli(
        tmp_path, "uninstall", "codex", "--dry-run").stdout
    run = other()
    assert run.returncode == 0 and f"MCP server 'memcue' left in place: {told}" in run.stdout, run.stdout
    assert json.loads((codex / "hooks.json").read_text()) == {}
    assert "[mcp_servers.memcue]" in (codex / "config.toml").read_text()
    mine = _cli(tmp_path, "uninstall", "codex")
    assert mine.returncode == 0 and "MCP server 'memcue' removed" in mine.stdout, mine.stdout
    assert not (codex / "hooks.json").exists() and not (codex / "config.toml").exists()
