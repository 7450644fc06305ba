"""The harness adapters: a harness's payloads in, its stdout out; one module per harness.

Standard library only (the hook imports this). Each harness module (``memcue/adapters/<harness>.py``,
named by its row in ``memcue.harnesses``) provides what ``memcue.adapters.protocol.Adapter`` names
(``NAME``, ``EVENTS``, ``MAX_CHARS``, ``parse``, ``budget``, ``render``), taking the shared defaults from
``memcue.adapters.base`` where it does not differ. Modules are imported lazily so the hook loads only the
adapter it runs.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from memcue import harnesses
from memcue.harnesses import HARNESSES, harness_name

__all__ = ["HARNESSES", "event_name", "get", "harness_name"]


def get(name: str) -> ModuleType | None:
    """The adapter module for harness ``name`` (any case or separators), or None when the name is unknown.

    Raises ``ImportError`` when the name is registered but its module cannot be imported.
    """
    known = harness_name(name)
    if known is None:
        return None
    return importlib.import_module(HARNESSES[known].adapter)


def event_name(adapter: ModuleType, name: str) -> str | None:
    """memcue's event name for ``name`` as the CLI or the harness of ``adapter`` spells it, or None if
    unsupported: ``user-prompt-submit``, ``UserPromptSubmit`` and ``userpromptsubmit`` all give
    ``user-prompt-submit`` (``memcue.harnesses.event_name``)."""
    return harnesses.event_name(adapter.NAME, name)
