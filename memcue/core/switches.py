"""Switches that are on unless the environment turns them off: ``0``, ``false``, ``no`` or ``off`` (any case,
spaces aside) turns one off; unset or anything else leaves it on. Standard library only (the hook reads one)."""

from __future__ import annotations

import os

#: The hook may start the sidecar when it is down (``hooks.run``).
HOOK_SPAWN_ENV = "MEMCUE_HOOK_SPAWN"
#: memcue's MCP server starts the sidecar in the background as it starts (``mcp.server``); ``memcue doctor``
#: turns it off when it times a start, so a check starts nothing that outlives it.
MCP_WARM_UP_ENV = "MEMCUE_MCP_WARM_UP"

#: memcue's MCP server answers ``initialize`` and ``tools/list`` from the SDK's earlier answers while the SDK
#: loads (``mcp.early``).
MCP_EARLY_ENV = "MEMCUE_MCP_EARLY"

__all__ = ["HOOK_SPAWN_ENV", "MCP_EARLY_ENV", "MCP_WARM_UP_ENV", "switched_off"]


def switched_off(name: str) -> bool:
    """True when the environment variable ``name`` is 0/false/no/off."""
    return os.environ.get(name, "").strip().lower() in ("0", "false", "no", "off")
