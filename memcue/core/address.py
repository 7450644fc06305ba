"""Memory addresses: ``memcue://<project>/<id>``, the form a compact recall block names memories by.

``<project>`` is the memory's full project key, URL-quoted with ``/`` kept (``urllib.parse.quote``), so an
absolute key gives a file-URL-like address: ``memcue:///home/ana/src/billing-api/412`` is memory 412 of
project ``/home/ana/src/billing-api``; a global memory (project "") is ``memcue:///412``. The last path
segment is always the id, and everything between ``memcue://`` and it is the project, so two projects that
share a directory name never share an address. Memory ids are unique in the whole store: the id alone
resolves a memory, and the project part tells a reader where it comes from. ``memcue://412`` (no project)
is accepted too.

Stdlib only: the CLI, the MCP server and the sidecar all read addresses.
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


def memory_id_of(part: str | int) -> int:
    """A memory id from a number, ``"12"``, ``"#12"`` or an address. Raises ``ValueError`` otherwise."""
    if isinstance(part, int) and not isinstance(part, bool):
        return part
    text = str(part).strip()
    if text.lower().startswith(SCHEME):
        return parse_address(text)[1]
    if not text.lstrip("#").isdigit():
        raise ValueError(f"{text[:60]!r} is not a memory id (a whole number such as 12, or memcue://<project>/12)")
    return int(text.lstrip("#"))
