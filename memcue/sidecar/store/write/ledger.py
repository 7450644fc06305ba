"""The distillation ledger's record (``DistillEntry``): one row per session the optional model distiller
considered (``memcue.sidecar.capture.distiller``), whether a request was sent or not. Times are Unix seconds,
tokens are counted as the endpoint reported them (``usage``) or with tiktoken ``o200k_base``."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

#: What became of one distillation: candidates made (``ok``), a valid answer with no facts (``no-facts``), the
#: model declined (``refused``), an answer that is not the asked JSON (``malformed``), the call failed (HTTP
#: error, timeout, the command's exit status: ``failed``), or no request was sent (``skipped``: the budget, no
#: transcript).
DISTILL_OUTCOMES = ("ok", "no-facts", "refused", "malformed", "failed", "skipped")


@dataclass
class DistillEntry:
    """One ledger row. ``runner`` is ``endpoint`` or ``command``; ``target`` the endpoint's base URL or the
    command's program; ``trigger`` the session event that asked for it (``SessionEnd``); ``prompt_tokens`` and
    ``completion_tokens`` what was spent (0 when nothing was sent), ``tokens_from`` ``api`` (the endpoint's
    ``usage``) or ``tiktoken`` or "" (nothing sent); ``outcome`` one of ``DISTILL_OUTCOMES``; ``candidates`` the
    candidates made; ``error`` why, for any outcome but ``ok``."""

    session_id: str
    outcome: str
    project: str = ""
    harness: str = ""
    runner: str = ""
    target: str = ""
    model: str = ""
    trigger: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_from: str = ""
    candidates: int = 0
    error: str = ""
    created_at: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        if self.outcome not in DISTILL_OUTCOMES:
            raise ValueError(f"unknown distill outcome {self.outcome!r}")
