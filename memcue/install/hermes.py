"""Wiring memcue into Hermes Agent: ``memory.provider: memcue`` in ``$HERMES_HOME/config.yaml`` (default
``~/.hermes/config.yaml``) and memcue's provider plugin at ``$HERMES_HOME/plugins/memcue/__init__.py``.

Hermes runs one external memory provider at a time, chosen by ``memory.provider`` (Hermes 0.19
``agent/agent_init.py:1453``), and finds user plugins in ``$HERMES_HOME/plugins/<name>/`` (``plugins/memory/
__init__.py:99``). The install sets the key and records the provider it replaced; the uninstall puts that one
back. ``hermes memory setup`` is not used: it rewrites the whole config.yaml (comments dropped,
``_config_version`` added). The file is edited round-trip through ``install.edits.yaml_file``; a file ruamel.yaml would
not give back byte for byte is refused, with the two lines to add by hand. The plugin is the text of
``memcue/install/templates/hermes_plugin.py`` (it runs in Hermes' interpreter: copied, never imported) with
``MEMCUE_PYTHON`` and ``MEMCUE_LAUNCH`` filled in, so a second install writes the same bytes. No MCP server:
the provider already gives the agent memcue's tools.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap

from memcue.harnesses import HARNESSES, hook_events
from memcue.hooks import command
from memcue.install import base, doctor, placement
from memcue.install.edits import yaml_file
from memcue.install.edits.files import InstallError, read_bytes

NAME = "hermes"
#: Hermes' event names as the plugin sends them -> (memcue event, None: the plugin keeps its own deadlines).
EVENTS = hook_events(NAME)
#: The provider name: the plugin folder's name and the value of ``memory.provider``.
PROVIDER = "memcue"
#: The plugin's source in this package (copied with the two constants filled in).
PLUGIN_SOURCE = Path(__file__).resolve().parent / "templates" / "hermes_plugin.py"
#: What ``memcue install hermes --mcp`` says.
MCP_NOTE = "Hermes: no MCP server needed (its memory provider gives the agent memcue_recall and memcue_remember)"
#: Hermes needs no MCP server: ``memcue install hermes`` registers none unless asked (``--mcp``: ``MCP_NOTE``).
MCP_BY_DEFAULT = False
#: What to add by hand when memcue will not rewrite the file.
MANUAL_LINES = f"memory:\n  provider: {PROVIDER}\n"
#: Lines an install or uninstall may change: the top-level ``memory:`` key and an indented ``provider:`` key.
_OUR_LINE = re.compile(r"memory\s*:|[ \t]+provider\s*:")
_CONSTANT = {name: re.compile(rf"^{name} = .*$", re.MULTILINE) for name in ("MEMCUE_PYTHON", "MEMCUE_LAUNCH")}

__all__ = ["EVENTS", "MCP_BY_DEFAULT", "NAME", "PROVIDER", "check", "dump", "files", "install", "install_note",
           "install_state", "keep_out_of_git", "mcp_add", "mcp_registered", "mcp_remove", "parse", "plugin_path",
           "project_settings_path", "settings_path", "uninstall"]


def hermes_home() -> Path:
    """``$HERMES_HOME``, else ``~/.hermes`` (Hermes 0.19 ``hermes_constants.py:55``)."""
    base = os.environ.get("HERMES_HOME", "").strip()
    return Path(base).expanduser() if base else Path.home() / ".hermes"


def settings_path() -> Path:
    """``$HERMES_HOME/config.yaml``."""
    return hermes_home() / "config.yaml"


def plugin_path() -> Path:
    """``$HERMES_HOME/plugins/memcue/__init__.py``."""
    return hermes_home() / "plugins" / PROVIDER / "__init__.py"


def _memory(settings: CommentedMap, path: Path) -> CommentedMap | None:
    """The ``memory`` mapping, None when absent or empty (``memory:`` with nothing under it). Raises
    ``InstallError`` when it is something else."""
    memory = settings.get("memory")
    if memory is None or isinstance(memory, CommentedMap):
        return memory
    raise InstallError(f'{path}: "memory" is a YAML {yaml_file.kind(memory)}, not a mapping; memcue changed nothing')


def parse(data: bytes | None, path: Path) -> tuple[CommentedMap, dict[str, Any]]:
    """``(settings, style)`` from config.yaml's bytes (see ``yaml_file.parse``). Raises ``InstallError`` for a
    file that is not YAML, a top level that is not a mapping, or a ``memory`` that is not one."""
    settings, style = yaml_file.parse(data, path)
    _memory(settings, path)
    return settings, style


def dump(settings: CommentedMap, style: dict[str, Any]) -> bytes:
    """config.yaml's bytes for ``settings``. Raises ``InstallError`` (telling the user the lines to change
    themselves) when ruamel.yaml would reformat the file, or when anything but the ``memory:`` and ``provider:``
    lines would change."""
    installing = isinstance(settings.get("memory"), dict) and settings["memory"].get("provider") == PROVIDER
    try:
        data = yaml_file.dump(settings, style)
        text = data.decode("utf-8").removeprefix("\ufeff")
        stray = [line for line in yaml_file.changed_lines(style["text"], text) if not _OUR_LINE.match(line)]
    except yaml_file.RoundTripError:
        stray = ["(the whole file)"]
    if not stray:
        return data
    what = "reformat it" if stray == ["(the whole file)"] else f"change other lines too ({stray[0].strip()!r})"
    if installing:
        how = (f"Add these two lines to it yourself (or only `provider: {PROVIDER}` under an existing `memory:`):"
               f"\n\n{MANUAL_LINES}\nthen run `memcue install hermes` again to write the plugin.")
    else:
        how = (f"Remove `provider: {PROVIDER}` from its `memory:` section yourself, then run `memcue uninstall "
               "hermes` again to remove the plugin.")
    raise InstallError(f"memcue will not rewrite your Hermes config: ruamel.yaml would {what}. Nothing was "
                       f"changed. {how}")


def install(settings: CommentedMap, path: Path, python: str | None = None, mcp: bool = False) -> CommentedMap:
    """``settings`` with ``memory.provider: memcue`` (edited in place and returned): the value replaced where
    the key exists, else the key put first in ``memory`` (which is created when absent). ``mcp`` changes
    nothing (Hermes needs no MCP server)."""
    memory = _memory(settings, path)
    if memory is None:
        settings["memory"] = CommentedMap(provider=PROVIDER)
    elif "provider" in memory:
        memory["provider"] = PROVIDER
    else:
        memory.insert(0, "provider", PROVIDER)
    return settings


def install_state(settings: CommentedMap, recorded: dict[str, Any]) -> dict[str, Any]:
    """What an install of ``settings`` replaces, for the record: ``{"provider": the previous
    ``memory.provider`` or None, "memory": "mapping" | "empty" | "absent"}``. When memcue is already the
    provider, ``recorded`` (the first install's state) is kept."""
    memory = settings.get("memory")
    if isinstance(memory, dict) and memory.get("provider") == PROVIDER and recorded:
        return recorded
    if not isinstance(memory, dict):
        return {"provider": None, "memory": "empty" if "memory" in settings else "absent"}
    previous = memory.get("provider")
    return {"provider": None if previous == PROVIDER else previous, "memory": "mapping"}


def install_note(settings: CommentedMap) -> str:
    """The note for an install over ``settings``: which provider memcue replaces, if any."""
    memory = settings.get("memory")
    previous = memory.get("provider") if isinstance(memory, dict) else None
    if not previous or previous == PROVIDER:
        return ""
    return (f"memcue replaced Hermes' memory provider {previous!r} (Hermes runs one at a time); `memcue uninstall "
            "hermes` puts it back.")


def uninstall(settings: CommentedMap, path: Path, state: dict[str, Any] | None = None) -> CommentedMap:
    """``settings`` without memcue as the memory provider: the provider from ``state`` (``install_state``) put
    back, else the key removed; a ``memory`` section the install created, left empty, goes too (an empty one
    the user had comes back empty). A provider other than memcue is left alone."""
    memory = _memory(settings, path)
    state = state or {}
    if memory is None or memory.get("provider") != PROVIDER:
        return settings
    if state.get("provider"):
        memory["provider"] = state["provider"]
        return settings
    del memory["provider"]
    if not memory and state.get("memory") == "absent":
        del settings["memory"]
    elif not memory and state.get("memory") == "empty":
        settings["memory"] = None
    return settings


def plugin_source(python: str | None = None) -> bytes:
    """The plugin file's bytes: ``templates/hermes_plugin.py`` with ``MEMCUE_PYTHON`` (``python``, default this
    interpreter) and ``MEMCUE_LAUNCH`` (memcue's hook launcher) set to absolute paths. Raises ``InstallError``
    when the source cannot be read or lacks either constant."""
    argv = command(NAME, "session-start", python or sys.executable)
    values = {"MEMCUE_PYTHON": os.path.abspath(argv[0]), "MEMCUE_LAUNCH": os.path.abspath(argv[3])}
    try:
        text = PLUGIN_SOURCE.read_text(encoding="utf-8")
    except OSError as exc:
        raise InstallError(f"cannot read memcue's Hermes plugin {PLUGIN_SOURCE}: {exc}; nothing changed") from None
    for name, pattern in _CONSTANT.items():
        text, n = pattern.subn(lambda _m, name=name: f"{name} = {values[name]!r}", text)
        if n != 1:
            raise InstallError(f"{PLUGIN_SOURCE} must set {name} exactly once; nothing changed")
    return text.encode("utf-8")


def files(python: str | None = None) -> dict[Path, bytes]:
    """The whole files memcue owns in Hermes: ``{plugin_path(): plugin_source(python)}``."""
    return {plugin_path(): plugin_source(python)}


def _version() -> str:
    """Hermes' version from its package metadata beside the ``hermes`` program ("" when not found). Running
    ``hermes --version`` would make Hermes ask PyPI for updates."""
    path = shutil.which(HARNESSES[NAME].program)
    if not path:
        return ""
    venv = Path(path).resolve().parent.parent
    found = sorted(venv.glob("lib/python*/site-packages/hermes_agent-*.dist-info"))
    return f"hermes-agent {found[-1].name.removeprefix('hermes_agent-').removesuffix('.dist-info')}" if found else ""


def check() -> dict[str, Any]:
    """Doctor's finding: ``memory.provider`` in config.yaml names memcue, and memcue's plugin is there and
    current (this interpreter), plus Hermes' version."""
    path, plugin = settings_path(), plugin_path()
    detail: dict[str, Any] = {"path": str(path), "plugin": str(plugin), "version": _version()}
    try:
        settings, _ = parse(read_bytes(path), path)
        current = read_bytes(plugin)
    except InstallError as exc:
        return doctor.finding(NAME, doctor.PROBLEM, str(exc), **detail)
    memory = settings.get("memory") if isinstance(settings.get("memory"), dict) else {}
    if current is not None:  # what the plugin runs, for doctor's ``check_placement``
        detail["runs"] = placement.constant_paths(current.decode("utf-8", "replace"), tuple(_CONSTANT))
    if memory.get("provider") != PROVIDER and current is None:
        return doctor.not_wired(NAME, path, plugin=str(plugin), version=detail["version"])
    if memory.get("provider") != PROVIDER:
        return doctor.finding(NAME, doctor.PROBLEM, f"memory.provider in {path} is {memory.get('provider')!r}, not "
                                                    "memcue: run `memcue install hermes`", installed=True, **detail)
    if current != files()[plugin]:
        what = "missing" if current is None else "out of date"
        return doctor.finding(NAME, doctor.PROBLEM, f"the plugin {plugin} is {what}: run `memcue install hermes`",
                              installed=True, **detail)
    return doctor.finding(NAME, doctor.OK, f"memcue is Hermes' memory provider ({path}, plugin current)",
                          installed=True, **detail)


def mcp_add(state_dir: Path, argv: list[str], home: Path, replace: bool) -> str:
    """``MCP_NOTE``: Hermes needs no MCP server; nothing is registered."""
    return MCP_NOTE


project_settings_path = base.no_project_settings
keep_out_of_git = base.nothing_to_keep_out
mcp_registered = base.no_mcp_server
mcp_remove = base.nothing_to_remove
mcp_preview = base.nothing_to_preview
