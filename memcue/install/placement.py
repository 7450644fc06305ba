"""Where the hooks run memcue from: a stable tool install, a source checkout, or an interpreter that is gone.

``memcue install`` writes the absolute paths of the interpreter it runs from and of its hook launcher into each
harness's config. From a user install (``make install``: ``uv tool install``, or ``pipx install``) those paths
live in the tool's own environment and stay put. From a source checkout (the clone's ``.venv``, an editable
install) they live in the checkout, so moving or deleting it, or switching its branch, changes or turns off
every harness's memory without a word. ``memcue install`` and ``memcue doctor`` say so (``install_warning``,
``doctor.check_placement``); this module only looks at paths (nothing is imported or run).
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import tomllib
from pathlib import Path

__all__ = ["FIX", "command_paths", "constant_paths", "install_warning", "source_checkout", "this_install"]

#: How to move the hooks off a checkout, or off an interpreter that is gone (said by install and doctor).
FIX = ("install memcue as your tool, outside any checkout: `make install` in a memcue checkout (it runs `uv tool "
       "install`; `pipx install <checkout>` works too), then run `memcue install all` with that installed "
       "`memcue`, which points every hook at it")

_LAUNCHER = re.compile(r"memcue[/\\]hooks[/\\]launch\.py$")


def _names_memcue(pyproject: Path) -> bool:
    """True when ``pyproject`` is readable TOML whose ``[project] name`` is ``memcue``."""
    try:
        with pyproject.open("rb") as fh:
            project = tomllib.load(fh).get("project")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False
    return isinstance(project, dict) and project.get("name") == "memcue"


def source_checkout(path: str) -> Path | None:
    """The memcue source tree ``path`` lies in: the nearest folder above it holding a ``pyproject.toml`` of the
    project ``memcue`` (a clone or worktree, its ``.venv``, an editable install's package), or None (a tool
    environment, site-packages). ``path`` is made absolute, not resolved: a venv's ``bin/python`` is a link to
    the base interpreter, but the link is what the hook runs."""
    for folder in Path(os.path.abspath(path)).parents:
        if _names_memcue(folder / "pyproject.toml"):
            return folder
    return None


def command_paths(command: str) -> list[str]:
    """The interpreter and, when named, the hook launcher (``memcue/hooks/launch.py``) of one hook command as
    memcue writes it (a shell string, ``hooks_json.hook_command``); [] for one that cannot be split."""
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    return words[:1] + [w for w in words[1:] if _LAUNCHER.search(w)]


def constant_paths(source: str, names: tuple[str, ...]) -> list[str]:
    """The string values of the module-level assignments ``NAME = '...'`` in ``source`` (a Python file memcue
    wrote, such as Hermes' plugin), in ``names``' order; names not found or not a plain string are left out."""
    out = []
    for name in names:
        found = re.search(rf"^{name} = (.*)$", source, re.MULTILINE)
        try:
            value = ast.literal_eval(found.group(1)) if found else None
        except (ValueError, SyntaxError):
            value = None
        if isinstance(value, str) and value:
            out.append(value)
    return out


def this_install() -> list[str]:
    """The interpreter and hook launcher an install from this process writes (``memcue.hooks.command``)."""
    from memcue.hooks import command

    argv = command("claude-code", "session-start")
    return [argv[0], argv[3]]


def install_warning(paths: list[str] | None = None) -> str:
    """What ``memcue install`` says when the hooks it writes point into a source checkout (``paths``: the
    interpreter and launcher, default ``this_install()``), else ""."""
    for path in this_install() if paths is None else paths:
        root = source_checkout(path)
        if root is not None:
            return (f"the hooks run memcue from the source checkout {root} ({path}): moving or deleting that folder, "
                    f"or switching its branch, changes or turns off memory in every harness. Fine for working on "
                    f"memcue; for everyday use, {FIX}.")
    return ""

