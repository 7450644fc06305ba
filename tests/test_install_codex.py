"""``memcue install codex``: hooks.json merged like Claude Code's, integer timeouts, never claimed active
before Codex trusts it; byte-identical uninstall (C11 for Codex, C14's install side)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from memcue.install.edits import hooks_json

EXISTING = ('{\n  "hooks": {\n    "Stop": [{"hooks": [{"type": "command", "command": "notify-done", "timeout": 10}]}]'
            '\n  }\n}\n')


def _without_codex() -> str:
    """The PATH with no folder that holds a ``codex`` program: the test then means the same on a shell with one."""
    folders = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(d for d in folders if shutil.which("codex", path=d) is None)


def _cli(tmp_path: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(tmp_path),  # never the real home
           "CODEX_HOME": str(tmp_path / "codex"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "MEMCUE_HOME": str(tmp_path / "home"), **({"PATH": path} if path is not None else {})}
    return subprocess.run([sys.executable, "-m", "memcue", *args], env=env, capture_output=True, text=True,
                          timeout=60)


def test_install_codex_merges_says_trust_and_uninstalls_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "codex" / "hooks.json"
    path.parent.mkdir()
    path.write_text(EXISTING)
    run = _cli(tmp_path, "install", "codex")
    assert run.returncode == 0, run.stderr
    assert "only once you trust them" in run.stdout and "/hooks" in run.stdout, "never claimed active"
    data = json.loads(path.read_text())
    assert data["hooks"]["Stop"][0] == json.loads(EXISTING)["hooks"]["Stop"][0], "another tool's hook is kept"
    ours = {event: [h for g in groups for h in g["hooks"] if hooks_json.is_ours(h)]
            for event, groups in data["hooks"].items()}
    assert [h["timeout"] for h in ours["UserPromptSubmit"]] == [3]
    assert [h["timeout"] for h in ours["SessionStart"]] == [5]
    assert all(isinstance(h["timeout"], int) and "codex user-prompt-submit" in h["command"]
               for h in ours["UserPromptSubmit"])
    assert [h["timeout"] for h in ours["Stop"]] == [5] and len(data["hooks"]["Stop"]) == 2
    assert [h["timeout"] for h in ours["SessionEnd"]] == [3]  # Codex caps SessionEnd hooks at 3 s
    # Recall at the point of action: every tool (the hook looks up shell commands and edits only).
    (pre,) = ours["PreToolUse"]
    assert pre["timeout"] == 2 and pre["command"].endswith("codex pre-tool-use")
    assert [g.get("matcher") for g in data["hooks"]["PreToolUse"]] == [None]
    before = path.read_bytes()
    assert _cli(tmp_path, "install", "codex").returncode == 0 and path.read_bytes() == before
    doctor = _cli(tmp_path, "doctor", "--json", path=_without_codex())
    found = {f["area"]: f for f in json.loads(doctor.stdout)["data"]["findings"]}
    assert found["codex"]["status"] == "warn" and "trust not checked" in found["codex"]["message"]
    assert _cli(tmp_path, "uninstall", "codex").returncode == 0
    assert path.read_text() == EXISTING


def test_the_installed_codex_command_runs_through_a_shell(tmp_path: Path) -> None:
    assert _cli(tmp_path, "install", "codex").returncode == 0
    data = json.loads((tmp_path / "codex" / "hooks.json").read_text())
    (hook,) = [h for g in data["hooks"]["UserPromptSubmit"] for h in g["hooks"] if hooks_json.is_ours(h)]
    home = tmp_path / "home"
    payload = {"session_id": "019a", "turn_id": "t", "transcript_path": None, "cwd": "/tmp",
               "hook_event_name": "UserPromptSubmit", "model": "m", "permission_mode": "default", "prompt": "hi"}
    run = subprocess.run(hook["command"], shell=True, input=json.dumps(payload).encode(), capture_output=True,
                         timeout=30, env={**os.environ, "MEMCUE_HOME": str(home), "MEMCUE_HOOK_SPAWN": "0"})
    assert (run.returncode, run.stdout, run.stderr) == (0, b"", b"")
    assert "codex user-prompt-submit" in (home / "logs" / "hook.log").read_text()


def test_doctor_without_codex_on_path_does_not_advise_the_command_that_needs_it(tmp_path: Path) -> None:
    """`--trust` needs `codex` on PATH: doctor's advice says so when it is not there."""
    bare = {**os.environ, "HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / "codex"),
            "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "MEMCUE_HOME": str(tmp_path / "home"),
            "PATH": str(Path(sys.executable).parent)}
    assert shutil.which("codex", path=bare["PATH"]) is None

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "memcue", *args], env=bare, capture_output=True, text=True,
                              timeout=60)

    assert run("install", "codex").returncode == 0
    found = {f["area"]: f for f in json.loads(run("doctor", "--json").stdout)["data"]["findings"]}
    message = found["codex"]["message"]
    assert "codex is not on PATH" in message and "put `codex` on PATH and run `memcue install codex --trust`" in message
    assert "trust them: run `memcue install codex --trust`" not in message
