"""Token counting for injected blocks: tiktoken ``o200k_base``, or a conservative estimate.

The estimate (UTF-8 bytes / 2, rounded up) is never below the real o200k count for English, CJK or
emoji text in practice, so a block cut with it still fits its budget (case C19).
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path

from memcue.sidecar.runtime.assets import AssetError, seed_tiktoken

log = logging.getLogger("memcue.tokens")


class TokenCounter:
    """Counts tokens with o200k_base. ``mode`` is "tiktoken" or "estimate" (fallback)."""

    def __init__(self, cache_dir: Path | None) -> None:
        self._encoding = None
        self.mode = "estimate"
        self.error = ""
        if cache_dir is None:
            return
        try:
            os.environ["TIKTOKEN_CACHE_DIR"] = str(seed_tiktoken(cache_dir))
            import tiktoken

            self._encoding = tiktoken.get_encoding("o200k_base")
            self.mode = "tiktoken"
            _drop_python_ranks(self._encoding)
        except (AssetError, Exception) as exc:  # noqa: BLE001 - any failure falls back to the estimate
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("token counting falls back to a character estimate: %s", self.error)

    def count(self, text: str) -> int:
        """Number of o200k_base tokens in ``text`` (or the conservative estimate)."""
        if self._encoding is not None:
            return len(self._encoding.encode(text, disallowed_special=()))
        return estimate_tokens(text)


def estimate_tokens(text: str) -> int:
    """Conservative token estimate: ceil(UTF-8 bytes / 2)."""
    return math.ceil(len(text.encode("utf-8", "replace")) / 2)


def _drop_python_ranks(encoding: object) -> None:
    """Free the Python copy of the BPE ranks (about 25 MB for o200k_base; issue 4's memory target).

    tiktoken 0.14 keeps ``Encoding._mergeable_ranks`` only to pickle the encoding; encoding and decoding
    run on the Rust copy made at construction. Guarded: if a tiktoken release renames or starts using the
    attribute for counting, this does nothing (the check below encodes a sample first and after)."""
    ranks = getattr(encoding, "_mergeable_ranks", None)
    if not isinstance(ranks, dict) or not ranks:
        return
    sample = "memcue counts tokens: 构建缓存 🔑"
    before = encoding.encode(sample, disallowed_special=())  # type: ignore[attr-defined]
    encoding._mergeable_ranks = {}  # type: ignore[attr-defined]
    try:
        after = encoding.encode(sample, disallowed_special=())  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - put it back: counting matters more than 25 MB
        after = None
    if after != before:
        encoding._mergeable_ranks = ranks  # type: ignore[attr-defined]

