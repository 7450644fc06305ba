"""Entity extraction at write time and the entity graph it feeds (co-occurrence edges).

An entity is a token that names something: a file path, an identifier (CamelCase, snake_case, dotted
names), a version, a ticket id, or a capitalised name. ``extract_entities(text)`` returns them normalised
(lowercase) with a kind; ``link_entities`` records them for a memory inside the caller's write transaction:
``entities`` (one row per name, ``df`` = how many memories carry it), ``memory_entities`` (which memory
carries which entity) and ``entity_edges`` (co-occurrence counts between entities of the same memory,
stored in both directions).
"""

from __future__ import annotations

import itertools
import re

import apsw

#: At most this many entities are linked per memory (bounds the edges one write adds to 66 pairs).
MAX_ENTITIES_PER_MEMORY = 12

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("path", re.compile(r"(?<![\w/])(?:[\w.-]+/)+[\w.-]+\.\w{1,8}\b|(?<![\w/.])[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|rb|"
                        r"java|kt|c|h|cpp|hpp|cs|toml|yaml|yml|json|md|sql|sh|cfg|ini|lock|txt|html|css)\b")),
    ("ticket", re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d{1,6}\b|#\d{2,6}\b")),
    ("version", re.compile(r"\bv?\d+\.\d+(?:\.\d+)*(?:[-.]?(?:rc|alpha|beta|post|dev)\d*)?\b")),
    ("identifier", re.compile(r"\b[a-z]+(?:_[a-z0-9]+)+\b|\b[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*\b"
                              r"|\b[a-z]+(?:\.[a-z_]+){1,4}\(?\)?(?=\W|$)")),
    ("name", re.compile(r"\b[A-Z][a-zA-Z]{2,}(?:\s+[A-Z][a-zA-Z]{2,}){0,2}\b")),
]
#: Capitalised words that start sentences or questions rather than name things.
_NOT_NAMES = frozenset(
    """the this that these those there then than what when where which who whom whose why how yes yeah
    not but and for with from into also just well okay sure thanks thank hey wow great good nice really
    maybe please let lets our your his her their its they she you we will would could should can did does
    have has had was were are been being after before since until while about again today tomorrow yesterday
    monday tuesday wednesday thursday friday saturday sunday january february march april may june july
    august september october november december""".split()
)


def extract_entities(text: str) -> list[tuple[str, str]]:
    """Entities in ``text`` as ``(name, kind)``, name lowercase, first occurrence order, no duplicates,
    at most ``MAX_ENTITIES_PER_MEMORY``. Kinds: path, ticket, version, identifier, name."""
    found: dict[str, str] = {}
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            start, end = m.span()
            if any(start < e and s < end for s, e in taken):
                continue
            name = m.group(0).strip().rstrip("()").lower()
            if kind == "name":
                words = [w for w in name.split() if w not in _NOT_NAMES]
                if not words:
                    continue
                name = " ".join(words)
            if len(name) < 2:
                continue
            taken.append((start, end))
            found.setdefault(name, kind)
    ordered = sorted(found.items(), key=lambda item: text.lower().find(item[0]))
    return ordered[:MAX_ENTITIES_PER_MEMORY]


def link_entities(conn: apsw.Connection, memory_id: int, entities: list[tuple[str, str]]) -> None:
    """Record ``entities`` for ``memory_id`` and add their co-occurrence edges (inside the caller's
    transaction)."""
    ids = []
    for name, kind in entities:
        conn.execute(
            "INSERT INTO entities(name, kind, df) VALUES (?, ?, 1) ON CONFLICT(name) DO UPDATE SET df = df + 1",
            (name, kind))
        eid = int(conn.execute("SELECT id FROM entities WHERE name = ?", (name,)).fetchall()[0][0])
        conn.execute("INSERT OR IGNORE INTO memory_entities(memory_id, entity_id) VALUES (?, ?)", (memory_id, eid))
        ids.append(eid)
    for a, b in itertools.combinations(sorted(set(ids)), 2):
        for src, dst in ((a, b), (b, a)):
            conn.execute(
                "INSERT INTO entity_edges(src, dst, weight) VALUES (?, ?, 1)"
                " ON CONFLICT(src, dst) DO UPDATE SET weight = weight + 1", (src, dst))


def unlink_entities(conn: apsw.Connection, memory_id: int) -> None:
    """Forget ``memory_id``'s entity links (its entities' ``df`` goes down; edges stay as history)."""
    conn.execute(
        "UPDATE entities SET df = max(0, df - 1)"
        " WHERE id IN (SELECT entity_id FROM memory_entities WHERE memory_id = ?)", (memory_id,))
    conn.execute("DELETE FROM memory_entities WHERE memory_id = ?", (memory_id,))
