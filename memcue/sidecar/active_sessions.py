"""Which harness session an agent's save through MCP belongs to, when its MCP server could not say.

Codex starts an MCP server with a cleared environment and tells it no session, so the server names its saves
with its own id (``core.session_ids.MCP_SERVER_SESSION_PREFIX``), and a session's receipt and a save's
provenance lost the conversation it came from. The hooks do name it: every hook call carries the harness's
session id and project. ``ActiveSessions`` keeps, per project, when the hooks first and last served each session;
an agent's save under such a server id belongs to the project's newest session served within ``WINDOW_S`` when it
began after every other one of them was last heard of (``attribute``): sessions one after the other, as a day's
work goes. With two sessions at work in one project at once the save keeps the server's id: a guess could give
one conversation's save to the other.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from memcue.core.session_ids import MCP_SERVER_SESSION_PREFIX, is_synthetic
from memcue.sidecar.agent_writes import is_agent
from memcue.sidecar.store import NewMemory

#: How long after a session's last hook call an agent's save may still be its (s): a turn that runs tools for
#: half an hour calls no hook on the prompt path meanwhile.
WINDOW_S = 1800.0
#: Projects remembered at most (the oldest activity goes first); a project keeps only its sessions heard of within
#: ``WINDOW_S``, so its list is short.
MAX_PROJECTS = 256
#: How far a hook's clock (``sent_at``) may run ahead of the sidecar's and a session still count as begun (s).
CLOCK_SLACK_S = 60.0


class ActiveSessions:
    """Per project, the real sessions the hooks served, each with when first and last (Unix s). Thread-safe."""

    def __init__(self) -> None:
        self._seen: dict[str, dict[str, tuple[float, float]]] = {}
        self._lock = threading.Lock()

    def seen(self, project: str, session_id: str, at: float | None = None) -> None:
        """A hook call of ``session_id`` in ``project`` at ``at`` (Unix s; now when None). Calls without a
        project or a real session id are ignored."""
        if not project or not session_id or is_synthetic(session_id) or session_id.startswith(
                MCP_SERVER_SESSION_PREFIX):
            return
        at = time.time() if at is None else at
        with self._lock:
            sessions = {sid: span for sid, span in self._seen.pop(project, {}).items() if span[1] >= at - WINDOW_S}
            first, last = sessions.get(session_id, (at, at))
            sessions[session_id] = (min(first, at), max(last, at))
            self._seen[project] = sessions  # newest activity last
            while len(self._seen) > MAX_PROJECTS:
                self._seen.pop(next(iter(self._seen)))

    def at_work(self, project: str, at: float | None = None) -> str:
        """The session at work in ``project`` at ``at`` (Unix s; now when None): of those served within ``WINDOW_S``
        before it, the one that began last, when every other was last served before it began; "" when none was
        served, or two were at work at once."""
        at = time.time() if at is None else at
        with self._lock:
            recent = [(first, last, sid) for sid, (first, last) in self._seen.get(project, {}).items()
                      if at - WINDOW_S <= last and first <= at + CLOCK_SLACK_S]
        if not recent:
            return ""
        first, _, newest = max(recent)
        return newest if all(last < first for _, last, sid in recent if sid != newest) else ""

    def attribute(self, memory: NewMemory) -> NewMemory:
        """``memory`` with the session it was saved in: an agent's save (``agent_writes.is_agent``) named by its MCP
        server's own id gets the session at work in its project (``at_work``), the server's id kept in
        ``metadata["mcp_session"]``; any other memory is returned as it is."""
        sid = memory.session_id
        if not (is_agent(memory.source) and sid.startswith(MCP_SERVER_SESSION_PREFIX) and memory.project):
            return memory
        session = self.at_work(memory.project, memory.created_at)
        if not session:
            return memory
        return replace(memory, session_id=session, metadata={**memory.metadata, "mcp_session": sid})
