"""What each harness session has already been shown: its one full session-start block, and the memories
injected into its conversation.

A harness keeps injected context in the conversation (Claude Code and Codex store ``additionalContext`` in
the transcript), so a memory injected once is still in front of the model on the next prompt: injecting it
again only spends the token budget twice and repeats the memory in one request. The ledger lets the hook
service skip those memories and give a session one full session-start block (case C15). A ``clear`` or
``compact`` SessionStart empties the conversation, so it forgets what was injected (the block flag stays:
the session gets a one-line pointer, never a second full block), and notes when (``reset_at``): what the session
itself wrote since (its commits, its fixes, the user's statements and the agent's saves in it) is in front of the
model, so the prompt hook does not inject it back into the same conversation.

The full block is claimed before it is built and recorded once given (``claim_block`` / ``end_claim``), in one
step under the ledger's lock: of two SessionStarts for one session at the same moment (a hook registered twice,
a harness firing twice: case C23), one builds the block and the other sees the claim and gets the pointer. A
claim whose block came out empty (or was cut off by the budget) is released, so a later start may try again.

A memory shown only beside a tool call (``add_injected(..., beside_tool=True)``) is not repeated beside another
tool call, but the prompt hook may give it again (``injected(key, for_prompt=True)`` leaves it out): shown next to
an edit five turns ago, it is easy to miss when the user now asks the question it answers.

A sidecar that restarted (its idle exit, a crash, ``memcue stop``) starts with an empty ledger while the harness's
conversations go on; ``loader`` seeds a session the ledger has not seen from what the store logged as shown to it
(``HookService``: the usage log), so a restart neither repeats what a conversation holds nor gives a second full
block.

Keys are ``"<harness>:<session id>"``; a session without an id is never recorded (nothing tells its prompts
apart). At most ``SESSIONS_KEPT`` sessions are kept, the least recently used out first. Thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable

#: Sessions remembered (least recently used out first). 4,096 sessions of up to a few hundred ids each stay
#: well under a megabyte.
SESSIONS_KEPT = 4096
#: What a session was shown before the ledger knew it: (got its full session-start block, memory ids injected,
#: those of them shown only beside a tool call).
Shown = tuple[bool, set[int], set[int]]


class _Session:
    __slots__ = ("beside_tool", "block", "claimed", "injected", "reset_at")

    def __init__(self) -> None:
        self.block = False
        self.claimed = False
        self.injected: set[int] = set()
        self.beside_tool: set[int] = set()
        self.reset_at = 0.0


class SessionLedger:
    """Per-session record of the full session-start block and the injected memory ids (see module doc)."""

    def __init__(self, kept: int = SESSIONS_KEPT, loader: Callable[[str], Shown | None] | None = None) -> None:
        """``kept``: sessions remembered; ``loader(key)``: what a session the ledger has not seen was shown
        before (called once per such session, under the ledger's lock; None for nothing known)."""
        self._kept = kept
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._lock = threading.Lock()
        self._loader = loader

    @staticmethod
    def key(harness: str, session_id: str) -> str:
        """The ledger key of a session, "" for a session without an id (never recorded)."""
        return f"{harness}:{session_id}" if session_id else ""

    def _get(self, key: str) -> _Session:
        session = self._sessions.get(key)
        if session is None:
            session = self._sessions[key] = _Session()
            shown = self._loader(key) if self._loader is not None else None
            if shown is not None:
                session.block = shown[0]
                session.injected.update(shown[1])
                session.beside_tool.update(shown[2] & shown[1])
            while len(self._sessions) > self._kept:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(key)
        return session

    def had_block(self, key: str) -> bool:
        """True when the session already got its full session-start block."""
        if not key:
            return False
        with self._lock:
            return self._get(key).block

    def mark_block(self, key: str) -> None:
        """Record that the session got its full session-start block."""
        if key:
            with self._lock:
                self._get(key).block = True

    def claim_block(self, key: str) -> bool:
        """Claim the session's one full session-start block: True for the first caller (the session had no
        block and no other call is building it), False otherwise. Check and mark are one step (case C23); a
        session without an id (``key`` "") always gets True (nothing tells its calls apart). Every True must
        be followed by ``end_claim``."""
        if not key:
            return True
        with self._lock:
            session = self._get(key)
            if session.block or session.claimed:
                return False
            session.claimed = True
            return True

    def end_claim(self, key: str, given: bool) -> None:
        """End a ``claim_block``: ``given`` True records the block as the session's one full block, False
        releases the claim (the block was empty or not built in time) so a later start may try again."""
        if key:
            with self._lock:
                session = self._get(key)
                session.claimed = False
                session.block = session.block or given

    def injected(self, key: str, *, for_prompt: bool = False) -> frozenset[int]:
        """Memory ids already injected into the session's conversation (empty when nothing was); with
        ``for_prompt``, without those shown only beside a tool call."""
        if not key:
            return frozenset()
        with self._lock:
            session = self._get(key)
            return frozenset(session.injected - session.beside_tool if for_prompt else session.injected)

    def add_injected(self, key: str, memory_ids: Iterable[int], *, beside_tool: bool = False) -> None:
        """Record memory ids injected into the session's conversation, ``beside_tool`` when by a tool call's
        block (a prompt or session-start block clears that mark)."""
        if key:
            with self._lock:
                session = self._get(key)
                ids = set(memory_ids)
                if beside_tool:
                    session.beside_tool.update(ids - session.injected)  # not one a prompt block showed
                else:
                    session.beside_tool.difference_update(ids)
                session.injected.update(ids)

    def forget_injected(self, key: str) -> None:
        """The session's conversation was cleared or compacted: nothing injected is in front of the model."""
        if key:
            with self._lock:
                session = self._get(key)  # seeded first, so what it was shown before is cleared too
                session.injected.clear()
                session.beside_tool.clear()
                session.reset_at = time.time()

    def reset_at(self, key: str) -> float:
        """When the session's conversation was last cleared or compacted (Unix s; 0.0 when never, as far as this
        ledger knows): what the session wrote after it is still in its conversation."""
        if not key:
            return 0.0
        with self._lock:
            return self._get(key).reset_at

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)
