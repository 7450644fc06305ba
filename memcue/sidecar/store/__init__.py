"""The memory store: the public names the rest of memcue uses. ``Store`` is the embedded SQLite backend
(``store.sqlite``), ``StoreProtocol`` the interface any backend implements (``store.protocol``); the records,
the one write-preparation path and the text helpers are backend-neutral (``store.write``). All SQL lives in
``store/``."""

from memcue.sidecar.store.protocol import StoreProtocol, VectorSupport
from memcue.sidecar.store.sqlite import DF_CAP, Store
from memcue.sidecar.store.write import (
    CANDIDATE_STATES,
    CANDIDATE_TTL_S,
    CONSTRAINING_KINDS,
    DISTILL_OUTCOMES,
    KIND_PATTERN,
    MAX_TAGS,
    MAYBE_NAME,
    RECORD_KINDS,
    ROLE_MARKER,
    STANDING_KINDS,
    TAG_PATTERN,
    CandidateAdded,
    DistillEntry,
    ForgetResult,
    MarkResult,
    NewCandidate,
    NewMemory,
    PreparedWrite,
    PurgeResult,
    Restored,
    RestoredCandidate,
    RestoredMemory,
    ServedRecall,
    WriteResult,
    extract_entities,
    instruction_like,
    normalize_tags,
    prepare_write,
    redact,
    sanitize_text,
    strip_injected,
)

__all__ = [
    "CANDIDATE_STATES", "CANDIDATE_TTL_S", "CandidateAdded", "NewCandidate", "DISTILL_OUTCOMES", "DistillEntry",
    "DF_CAP", "ForgetResult", "MAYBE_NAME", "NewMemory", "PreparedWrite", "RECORD_KINDS", "ServedRecall", "Store",
    "StoreProtocol", "VectorSupport", "WriteResult", "extract_entities", "prepare_write", "redact", "sanitize_text",
    "strip_injected",
    "CONSTRAINING_KINDS", "STANDING_KINDS", "KIND_PATTERN", "MarkResult", "PurgeResult", "ROLE_MARKER",
    "instruction_like",
    "MAX_TAGS", "TAG_PATTERN", "normalize_tags", "Restored", "RestoredCandidate", "RestoredMemory",
]
