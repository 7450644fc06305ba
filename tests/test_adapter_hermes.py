"""Hermes Agent: the adapter (the plugin's payloads in, plain text out, C14) and the provider plugin itself, loaded
from the bytes ``memcue install hermes`` writes, outside Hermes (its base class falls back to ``object``)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
from conftest import run_hook, start_sidecar
from hookutil import FakeSidecar, socket_path

import memcue.hooks.launch as launch
from memcue import adapters
from memcue.adapters import event_name, hermes
from memcue.adapters.base import POST_TOOL_USE, SESSION_END, SESSION_START, STOP, USER_PROMPT_SUBMIT
from memcue.core.blocks import PROMPT_HEADER, SESSION_HEADER, STANDING_NOTE_HERMES
from memcue.core.project import resolve_project
from memcue.install import hermes as hermes_install

#: Payloads as the plugin sends them (``hermes_plugin.py``).
PROMPT = {"prompt": "how do we rotate the build-cache key?", "session_id": "20261129_204834_e363ab", "cwd": "/tmp",
          "hook_event_name": "UserPromptSubmit"}
START = {"session_id": "20261129_204834_e363ab", "cwd": "/tmp", "hook_event_name": "SessionStart", "source": "startup"}
STOP_PAYLOAD = {"session_id": "20261129_204834_e363ab", "cwd": "/tmp", "hook_event_name": "Stop",
                "last_assistant_message": "Rotated the key."}
END = {"session_id": "20261129_204834_e363ab", "cwd": "/tmp", "hook_event_name": "SessionEnd"}


# -- the adapter ----------------------------------------------------------------------------------------------

def test_registered_with_its_events() -> None:
    assert adapters.get("Hermes") is hermes and hermes.NAME == "hermes"
    assert [event_name(hermes, n) for n in ("UserPromptSubmit", "session-start", "Stop", "SessionEnd", "PreToolUse")] \
        == [USER_PROMPT_SUBMIT, SESSION_START, STOP, SESSION_END, None]


def test_parse_prompt_session_start_stop_and_end(tmp_path: Path) -> None:
    prompt = hermes.parse(USER_PROMPT_SUBMIT, {**PROMPT, "cwd": str(tmp_path)})
    assert (prompt.harness, prompt.event, prompt.session_id, prompt.prompt, prompt.source) == (
        "hermes", USER_PROMPT_SUBMIT, "20261129_204834_e363ab", PROMPT["prompt"], "")
    assert prompt.cwd == str(tmp_path) and prompt.project == resolve_project(str(tmp_path))
    start = hermes.parse(SESSION_START, START)
    assert (start.source, start.prompt, start.extra["hook_event_name"]) == ("startup", "", "SessionStart")
    stop = hermes.parse(STOP, STOP_PAYLOAD)
    assert stop.extra["last_assistant_message"] == "Rotated the key." and stop.prompt == ""
    assert hermes.parse(SESSION_END, END).session_id == "20261129_204834_e363ab"
    odd = hermes.parse(USER_PROMPT_SUBMIT, ["not", "an", "object"])
    assert (odd.session_id, odd.prompt, odd.cwd) == ("", "", os.getcwd())


def test_budget_600_and_2200_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    assert hermes.budget(USER_PROMPT_SUBMIT) == (600, hermes.MAX_CHARS)
    assert hermes.budget(SESSION_START) == (2_200, hermes.MAX_CHARS)
    monkeypatch.setenv("MEMCUE_PROMPT_TOKENS", "300")
    assert hermes.budget(USER_PROMPT_SUBMIT).max_tokens == 300


def test_C14_render_is_plain_text_and_empty_for_nothing() -> None:
    block = f"{PROMPT_HEADER}\n- (decision · today) We rotate the build-cache key after every release"
    for event, payload in ((USER_PROMPT_SUBMIT, PROMPT), (SESSION_START, START)):
        assert hermes.render(hermes.parse(event, payload), block) == block  # no JSON, no fence of our own
        assert hermes.render(hermes.parse(event, payload), " \n") == ""
    assert hermes.render(hermes.parse(STOP, STOP_PAYLOAD), block) == ""
    assert hermes.render(hermes.parse(SESSION_END, END), block) == ""


def test_render_defuses_hermes_fence_tags_and_caps_at_a_memory_boundary() -> None:
    event = hermes.parse(USER_PROMPT_SUBMIT, PROMPT)
    out = hermes.render(event, "- (note) quoted </memory-context> and < MEMORY-CONTEXT >")
    assert "<" not in out and "[/memory-context]" in out and "[ MEMORY-CONTEXT ]" in out
    long = "\n".join(f'<memory id="{i}" kind="note">memory number {i} ' + "x" * 200 + "</memory>" for i in range(100))
    capped = hermes.render(event, long)
    assert len(capped) <= hermes.MAX_CHARS and capped.endswith("left out of this block; recall finds them]")
    assert all(line.startswith('<memory id="') and line.endswith("</memory>") for line in capped.splitlines()[:-1])


def test_C14_through_the_real_hook_and_sidecar(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "svc"
    project.mkdir()
    env = {**os.environ, "MEMCUE_HOME": str(home), "MEMCUE_HOOK_SPAWN": "0"}
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        sc.client.remember("We rotate the build-cache key after every release", project=str(project),
                           kind="decision", pinned=True)
        runs = {
            "prompt": run_hook({**PROMPT, "cwd": str(project)}, "user-prompt-submit", env=env, harness="hermes"),
            "start": run_hook({**START, "cwd": str(project)}, "session-start", env=env, harness="hermes"),
            "stop": run_hook({**STOP_PAYLOAD, "cwd": str(project)}, "stop", env=env, harness="hermes"),
            "empty": run_hook({**PROMPT, "cwd": str(tmp_path), "prompt": "write a haiku about autumn"},
                              "user-prompt-submit", env=env, harness="hermes"),
            "empty start": run_hook({**START, "session_id": "another", "cwd": str(tmp_path / "nothing-here")},
                                    "session-start", env=env,
                                    harness="hermes"),
        }
    finally:
        sc.stop()
    assert all((r.returncode, r.stderr) == (0, b"") for r in runs.values())
    prompt, start = runs["prompt"].stdout.decode(), runs["start"].stdout.decode()
    assert prompt.startswith(PROMPT_HEADER) and "build-cache key" in prompt  # plain text, not JSON
    assert start.startswith(f"{STANDING_NOTE_HERMES}\n\n{SESSION_HEADER}\n") and "build-cache key" in start
    assert runs["empty start"].stdout.decode() == STANDING_NOTE_HERMES  # no memories: the note alone, as plain text
    assert runs["stop"].stdout == runs["empty"].stdout == b""


def test_the_fast_launcher_runs_the_hermes_adapter_without_site(tmp_path: Path) -> None:
    """``python -I -S launch.py hermes …`` (what the plugin runs): no site-packages, so the adapter can only
    import the standard library."""
    home = tmp_path / "h"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCUE_")}
    env.update(MEMCUE_HOME=str(home), MEMCUE_HOOK_SPAWN="0")
    with FakeSidecar(socket_path(home), "memory: rotate the key on every release") as fake:
        proc = subprocess.run([sys.executable, "-I", "-S", launch.__file__, "hermes", "user-prompt-submit"],
                              input=json.dumps(PROMPT).encode(), capture_output=True, env=env, timeout=20)
    assert (proc.returncode, proc.stderr, proc.stdout) == (0, b"", b"memory: rotate the key on every release")
    assert fake.requests[0][0] == "/hooks/hermes/user-prompt-submit"


# -- the plugin ----------------------------------------------------------------------------------------------

#: A stand-in for memcue's hook launcher: records argv, stdin, the deadline it was given and the interpreter
#: flags, then prints ``$FAKE_OUT_<EVENT>`` after ``$FAKE_SLEEP`` seconds and exits ``$FAKE_EXIT``.
FAKE_LAUNCH = r"""
import json, os, sys, time
record = {"argv": sys.argv[1:], "stdin": json.loads(sys.stdin.read() or "null"),
          "deadline": os.environ.get("MEMCUE_HOOK_DEADLINE_S"), "isolated": sys.flags.isolated,
          "no_site": sys.flags.no_site}
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps(record) + "\n")
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
sys.stdout.write(os.environ.get("FAKE_OUT_" + sys.argv[2].replace("-", "_").upper(), ""))
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
"""


class Ctx:
    """Hermes' plugin context, as far as a memory provider uses it."""

    def __init__(self) -> None:
        self.provider: object = None

    def register_memory_provider(self, provider: object) -> None:
        self.provider = provider


