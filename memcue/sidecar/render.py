"""Rendering recalled memories into an injected block under a token budget and a character cap.

The block is cut at a memory boundary and, when anything was left out, ends with a line saying how
many (case C07). ``max_chars`` exists because Claude Code replaces additionalContext over 10,000
characters with a 2 KB preview (Claude Code hooks docs); adapters ask for 9,500.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Block:
    """A rendered block: ``text`` ("" when nothing fits or nothing to say), memories ``included`` and
    ``left_out``, and its size in ``tokens`` and ``chars``."""

    text: str
    included: int
    left_out: int
    tokens: int
    chars: int


def memory_line(result: dict[str, Any]) -> str:
    """One memory as a list item: kind, age, weak label, then the text (continuation lines indented)."""
    label = f"{result.get('memory_kind', 'note')} · {result.get('age_label', '')}".strip(" ·")
    if result.get("tier") == "weak":
        label += " · weak match"
    if result.get("pinned"):
        label += " · pinned"
    text = str(result.get("content", "")).strip().replace("\n", "\n  ")
    return f"- ({label}) {text}"


def left_out_line(n: int) -> str:
    return f"[memcue: {n} more {'memory' if n == 1 else 'memories'} left out to fit the budget]"


def render_block(
    header: str,
    results: Sequence[dict[str, Any]],
    *,
    count_tokens: Callable[[str], int],
    max_tokens: int,
    max_chars: int,
    footer: str = "",
) -> Block:
    """Fit ``header`` + as many whole memory lines as the budgets allow (+ ``footer``, + a left-out line).

    When not even the first memory fits, its text is shortened at a word and marked with "…".
    Returns an empty block when there are no results or not even the header fits.
    """
    if not results:
        return Block("", 0, 0, 0, 0)
    lines = [memory_line(r) for r in results]

    def assemble(body: list[str], left: int) -> str:
        parts = [header, *body]
        if footer:
            parts.append(footer)
        if left:
            parts.append(left_out_line(left))
        return "\n".join(parts)

    def fits(text: str) -> bool:
        return len(text) <= max_chars and count_tokens(text) <= max_tokens

    kept: list[str] = []
    for i, line in enumerate(lines):
        trial = assemble([*kept, line], len(lines) - i - 1)
        if not fits(trial):
            break
        kept.append(line)
    if not kept:
        first = lines[0]
        words = first.split(" ")
        while len(words) > 3:
            words = words[: max(3, int(len(words) * 0.8))]
            candidate = " ".join(words) + " …"
            if fits(assemble([candidate], len(lines) - 1)):
                kept = [candidate]
                break
        if not kept:
            return Block("", 0, len(lines), 0, 0)
    text = assemble(kept, len(lines) - len(kept))
    return Block(text, len(kept), len(lines) - len(kept), count_tokens(text), len(text))
