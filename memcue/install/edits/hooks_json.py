"""The JSON hooks file Claude Code (``settings.json``) and Codex (``hooks.json``) share: parse, merge, remove.

Both read ``{"hooks": {"<Event>": [{"matcher"?, "hooks": [{"type": "command", "command": ..., "timeout": <s>}]}]}}``
(Codex: ``command`` is one shell string and ``timeout`` must be an integer, or it discards the whole file).
memcue adds one group per event, without a matcher (so SessionStart covers every source) except where the
registry names one (PreToolUse: the edit and shell tools only), with an explicit integer timeout. Our hooks are
recognised by our hook command (``memcue/hooks/launch.py`` or ``-m memcue.hooks``), so a changed interpreter
path is updated in place rather than added twice. Every other key, group and hook is kept as it is, in order.
The file is read as strict JSON (a UTF-8 byte-order mark is kept; an empty file counts as ``{}``); anything
else is refused with a clear error and no write (case C12).
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from memcue.hooks import command
from memcue.install.edits.files import InstallError

_BOM = b"\xef\xbb\xbf"
#: JSON's names for what ``json.loads`` returns (for error messages).
_JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}
_OURS = re.compile(r"memcue[/\\]hooks[/\\]launch\.py|-m\s+memcue\.hooks\b")


#: Characters a POSIX shell still acts on inside double quotes (``!`` only in an interactive bash, quoted
#: anyway) and a newline: a path holding none is written in double quotes, the form memcue always wrote.
_ACTIVE_IN_DOUBLE_QUOTES = re.compile(r'[$`"\\!\n]')


def shell_quote(arg: str) -> str:
    """``arg`` quoted for a POSIX shell (``sh -c``, which Claude Code and Codex run ``command`` through), with
    forward slashes for the OS separator: ``"arg"`` when nothing in it is active inside double quotes (so an
    ordinary path keeps the exact form older installs wrote), else single quotes (``shlex.quote``) that keep
    every character, ``$``, backquote, ``"``, ``\\``, ``'``, space and non-ASCII included."""
    arg = arg.replace(os.sep, "/")
    if _ACTIVE_IN_DOUBLE_QUOTES.search(arg) is None:
        return f'"{arg}"'
    return shlex.quote(arg)


def hook_command(harness: str, event: str, python: str | None = None) -> str:
    """The shell command for ``harness``'s ``event`` (a memcue event name): the absolute interpreter and
    launcher paths quoted by ``shell_quote`` (``memcue.hooks.command``), the other words as they are."""
    argv = command(harness, event, python or sys.executable)
    return " ".join(shell_quote(a) if i in (0, 3) else a for i, a in enumerate(argv))


def is_ours(hook: object) -> bool:
    """True for a hook entry that runs memcue's hook."""
    return isinstance(hook, dict) and isinstance(hook.get("command"), str) and bool(_OURS.search(hook["command"]))


class _NotFinite(ValueError):
    """A number in the file that is not a finite float (``1e400``, ``NaN``, ``Infinity``)."""


def _finite(literal: str) -> float:
    """The float of a JSON number ``literal`` (or of ``NaN``/``Infinity``, which ``float`` reads too); raises
    ``_NotFinite`` unless it is finite."""
    value = float(literal)
    if math.isinf(value) or math.isnan(value):
        raise _NotFinite(literal)
    return value


