"""The promotion gate: the one way a capture candidate becomes a memory (DESIGN.md section 7).

A candidate answers nothing until a signal confirms it: ``promote`` writes it through the normal remember path
(``remember``: the service's, so the exact and near-duplicate checks apply: a statement made twice reinforces the
first memory) with metadata saying why (``promoted_by``: the confirming reason, ``signal``, ``candidate_id`` and
the provenance: ``harness``, ``session_id``, ``turn``), then marks the candidate promoted with the memory's id; a
candidate that would replace a memory (``evidence["replaces"]``: an agent's held ``update_memory``) is written as a
new version of it (``update``) instead.
``reject`` turns one down; ``expire_due`` times out pending candidates past ``expires_at`` (the worker calls it on
every step; it reads the store at most every ``EXPIRE_EVERY_S``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from memcue.sidecar.store import NewMemory, StoreProtocol, WriteResult, instruction_like

log = logging.getLogger("memcue.capture")

#: The reason recorded on a candidate the agent confirmed: it saved the same fact (its MCP ``remember``,
#: ``capture.recurrence``) or accepted the candidate through MCP on the user's word (issue 14 part 3: "the agent
#: saved it"); and on one the agent turned down.
AGENT_SAVED = "agent-saved"
AGENT_REJECTED = "rejected by the agent"
#: How often (s) ``expire_due`` looks for pending candidates past their time: they expire after 30 days, so a
#: minute late is nothing, and the worker's step stays one clock read.
EXPIRE_EVERY_S = 60.0


class CandidateNotFound(LookupError):
    """No candidate has the id asked for."""


class CandidateHeld(PermissionError):
    """An agent may not decide this candidate: it was held for a person's review (its text reads like
    instructions to a model), or the agent's edit of it does."""


class CandidateDecided(ValueError):
    """The candidate is no longer pending (promoted, rejected or expired already); ``state`` says which."""

    def __init__(self, candidate_id: int, state: str) -> None:
        super().__init__(f"candidate {candidate_id} is {state} already: only a pending candidate can be decided")
        self.state = state


class Gate:
    """Promotion, rejection and expiry of the candidates in ``store``; ``remember`` writes one memory through the
    normal remember path (blocking) and returns its ``WriteResult``; ``update(memory_id, memory)`` writes a new
    version of a memory (None: a candidate that would replace one cannot be promoted)."""

    def __init__(self, store: StoreProtocol, remember: Callable[[NewMemory], WriteResult],
                 update: Callable[[int, NewMemory], WriteResult] | None = None) -> None:
        self._store = store
        self._remember = remember
        self._update = update
        self._next_expiry_check = 0.0

    def promote(self, candidate_id: int, reason: str, *, content: str | None = None,
                metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        """Write candidate ``candidate_id`` as a memory (its text, or ``content`` when a reviewer edited it) and
        mark it promoted with ``reason``; ``metadata`` adds to the memory's (a recurrence: the sessions it recurred
        in). Returns the candidate row after the change (``memory_id`` set, and ``duplicate`` True when the memory
        existed already and was reinforced). Raises ``CandidateNotFound``, ``CandidateDecided``, ``ValueError``
        (edited text empty; the memory a replacing candidate would supersede is gone, replaced or forgotten)."""
        cand = self._pending(candidate_id)
        edited = content is not None and content.strip() != cand["content"].strip()
        metadata = {**(metadata or {}), "promoted_by": reason, "signal": cand["signal"], "candidate_id": cand["id"],
                    "harness": cand["harness"], "session_id": cand["session_id"], "turn": cand["turn"]}
        embed_text = (cand.get("evidence") or {}).get("embed_text")
        if edited:
            metadata["edited"] = True
        elif isinstance(embed_text, str) and embed_text.strip():
            metadata["embed_text"] = embed_text  # what the signal says the text means (capture.embed_text)
        memory = NewMemory(content=content if edited and content is not None else cand["content"],
                           kind=cand["kind"], project=cand["project"], session_id=cand["session_id"],
                           source=f"capture:{cand['signal']}", source_id=f"candidate:{cand['id']}",
                           metadata=metadata)
        replaces = (cand.get("evidence") or {}).get("replaces")
        if replaces is None:
            result = self._remember(memory)
        elif self._update is None:
            raise ValueError(f"candidate {candidate_id} replaces memory {replaces}: no update path to write it")
        else:
            result = self._update(int(replaces), memory)
        if not self._store.decide_candidate(candidate_id, "promoted", reason=reason, memory_id=result.id):
            raise CandidateDecided(candidate_id, self._state(candidate_id))  # decided meanwhile by another call
        return {**self._row(candidate_id), "duplicate": result.duplicate}

    def confirm(self, candidate_id: int, reason: str) -> bool:
        """Promote candidate ``candidate_id`` because a signal confirmed it (``promote`` with ``reason``), unless it
        was decided already (a reviewer was faster, an earlier read of the same signal did it): True when this
        call promoted it. Raises ``CandidateNotFound``."""
        try:
            self.promote(candidate_id, reason)
        except CandidateDecided:
            return False
        return True

    def check_agent_may_decide(self, candidate_id: int, content: str | None = None) -> None:
        """Raise ``CandidateHeld`` when an agent (through MCP) may not accept or reject pending candidate
        ``candidate_id``: it was held for review (``evidence["held"]``: an agent's or a paste's injection-like text;
        only a person decides those, so such text never promotes itself), or it reads like instructions, or the
        agent's edit ``content`` does (``store.instruction_like``). Raises ``CandidateNotFound``,
        ``CandidateDecided``."""
        cand = self._pending(candidate_id)
        held = (cand.get("evidence") or {}).get("held") or instruction_like(cand["content"])
        if held:
            raise CandidateHeld(f"candidate {candidate_id} waits for the user's review ({held}): only the user "
                                "accepts or rejects it (`memcue review`)")
        if content is not None and (edit := instruction_like(content)):
            raise CandidateHeld(f"the edited text reads like instructions to a model ({edit}): only the user can "
                                f"accept candidate {candidate_id} with it (`memcue review accept ID --content TEXT`)")

    def reject(self, candidate_id: int, reason: str) -> dict[str, Any]:
        """Turn down pending candidate ``candidate_id`` with ``reason``; returns its row. Raises
        ``CandidateNotFound``, ``CandidateDecided``."""
        self._pending(candidate_id)
        if not self._store.decide_candidate(candidate_id, "rejected", reason=reason):
            raise CandidateDecided(candidate_id, self._state(candidate_id))
        return self._row(candidate_id)

    def expire_due(self, now: float | None = None, *, force: bool = False) -> int:
        """Expire pending candidates past their ``expires_at`` (Unix s; ``now`` default the clock), at most once
        per ``EXPIRE_EVERY_S`` unless ``force``. Returns how many expired."""
        clock = time.monotonic()
        if not force and clock < self._next_expiry_check:
            return 0
        self._next_expiry_check = clock + EXPIRE_EVERY_S
        count = self._store.expire_candidates(now)
        if count:
            log.info("%d capture candidates expired without a confirming signal", count)
        return count

    def _pending(self, candidate_id: int) -> dict[str, Any]:
        cand = self._row(candidate_id)
        if cand["state"] != "pending":
            raise CandidateDecided(candidate_id, cand["state"])
        return cand

    def _row(self, candidate_id: int) -> dict[str, Any]:
        cand = self._store.get_candidate(candidate_id)
        if cand is None:
            raise CandidateNotFound(f"no candidate with id {candidate_id}")
        return cand

    def _state(self, candidate_id: int) -> str:
        return str(self._row(candidate_id)["state"])
