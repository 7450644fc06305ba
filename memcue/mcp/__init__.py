"""memcue's MCP server (``memcue mcp``, official MCP Python SDK, stdio): a thin client of the sidecar.

- ``server``: the tools, their descriptions (which teach the recall discipline) and ``main``;
- ``shape``: argument reading (ids, project) and the agent's view of a recall answer;
- ``backend``: the sidecar connection, started on demand; errors become ``success: false`` results.
"""

from memcue.mcp.server import build_server, main

__all__ = ["build_server", "main"]
