"""``memcue install claude-code``: merge, idempotence, backup, byte-identical uninstall (C11), and files it
must refuse to touch (C12). Real files in a temp CLAUDE_CONFIG_DIR, through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memcue.install.edits import hooks_json

C11 = """{
    "permissions": {"allow": ["Bash(ls:*)"], "deny": []},
    "env": {"FOO": "1"},
    "hooks": {
        "SessionStart": [
            {"hooks": [{"type": "command", "command": "other-tool start"}]},
            {"matcher": "compact", "hooks": [{"type": "command", "command": "other-tool compact"}]}
        ],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "lint-prompt", "timeout": 2}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]
    }
}
"""


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(tmp_path),  # never the real home
           "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "MEMCUE_HOME": str(tmp_path / "home")}
    return subprocess.run([sys.executable, "-m", "memcue", *args], env=env, capture_output=True, text=True,
                          timeout=60)


def _settings(tmp_path: Path) -> Path:
    return tmp_path / "claude" / "settings.json"


def _ours(settings: dict, event: str) -> list[dict]:
    return [h for g in settings["hooks"][event] for h in g["hooks"] if hooks_json.is_ours(h)]


def test_C11_merge_install_twice_then_uninstall_byte_identical(tmp_path: Path) -> None:
    path = _settings(tmp_path)
    path.parent.mkdir()
    path.write_text(C11)
    shown = _cli(tmp_path, "install", "claude-code", "--dry-run")
    assert shown.returncode == 0 and "removed" not in shown.stdout and "restored" not in shown.stdout
    first = _cli(tmp_path, "install", "claude-code", "--json")
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)["data"][0]
    assert report["changed"] and Path(report["backup"]).read_text() == C11
    after = json.loads(path.read_text())
    before = json.loads(C11)
    # Others' entries untouched, in order; ours added once per event, with explicit integer timeouts.
    # The user's rules kept, in order; memcue's MCP tools (and nothing broader) allowed after them.
    assert after["permissions"] == {"allow": ["Bash(ls:*)", "mcp__memcue__*"], "deny": []}
    assert after["env"] == before["env"]
    assert after["hooks"]["PreToolUse"][:1] == before["hooks"]["PreToolUse"]
    # Recall at the point of action: its own group after the user's, edit and shell tools only, in the foreground.
    assert after["hooks"]["PreToolUse"][1]["matcher"] == "Edit|Write|MultiEdit|NotebookEdit|Bash"
    (pre,) = _ours(after, "PreToolUse")
    assert pre["timeout"] == 2 and "async" not in pre and pre["command"].endswith("claude-code pre-tool-use")
    assert after["hooks"]["SessionStart"][:2] == before["hooks"]["SessionStart"]
    assert after["hooks"]["UserPromptSubmit"][:1] == before["hooks"]["UserPromptSubmit"]
    (prompt,), (start,), (end,) = (_ours(after, e) for e in ("UserPromptSubmit", "SessionStart", "SessionEnd"))
    assert (prompt["timeout"], start["timeout"], end["timeout"]) == (3, 5, 5)
    assert "matcher" not in after["hooks"]["SessionStart"][-1], "no matcher: every source (C15)"
    assert prompt["command"].startswith('"/') and "launch.py" in prompt["command"]
    written = path.read_bytes()

    plain = _cli(tmp_path, "uninstall", "claude-code", "--dry-run")  # the text output of both actions
    assert plain.returncode == 0 and path.read_bytes() == written
    second = _cli(tmp_path, "install", "claude-code")
    assert second.returncode == 0 and "nothing changed" in second.stdout
    assert path.read_bytes() == written, "a second install changes nothing, byte for byte"
    assert len(list(path.parent.glob("settings.json.memcue-backup-*"))) == 1

    removed = _cli(tmp_path, "uninstall", "claude-code")
    assert removed.returncode == 0 and "original restored" in removed.stdout
    assert path.read_text() == C11
    assert not list(path.parent.glob("settings.json.memcue-backup-*")), "the copy of a file restored from it goes"
    assert "the same bytes, removed" in removed.stdout


def test_C11_uninstall_after_another_edit_removes_only_ours(tmp_path: Path) -> None:
    path = _settings(tmp_path)
    path.parent.mkdir()
    path.write_text(C11)
    assert _cli(tmp_path, "install", "claude-code").returncode == 0
    edited = json.loads(path.read_text())
    edited["model"] = "opus"  # the user changes something after the install
    path.write_text(json.dumps(edited, indent=4) + "\n")
    assert _cli(tmp_path, "uninstall", "claude-code").returncode == 0
    left = json.loads(path.read_text())
    assert left == {**json.loads(C11), "model": "opus"}


def test_C11_a_reinstall_after_the_users_edit_keeps_the_edit_at_uninstall(tmp_path: Path) -> None:
    """The user edits the file after the install, then memcue's entries are updated (a new interpreter): the
    first install's original no longer describes the file, so the uninstall removes memcue's entries and keeps
    the edit instead of restoring that original."""
    path = _settings(tmp_path)
    path.parent.mkdir()
    path.write_text(C11)
    assert _cli(tmp_path, "install", "claude-code").returncode == 0
    edited = json.loads(path.read_text().replace(sys.executable, "/old/venv/bin/python"))
    edited["model"] = "opus"
    path.write_text(json.dumps(edited, indent=2) + "\n")
    again = _cli(tmp_path, "install", "claude-code")
    assert again.returncode == 0 and sys.executable in path.read_text() and "/old/venv" not in path.read_text()
    assert _cli(tmp_path, "uninstall", "claude-code").returncode == 0
    assert json.loads(path.read_text()) == {**json.loads(C11), "model": "opus"}


def test_C11_a_file_replaced_after_the_install_is_the_new_original(tmp_path: Path) -> None:
    """The settings file is deleted and written anew after an install (memcue's entries gone with it); the next
    install and its uninstall give that new file back byte for byte, not the first one."""
    path = _settings(tmp_path)
    path.parent.mkdir()
    path.write_text("{}\n")
    assert _cli(tmp_path, "install", "claude-code").returncode == 0
    path.unlink()
    replaced = '{\n  "model": "opus",\n  "env": {"A": "1"}\n}\n'
    path.write_text(replaced)
    assert _cli(tmp_path, "install", "claude-code").returncode == 0
    removed = _cli(tmp_path, "uninstall", "claude-code")
    assert removed.returncode == 0 and "original restored" in removed.stdout
    assert path.read_text() == replaced


def test_a_symlinked_settings_file_stays_a_symlink_and_its_target_is_edited(tmp_path: Path) -> None:
    """A dotfiles checkout's settings.json linked into the config folder (issue 16, finding 6)."""
    target = tmp_path / "dotfiles" / "claude-settings.json"
    target.parent.mkdir()
    target.write_text(C11)
    path = _settings(tmp_path)
    path.parent.mkdir()
    path.symlink_to(target)
    assert _cli(tmp_path, "install", "claude-code").returncode == 0
    assert path.is_symlink() and path.resolve() == target.resolve()
    assert _ours(json.loads(target.read_text()), "UserPromptSubmit")
    assert _cli(tmp_path, "uninstall", "claude-code").returncode == 0
    assert path.is_symlink() and target.read_text() == C11


def test_install_into_no_file_and_uninstall_removes_it(tmp_path: Path) -> None:
    assert _cli(tmp_path, "install", "claude-code").returncode == 0
    path = _settings(tmp_path)
    hooks = json.loads(path.read_text())["hooks"]
    assert set(hooks) == {"UserPromptSubmit", "SessionStart", "PreToolUse", "PostToolUse", "PostToolUseFailure",
                          "Stop", "PreCompact", "SessionEnd"}
    assert [g.get("matcher") for g in hooks["PreToolUse"]] == ["Edit|Write|MultiEdit|NotebookEdit|Bash"]
    # Tool-call and compaction capture run in the background (Claude Code's "async": true); the rest block.
    assert {event for event, groups in hooks.items() if groups[0]["hooks"][0].get("async") is True} == {
        "PostToolUse", "PostToolUseFailure", "PreCompact"}
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    for made in (tmp_path / "home", tmp_path / "home" / "install"):  # fresh-user finding: these were 0755
        assert oct(made.stat().st_mode & 0o777) == "0o700", made
    assert _cli(tmp_path, "uninstall", "claude-code").returncode == 0
    assert not path.exists()


def test_dry_run_prints_a_diff_and_writes_nothing(tmp_path: Path) -> None:
    path = _settings(tmp_path)
    path.parent.mkdir()
    path.write_text(C11)
    run = _cli(tmp_path, "install", "claude-code", "--dry-run")
    assert run.returncode == 0 and run.stdout.startswith("---") and "+" in run.stdout and "launch.py" in run.stdout
    assert path.read_text() == C11 and not list(path.parent.glob("*.memcue-backup-*"))


@pytest.mark.parametrize("name,content", [
    ("comment", '{\n  // my comment\n  "env": {}\n}\n'),
    ("trailing comma", '{"env": {"A": "1"},}\n'),
    ("top-level array", '[{"hooks": {}}]\n'),
    ("hooks not an object", '{"hooks": []}\n'),
    ("a number past float's range", '{"env": {}, "n": 1e400}\n'),
    ("NaN, which JSON does not have", '{"env": {}, "n": NaN}\n'),
])
def test_C12_unparsable_or_odd_files_get_a_clear_error_and_no_write(tmp_path: Path, name: str, content: str) -> None:
    path = _settings(tmp_path)
    path.parent.mkdir()
    path.write_text(content)
    run = _cli(tmp_path, "install", "claude-code")
    assert run.returncode == 1 and "changed nothing" in run.stderr, (name, run.stderr)
    assert path.read_text() == content and not list(path.parent.glob("*.memcue-backup-*"))


def test_C12_bom_and_empty_file_are_read_tolerantly_and_kept(tmp_path: Path) -> None:
    path = _settings(tmp_path)
    path.parent.mkdir()
    original = b'\xef\xbb\xbf{\n  "env": {"A": "1"}\n}\n'
    path.write_bytes(original)
    assert _cli(tmp_path, "install", "claude-code").returncode == 0
    assert path.read_bytes().startswith(b"\xef\xbb\xbf") and json.loads(path.read_bytes()[3:])["env"] == {"A": "1"}
    assert _cli(tmp_path, "uninstall", "claude-code").returncode == 0
    assert path.read_bytes() == original
    path.write_text("")
    assert _cli(tmp_path, "install", "claude-code").returncode == 0
    assert "UserPromptSubmit" in json.loads(path.read_text())["hooks"]


def test_C12_unreadable_path_is_an_error(tmp_path: Path) -> None:
    _settings(tmp_path).mkdir(parents=True)  # a folder where the file should be: cannot be read
    run = _cli(tmp_path, "install", "claude-code")
    assert run.returncode == 1 and "cannot read" in run.stderr and "changed nothing" in run.stderr


def test_the_installed_command_runs_through_a_shell(tmp_path: Path) -> None:
    """Claude Code runs ``command`` with a shell: the quoted string must start the real hook."""
    assert _cli(tmp_path, "install", "claude-code").returncode == 0
    (prompt,) = _ours(json.loads(_settings(tmp_path).read_text()), "UserPromptSubmit")
    home = tmp_path / "home"
    run = subprocess.run(prompt["command"], shell=True, input=b'{"session_id": "s", "cwd": "/tmp", "prompt": "hi"}',
                         capture_output=True, timeout=30,
                         env={**os.environ, "MEMCUE_HOME": str(home), "MEMCUE_HOOK_SPAWN": "0"})
    assert (run.returncode, run.stdout, run.stderr) == (0, b"", b"")
    assert "claude-code user-prompt-submit" in (home / "logs" / "hook.log").read_text()


def test_install_and_uninstall_say_what_they_did_and_nothing_else(tmp_path: Path) -> None:
    installed = _cli(tmp_path, "install", "claude-code")
    assert "wired into" in installed.stdout and "removed" not in installed.stdout
    removed = _cli(tmp_path, "uninstall", "claude-code")
    assert "wired into" not in removed.stdout and ("restored" in removed.stdout or "removed" in removed.stdout)


def test_project_install_writes_the_projects_local_settings_from_a_subdirectory(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    local = repo / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text('{"permissions": {"allow": []}}\n')
    original = local.read_bytes()
    env = {**os.environ, "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "MEMCUE_HOME": str(tmp_path / "home")}
    run = [sys.executable, "-m", "memcue"]
    for args in (["install", "claude-code"], ["install", "claude-code", "--project"]):
        proc = subprocess.run(run + args, env=env, capture_output=True, text=True, cwd=repo / "src", timeout=60)
        assert proc.returncode == 0, proc.stderr
    user = _settings(tmp_path).read_bytes()
    assert len(_ours(json.loads(local.read_text()), "UserPromptSubmit")) == 1
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo, capture_output=True,
                            text=True, check=True).stdout
    assert "settings.local.json" not in status, "the personal file stays out of git (.git/info/exclude)"
    assert (repo / ".git" / "info" / "exclude").read_text().count("/.claude/settings.local.json*") == 1
    proc = subprocess.run(run + ["uninstall", "claude-code", "--project", str(repo / "src")], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert local.read_bytes() == original
    assert _settings(tmp_path).read_bytes() == user  # the user-level install is a separate one
    codex = subprocess.run(run + ["install", "codex", "--project"], env=env, capture_output=True, text=True,
                           cwd=repo, timeout=60)
    assert codex.returncode == 1 and "no per-project hooks file" in codex.stderr


def test_install_all_wires_the_harnesses_this_machine_has(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()  # Claude Code's folder exists; no codex or hermes program, no folders
    env = {**os.environ, "HOME": str(tmp_path), "MEMCUE_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    for key in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "HERMES_HOME"):
        env.pop(key, None)
    proc = subprocess.run([sys.executable, "-m", "memcue", "install", "all", "--json"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [r["harness"] for r in out["data"]] == ["claude-code"]
    assert out["data"][0]["mcp_registered"] is False, "no claude on PATH: the hooks go in, the MCP server does not"
    assert json.loads((tmp_path / ".claude" / "settings.json").read_text())["permissions"] == {
        "allow": ["mcp__memcue__*"]}
    assert set(out["skipped"]) >= {"codex"} and not (tmp_path / ".codex").exists()
    proc = subprocess.run([sys.executable, "-m", "memcue", "uninstall", "all"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / ".claude" / "settings.json").exists()
    (tmp_path / ".claude").rmdir()  # now this machine has no harness at all
    proc = subprocess.run([sys.executable, "-m", "memcue", "install", "all"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1 and "no harness found" in proc.stderr
