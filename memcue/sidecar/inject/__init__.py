"""Injection: what the sidecar puts in front of a model for a hook. The hook service, the injection policy,
the block rendering, the session ledger and the hook timings. Depends on recall and the store, never on
the sidecar root: the sidecar hands it a ``HookBackend``."""

from memcue.core.blocks import POINTER, STANDING_NOTE
from memcue.sidecar.inject.backend import HookBackend
from memcue.sidecar.inject.ledger import SessionLedger
from memcue.sidecar.inject.note import session_tools
from memcue.sidecar.inject.policy import INJECT_COSINE_GAP, injectable
from memcue.sidecar.inject.render import Block, render_block, render_compact
from memcue.sidecar.inject.service import (
    PROMPT_HEADER,
    PROMPT_LIMIT,
    SESSION_HEADER,
    HookResult,
    HookService,
    session_source,
)
from memcue.sidecar.inject.timings import HookTimings

__all__ = [
    "Block", "HookBackend", "HookResult", "HookService", "HookTimings", "INJECT_COSINE_GAP", "POINTER",
    "PROMPT_HEADER", "PROMPT_LIMIT", "SESSION_HEADER", "STANDING_NOTE", "SessionLedger", "injectable", "render_block",
    "render_compact", "session_source", "session_tools",
]
