"""C08: upgrade with the old sidecar running. The hook of a newer memcue (a real copy of the package with
another version) sees the mismatch, asks the old sidecar to stop gracefully exactly once, the next prompt
starts the new version, and a build that misreports its version causes no restart loop."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from conftest import context_of, prompt_payload, start_sidecar
from hookutil import kill_spawned_sidecars

import memcue
from memcue.client import Client
from memcue.core.paths import Locations

REPO_PACKAGE = Path(memcue.__file__).resolve().parent


def _package_copy(root: Path, version: str) -> Path:
    """A copy of the memcue package whose ``__version__`` is ``version``; returns the folder to put on
    PYTHONPATH."""
    dest = root / f"pkg-{version}"
    shutil.copytree(REPO_PACKAGE, dest / "memcue", ignore=shutil.ignore_patterns("__pycache__"))
    init = dest / "memcue" / "__init__.py"
    text = init.read_text()
    init.write_text(text.replace(f'__version__ = "{memcue.__version__}"', f'__version__ = "{version}"'))
    assert f'"{version}"' in init.read_text()
    return dest


def _hook(home: Path, pkg: Path, project: str, prompt: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "MEMCUE_HOME": str(home), "PYTHONPATH": str(pkg), "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-P", "-m", "memcue.hooks", "claude-code", "user-prompt-submit"],
                          input=json.dumps(prompt_payload(prompt, project)).encode(), capture_output=True, env=env,
                          cwd=str(pkg), timeout=30)


def _wait_gone(proc: subprocess.Popen, timeout_s: float = 20) -> bool:
    try:
        proc.wait(timeout_s)
        return True
    except subprocess.TimeoutExpired:
        return False


def test_C08_one_graceful_restart_on_a_version_mismatch_and_no_loop(home: Path, tmp_path: Path) -> None:
    project = str(tmp_path / "proj")
    os.makedirs(project)
    old = start_sidecar(home)
    try:
        old.client.remember("We pinned httpx to 0.27.2 because 0.28 broke proxy settings", project=project)
        old.client.wait_idle(timeout_s=120)
        new_pkg = _package_copy(tmp_path, "9.9.9")
        first = _hook(home, new_pkg, project, "why did we pin httpx?")
        assert first.returncode == 0 and first.stderr == b""
        assert "httpx" in context_of(first)  # the prompt is answered first, by the old sidecar
        assert _wait_gone(old.proc), "the old sidecar was not asked to stop"
        record = json.loads((home / "restart.json").read_text())
        assert record["from"] == memcue.__version__ and record["to"] == "9.9.9"

        second = _hook(home, new_pkg, project, "why did we pin httpx?")  # starts the installed version
        assert second.returncode == 0
        client = Client(Locations(home), timeout_s=30)
        deadline = time.monotonic() + 60
        while not client.is_up() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert client.health()["version"] == "9.9.9"
        client.close()
        kill_spawned_sidecars(home)

        # A build that still reports the old version after the restart: no second restart, no loop.
        again = start_sidecar(home)
        try:
            third = _hook(home, new_pkg, project, "why did we pin httpx?")
            assert third.returncode == 0
            time.sleep(1.0)
            assert again.proc.poll() is None, "the sidecar was restarted twice for the same pair of versions"
            assert "not again" in (Locations(home).hook_log).read_text()
        finally:
            again.stop()
    finally:
        old.stop()
        kill_spawned_sidecars(home)