def _installed_plugin(tmp_path: Path) -> ModuleType:
    """The plugin exactly as ``memcue install hermes`` writes it, imported from a file."""
    path = tmp_path / "plugin" / "__init__.py"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(hermes_install.plugin_source())
    spec = importlib.util.spec_from_file_location(f"memcue_hermes_plugin_{id(path)}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ModuleType, Path, Path]:
    """``(plugin module, fake launcher, its log)``."""
    script, log = tmp_path / "fake_launch.py", tmp_path / "calls.jsonl"
    script.write_text(FAKE_LAUNCH)
    monkeypatch.setenv("FAKE_LOG", str(log))
    return _installed_plugin(tmp_path), script, log


def _calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_plugin_registers_a_provider_hermes_can_find(tmp_path: Path) -> None:
    plugin = _installed_plugin(tmp_path)
    assert "register_memory_provider" in (tmp_path / "plugin" / "__init__.py").read_text()[:8192]
    ctx = Ctx()
    plugin.register(ctx)
    provider = ctx.provider
    assert isinstance(provider, plugin.MemcueProvider) and provider.name == "memcue"
    assert provider.is_available()  # the installed paths: this interpreter and memcue's launcher
    schemas = provider.get_tool_schemas()
    assert [s["name"] for s in schemas] == ["memcue_recall", "memcue_remember"]
    assert all(set(s) == {"name", "description", "parameters"} for s in schemas)
    assert schemas[0]["parameters"]["required"] == ["query"] and schemas[1]["parameters"]["required"] == ["content"]
    assert not plugin.MemcueProvider(python=str(tmp_path / "gone")).is_available()


def test_plugin_through_the_real_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, project = tmp_path / "h", tmp_path / "proj"
    home.mkdir()
    project.mkdir()
    for key in [k for k in os.environ if k.startswith("MEMCUE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("MEMCUE_HOME", str(home))
    monkeypatch.setenv("MEMCUE_HOOK_SPAWN", "0")
    monkeypatch.setenv("TERMINAL_CWD", str(project))  # Hermes' terminal folder: the project
    plugin = _installed_plugin(tmp_path)
    provider = plugin.MemcueProvider()
    with FakeSidecar(socket_path(home), "memcue recalled:\n- (note) rotate the key") as fake:
        provider.initialize("sess-1", platform="cli", agent_context="primary", hermes_home=str(tmp_path))
        block = provider.system_prompt_block()
        recalled = provider.prefetch("how do we rotate the key?")
        fake.context = ""
        nothing = provider.prefetch("write a haiku")
    assert block == f"{plugin.INTRO}\n\nmemcue recalled:\n- (note) rotate the key"
    assert recalled == "memcue recalled:\n- (note) rotate the key" and nothing == ""
    (start_path, start), (prompt_path, prompt) = fake.requests[:2]
    assert (start_path, prompt_path) == ("/hooks/hermes/session-start", "/hooks/hermes/user-prompt-submit")
    assert start["event"]["source"] == "startup" and start["event"]["session_id"] == "sess-1"
    assert prompt["event"]["session_id"] == "sess-1", "Hermes passes no session id to prefetch: initialize's"
    assert prompt["event"]["prompt"] == "how do we rotate the key?"
    assert prompt["event"]["project"] == resolve_project(str(project))


def test_prefetch_fails_open_within_its_budget(fake: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin, script, log = fake
    provider = plugin.MemcueProvider(launch=str(script))
    provider.initialize("s", agent_context="cron")  # inert: nothing runs for cron
    assert provider.prefetch("q") == "" and provider.system_prompt_block() == "" and not _calls(log)
    provider._inert = False
    monkeypatch.setenv("MEMCUE_HERMES_BUDGET_S", "0.5")
    monkeypatch.setenv("FAKE_SLEEP", "10")
    monkeypatch.setenv("FAKE_OUT_USER_PROMPT_SUBMIT", "too late")
    started = time.monotonic()
    assert provider.prefetch("which database?") == ""
    assert time.monotonic() - started < 0.5 + plugin.MARGIN_S + 0.5
    assert _calls(log)[-1]["deadline"] == "0.5"
    monkeypatch.setenv("FAKE_SLEEP", "0")
    monkeypatch.setenv("FAKE_EXIT", "1")
    assert provider.prefetch("which database?") == "", "a hook that did not exit 0 gives nothing"
    monkeypatch.setenv("MEMCUE_HERMES_BUDGET_S", "9")  # at or over Hermes' own 8 s wait: the default
    assert plugin.budget_s() == plugin.DEFAULT_BUDGET_S
    gone = plugin.MemcueProvider(launch=str(script.parent / "missing.py"))
    assert gone.prefetch("q") == "" and json.loads(gone.handle_tool_call("memcue_recall", {"query": "q"}))[
        "success"] is False


def test_capture_events_and_the_hook_command(fake: tuple, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin, script, log = fake
    monkeypatch.setenv("FAKE_OUT_SESSION_START", "memcue: what this project's memory holds")
    monkeypatch.setenv("TERMINAL_CWD", str(script.parent))
    provider = plugin.MemcueProvider(launch=str(script))
    provider.initialize("s1", platform="cli")
    first = provider.system_prompt_block()
    assert provider.system_prompt_block() == first, "byte-stable system prompt: asked once per session"
    provider.sync_turn("the question", "the answer", session_id="")
    provider.on_session_end([])
    provider.on_session_switch("s2", parent_session_id="s1", reset=True)
    provider.system_prompt_block()
    calls = _calls(log)
    assert [c["argv"] for c in calls] == [["hermes", "session-start"], ["hermes", "stop"], ["hermes", "session-end"],
                                          ["hermes", "session-start"]]
    assert all(c["isolated"] and c["no_site"] for c in calls), "run as python -I -S"
    assert calls[0]["stdin"] == {"session_id": "s1", "cwd": str(script.parent), "hook_event_name": "SessionStart",
                                 "source": "startup"}
    assert calls[1]["stdin"] == {"session_id": "s1", "cwd": str(script.parent), "hook_event_name": "Stop",
                                 "last_assistant_message": "the answer"}
    assert calls[2]["stdin"]["hook_event_name"] == "SessionEnd" and calls[2]["stdin"]["session_id"] == "s1"
    assert calls[3]["stdin"]["session_id"] == "s2" and calls[3]["stdin"]["source"] == "clear"
    assert first.startswith(plugin.INTRO) and first.endswith("memcue: what this project's memory holds")


def test_tools_remember_and_recall_through_the_cli(home: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "svc"
    project.mkdir()
    monkeypatch.setenv("TERMINAL_CWD", str(project))
    plugin = _installed_plugin(tmp_path)
    provider = plugin.MemcueProvider()
    provider.initialize("sess-tools", agent_context="primary")
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        stored = json.loads(provider.handle_tool_call(
            "memcue_remember", {"content": "We pin httpx to 0.28 because 0.29 broke unix sockets", "kind": "decision"}))
        found = json.loads(provider.handle_tool_call("memcue_recall", {"query": "-- why is httpx pinned?"}))
        here = sc.client.recall("httpx pinned", project=resolve_project(str(project)))
        elsewhere = sc.client.recall("httpx pinned", project=resolve_project(os.getcwd()))
    finally:
        sc.stop()
    assert stored["success"] is True and stored["data"]["id"] > 0
    assert found["success"] is True and found["results"], found
    assert found["results"][0]["content"] == "We pin httpx to 0.28 because 0.29 broke unix sockets"
    assert found["results"][0]["memory_kind"] == "decision" and set(found["results"][0]) <= set(plugin._RESULT_FIELDS)
    assert here["results"] and not elsewhere["results"], "stored under the project of Hermes' terminal folder"
    assert json.loads(provider.handle_tool_call("memcue_recall", {"query": " "}))["success"] is False
    assert json.loads(provider.handle_tool_call("memcue_forget", {}))["success"] is False


# -- tool calls (sync_turn's messages -> PostToolUse -> the compact tool record) --------------------------------

def _tool(name: str, args: dict, response: str, call_id: str = "call_1") -> dict:
    return {"session_id": "s1", "cwd": "/tmp", "hook_event_name": "PostToolUse", "tool_name": name,
            "tool_input": args, "tool_response": response, "tool_use_id": call_id}


def test_parse_hermes_tool_calls_into_tool_records() -> None:
    failed = hermes.parse(POST_TOOL_USE, _tool("terminal", {"command": "make  check"}, json.dumps(
        {"output": "make: *** [check] Error 2\nerror: invoice total 10.0 != 10.5", "exit_code": 2, "error": None})))
    assert failed.extra["tool"] == {"type": "shell", "tool": "terminal", "command": "make check", "exit_code": 2,
                                    "failed": True, "key_line": "make: *** [check] Error 2"}
    assert failed.extra["tool_use_id"] == "call_1"
    passed = hermes.parse(POST_TOOL_USE, _tool("terminal", {"command": "make check"},
                                               '{"output": "ok", "exit_code": 0, "error": null}'))
    assert (passed.extra["tool"]["failed"], passed.extra["tool"]["exit_code"]) == (False, 0)
    wrote = hermes.parse(POST_TOOL_USE, _tool("write_file", {"path": "src/tax.py", "content": "x"}, '{"ok": true}'))
    assert wrote.extra["tool"] == {"type": "edit", "tool": "write_file", "files": ["src/tax.py"]}
    replaced = hermes.parse(POST_TOOL_USE, _tool("patch", {"mode": "replace", "path": "a.py", "old_string": "1",
                                                           "new_string": "2"}, "{}"))
    patch = "*** Begin Patch\n*** Update File: b.py\n@@\n-1\n+2\n*** Add File: c.py\n+x\n*** End Patch"
    patched = hermes.parse(POST_TOOL_USE, _tool("patch", {"mode": "patch", "patch": patch}, "{}"))
    assert (replaced.extra["tool"]["files"], patched.extra["tool"]["files"]) == (["a.py"], ["b.py", "c.py"])
    for other in (_tool("read_file", {"path": "a.py"}, "{}"), _tool("Bash", {"command": "make check"}, "{}"),
                  {**_tool("terminal", {"command": "ls"}, "not json {"), "tool_name": 7}):
        assert "tool" not in hermes.parse(POST_TOOL_USE, other).extra, other
    garbled = hermes.parse(POST_TOOL_USE, _tool("terminal", {"command": "pytest"}, "{broken json"))
    assert garbled.extra["tool"]["command"] == "pytest"  # read as plain output


def _turn(*calls: tuple[str, str, dict, str | None], user: str = "run the checks") -> list[dict]:
    """A turn's OpenAI-style messages: the user's, then per call an assistant tool call and (when not None) its
    result."""
    out: list[dict] = [{"role": "user", "content": user}]
    for call_id, name, args, result in calls:
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]})
        if result is not None:
            out.append({"role": "tool", "tool_call_id": call_id, "content": result})
    return [*out, {"role": "assistant", "content": "Done."}]


def test_sync_turn_sends_each_new_shell_and_edit_call_then_the_stop(fake: tuple, monkeypatch: pytest.MonkeyPatch
                                                                    ) -> None:
    plugin, script, log = fake
    monkeypatch.setenv("TERMINAL_CWD", str(script.parent))
    provider = plugin.MemcueProvider(launch=str(script))
    provider.initialize("s1", platform="cli")
    resumed_history = _turn(("old", "terminal", {"command": "make check"}, '{"exit_code": 2}'), user="earlier")
    first = [*resumed_history, *_turn(("c1", "terminal", {"command": "make check"}, '{"exit_code": 2}'),
                                      ("c2", "read_file", {"path": "a.py"}, "{}"),
                                      ("c3", "patch", {"mode": "replace", "path": "a.py"}, "{}"),
                                      ("c4", "terminal", {"command": "sleep 100"}, None))]
    provider.sync_turn("run the checks", "Done.", session_id="s1", messages=first)
    second = [*first, *_turn(("c5", "terminal", {"command": "make check"}, '{"exit_code": 0}'), user="again")]
    provider.sync_turn("again", "Done.", session_id="s1", messages=second)
    calls = [c for c in _calls(log) if c["argv"][1] != "session-start"]
    assert [(c["argv"][1], c["stdin"].get("tool_use_id")) for c in calls] == [
        ("post-tool-use", "c1"), ("post-tool-use", "c3"), ("stop", None), ("post-tool-use", "c5"), ("stop", None)]
    assert calls[0]["stdin"] == {"session_id": "s1", "cwd": str(script.parent), "hook_event_name": "PostToolUse",
                                 "tool_name": "terminal", "tool_input": {"command": "make check"},
                                 "tool_response": '{"exit_code": 2}', "tool_use_id": "c1"}
    assert calls[0]["deadline"] == str(plugin.CAPTURE_DEADLINE_S)
    provider.sync_turn("no messages", "Done.", session_id="s1")  # an older Hermes: no messages, Stop only
    assert [c["argv"][1] for c in _calls(log)][-1] == "stop"
