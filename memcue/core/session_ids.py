"""Which session a recall belongs to, and whether that session is real.

A *real* session is one agent conversation (a Claude Code session, say); its recalls share a working set
(``sidecar/recall/working_set.py``). A *synthetic* session id names a channel rather than a conversation
(every HTTP call, every MCP tool call, every CLI run, probes, the engine itself); such ids start with one of
``SYNTHETIC_PREFIXES`` and never enter a working set, so unrelated calls cannot bias each other.

Resolution order (issue 3, item 9): ``MEMCUE_SESSION_ID``, ``CLAUDE_SESSION_ID``, ``CLAUDE_CODE_SESSION_ID``
from the environment, then the id the request carried, else ``""`` (no session). The CLI and MCP side pass
their own environment; the sidecar passes only the request's id (with an empty or foreign env).

Stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Prefixes of ids that name a channel, not a conversation. Compared case-insensitively.
SYNTHETIC_PREFIXES = ("http:", "mcp:", "cli:", "probe:", "engine:", "agent:", "api:", "view:")
#: How the MCP server's own session id begins when its harness gives it none (Codex clears an MCP server's
#: environment): one server process serves one conversation, but its id is not the harness's session id.
MCP_SERVER_SESSION_PREFIX = "mcp-"
#: Environment variables read for the session id, first non-empty one wins.
SESSION_ENV_VARS = ("MEMCUE_SESSION_ID", "CLAUDE_SESSION_ID", "CLAUDE_CODE_SESSION_ID")


def is_synthetic(session_id: str) -> bool:
    """True when ``session_id`` (surrounding whitespace ignored, any case) starts with one of
    ``SYNTHETIC_PREFIXES``. ``""`` is *not* synthetic, it is "no session"; callers treat both as "do not
    keep a working set". Never raises (``None`` is treated as ``""``)."""
    sid = (session_id or "").strip().lower()
    return sid.startswith(SYNTHETIC_PREFIXES)


def resolve_session_id(request_session_id: str | None, env: Mapping[str, str]) -> str:
    """The session id for a recall: the first non-blank of ``env["MEMCUE_SESSION_ID"]``,
    ``env["CLAUDE_SESSION_ID"]``, ``env["CLAUDE_CODE_SESSION_ID"]``, then ``request_session_id``; ``""``
    when all are blank or missing. The value is returned stripped of surrounding whitespace and otherwise
    unchanged (a synthetic id is returned as is; check it with ``is_synthetic``). Never raises."""
    for name in SESSION_ENV_VARS:
        value = (env.get(name) or "").strip()
        if value:
            return value
    return (request_session_id or "").strip()
