"""Every registered harness (``memcue.harnesses``) against the adapter and installer Protocols.

A new harness is one adapter module, one installer module and one registry row; this test is what holds the
three together: names present, events consistent with the registry, the adapter never raising on a bad
payload, the installer's defaults answering without touching the user's files.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from memcue import adapters, harnesses, install
from memcue.adapters.base import Budget, HookEvent
from memcue.adapters.protocol import Adapter
from memcue.install.protocol import Installer

NAMES = list(harnesses.HARNESSES)
#: Payloads a harness (or a broken pipe) may send: none of them may make ``parse`` raise.
BAD_PAYLOADS = [None, "", "garbage", 42, 3.5, True, [], ["x"], {}, {"cwd": 5, "prompt": ["x"], "session_id": None},
                {"prompt": "\ud800 lone surrogate", "source": {"nested": 1}, "transcript_path": 7},
                {"last_assistant_message": None, "hook_event_name": ["Stop"]}]


def _members(protocol: type) -> list[str]:
    """The names a Protocol requires: its annotated attributes and its methods."""
    methods = [name for name, _ in inspect.getmembers(protocol, inspect.isfunction) if not name.startswith("_")]
    return sorted({*protocol.__annotations__, *methods})


@pytest.fixture
def empty_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME and every harness's config folder in an empty temporary folder, no program on PATH."""
    for var, sub in (("HOME", "home"), ("CLAUDE_CONFIG_DIR", "claude"), ("CODEX_HOME", "codex"),
                     ("HERMES_HOME", "hermes"), ("MEMCUE_HOME", "memcue")):
        monkeypatch.setenv(var, str(tmp_path / sub))
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs"))
    return tmp_path


def test_the_registry_rows_are_complete() -> None:
    assert NAMES and harnesses.NAMES == tuple(NAMES)
    assert install.HARNESS_CHOICES == (*NAMES, "all")
    for name, row in harnesses.HARNESSES.items():
        assert row.name == name and harnesses.harness_name(name) == name
        assert row.adapter.startswith("memcue.adapters.") and row.installer.startswith("memcue.install.")
        assert isinstance(row.program, str) and row.program
        assert row.events and set(row.events) <= set(harnesses.EVENTS)
        for event in row.events.values():
            assert isinstance(event.name, str) and event.name
            assert event.timeout_s is None or (isinstance(event.timeout_s, int) and event.timeout_s > 0)


@pytest.mark.parametrize("name", NAMES)
def test_adapter_follows_the_protocol(name: str) -> None:
    adapter = adapters.get(name)
    assert adapter is not None and adapter.__name__ == harnesses.HARNESSES[name].adapter
    for member in _members(Adapter):
        assert hasattr(adapter, member), f"{adapter.__name__} lacks {member}"
    assert adapter.NAME == name
    assert adapter.EVENTS == harnesses.harness_events(name)
    assert isinstance(adapter.MAX_CHARS, int) and adapter.MAX_CHARS > 0
    for ours, event in harnesses.HARNESSES[name].events.items():
        assert adapters.event_name(adapter, event.name) == ours == adapters.event_name(adapter, ours)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("payload", BAD_PAYLOADS, ids=repr)
def test_adapter_parse_never_raises_and_render_of_nothing_is_nothing(name: str, payload: object) -> None:
    adapter = adapters.get(name)
    assert adapter is not None
    for ours in harnesses.HARNESSES[name].events:
        event = adapter.parse(ours, payload)
        assert isinstance(event, HookEvent) and (event.harness, event.event) == (name, ours)
        assert adapter.render(event, "") == ""
        budget = adapter.budget(ours)
        assert isinstance(budget, Budget) and budget.max_tokens > 0 and 0 < budget.max_chars <= adapter.MAX_CHARS


@pytest.mark.parametrize("name", NAMES)
def test_installer_follows_the_protocol(name: str, empty_home: Path) -> None:
    mod = install.installer(name)
    assert mod.__name__ == harnesses.HARNESSES[name].installer
    for member in _members(Installer):
        assert hasattr(mod, member), f"{mod.__name__} lacks {member}"
    assert mod.NAME == name
    assert mod.EVENTS == harnesses.hook_events(name)
    path = mod.settings_path()
    assert isinstance(path, Path) and not path.exists()
    project = mod.project_settings_path(empty_home / "project")
    assert project is None or isinstance(project, Path)
    assert mod.keep_out_of_git(empty_home / "project") == ""  # no .git folder: nothing to do
    assert isinstance(mod.files(None), dict)
    settings, style = mod.parse(None, path)
    state = mod.install_state(settings, {})
    assert isinstance(state, dict) and isinstance(mod.install_note(settings), str)
    wanted, _ = mod.parse(None, path)
    wanted = mod.install(wanted, path, "/usr/bin/python3")
    assert wanted != settings and isinstance(mod.dump(wanted, style), bytes)
    assert mod.uninstall(wanted, path, state) == settings, "an uninstall takes back what the install added"
    assert mod.mcp_registered() is None


@pytest.mark.parametrize("name", NAMES)
def test_doctor_check_of_a_harness_this_machine_lacks(name: str, empty_home: Path) -> None:
    finding = install.installer(name).check()
    assert finding["area"] == name and finding["status"] == "ok" and finding["installed"] is False
    assert "not on this machine" in finding["message"]
