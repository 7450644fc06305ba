"""The user's install (issue 17, part 3): ``make install`` puts memcue in a tool environment of its own, outside
the clone; its hooks point there; ``memcue install`` and ``memcue doctor`` say when hooks point into a source
checkout or at an interpreter that is gone."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, context_of, prompt_payload, wait_until
from model_stubs import ModelStub
from real_harness import CODEX_STUB_PROVIDER, program, project_dir

import memcue
from memcue.install import placement
from memcue.install.mcp_servers import QUIET_ENV

FACT = "We pin httpx to 0.28 because 0.29 broke unix sockets"


def _private(root: Path, path: str = "/usr/bin:/bin") -> dict[str, str]:
    """An environment with a private HOME, Claude Code config dir and data dir under ``root``, nothing of a venv
    or of this checkout, and ``path`` as PATH (no harness program on it: only folders count)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "HERMES_HOME")
           and not k.startswith("MEMCUE_")}
    (root / "home").mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(root / "home"), CLAUDE_CONFIG_DIR=str(root / "claude"), MEMCUE_HOME=str(root / "mc"),
               PATH=path, OPENBLAS_NUM_THREADS="1")
    return env


def _hook_commands(settings: Path) -> list[str]:
    """Every memcue hook command in a Claude Code settings file."""
    hooks = json.loads(settings.read_text())["hooks"]
    return [h["command"] for groups in hooks.values() for g in groups for h in g["hooks"] if "memcue" in h["command"]]


