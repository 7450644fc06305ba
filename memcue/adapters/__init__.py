"""The harness registry: a harness name maps to the module that adapts it.

Standard library only (the hook imports this). Each module listed in ``HARNESSES`` provides what
``memcue.adapters.base.Adapter`` names (``NAME``, ``parse``, ``budget``, ``render``) plus ``EVENTS``, a
mapping from memcue's event names to the harness's own. Adding a harness is one new module and one line
here. Modules are imported lazily so the hook loads only the adapter it runs.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: memcue harness name -> module implementing its adapter.
HARNESSES: dict[str, str] = {
    "claude-code": "memcue.adapters.claude_code",
    "codex": "memcue.adapters.codex",
    "hermes": "memcue.adapters.hermes",
}


def _fold(name: str) -> str:
    """Case- and separator-insensitive form of a name: ``User_Prompt-Submit`` -> ``userpromptsubmit``."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def harness_name(name: str) -> str | None:
    """The registered harness name for ``name`` (``Claude_Code`` -> ``claude-code``), or None if unknown."""
    folded = _fold(name)
    for known in HARNESSES:
        if _fold(known) == folded:
            return known
    return None


def get(name: str) -> ModuleType | None:
    """The adapter module for harness ``name``, or None when the name is unknown.

    Raises ``ImportError`` when the name is registered but its module cannot be imported.
    """
    known = harness_name(name)
    if known is None:
        return None
    return importlib.import_module(HARNESSES[known])


def event_name(adapter: ModuleType, name: str) -> str | None:
    """memcue's event name for ``name`` as the CLI or the harness spells it, or None if unsupported.

    ``user-prompt-submit``, ``UserPromptSubmit`` and ``userpromptsubmit`` all give ``user-prompt-submit``
    when the adapter lists that event in its ``EVENTS`` mapping.
    """
    folded = _fold(name)
    events: dict[str, str] = getattr(adapter, "EVENTS", {})
    for ours, theirs in events.items():
        if folded in (_fold(ours), _fold(theirs)):
            return ours
    return None
