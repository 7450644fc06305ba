"""The backend-neutral write side of the store: the records a write carries and returns, the one
write-preparation path (``prepare_write``) and the text work it chains (sanitise, strip memcue blocks, redact,
recognise bookkeeping), entity extraction, and the vector journal. No SQL here: backends (``store.sqlite``)
store what this prepares."""

from memcue.core.redaction import Redacted, redact
from memcue.core.text import sanitize_text
from memcue.sidecar.store.write.entities import MAYBE_NAME, extract_entities
from memcue.sidecar.store.write.instructions import ROLE_MARKER, instruction_like
from memcue.sidecar.store.write.journal import VectorJournal
from memcue.sidecar.store.write.ledger import DISTILL_OUTCOMES, DistillEntry
from memcue.sidecar.store.write.prepare import PreparedWrite, prepare_write
from memcue.sidecar.store.write.records import (
    CANDIDATE_STATES,
    CANDIDATE_TTL_S,
    CAPTURED_KINDS,
    CONSTRAINING_KINDS,
    KIND_PATTERN,
    RECORD_KINDS,
    STANDING_KINDS,
    CandidateAdded,
    ForgetResult,
    MarkResult,
    NewCandidate,
    NewMemory,
    PurgeResult,
    Restored,
    RestoredCandidate,
    RestoredMemory,
    ServedRecall,
    WriteResult,
)
from memcue.sidecar.store.write.strip import strip_injected
from memcue.sidecar.store.write.tags import MAX_TAGS, TAG_PATTERN, normalize_tags

__all__ = [
    "CANDIDATE_STATES", "CANDIDATE_TTL_S", "CandidateAdded", "NewCandidate",
    "CAPTURED_KINDS", "DISTILL_OUTCOMES", "DistillEntry",
    "MAYBE_NAME", "RECORD_KINDS", "ForgetResult", "NewMemory", "PreparedWrite", "Redacted",
    "ServedRecall", "VectorJournal", "WriteResult", "extract_entities", "prepare_write", "redact", "sanitize_text",
    "strip_injected", "CONSTRAINING_KINDS", "STANDING_KINDS",
    "KIND_PATTERN", "MarkResult", "PurgeResult", "ROLE_MARKER", "instruction_like",
    "MAX_TAGS", "TAG_PATTERN", "normalize_tags", "Restored", "RestoredCandidate", "RestoredMemory",
]
