"""C16: project identity through the real hook and sidecar. A memory written in one project never answers in
another; a subdirectory, a linked git worktree and a symlinked path of a project are that project; two
repositories with the same folder name are two projects. Writes (the CLI) and reads (the hook) use one
resolver."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, context_of, prompt_payload, run_hook, start_sidecar

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("git") is None, reason="needs git")]

FACT = "use jwt middleware v8 with clock-skew 30s"


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", "-c", "user.email=dev@example.com", "-c", "user.name=dev", *args], cwd=cwd, check=True,
                   capture_output=True)


def _repo(path: Path) -> Path:
    path.mkdir(parents=True)
    _git("init", "-q", cwd=path)
    _git("commit", "-q", "--allow-empty", "-m", "start", cwd=path)
    return path


def _remember_from(cwd: Path, text: str, env: dict[str, str], *extra: str) -> None:
    """``memcue remember`` run from ``cwd``: the CLI resolves the project itself (the write side)."""
    proc = subprocess.run([sys.executable, "-m", "memcue", "remember", text, "--kind", "decision", *extra], cwd=cwd,
                          env={**env, "PYTHONPATH": str(REPO)}, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()


def _ask(cwd: Path, question: str, env: dict[str, str], session: str) -> str:
    proc = run_hook(prompt_payload(question, str(cwd), session), env=env)
    assert (proc.returncode, proc.stderr) == (0, b"")
    return context_of(proc)


def test_C16_projects_do_not_cross_and_one_project_has_many_paths(home: Path, tmp_path: Path) -> None:
    w = tmp_path / "w"
    billing, web = _repo(w / "billing-api"), _repo(w / "web-ui")
    app_a, app_b = _repo(w / "team-a" / "app"), _repo(w / "team-b" / "app")
    (billing / "src" / "auth").mkdir(parents=True)
    _git("worktree", "add", "-q", str(w / "billing-hotfix"), cwd=billing)
    (tmp_path / "billing-link").symlink_to(billing / "src")
    env = {**os.environ, "MEMCUE_HOME": str(home), "MEMCUE_HOOK_SPAWN": "0"}
    question = "which jwt middleware version and clock-skew do we use here?"
    sc = start_sidecar(home)
    try:
        _remember_from(billing / "src" / "auth", FACT, env)  # written from a subdirectory
        _remember_from(app_a, "the app deploys with fly.io on tag push", env)
        # --project names a folder of the project, resolved like the hooks resolve a cwd
        _remember_from(tmp_path, "web-ui renders invoices with server components", env, "--project",
                       str(web / "src"))
        sc.client.wait_idle(timeout_s=120)
        answers = {name: _ask(cwd, question, env, f"s-{name}") for name, cwd in {
            "web-ui": web, "billing": billing, "subdir": billing / "src" / "auth",
            "worktree": w / "billing-hotfix", "symlink": tmp_path / "billing-link"}.items()}
        apps = {name: _ask(cwd, "how does the app deploy?", env, f"a-{name}")
                for name, cwd in {"team-a": app_a, "team-b": app_b}.items()}
        web_answer = _ask(web, "how are invoices rendered in web-ui?", env, "w-1")
    finally:
        sc.stop()
    assert answers.pop("web-ui") == ""  # another project's jwt decision stays there
    for name, block in answers.items():
        assert FACT in block, name
    assert "fly.io" in apps["team-a"] and apps["team-b"] == ""
    assert "server components" in web_answer
