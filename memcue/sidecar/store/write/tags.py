"""Tags: short labels a person or an agent puts on a memory (``memcue remember --tag``, MCP ``remember``'s
``tags``), and the filter that keeps memories carrying every tag asked for (``recall --tag``, ``list --tag``).

A tag is stored normalised: trimmed, lowercased, inner whitespace as ``-``; what is left must match
``TAG_PATTERN`` (a letter or digit, then letters, digits, ``_ . : / -``; at most 48 characters). A memory carries
at most ``MAX_TAGS`` tags, kept sorted and without repeats.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: What a normalised tag may be (a full match).
TAG_PATTERN = r"[a-z0-9][a-z0-9_.:/-]{0,47}"
#: Tags one memory carries at most (and a filter names at most).
MAX_TAGS = 20


def normalize_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """``tags`` normalised (see the module docstring), sorted, each once. Raises ``ValueError`` naming a tag that
    is not one, or when there are more than ``MAX_TAGS``."""
    out: set[str] = set()
    for raw in tags:
        tag = re.sub(r"\s+", "-", str(raw).strip().lower())
        if not re.fullmatch(TAG_PATTERN, tag):
            raise ValueError(f"{raw!r} is not a tag: a letter or digit, then letters, digits, _ . : / - "
                             "(at most 48 characters)")
        out.add(tag)
    if len(out) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags (got {len(out)})")
    return tuple(sorted(out))
