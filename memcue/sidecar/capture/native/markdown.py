"""Markdown as the harnesses' memory files write it, cut into memories: each top-level bullet (with its indented
continuation and sub-bullets), each paragraph, each fenced code block and each table under a heading is one
``Entry``, with the heading path it sits under and its first line (1-based). A leading frontmatter block
(``---`` ... ``---``) is read apart (``split_frontmatter``); HTML comments and headings themselves are not
entries. The kind of an entry comes from simple cues (``kind_for``): the heading's words first, then the
entry's own opening words, else ``note``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: A markdown heading line: ``#`` to ``######`` then text.
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
#: A list item's marker at the start of a line (``-``, ``*``, ``+``, ``1.``, ``1)``), with optional task box.
_BULLET = re.compile(r"^([-*+]|\d{1,9}[.)])\s+(\[[ xX]\]\s+)?")
_FENCE = re.compile(r"^(`{3,}|~{3,})")


@dataclass(frozen=True)
class Entry:
    """One memory a file holds: its ``text`` (a bullet without its marker, a paragraph, a code block), the
    ``heading`` path it sits under ("Build > Tests", "" above the first heading), its first ``line`` (1-based)
    and its ``kind`` (``kind_for``)."""

    text: str
    heading: str
    line: int
    kind: str = "note"


#: Heading words -> kind, checked in order (the first match wins); a heading names what its entries are.
_HEADING_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("decision", re.compile(r"\b(decisions?|decided|architecture|adr)\b", re.I)),
    ("preference", re.compile(r"\b(preferences?|prefer|user profile|about me|style preferences)\b", re.I)),
    ("convention", re.compile(r"\b(conventions?|style|style ?guide|guidelines?|standards?|rules?|"
                              r"do'?s and don'?ts)\b", re.I)),
    ("bug", re.compile(r"\b(bugs?|gotchas?|pitfalls?|known issues?|caveats?|troubleshooting)\b", re.I)),
    ("howto", re.compile(r"\b(commands?|how ?to|setup|set ?up|build|testing|tests|workflows?|usage|running|"
                         r"install(ation)?|deploy(ment|ing)?|development)\b", re.I)),
)
#: Opening words of an entry -> kind, when its heading said nothing.
_TEXT_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("decision", re.compile(r"^(we (decided|chose|picked|use|went with)|decided|decision:)\b", re.I)),
    ("convention", re.compile(r"^(always|never|do not|don'?t|must|prefer|use|avoid)\b", re.I)),
    ("preference", re.compile(r"^(i (prefer|like|want)|the user (prefers|likes|wants))\b", re.I)),
)


def kind_for(heading: str, text: str, default: str = "note") -> str:
    """The kind an entry gets: the first ``_HEADING_KINDS`` match in ``heading``, else the first
    ``_TEXT_KINDS`` match at the start of ``text``, else ``default``."""
    for kind, pattern in _HEADING_KINDS:
        if pattern.search(heading):
            return kind
    for kind, pattern in _TEXT_KINDS:
        if pattern.search(text.lstrip()):
            return kind
    return default


def split_frontmatter(text: str) -> tuple[dict[str, str], str, int]:
    """A leading ``---`` frontmatter block read as flat ``key: value`` pairs (a nested block's keys are
    flattened: ``metadata:`` / ``  type: project`` gives ``type``), the body after it, and the number of lines
    the block took (0 without one). Values lose surrounding quotes; anything unparsable is skipped."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text, 0
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        return {}, text, 0
    fields: dict[str, str] = {}
    for line in lines[1:end]:
        key, sep, value = line.strip().partition(":")
        if sep and key and " " not in key and value.strip():
            fields.setdefault(key.strip(), value.strip().strip("'\""))
    return fields, "\n".join(lines[end + 1:]), end + 1


def parse(text: str, *, first_line: int = 1, default_kind: str = "note", heading: str = "") -> list[Entry]:
    """The entries of markdown ``text`` (see the module docstring), in file order. ``first_line``: the file
    line ``text`` starts on (after a frontmatter block); ``heading``: the heading path above the text."""
    out: list[Entry] = []
    stack: list[tuple[int, str]] = [(0, heading)] if heading else []
    block: list[str] = []
    start = 0
    fence = ""
    nested = False  # the open fence belongs to the list item above it (indented): it ends no entry
    in_comment = False

    def flush() -> None:
        body = _clean(block)
        if body:
            path = " > ".join(h for _, h in stack)
            out.append(Entry(body, path, start, kind_for(path, body, default_kind)))
        block.clear()

    for number, raw in enumerate(text.split("\n"), start=first_line):
        line = raw.rstrip()
        if fence:
            block.append(line)
            if line.lstrip().startswith(fence):
                fence = ""
                if not nested:
                    flush()
            continue
        if in_comment or line.lstrip().startswith("<!--"):
            if not in_comment:
                flush()
            in_comment = "-->" not in line
            continue
        opened = _FENCE.match(line.lstrip())
        nested = bool(opened and block and line[:1].isspace())
        if nested and opened:
            fence = opened.group(1)
            block.append(line)
            continue
        match = _HEADING.match(line)
        if match or not line.strip() or opened or (_BULLET.match(line) and block):
            flush()
        if match:
            level = len(match.group(1))
            stack = [(lv, h) for lv, h in stack if lv < level] + [(level, match.group(2).strip())]
        elif opened:
            fence, start = opened.group(1), number
            block.append(line)
        elif line.strip():
            if not block:
                start = number
            block.append(line)
    flush()
    return out


def _clean(block: list[str]) -> str:
    """A block's text: a list item's marker and task box taken off its first line, common indentation off the
    continuation lines, surrounding blank lines dropped."""
    if not block:
        return ""
    first = block[0].lstrip()
    marker = _BULLET.match(first)
    if marker:
        first = first[marker.end():]
    rest = [ln for ln in block[1:]]
    indents = [len(ln) - len(ln.lstrip()) for ln in rest if ln.strip()]
    cut = min(indents) if indents and marker else 0
    return "\n".join([first, *(ln[cut:] for ln in rest)]).strip()
