"""Switches that are on unless the environment turns them off: ``0``, ``false``, ``no`` or ``off`` (any case,
spaces aside) turns one off; unset or anything else leaves it on. Standard library only (the hook reads one)."""

from __future__ import annotations

import os

#: The hook may start the sidecar when it is down (``hooks.run``).
HOOK_SPAWN_ENV = "MEMCUE_HOOK_SPAWN"
#: memcue's MCP server starts the sidecar in the background as it starts (``mcp.server``); ``memcue doctor``
#: turns it off when it times a start, so a check starts nothing that outlives it.
MCP_WARM_UP_ENV = "MEMCUE_MCP_WARM_UP"

__all__ = ["HOOK_SPAWN_ENV", "MCP_WARM_UP_ENV", "switched_off"]


def switched_off(name: str) -> bool:
    """True when the environment variable ``name`` is 0/false/no/off."""
    return os.environ.get(name, "").strip().lower() in ("0", "false", "no", "off")
