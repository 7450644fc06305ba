"""The memory store: the public names the rest of memcue uses (``Store`` and its row types, the write
clean-up helpers). Everything else in ``store/`` is internal to it; all SQL lives here."""

from memcue.sidecar.store.entities import MAYBE_NAME, extract_entities
from memcue.sidecar.store.forgetting import ForgetResult
from memcue.sidecar.store.memories import DF_CAP, RECORD_KINDS, NewMemory, Store, WriteResult
from memcue.sidecar.store.redaction import redact
from memcue.sidecar.store.sanitize import sanitize_text
from memcue.sidecar.store.usage import ServedRecall

__all__ = [
    "DF_CAP", "ForgetResult", "MAYBE_NAME", "NewMemory", "RECORD_KINDS", "ServedRecall", "Store", "WriteResult",
    "extract_entities", "redact", "sanitize_text",
]
