"""The hook path imports the standard library only (it runs on every prompt and must start fast)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hookutil import FakeSidecar, cleanup_home, hook_env, make_home, socket_path

import memcue.hooks.launch as launch

#: Runs the hook in-process via runpy and records every top-level module it imported that is not stdlib.
#: The hook ends with os._exit, so the record is written from a wrapper around it.
WRAPPER = r"""
import json, os, runpy, sys
out = sys.argv[1]
event = sys.argv[2]
real_exit = os._exit
baseline = set(sys.modules)  # the interpreter's own start-up (site, editable-install finders)

def record(code):
    new = set(sys.modules) - baseline
    names = sorted({n.split(".")[0] for n in new} - set(sys.stdlib_module_names))
    with open(out, "w") as fh:
        ours = sorted(n for n in sys.modules if n.startswith("memcue"))
        json.dump({"third_party": names, "memcue": ours}, fh)
    real_exit(code)

os._exit = record
sys.argv = ["memcue.hooks", "claude-code", event]
runpy.run_module("memcue.hooks", run_name="__main__", alter_sys=True)
record(0)
"""


@pytest.fixture
def home(tmp_path: Path):
    home = make_home(tmp_path)
    yield home
    cleanup_home(home)


@pytest.mark.parametrize("event", ["user-prompt-submit", "session-start", "pre-tool-use"])
def test_hook_imports_stdlib_only(home: Path, tmp_path: Path, event: str) -> None:
    out = tmp_path / "modules.json"
    payload = {"session_id": "s", "cwd": "/tmp", "prompt": "hello", "source": "startup", "tool_name": "Bash",
               "tool_input": {"command": "make check"}}
    tool_modules = (".tools", ".tool_query") if event == "pre-tool-use" else ()
    proc = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(out), event],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=hook_env(home, MEMCUE_HOOK_SPAWN="0", MEMCUE_HOOK_DEADLINE_S="1.0"),
        timeout=20,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b""
    modules = json.loads(out.read_text())
    assert modules["third_party"] == ["memcue"]
    assert "memcue.hooks.run" in modules["memcue"], "the hook really ran"
    assert not [m for m in modules["memcue"] if m.startswith("memcue.sidecar")]
    assert not [
        m
        for m in modules["memcue"]
        if m.startswith("memcue.adapters.") and "claude" not in m and not m.endswith((".base", ".output",
                                                                                     *tool_modules))
    ], "only the adapter in use is loaded (and the shared base and output modules, and the tool lookup)"
    assert all(f"memcue.adapters{m}" in modules["memcue"] for m in tool_modules), "the lookup really ran"


def test_hook_avoids_heavy_stdlib_modules(home: Path, tmp_path: Path) -> None:
    """No heavy standard-library module is loaded by a prompt hook (every module new since the interpreter
    started, not only third-party ones, is recorded)."""
    out = tmp_path / "all.json"
    line = 'names = sorted({n.split(".")[0] for n in new} - set(sys.stdlib_module_names))'
    assert line in WRAPPER
    code = WRAPPER.replace(line, "names = sorted(new)")
    subprocess.run(
        [sys.executable, "-c", code, str(out), "user-prompt-submit"],
        input=b'{"prompt": "hi", "cwd": "/tmp"}',
        capture_output=True,
        env=hook_env(home, MEMCUE_HOOK_SPAWN="0", MEMCUE_HOOK_DEADLINE_S="1.0"),
        timeout=20,
    )
    loaded = set(json.loads(out.read_text())["third_party"])
    for heavy in ("asyncio", "email", "http.client", "uuid", "logging", "argparse", "urllib.request", "ssl"):
        assert heavy not in loaded, f"{heavy} is imported on the hook path"


def test_fast_launcher_runs_the_hook_without_site(home: Path) -> None:
    """``python -I -S memcue/hooks/launch.py``: no site-packages, no .pth files, same answer as ``-m``."""
    payload = json.dumps({"session_id": "s", "cwd": "/tmp", "prompt": "how do we rotate the key?"}).encode()
    with FakeSidecar(socket_path(home), "memory: rotate the key on every release") as fake:
        proc = subprocess.run([sys.executable, "-I", "-S", launch.__file__, "claude-code", "user-prompt-submit"],
                              input=payload, capture_output=True, timeout=20,
                              env=hook_env(home, MEMCUE_HOOK_SPAWN="0"))
    assert (proc.returncode, proc.stderr) == (0, b"")
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "rotate the key on every release" in context
    assert fake.requests and fake.requests[0][1]["event"]["prompt"] == "how do we rotate the key?"


def test_fast_launcher_fails_open_when_the_package_is_missing(tmp_path: Path) -> None:
    lone = tmp_path / "launch.py"  # a copy far from any memcue package: the import fails
    lone.write_text(Path(launch.__file__).read_text())
    proc = subprocess.run([sys.executable, "-I", "-S", str(lone), "claude-code", "user-prompt-submit"],
                          input=b'{"prompt": "hi"}', capture_output=True, timeout=20)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")



def test_capture_only_hooks_load_neither_socket_nor_openssl(home: Path, tmp_path: Path) -> None:
    """A tool call's hook (PostToolUse: spooled at once, never asks the sidecar) keeps its start-up small."""
    out = tmp_path / "all.json"
    code = WRAPPER.replace('names = sorted({n.split(".")[0] for n in new} - set(sys.stdlib_module_names))',
                           "names = sorted(new)")
    assert code != WRAPPER
    payload = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "PostToolUse", "tool_name": "Bash",
               "tool_input": {"command": "pytest -q"}, "tool_response": {"stdout": "1 passed", "stderr": ""},
               "tool_use_id": "toolu_1"}
    proc = subprocess.run([sys.executable, "-c", code, str(out), "post-tool-use"], input=json.dumps(payload).encode(),
                          capture_output=True, env=hook_env(home, MEMCUE_HOOK_SPAWN="0"), timeout=20)
    assert proc.returncode == 0, proc.stderr
    loaded = set(json.loads(out.read_text())["third_party"])
    assert "memcue.hooks.spool" in loaded and "memcue.adapters.tools" in loaded, "the record was spooled"
    assert not loaded & {"socket", "_socket", "selectors", "_hashlib", "hashlib", "memcue.hooks.client"}, loaded
