"""Issue 13, failure kind 5: hook commands quoted for any install path. Claude Code and Codex run a hook's
``command`` as one shell string; an interpreter or memcue folder whose path holds a space, ``$``, a backquote,
``"``, ``\\``, ``'`` or non-ASCII must still run memcue's hook. Hermes' plugin runs the hook as an argv."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hookutil import FakeSidecar, hook_env, socket_path

from memcue.install.edits import hooks_json

REPO = Path(__file__).resolve().parent.parent
#: A folder name holding every character a shell treats specially inside or outside double quotes.
HOSTILE = "venv $HOME `id` \"q\" back\\slash it's é€"


@pytest.fixture
def hostile_install(tmp_path: Path) -> tuple[Path, Path]:
    """``(python, package_parent)``: a symlink to this interpreter and a symlink of the memcue package, both
    under a folder named ``HOSTILE``."""
    root = tmp_path / HOSTILE
    (root / "bin").mkdir(parents=True)
    (root / "lib").mkdir()
    python = root / "bin" / "python"
    python.symlink_to(sys.executable)
    (root / "lib" / "memcue").symlink_to(REPO / "memcue", target_is_directory=True)
    return python, root / "lib"


def _install(harness: str, python: Path, package_parent: Path, settings: Path) -> dict:
    """Install ``harness``'s hooks into ``settings`` with memcue imported from ``package_parent`` (so the
    launcher path written is the hostile one), in a subprocess; returns the file's JSON."""
    code = ("import importlib, json, sys, pathlib\n"
            "from memcue.install.edits import hooks_json\n"
            "mod = importlib.import_module('memcue.install.' + sys.argv[1].replace('-', '_'))\n"
            "path = pathlib.Path(sys.argv[3])\n"
            "data = hooks_json.install({}, path, mod.NAME, mod.EVENTS, sys.argv[2])\n"
            "path.write_text(json.dumps(data), encoding='utf-8')\n")
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    subprocess.run([sys.executable, "-c", code, harness, str(python), str(settings)], env=env, check=True,
                   cwd=settings.parent)  # not the repo: ``-c`` puts the working folder first on sys.path
    return json.loads(settings.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("harness", "event"), [("claude-code", "UserPromptSubmit"), ("codex", "UserPromptSubmit")])
def test_issue13_hook_command_runs_through_the_shell_for_a_hostile_install_path(
        hostile_install: tuple[Path, Path], tmp_path: Path, harness: str, event: str) -> None:
    python, package_parent = hostile_install
    settings = _install(harness, python, package_parent, tmp_path / "settings.json")
    command = settings["hooks"][event][0]["hooks"][0]["command"]
    launcher = package_parent / "memcue" / "hooks" / "launch.py"
    assert command.startswith(hooks_json.shell_quote(str(python)) + " -I -S " + hooks_json.shell_quote(str(launcher)))
    assert hooks_json.is_ours({"command": command}), "the new form is recognised as memcue's own hook"
    home = tmp_path / "h"
    home.mkdir()
    payload = {"session_id": "s-1", "cwd": str(tmp_path), "hook_event_name": event, "prompt": "how do we deploy?",
               "transcript_path": "", "model": "m", "turn_id": "t1"}
    with FakeSidecar(socket_path(home), "deploy with the blue-green script") as fake:
        done = subprocess.run(["sh", "-c", command], input=json.dumps(payload).encode(), capture_output=True,
                              env=hook_env(home), timeout=30)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert "deploy with the blue-green script" in done.stdout.decode("utf-8"), (command, done.stdout)
    assert fake.requests, "the hook reached the sidecar"
    log = (home / "logs" / "hook.log")
    assert not log.exists() or "Traceback" not in log.read_text()


def test_issue13_ordinary_paths_keep_the_command_form_older_installs_wrote() -> None:
    python = "/home/ana/.local/share/uv/tools/memcue/bin/python"
    command = hooks_json.hook_command("claude-code", "user-prompt-submit", python)
    launcher = (REPO / "memcue" / "hooks" / "launch.py").as_posix()
    assert command == f'"{python}" -I -S "{launcher}" claude-code user-prompt-submit'
    old_module_form = f'"{python}" -m memcue.hooks claude-code user-prompt-submit'
    assert hooks_json.is_ours({"command": old_module_form}) and hooks_json.is_ours({"command": command})


def test_issue13_shell_quote_keeps_every_character() -> None:
    for text in (HOSTILE, "/a b/c", "/x/$(id)", "/x/a\nb", "/x/!bang", "/x/'", '/x/"', "/x/\\", "/ü/日本"):
        quoted = hooks_json.shell_quote(text)
        out = subprocess.run(["sh", "-c", f"printf %s {quoted}"], capture_output=True, check=True).stdout
        assert out.decode("utf-8") == text, (text, quoted)


def test_issue13_hermes_plugin_keeps_a_hostile_path_exact(hostile_install: tuple[Path, Path]) -> None:
    python, package_parent = hostile_install
    code = ("import sys\nfrom memcue.install import hermes\n"
            "sys.stdout.buffer.write(hermes.plugin_source(sys.argv[1]))\n")
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    source = subprocess.run([sys.executable, "-c", code, str(python)], env=env, check=True, capture_output=True,
                            cwd=package_parent).stdout.decode("utf-8")
    values = {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(source).body
              if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
              and node.targets[0].id in ("MEMCUE_PYTHON", "MEMCUE_LAUNCH")}
    assert values == {"MEMCUE_PYTHON": str(python),
                      "MEMCUE_LAUNCH": str(package_parent / "memcue" / "hooks" / "launch.py")}
