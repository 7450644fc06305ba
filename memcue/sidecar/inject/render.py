"""Rendering recalled memories into an injected block under a token budget and a character cap.

Two shapes: ``render_block`` writes each memory's text; ``render_compact`` writes one line per memory (score,
``memcue://`` address, matched cue terms) inside a ``<memcue-recall session_id="…" query_id="…">`` tag, for an
agent that opens what it needs with ``fetch``. Either is cut at a memory boundary and, when anything was left
out, says how many (case C07). ``max_chars`` exists because Claude Code replaces additionalContext over 10,000
characters with a 2 KB preview (Claude Code hooks docs); adapters ask for 9,500.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from typing import Any

from memcue.core.address import address
from memcue.core.blocks import (
    BLOCK_CLOSE,
    BLOCK_OPEN,
    COMPACT_INSTRUCTION,
    COMPACT_TAG,
    MEMORY_TAG,
    left_out_line,
)
from memcue.sidecar.capture import commits, test_runs, turn_edits
from memcue.sidecar.store import KIND_PATTERN, instruction_like


@dataclass(frozen=True)
class Block:
    """A rendered block: ``text`` ("" when nothing fits or nothing to say), memories ``included`` and
    ``left_out``, and its size in ``tokens`` and ``chars``."""

    text: str
    included: int
    left_out: int
    tokens: int
    chars: int


#: A kind shown as is (``store.KIND_PATTERN``); anything else (a row written before kinds were checked) shows as
#: ``note``.
_KIND = re.compile(KIND_PATTERN)
#: The kind a capture signal's memory is written as (each signal's ``KIND``), by its stored ``source``: a landed
#: commit and a fix a commit confirmed are changes, a test that went from failing to passing a note. A line whose
#: source says its kind leaves ``kind`` out (``source="signal:commit-landed"`` already says it): about 4 tokens
#: (o200k) a line, so a session-start block that is half such lines has room for two or three more titles.
_KIND_OF_SOURCE = {f"capture:{signal.SIGNAL}": signal.KIND for signal in (commits, test_runs, turn_edits)}
#: Who wrote a memory, by the start of its stored ``source`` (DESIGN.md section 8); others show as ``other``.
_PROVENANCE = (("cli", "user"), ("viewer", "user"), ("mcp", "agent"), ("hook:", "captured"), ("capture:", "signal:"),
               ("import", "import"), ("update", "update"), ("api", "api"), ("demo", "demo"))
#: What a newline of a memory's text becomes, so the text stays on its element's line and no line of it can
#: stand alone and pass for memcue's or the harness's own framing (case C24).
NEWLINE_MARK = " ⏎ "
#: A run of line breaks with only blanks between them (a paragraph break: a commit's subject and body): shown as
#: one ``NEWLINE_MARK``, not one per break; the next line's indent stays (code keeps its shape). A blank line adds
#: nothing a model reads, and two marks cost 4 more tokens (o200k) than one: about 80 tokens of a 2,200-token
#: session-start block, nearly one more memory.
_LINE_BREAKS = re.compile(r"[ \t]*\n(?:[ \t]*\n)*")


def provenance(source: str) -> str:
    """Who wrote a memory, from its stored ``source``: ``user`` (CLI, viewer), ``agent`` (MCP), ``captured``
    (a hook: prompts, answers), ``signal:<name>`` (a capture signal, e.g. ``signal:user-statement``),
    ``import``, ``update``, ``api``, ``demo``; ``other`` for anything else."""
    for start, shown in _PROVENANCE:
        if source.startswith(start):
            if shown == "signal:":
                name = re.sub(r"[^a-z0-9_-]", "", source[len(start):].lower())[:32]
                return f"signal:{name}" if name else "signal"
            return shown
    return "other"


def memory_line(result: dict[str, Any], *, dated: bool = True) -> str:
    """One memory as one line: ``<memory id="412" kind="decision" source="user" created="2026-11-03"
    age="4 weeks ago">text</memory>``, plus ``pinned="yes"``, ``match="weak"`` and ``flag="instruction-like"``
    (the text reads like instructions: ``store.instruction_like``) when they apply. The text is XML-escaped and
    its line breaks (any ``str.splitlines`` boundary: U+2028 too) shown as ``NEWLINE_MARK``, a paragraph break as one
    (``_LINE_BREAKS``); ``kind`` outside ``[a-z_-]{1,32}`` shows as ``note``, and is left out when the source is a
    capture signal that says it (``_KIND_OF_SOURCE``). Without ``dated`` the ``created`` date is left out and
    ``age`` alone says when."""
    kind = str(result.get("memory_kind") or "note")
    source = str(result.get("source") or "")
    attrs = {"id": str(result.get("memory_id", "")), "kind": kind if _KIND.fullmatch(kind) else "note",
             "source": provenance(source)}
    if _KIND_OF_SOURCE.get(source) == kind:
        del attrs["kind"]
    created = result.get("created_at") if dated else None
    if isinstance(created, int | float) and math.isfinite(created):
        try:
            attrs["created"] = datetime.fromtimestamp(created, UTC).strftime("%Y-%m-%d")
        except (ValueError, OverflowError, OSError):  # a time beyond the calendar: shown without a date
            pass
    if result.get("age_label"):
        attrs["age"] = str(result["age_label"])
    if result.get("pinned"):
        attrs["pinned"] = "yes"
    if result.get("tier") == "weak":
        attrs["match"] = "weak"
    text = str(result.get("content", "")).strip()
    if instruction_like(text):
        attrs["flag"] = "instruction-like"
    # splitlines: every line boundary a reader may honour (\r, \v, \f, \x1c-\x1e, \x85, U+2028, U+2029), not \n alone
    shown = _LINE_BREAKS.sub(NEWLINE_MARK, escape("\n".join(text.splitlines()), quote=False))
    head = " ".join(f'{k}="{escape(" ".join(v.split()), quote=True)}"' for k, v in attrs.items())
    return f"<{MEMORY_TAG} {head}>{shown}</{MEMORY_TAG}>"


def render_block(
    header: str,
    results: Sequence[dict[str, Any]],
    *,
    count_tokens: Callable[[str], int],
    max_tokens: int,
    max_chars: int,
    footer: str = "",
    preface: str = "",
    available: int = 0,
    dated: bool = True,
) -> Block:
    """Fit ``header`` + as many whole memory lines as the budgets allow (+ ``footer``, + a left-out line).

    The memories sit between ``BLOCK_OPEN`` and ``BLOCK_CLOSE`` (the left-out line inside, ``footer`` after),
    one ``memory_line`` each. When not even the first memory fits, its text is shortened at a word and marked
    with "…". ``preface`` (memcue's own text, e.g. ``STANDING_NOTE``) goes first, a blank line before the header;
    it is given even without results, and the budgets drop memories before it: when no memory fits the block is
    the preface alone (``left_out`` says how many did not fit). ``available``: how many memories there are in all
    when ``results`` are only some (the session-start block offers the newest), so the left-out line counts the
    rest too. ``dated``: each line shows its ``created`` date (``memory_line``). Returns an empty block when there is
    nothing to give or not even the preface (or, without one, the header) fits.
    """
    def fits(text: str) -> bool:
        return len(text) <= max_chars and count_tokens(text) <= max_tokens

    def preface_only(left: int) -> Block:
        if preface and fits(preface):
            return Block(preface, 0, left, count_tokens(preface), len(preface))
        return Block("", 0, left, 0, 0)

    if not results:
        return preface_only(0)
    lines = [memory_line(r, dated=dated) for r in results]
    total = max(len(lines), available)

    def assemble(body: list[str], left: int) -> str:
        parts = [preface, "", header, BLOCK_OPEN, *body] if preface else [header, BLOCK_OPEN, *body]
        if left:
            parts.append(left_out_line(left))
        parts.append(BLOCK_CLOSE)
        if footer:
            parts.append(footer)
        return "\n".join(parts)

    kept: list[str] = []
    for i, line in enumerate(lines):
        trial = assemble([*kept, line], total - i - 1)
        if not fits(trial):
            break
        kept.append(line)
    if not kept:
        kept = _shortened_first(results[0], lambda line: fits(assemble([line], total - 1)), dated)
        if not kept:
            return preface_only(total)
    text = assemble(kept, total - len(kept))
    return Block(text, len(kept), total - len(kept), count_tokens(text), len(text))


def _shortened_first(result: dict[str, Any], fits: Callable[[str], bool], dated: bool) -> list[str]:
    """``[memory_line]`` of ``result`` with its text cut by fifths at a word (marked "…") until ``fits`` says the
    block holds it; ``[]`` when not even three words do."""
    words = str(result.get("content", "")).split(" ")
    while len(words) > 3:
        words = words[: max(3, int(len(words) * 0.8))]
        candidate = memory_line({**result, "content": " ".join(words) + " …"}, dated=dated)
        if fits(candidate):
            return [candidate]
    return []


#: Cue terms shown per memory in a compact block.
COMPACT_CUES = 3


def compact_score(result: dict[str, Any]) -> float:
    """The score a compact line shows: the memory's cosine similarity to the prompt when the semantic channel
    judged it (0..1, comparable across recalls), else its fused rank score (keyword-only answers). The fused
    score alone is a reciprocal-rank sum (about 0.02..0.07), which two decimals barely tell apart."""
    cosine = (result.get("channel_scores") or {}).get("semantic")
    return float(cosine if cosine is not None else result.get("score") or 0.0)


def compact_line(result: dict[str, Any]) -> str:
    """One memory of a compact block: ``0.83 memcue:///home/ana/billing-api/412 [jwt, clock-skew, middleware]``
    (score to two decimals, the address, up to ``COMPACT_CUES`` matched cue terms; no brackets without cues)."""
    line = f"{compact_score(result):.2f} {address(str(result.get('project') or ''), int(result['memory_id']))}"
    cues = [" ".join(str(c).split()) for c in (result.get("cue_terms") or [])[:COMPACT_CUES]]
    cues = [c.replace(",", " ").replace("]", " ").strip() for c in cues]
    return f"{line} [{', '.join(c for c in cues if c)}]" if any(cues) else line


def compact_open_tag(session_id: str, query_id: str) -> str:
    """``<memcue-recall session_id="…" query_id="…">`` (attribute values XML-escaped)."""
    return f'<{COMPACT_TAG} session_id="{escape(session_id, quote=True)}" query_id="{escape(query_id, quote=True)}">'


def render_compact(
    results: Sequence[dict[str, Any]],
    *,
    session_id: str,
    query_id: str,
    count_tokens: Callable[[str], int],
    max_tokens: int,
    max_chars: int,
) -> Block:
    """The compact recall block: the open tag, one ``compact_line`` per memory (as many whole lines as the
    budgets allow), the left-out line when something did not fit, ``COMPACT_INSTRUCTION`` and the closing
    tag. The same budget rules as ``render_block``: hard ``max_tokens`` and ``max_chars``, cut at a line.
    Empty when there are no results or not even one line fits."""
    if not results:
        return Block("", 0, 0, 0, 0)
    lines = [compact_line(r) for r in results]
    head = compact_open_tag(session_id, query_id)
    tail = [COMPACT_INSTRUCTION.format(query_id=query_id), f"</{COMPACT_TAG}>"]

    def assemble(body: list[str], left: int) -> str:
        return "\n".join([head, *body, *([left_out_line(left)] if left else []), *tail])

    kept: list[str] = []
    for i, line in enumerate(lines):
        trial = assemble([*kept, line], len(lines) - i - 1)
        if len(trial) > max_chars or count_tokens(trial) > max_tokens:
            break
        kept.append(line)
    if not kept:
        return Block("", 0, len(lines), 0, 0)
    text = assemble(kept, len(lines) - len(kept))
    return Block(text, len(kept), len(lines) - len(kept), count_tokens(text), len(text))
