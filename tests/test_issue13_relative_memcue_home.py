"""Issue 13, failure kind 5: a relative ``MEMCUE_HOME`` never makes a data dir inside a project. The hook (run
by the harness in the project's folder) fails open and creates nothing; the CLI and the sidecar refuse it with
one clear error; ``~`` is expanded, an absolute value is used as it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memcue.core.paths import RelativeHomeError, data_dir

RELATIVE = ("data", "./memcue-data", "sub/dir", "..")


def _env(home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCUE_", "CLAUDE_"))}
    return {**env, "MEMCUE_HOME": home, "OPENBLAS_NUM_THREADS": "1"}


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("home", RELATIVE)
def test_issue13_hook_with_relative_memcue_home_fails_open_and_creates_nothing(tmp_path: Path, home: str) -> None:
    project = tmp_path / "w" / "billing-api"
    project.mkdir(parents=True)
    (project / "app.py").write_text("print('hi')\n")
    before = _tree(tmp_path)
    for event, payload in (
            ("user-prompt-submit", {"session_id": "s1", "cwd": str(project), "hook_event_name": "UserPromptSubmit",
                                    "prompt": "how do we deploy?"}),
            ("session-start", {"session_id": "s1", "cwd": str(project), "hook_event_name": "SessionStart",
                               "source": "startup"}),
            ("stop", {"session_id": "s1", "cwd": str(project), "hook_event_name": "Stop",
                      "last_assistant_message": "done"})):
        done = subprocess.run([sys.executable, "-m", "memcue.hooks", "claude-code", event], cwd=project,
                              input=json.dumps(payload).encode(), capture_output=True, env=_env(home), timeout=30)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), (event, done)
    assert _tree(tmp_path) == before, "nothing was created in the project or beside it"


@pytest.mark.parametrize("argv", [["-m", "memcue", "status"], ["-m", "memcue", "remember", "use jwt v8"],
                                  ["-m", "memcue", "stop"], ["-m", "memcue.sidecar"]])
def test_issue13_cli_and_sidecar_refuse_a_relative_memcue_home(tmp_path: Path, argv: list[str]) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    done = subprocess.run([sys.executable, *argv], cwd=project, capture_output=True, env=_env("data"), timeout=60)
    assert done.returncode == 1
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "MEMCUE_HOME='data' is a relative path" in lines[0], done.stderr
    assert "Traceback" not in done.stderr.decode()
    assert _tree(tmp_path) == ["proj"]


def test_issue13_memcue_home_absolute_or_under_the_user_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMCUE_HOME", str(tmp_path / "d"))
    assert data_dir() == tmp_path / "d"
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("MEMCUE_HOME", "~/mc")
    assert data_dir() == tmp_path / "mc"
    for value in RELATIVE:
        monkeypatch.setenv("MEMCUE_HOME", value)
        with pytest.raises(RelativeHomeError, match="relative path"):
            data_dir()
