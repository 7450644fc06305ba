"""Memory addresses: ``memcue://<project>/<id>``, the form a compact recall block names memories by.

``<project>`` is the memory's full project key, URL-quoted with ``/`` kept (``urllib.parse.quote``), so an
absolute key gives a file-URL-like address: ``memcue:///home/ana/src/billing-api/412`` is memory 412 of
project ``/home/ana/src/billing-api``; a global memory (project "") is ``memcue:///412``. The last path
segment is always the id, and everything between ``memcue://`` and it is the project, so two projects that
share a directory name never share an address. Memory ids are unique in the whole store: the id alone
resolves a memory, and the project part tells a reader where it comes from. ``memcue://412`` (no project)
is accepted too.

``parse_id_list`` is the one reader of id lists (``"12, #15, memcue:///home/ana/api/7"``) for the CLI, the
MCP tools and the HTTP API; each caller words its own errors. Stdlib only.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

SCHEME = "memcue://"


def address(project: str, memory_id: int) -> str:
    """The address of memory ``memory_id`` of ``project`` ("" for a global memory)."""
    return f"{SCHEME}{quote(project or '', safe='/')}/{int(memory_id)}"


def parse_address(text: str) -> tuple[str | None, int]:
    """``(project, id)`` of an address; project None when the address names none (``memcue://412``).
    Raises ``ValueError`` when ``text`` is not an address or its last segment is not a whole number."""
    value = text.strip()
    if not value.lower().startswith(SCHEME):
        raise ValueError(f"{text!r} is not a memcue:// address")
    rest = value[len(SCHEME):].split("?", 1)[0].split("#", 1)[0]
    project, sep, ident = rest.rpartition("/")
    if not ident.isdigit():
        raise ValueError(f"{text!r}: a memcue:// address ends with the memory id (memcue://<project>/<id>)")
    return (unquote(project) if sep else None), int(ident)


def memory_id_of(part: object, *, hash_ok: bool = True) -> int:
    """A memory id from a whole number (``12``), ``"12"``, ``"#12"`` (people copy ids with their ``#``; not
    when ``hash_ok`` is False) or an address. Raises ``ValueError`` for anything else, a negative number or
    a bool included."""
    if isinstance(part, int) and not isinstance(part, bool) and part >= 0:
        return part
    if not isinstance(part, str):
        raise ValueError(f"{part!r} is not a memory id (a whole number such as 12, or memcue://<project>/12)")
    text = part.strip()
    if text.lower().startswith(SCHEME):
        return parse_address(text)[1]
    digits = text[1:] if hash_ok and text.startswith("#") else text
    if not digits.isdecimal():
        raise ValueError(f"{text[:60]!r} is not a memory id (a whole number such as 12, or memcue://<project>/12)")
    return int(digits)


class IdListError(ValueError):
    """An id list ``parse_id_list`` cannot read: ``part`` is the first part that is not a memory id (its text,
    stripped, or the value itself for a list item that is not text), or None when the list holds no id."""

    def __init__(self, message: str, part: object = None) -> None:
        super().__init__(message)
        self.part = part


def parse_id_list(value: str | int | list[str | int], *, unique: bool = False, allow_empty: bool = False,
                  hash_ok: bool = True) -> list[int]:
    """Memory ids, in the order given, from one id (``12``), a comma-separated string (``"12, #15,
    memcue:///home/ana/api/7"``; blank parts skipped) or a list of single ids (numbers or strings, one id
    each); every part as ``memory_id_of`` reads it (``hash_ok`` as there). ``unique`` drops repeats (the
    first stays). Raises ``IdListError`` (a ``ValueError``) naming the first part that is not an id, or when
    there is none and not ``allow_empty``. The one id-list reader of the CLI, the MCP tools and the HTTP API."""
    if isinstance(value, list):
        parts: list[object] = list(value)
    elif isinstance(value, str):
        parts = value.split(",")
    else:
        parts = [value]
    ids: list[int] = []
    for part in parts:
        if isinstance(part, str):
            part = part.strip()
            if not part:
                continue
        try:
            ids.append(memory_id_of(part, hash_ok=hash_ok))
        except ValueError:
            shown = part[:40] if isinstance(part, str) else part
            raise IdListError(f"{shown!r} is not a memory id: give whole numbers or memcue:// addresses, as a list "
                              "or separated by commas (\"12, 15\")", part) from None
    if not ids and not allow_empty:
        raise IdListError("no memory ids given")
    return list(dict.fromkeys(ids)) if unique else ids