def parse(data: bytes | None, path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(settings, style)`` from the file's bytes (None: no file). ``style`` remembers the BOM, the
    indent and the final newline so a write changes only what memcue changes. Raises ``InstallError``."""
    style: dict[str, Any] = {"bom": False, "indent": 2, "newline": True}
    if data is None:
        return {}, style
    if data.startswith(_BOM):
        style["bom"], data = True, data[len(_BOM):]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InstallError(f"{path} is not UTF-8 text; memcue changed nothing") from None
    if not text.strip():
        return {}, style
    try:
        settings = json.loads(text, parse_float=_finite, parse_constant=_finite)
    except _NotFinite as exc:
        raise InstallError(f"{path} holds {exc}, a number JSON cannot hold (written back it would be "
                           "Infinity or NaN, which the harness cannot read); memcue changed nothing") from None
    except json.JSONDecodeError as exc:
        raise InstallError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); memcue changed "
            "nothing. The harness itself needs strict JSON: fix the file (comments and trailing commas are "
            "not allowed), then run the install again.") from None
    if not isinstance(settings, dict):
        raise InstallError(f"{path} holds a JSON {_JSON_TYPES.get(type(settings), 'value')}, not an object; memcue "
                           "changed nothing. The harness reads its settings as one JSON object ({...}): fix the file "
                           "or move it away, then run the install again.")
    found = re.search(r"\n([ \t]+)\S", text)
    style["indent"] = found.group(1) if found else 2
    style["newline"] = text.endswith("\n")
    return settings, style


def dump(settings: dict[str, Any], style: dict[str, Any]) -> bytes:
    """The file's bytes for ``settings`` in ``style`` (see ``parse``)."""
    indent = style["indent"]
    text = json.dumps(settings, indent=indent, ensure_ascii=False)
    return (_BOM if style["bom"] else b"") + (text + ("\n" if style["newline"] else "")).encode("utf-8")


def _groups(settings: dict[str, Any], event: str, path: Path, create: bool) -> list[Any] | None:
    hooks = settings.get("hooks")
    if hooks is None:
        if not create:
            return None
        hooks = settings["hooks"] = {}
    if not isinstance(hooks, dict):
        raise InstallError(f'{path}: "hooks" is not an object; memcue changed nothing. The harness reads "hooks" as '
                           'an object of events ({"UserPromptSubmit": [...]}): fix it, then run the install again.')
    groups = hooks.get(event)
    if groups is None:
        if not create:
            return None
        groups = hooks[event] = []
    if not isinstance(groups, list):
        raise InstallError(f'{path}: "hooks.{event}" is not a list; memcue changed nothing')
    return groups


def install(settings: dict[str, Any], path: Path, harness: str, events: dict[str, tuple[str, int]],
            python: str | None = None, background: frozenset[str] = frozenset(),
            matchers: dict[str, str] | None = None) -> dict[str, Any]:
    """``settings`` with memcue's hooks for ``events`` (harness event -> (memcue event, timeout s)) present and
    current (edited in place and returned); the events named in ``background`` get ``"async": true`` (Claude
    Code runs them without blocking the agent); the groups of events in ``matchers`` (harness event -> tool-name
    pattern) get that ``"matcher"``. Raises ``InstallError`` when the hooks section has an unexpected shape."""
    for event, (ours, timeout) in events.items():
        groups = _groups(settings, event, path, create=True)
        assert groups is not None
        want: dict[str, Any] = {"type": "command", "command": hook_command(harness, ours, python), "timeout": timeout}
        if event in background:
            want["async"] = True
        matcher = (matchers or {}).get(event)
        mine = [(g, h) for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                for h in g["hooks"] if is_ours(h)]
        if mine:
            for group, hook in mine:  # update in place: same position, other keys of the entry kept
                hook.update(want)
                if matcher:
                    group["matcher"] = matcher
        else:
            groups.append({"matcher": matcher, "hooks": [want]} if matcher else {"hooks": [want]})
    return settings


def uninstall(settings: dict[str, Any], path: Path, events: dict[str, tuple[str, int]]) -> dict[str, Any]:
    """``settings`` without memcue's hooks for ``events``; groups, event lists and ``hooks`` left empty by
    that go too."""
    for event in list(events):
        groups = _groups(settings, event, path, create=False)
        if groups is None:
            continue
        for group in list(groups):
            if isinstance(group, dict) and isinstance(group.get("hooks"), list) and any(map(is_ours, group["hooks"])):
                group["hooks"] = [h for h in group["hooks"] if not is_ours(h)]
                if not group["hooks"]:
                    groups.remove(group)
        if not groups:
            del settings["hooks"][event]
    if settings.get("hooks") == {}:
        del settings["hooks"]
    return settings