def _doctor(memcue_argv: list[str], env: dict[str, str]) -> tuple[int, dict]:
    run = subprocess.run([*memcue_argv, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=60)
    return run.returncode, {f["area"]: f for f in json.loads(run.stdout)["data"]["findings"]}


def test_install_and_doctor_warn_when_the_hooks_run_from_this_checkout(tmp_path: Path) -> None:
    assert Path(memcue.__file__).resolve().parent.parent == REPO  # the tests run memcue from this checkout
    env = _private(tmp_path)
    run = subprocess.run([sys.executable, "-m", "memcue", "install", "claude-code"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert f"source checkout {REPO}" in run.stderr and "make install" in run.stderr, run.stderr
    assert "memcue install all" in run.stderr
    hermes = {**env, "HERMES_HOME": str(tmp_path / "hermes")}  # Hermes' plugin names the interpreter too
    assert subprocess.run([sys.executable, "-m", "memcue", "install", "hermes"], env=hermes, capture_output=True,
                          timeout=60).returncode == 0
    code, found = _doctor([sys.executable, "-m", "memcue"], hermes)
    where = found["memcue install"]
    assert code == 0 and where["status"] == "warn" and where["checkouts"] == [str(REPO)], where
    assert "claude-code and hermes's hooks" in where["message"] and "make install" in where["message"]
    as_json = subprocess.run([sys.executable, "-m", "memcue", "install", "claude-code", "--json"], env=env,
                             capture_output=True, text=True, timeout=60)
    assert any(str(REPO) in w for w in json.loads(as_json.stdout)["warnings"])


def test_doctor_says_when_the_hooks_interpreter_is_gone(tmp_path: Path) -> None:
    env = _private(tmp_path)
    assert subprocess.run([sys.executable, "-m", "memcue", "install", "claude-code"], env=env,
                          capture_output=True, timeout=60).returncode == 0
    settings = tmp_path / "claude" / "settings.json"
    gone = str(tmp_path / "deleted-clone" / ".venv" / "bin" / "python")
    settings.write_text(settings.read_text().replace(json.dumps(sys.executable)[1:-1], gone))
    code, found = _doctor([sys.executable, "-m", "memcue"], env)
    where = found["memcue install"]
    assert code == 1 and where["status"] == "problem" and where["gone"] == [gone], where
    assert "no longer exists" in where["message"] and "memory is off" in where["message"]
    assert "make install" in where["message"] and "memcue install all" in where["message"]


def test_a_tool_environment_is_no_checkout_but_a_clone_and_its_venv_are(tmp_path: Path) -> None:
    clone = tmp_path / "src" / "memcue-clone"
    (clone / ".venv" / "bin").mkdir(parents=True)
    (clone / "pyproject.toml").write_text('[project]\nname = "memcue"\nversion = "0"\n')
    tool = tmp_path / "uv" / "tools" / "memcue"
    (tool / "lib").mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "someone-else"\n')  # another project's tree
    assert placement.source_checkout(str(clone / ".venv" / "bin" / "python")) == clone
    assert placement.source_checkout(str(clone / "memcue" / "hooks" / "launch.py")) == clone
    assert placement.source_checkout(str(tool / "bin" / "python")) is None
    assert placement.install_warning([str(tool / "bin" / "python"), str(tool / "lib" / "launch.py")]) == ""
    assert placement.command_paths('"/a b/python" -I -S "/x/memcue/hooks/launch.py" codex stop') == [
        "/a b/python", "/x/memcue/hooks/launch.py"]


@dataclass
class Tool:
    """A user install made by ``make install`` under a temp folder: its ``memcue`` in ``bin_dir``, the tool
    environment's ``python``, and what ``make`` printed."""

    bin_dir: Path
    python: Path
    said: str


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> Tool:
    """``make install`` (the README's command) with ``UV_TOOL_DIR``/``UV_TOOL_BIN_DIR`` under a temp folder."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    root = tmp_path_factory.mktemp("user-install")
    env = {k: v for k, v in os.environ.items() if k not in ("UV", "PYTHONPATH", "VIRTUAL_ENV")}
    made = subprocess.run(["make", "-s", "-C", str(REPO), "install"], capture_output=True, text=True, timeout=600,
                          env={**env, "UV_TOOL_DIR": str(root / "tools"), "UV_TOOL_BIN_DIR": str(root / "bin")})
    assert made.returncode == 0, made.stdout + made.stderr
    return Tool(root / "bin", root / "tools" / "memcue" / "bin" / "python", made.stdout)


@pytest.mark.slow
def test_make_install_is_a_user_install_that_doctor_passes_and_whose_hooks_run(tool: Tool, tmp_path: Path) -> None:
    bin_dir, python = tool.bin_dir, tool.python
    assert f"memcue is installed: {bin_dir}/memcue" in tool.said and "Next: memcue install all" in tool.said
    assert python.exists() and placement.source_checkout(str(python)) is None
    site = next(python.parent.parent.glob("lib/python3*/site-packages"))
    assert (site / "memcue" / "hooks" / "launch.py").exists()  # a copy, not an editable link to the clone
    assert not [p for p in site.glob("*.pth") if str(REPO) in p.read_text()]
    user = _private(tmp_path, f"{bin_dir}:/usr/bin:/bin")
    try:
        wired = subprocess.run(["memcue", "install", "claude-code"], env=user, capture_output=True, text=True,
                               timeout=120)
        assert wired.returncode == 0 and "source checkout" not in wired.stderr, wired.stdout + wired.stderr
        commands = _hook_commands(tmp_path / "claude" / "settings.json")
        assert commands and all(shlex.split(c)[0] == str(python) for c in commands), commands
        assert all(placement.source_checkout(p) is None for c in commands for p in placement.command_paths(c))
        code, found = _doctor(["memcue"], user)
        # `claude` is not on this PATH: the hooks are current, the MCP server could not be registered (a warning)
        assert code == 0 and found["claude-code"]["status"] == "warn", found
        assert "hooks current" in found["claude-code"]["message"], found["claude-code"]
        assert "MCP server not registered" in found["claude-code"]["message"], found["claude-code"]
        where = found["memcue install"]
        assert where["status"] == "ok" and where["message"] == f"the hooks run {python}", where
        code, found = _doctor([sys.executable, "-m", "memcue"], user)  # this checkout's doctor: not its hooks
        assert code == 0 and found["claude-code"]["status"] == "warn", found["claude-code"]
        assert f"another memcue, {python}" in found["claude-code"]["message"]
        assert _remember(user, tmp_path)  # in the project the prompt comes from
        status = wait_until(lambda: _ready(user), timeout_s=120)
        assert status and status["tokenizer"] == "tiktoken", status  # model and tokenizer from the tool env
        cmdline = Path(f"/proc/{status['pid']}/cmdline").read_bytes().split(b"\0")
        assert cmdline[0].decode() == str(python)  # the sidecar runs from the tool install too
        prompt = next(c for c in commands if c.endswith(" user-prompt-submit"))
        hook = subprocess.run(["sh", "-c", prompt], input=json.dumps(prompt_payload(
            "why is httpx pinned?", str(tmp_path))).encode(), capture_output=True, env=user, timeout=30)
        assert hook.returncode == 0 and FACT in context_of(hook), hook
    finally:
        subprocess.run(["memcue", "stop"], env=user, capture_output=True, timeout=60)


@pytest.mark.slow
@pytest.mark.real_harness
def test_real_claude_code_runs_the_user_install(tool: Tool, tmp_path: Path) -> None:
    """The real ``claude -p`` with memcue wired by the installed ``memcue`` (hooks and MCP server): the fact
    reaches the model once, through the tool environment's hooks and sidecar; doctor passes; uninstall gives
    the settings back."""
    claude = program("claude")
    user = {**_private(tmp_path, f"{tool.bin_dir}:{claude.parent}:/usr/bin:/bin"), **QUIET_ENV}
    project = project_dir(tmp_path)
    try:
        wired = subprocess.run(["memcue", "install", "claude-code", "--json"], env=user, capture_output=True,
                               text=True, timeout=120)
        report = json.loads(wired.stdout)
        assert wired.returncode == 0 and report["data"][0]["mcp_registered"] and not report["warnings"], report
        entry = json.loads((tmp_path / "claude" / ".claude.json").read_text())["mcpServers"]["memcue"]
        assert entry["command"] == str(tool.python)
        code, found = _doctor(["memcue"], user)
        assert code == 0 and found["memcue install"]["status"] == "ok", found
        assert _remember(user, project)
        with ModelStub("anthropic") as stub:
            proc = subprocess.run([str(claude), "-p", "why is httpx pinned?", "--output-format", "json"], cwd=project,
                                  env={**user, "ANTHROPIC_BASE_URL": stub.url, "ANTHROPIC_API_KEY": "sk-ant-loopback"},
                                  capture_output=True, timeout=180)
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        turns = stub.turns("why is httpx pinned?")
        assert len(turns) == 1 and turns[0].text.count(FACT) == 1, [r.text[-500:] for r in stub.requests]
        undone = subprocess.run(["memcue", "uninstall", "claude-code"], env=user, capture_output=True, timeout=120)
        assert undone.returncode == 0 and not (tmp_path / "claude" / "settings.json").exists()
    finally:
        subprocess.run(["memcue", "stop"], env=user, capture_output=True, timeout=60)


@pytest.mark.slow
@pytest.mark.real_harness
def test_real_codex_runs_the_user_install(tool: Tool, tmp_path: Path) -> None:
    """The real ``codex exec`` with memcue wired and trusted by the installed ``memcue`` (hooks and MCP server
    in ``$CODEX_HOME``): its hooks and MCP server run the tool environment's interpreter, doctor passes, the
    fact reaches the model once, and uninstall gives ``config.toml`` back byte for byte."""
    codex = program("codex")
    user = {**_private(tmp_path, f"{tool.bin_dir}:{codex.parent}:/usr/bin:/bin"), "STUB_API_KEY": "loopback"}
    codex_home = tmp_path / "home" / ".codex"
    codex_home.mkdir(parents=True)
    project = project_dir(tmp_path)
    question = "why is httpx pinned?"
    try:
        with ModelStub("responses") as stub:
            config = (f'model = "stub-model"\nmodel_provider = "stub"\ncheck_for_update_on_startup = false\n\n'
                      f"{CODEX_STUB_PROVIDER.format(url=stub.url)}\n[features]\nplugins = false\n\n"
                      "[analytics]\nenabled = false\n")
            (codex_home / "config.toml").write_text(config)
            wired = subprocess.run(["memcue", "install", "codex", "--trust", "--json"], env=user,
                                   capture_output=True, text=True, timeout=120)
            report = json.loads(wired.stdout)
            assert wired.returncode == 0 and report["data"][0]["mcp_registered"] and not report["warnings"], report
            hooks = json.loads((codex_home / "hooks.json").read_text())["hooks"]
            commands = [h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]]
            assert commands and all(shlex.split(c)[0] == str(tool.python) for c in commands), commands
            assert f'command = "{tool.python}"' in (codex_home / "config.toml").read_text()  # the MCP server
            code, found = _doctor(["memcue"], user)
            assert code == 0 and found["codex"]["status"] == "ok", found["codex"]
            assert found["memcue install"]["status"] == "ok", found["memcue install"]
            assert _remember(user, project)
            proc = subprocess.run([str(codex), "exec", "--skip-git-repo-check", question], cwd=project, env=user,
                                  capture_output=True, timeout=180)
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        turns = stub.turns(question)
        assert turns and turns[-1].text.count(FACT) == 1, [r.text[-500:] for r in stub.requests]
        undone = subprocess.run(["memcue", "uninstall", "codex"], env=user, capture_output=True, timeout=120)
        assert undone.returncode == 0 and (codex_home / "config.toml").read_text() == config
    finally:
        subprocess.run(["memcue", "stop"], env=user, capture_output=True, timeout=60)


def _remember(env: dict[str, str], cwd: Path) -> bool:
    """``memcue remember FACT`` in ``cwd``, again while the sidecar it starts is not up in the CLI's wait (a
    loaded machine); True once stored (an exact repeat is never stored twice)."""
    return bool(wait_until(lambda: subprocess.run(["memcue", "remember", FACT, "--kind", "decision"], env=env, cwd=cwd,
                                                  capture_output=True, timeout=120).returncode == 0, timeout_s=120))


def _ready(env: dict[str, str]) -> dict | None:
    """``memcue status --json``'s data once the embedding model is ready, else None."""
    run = subprocess.run(["memcue", "status", "--json"], env=env, capture_output=True, text=True, timeout=60)
    data = json.loads(run.stdout).get("data") or {} if run.returncode == 0 else {}
    return data if (data.get("model") or {}).get("state") == "ready" else None
