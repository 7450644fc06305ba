"""Which standing note a harness's session gets: the one naming the tools that session really has.

memcue's default install registers its MCP server with Claude Code and Codex; ``--no-mcp`` leaves it out, and
Hermes' agent gets the memory provider's own two tools instead (``core.blocks.STANDING_NOTES``). A note that
names tools the agent does not have sends it looking for them.
"""

from __future__ import annotations

from memcue.core.paths import Locations, mcp_record

__all__ = ["session_tools"]


def session_tools(locations: Locations, harness: str) -> str:
    """A key of ``core.blocks.STANDING_NOTES`` for a session of ``harness``: "hermes" for Hermes; "none" when
    ``memcue install`` wired the harness's hooks (its install record is in the data dir) without registering
    memcue's MCP server with it (no ``mcp-<harness>`` record: ``--no-mcp``); else "mcp", memcue's default install,
    also when memcue cannot tell (hooks written by hand, a server registered by hand)."""
    if harness == "hermes":
        return "hermes"
    hooks = locations.install_record(harness).exists()
    return "none" if hooks and not locations.install_record(mcp_record(harness)).exists() else "mcp"
