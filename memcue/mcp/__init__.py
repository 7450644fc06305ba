"""memcue's MCP server (``memcue mcp``, official MCP Python SDK, stdio): a thin client of the sidecar.

- ``server``: the tools, their descriptions (which teach the recall discipline) and ``main``;
- ``shape``: argument reading (ids, project) and the agent's view of a recall answer;
- ``backend``: the sidecar connection, started on demand; errors become ``success: false`` results;
- ``early``: the handshake answered from the SDK's earlier answers while the SDK loads (standard library only,
  so nothing here imports the SDK: ``memcue mcp`` starts ``early`` first).
"""
