"""Layers and the token cap of a recall answer: how much of each memory to show, within ``max_tokens``.

- ``depth`` 0, a glance: per result its ids, tier, score, kind, age and a one-line preview
  (``PREVIEW_CHARS`` characters at most);
- ``depth`` 1 (default): the full memory text;
- ``depth`` 2: depth 1 plus ``context``: where the memory came from (``source``), up to ``CONTEXT_ITEMS``
  other memories of the same session, up to ``CONTEXT_ITEMS`` about the same entities, and the newer
  version that replaced it, if any.

``max_tokens`` (tiktoken o200k_base, see ``sidecar.tokens``) is never exceeded by the results' text: first
context is dropped (last result first), then the last memory's text is shortened (cut at a line or a word,
marked "…"), then memories are left out. The answer's ``layers`` field says what was trimmed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memcue.core.text import preview
from memcue.sidecar.store import Store

#: Characters of a depth-0 preview.
PREVIEW_CHARS = 120
#: Memories per kind of depth-2 context.
CONTEXT_ITEMS = 3
#: The shortest text worth keeping when a memory is shortened to fit (characters).
MIN_SHORTENED_CHARS = 40
ELLIPSIS = " …"


def _preview(text: str) -> str:
    return preview(text, PREVIEW_CHARS)


def context_for(store: Store, memory_id: int) -> dict[str, Any]:
    """Depth-2 context of one memory: ``source`` (source, source_id, session_id), ``session`` (up to
    ``CONTEXT_ITEMS`` memories of the same session, nearest in time first), ``entities`` (up to
    ``CONTEXT_ITEMS`` current memories naming the same entities) and ``replaced_by`` (the newer version)."""
    row = store.fetch([memory_id]).get(memory_id)
    if row is None:
        return {}
    out: dict[str, Any] = {"source": {"source": row["source"], "source_id": row["source_id"],
                                      "session_id": row["session_id"]}}
    if row["session_id"]:
        rows = store.session_context(row["session_id"], memory_id, row["created_at"], CONTEXT_ITEMS)
        out["session"] = [{"memory_id": int(i), "content": c} for i, c in rows]
    rows = store.related_memories(memory_id, row["project"], CONTEXT_ITEMS)
    out["entities"] = [{"memory_id": int(i), "content": c} for i, c in rows]
    if row["superseded_by"] is not None:
        newer = store.fetch([row["superseded_by"]]).get(row["superseded_by"])
        if newer is not None:
            out["replaced_by"] = {"memory_id": newer["id"], "content": newer["content"]}
    return out


def _context_tokens(context: dict[str, Any], count: Callable[[str], int]) -> int:
    texts = [item["content"] for key in ("session", "entities") for item in context.get(key, [])]
    if context.get("replaced_by"):
        texts.append(context["replaced_by"]["content"])
    return sum(count(t) for t in texts)


def _shorten(text: str, tokens_allowed: int, count: Callable[[str], int]) -> str | None:
    """``text`` cut (at a line, else a word) so it counts at most ``tokens_allowed``; None if too little fits."""
    if tokens_allowed <= 0:
        return None
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix that fits, by characters
        mid = (lo + hi + 1) // 2
        if count(text[:mid] + ELLIPSIS) <= tokens_allowed:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    for sep in ("\n", " "):
        at = cut.rfind(sep)
        if at >= MIN_SHORTENED_CHARS:
            cut = cut[:at]
            break
    cut = cut.rstrip()
    return cut + ELLIPSIS if len(cut) >= MIN_SHORTENED_CHARS else None


def apply_layers(answer: dict[str, Any], *, depth: int, max_tokens: int | None, count: Callable[[str], int],
                 store: Store) -> dict[str, Any]:
    """Shape ``answer["results"]`` for ``depth`` (0, 1 or 2) and hold them to ``max_tokens`` (None: no cap);
    sets ``answer["layers"]``. Returns ``answer`` (changed in place). Raises ``ValueError`` for another depth."""
    if depth not in (0, 1, 2):
        raise ValueError("depth must be 0 (glance), 1 (full facts) or 2 (with context)")
    results = answer.get("results") or []
    if depth == 0:
        results = [{"fact_id": r["fact_id"], "memory_id": r["memory_id"], "tier": r["tier"], "score": r["score"],
                    "memory_kind": r.get("memory_kind"), "age_label": r.get("age_label"),
                    "preview": _preview(r["content"])} for r in results]
    elif depth == 2:
        for r in results:
            r["context"] = context_for(store, r["memory_id"])
    layers: dict[str, Any] = {"depth": depth, "max_tokens": max_tokens, "context_dropped": 0, "shortened": [],
                              "left_out": 0}
    text_key = "preview" if depth == 0 else "content"
    if max_tokens is not None:
        own = [count(r[text_key]) for r in results]
        extra = [_context_tokens(r.get("context") or {}, count) for r in results]
        total = sum(own) + sum(extra)
        for i in range(len(results) - 1, -1, -1):  # 1. drop context, last result first
            if total <= max_tokens:
                break
            if extra[i]:
                total -= extra[i]
                extra[i] = 0
                results[i]["context"] = {"source": (results[i].get("context") or {}).get("source")}
                layers["context_dropped"] += 1
        while results and total > max_tokens:  # 2. shorten the last memory, 3. leave memories out
            last = len(results) - 1
            shorter = _shorten(results[last][text_key], max_tokens - (total - own[last]), count)
            if shorter is not None and results[last]["memory_id"] not in layers["shortened"]:
                results[last][text_key] = shorter
                total += count(shorter) - own[last]
                own[last] = count(shorter)
                layers["shortened"].append(results[last]["memory_id"])
                continue
            total -= own.pop() + extra.pop()
            results.pop()
            layers["left_out"] += 1
        layers["tokens"] = total
    answer["results"] = results
    answer["layers"] = layers
    return answer
