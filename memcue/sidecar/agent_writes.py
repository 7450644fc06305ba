"""An agent's write that reads like instructions is held for review, not served (DESIGN.md section 8).

A memory an agent writes (``source`` ``mcp``: the MCP ``remember`` and ``update_memory`` tools) whose text reads
like instructions to a model (``store.instruction_like``: a role marker, "ignore previous ...", a download piped
into a shell, sending secrets away) is not stored: it becomes a pending capture candidate (signal
``agent-remember``, or ``agent-update`` with the memory it would replace in ``evidence["replaces"]``) with the
reason in ``evidence["held"]``. Held candidates are never promoted by a signal (``candidates.pending_after``
leaves them out); a person accepts or rejects them in ``memcue review`` (``capture.Gate``). The check sits in the
sidecar's write path (``MemoryService``), so any client writing as an agent meets it, not only memcue's MCP
server.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from memcue.sidecar.store import NewCandidate, NewMemory, StoreProtocol, instruction_like

log = logging.getLogger("memcue.agent_writes")

#: Sources that mark an agent's write (``mcp`` and ``mcp:<anything>``).
AGENT_SOURCE = "mcp"
#: The candidate signals of held agent writes.
REMEMBER_SIGNAL, UPDATE_SIGNAL = "agent-remember", "agent-update"


@dataclass(frozen=True)
class Held:
    """An agent's write held for review: the ``candidate_id`` waiting in ``memcue review``, the ``reason`` it was
    held, and the candidate's ``state`` ("pending"; a state decided already when the same text was held before in
    the same session)."""

    candidate_id: int
    reason: str
    state: str = "pending"


def is_agent(source: str) -> bool:
    """True when ``source`` marks an agent's write (``AGENT_SOURCE``, or it followed by ``:``)."""
    return source == AGENT_SOURCE or source.startswith(AGENT_SOURCE + ":")


def held_reason(memory: NewMemory) -> str:
    """Why ``memory`` must wait for review ("" when it may be stored): an agent's text that reads like
    instructions (``instruction_like``'s reason)."""
    return instruction_like(memory.content) if is_agent(memory.source) else ""


def hold(store: StoreProtocol, memory: NewMemory, reason: str, *, replaces: int | None = None) -> Held:
    """Hold ``memory`` as a pending candidate with ``reason`` (``replaces``: the memory an accepted candidate
    supersedes). Raises ``ValueError`` when the text is empty after cleaning."""
    evidence: dict[str, object] = {"held": reason, "source": memory.source}
    if replaces is not None:
        evidence["replaces"] = int(replaces)
    turn = memory.session_id if replaces is None else f"{memory.session_id}:{replaces}"
    added = store.add_candidates([NewCandidate(
        content=memory.content, signal=REMEMBER_SIGNAL if replaces is None else UPDATE_SIGNAL, kind=memory.kind,
        project=memory.project, session_id=memory.session_id, harness=AGENT_SOURCE, turn=turn,
        evidence=evidence)])[0]
    row = store.get_candidate(added.id) or {}
    log.info("an agent's write held for review as candidate %d (%s)", added.id, reason)
    return Held(added.id, reason, str(row.get("state") or "pending"))
