"""Round-trip YAML for a user's config file (Hermes' ``config.yaml``): parse it with ruamel.yaml and write it
back byte for byte except where memcue changed something.

ruamel.yaml keeps comments, key order, quoting (``preserve_quotes``), block scalars, anchors and aliases, but it
re-indents and re-folds whatever does not match its own layout settings. So ``parse`` first checks that dumping
the *unchanged* document gives back the file exactly, under each layout in ``LAYOUTS`` and width in ``WIDTHS``;
the first that does is the one ``dump`` uses. A file no layout reproduces still parses (so a caller can see it
needs no change), but ``dump`` refuses it with ``RoundTripError`` rather than reformat the user's file.

A UTF-8 byte-order mark is kept; an empty file counts as an empty mapping; a missing final newline is kept
missing. Anything that is not YAML, or whose top level is not a mapping, is refused with ``InstallError`` and
nothing is written (case C12).
"""

from __future__ import annotations

import difflib
import io
import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from memcue.install.edits.files import InstallError

_BOM = b"\xef\xbb\xbf"
#: Layouts tried, in order: (mapping indent, sequence indent, dash offset). ``(2, 2, 0)`` is PyYAML's block
#: style (list items level with their key); ``(2, 4, 2)`` is what Hermes' own ruamel writer uses (Hermes 0.19
#: ``utils.py:318``, ``atomic_roundtrip_yaml_update``) and its PyYAML ``IndentDumper`` matches (``utils.py:211``).
LAYOUTS: tuple[tuple[int, int, int], ...] = ((2, 2, 0), (2, 4, 2))
#: Line widths tried, in characters: effectively never fold, then 80 (ruamel.yaml's and PyYAML's default,
#: which Hermes' writers keep).
WIDTHS: tuple[int, ...] = (1_000_000, 80)
#: The layout of a file memcue creates: Hermes' own.
NEW_FILE_LAYOUT = (2, 4, 2)


class RoundTripError(InstallError):
    """The file would not come back byte for byte from ruamel.yaml, so memcue will not rewrite it."""


def _yaml(layout: tuple[int, int, int], width: int, explicit_start: bool) -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = width
    yaml.allow_unicode = True
    yaml.explicit_start = explicit_start
    mapping, sequence, offset = layout
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    return yaml


def _to_text(yaml: YAML, doc: Any) -> str:
    out = io.StringIO()
    yaml.dump(doc, out)
    return out.getvalue()


def _decode(data: bytes, path: Path) -> tuple[str, bool]:
    bom = data.startswith(_BOM)
    try:
        return data[len(_BOM):].decode("utf-8") if bom else data.decode("utf-8"), bom
    except UnicodeDecodeError:
        raise InstallError(f"{path} is not UTF-8 text; memcue changed nothing") from None


def kind(value: object) -> str:
    """What a YAML value is, in the words of an error message: list, string, boolean, number, mapping, value."""
    for name, types in (("boolean", (bool,)), ("list", (list,)), ("string", (str,)), ("number", (int, float)),
                        ("mapping", (dict,))):
        if isinstance(value, types):
            return name
    return "value"


def parse(data: bytes | None, path: Path) -> tuple[CommentedMap, dict[str, Any]]:
    """``(document, style)`` from the file's bytes (None: no file). The document is a ruamel ``CommentedMap``
    (edit it like a dict); ``style`` holds what ``dump`` needs to reproduce the file: ``bom``, ``newline``
    (the text ends with one), ``explicit_start`` (a leading ``---``), ``layout`` and ``width`` (None when no
    candidate reproduces the file: ``dump`` then refuses) and ``text``, the original text.

    Raises ``InstallError`` when the file is not UTF-8, not YAML (with line and column), holds more than one
    document, or its top level is not a mapping.
    """
    style: dict[str, Any] = {"bom": False, "newline": True, "explicit_start": False, "layout": NEW_FILE_LAYOUT,
                             "width": WIDTHS[0], "text": ""}
    if data is None:
        return CommentedMap(), style
    text, style["bom"] = _decode(data, path)
    style["text"] = text
    if not text.strip():
        return CommentedMap(), style
    style["explicit_start"] = bool(re.match(r"---(?:[ \t]|\r?\n|$)", text))
    try:
        doc = _yaml(NEW_FILE_LAYOUT, WIDTHS[0], style["explicit_start"]).load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        raise InstallError(f"{path} is not valid YAML ({where}{exc.problem or exc.context}); memcue changed "
                           "nothing. Fix the file, then run the install again.") from None
    except YAMLError as exc:
        raise InstallError(f"{path} is not valid YAML ({exc}); memcue changed nothing") from None
    if doc is None:  # only comments, or an explicit null: nothing to edit, and nothing ruamel would keep
        style["layout"] = None
        return CommentedMap(), style
    if not isinstance(doc, CommentedMap):
        raise InstallError(f"{path} holds a YAML {kind(doc)} at the top, not a mapping; memcue changed nothing")
    style["layout"], style["width"] = _layout_of(doc, text, style)
    return doc, style


def _layout_of(doc: CommentedMap, text: str, style: dict[str, Any]) -> tuple[tuple[int, int, int] | None, int]:
    """The first (layout, width) whose dump of ``doc`` is ``text`` (a missing final newline allowed, and then
    recorded in ``style``); ``(None, width)`` when none is."""
    for width in WIDTHS:
        for layout in LAYOUTS:
            out = _to_text(_yaml(layout, width, style["explicit_start"]), doc)
            if out == text or (not text.endswith("\n") and out == text + "\n"):
                style["newline"] = text.endswith("\n")
                return layout, width
    return None, WIDTHS[0]


def dump(doc: CommentedMap, style: dict[str, Any]) -> bytes:
    """The file's bytes for ``doc`` in ``style`` (from ``parse``). Raises ``RoundTripError`` when ``parse`` found
    no layout that reproduces the original file (writing it would reformat the user's text)."""
    if style["layout"] is None:
        raise RoundTripError("ruamel.yaml would not write this file back as it is")
    text = _to_text(_yaml(style["layout"], style["width"], style["explicit_start"]), doc) if doc or style["text"] \
        else ""
    if not style["newline"] and text.endswith("\n"):
        text = text[:-1]
    return (_BOM if style["bom"] else b"") + text.encode("utf-8")


def changed_lines(old: str, new: str) -> list[str]:
    """Every line that differs between ``old`` and ``new`` (removed and added lines), by a line diff."""
    a, b = old.splitlines(), new.splitlines()
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            out += a[i1:i2] + b[j1:j2]
    return out

