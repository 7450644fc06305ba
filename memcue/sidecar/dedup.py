"""Near-duplicates for a single ``remember``: reinforce the memory already stored instead of adding a row.

A new memory is a near-duplicate of a stored one when both hold in the same project and kind:

- their cosine similarity (the default embedding model) is at least ``NEAR_DUPLICATE_COSINE``, and
- they state the same specifics (``same_specifics``): the same numbers in the same order, the same
  identifiers (snake_case, camelCase, dotted names, ``backticked`` code), the same paths and URLs, the same
  negations ("not", "never", …) and the same polarity words (``POLARITY``: allowed/forbidden, enable/disable, old/new,
  increase/decrease, … in any inflection), so a statement and its reversal stay two memories (case C26:
  "pushes to main are allowed" and "... forbidden" score above 0.96).

The embedding alone cannot be trusted with specifics: with all-MiniLM-L6-v2 "retry 3 times" and "retry 5
times" score 0.970, "port 5432" and "port 5433" 0.985, "python 3.11" and "3.12" 0.958, ``getUserById`` and
``getUserByName`` 0.976, "is invalidated" and "is not invalidated" 0.969. The specifics check is what keeps
such facts apart; the cosine keeps apart sentences whose specifics agree but whose words differ.

Where 0.96 comes from (measured with the default model on 19 paraphrase pairs and 25 pairs of different
facts one or two words apart, in ``/remember``-style sentences): paraphrases scored 0.857-0.992 (median about
0.95); different facts with no number, identifier, path or negation to tell them apart scored up to 0.952
("start lazily" vs "start eagerly"), 0.943 ("Monday" vs "Friday"), 0.931 ("unix socket" vs "TCP socket"). At
0.96 none of those merge and the closer half of the paraphrases do (a missed merge only adds a row; a wrong one
loses a fact). Known miss: a swap of two plain words ("prefer httpx over requests" / "requests over httpx",
0.982) would merge.

The session-start block uses a lower cosine to show a fact told twice once (``block_repeats``): it hides, never
merges. A user's statement and the agent's save of it in the same session (the user says "the staging db listens on
5433, nobody points the tests at 5432", the agent saves "The staging database listens on port 5433; the tests must
never use 5432") are one fact told twice even further apart (``TOLD_TWICE_COSINE``): the agent reworded it, so the
words, names and negation words differ; the numbers, the polarity words and whether it is negated at all must agree.
Only the single-memory path uses the write-time check (``MemoryService.remember``: the API's
``/remember``, so the CLI and the MCP server, and the promotion gate); imports and the spool keep exact-duplicate
dedup only. The same rule tells when a capture candidate recurred (``near_duplicates``, used by
``capture.recurrence`` on pending candidates).
Without a ready model or a bound vector table the check is skipped. The text compared is the text that would be
stored: the memory goes through the store's one write-preparation path (``store.prepare_write``), and the
prepared record comes back in the ``NearCheck`` so the write that follows stores it as is (one ``remember`` is
cleaned and redacted once).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memcue.core.session_ids import MCP_SERVER_SESSION_PREFIX
from memcue.sidecar.agent_writes import AGENT_SOURCE
from memcue.sidecar.recall import VectorIndex
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import RECORD_KINDS, NewMemory, PreparedWrite, Store, prepare_write

#: Lowest cosine similarity of a near-duplicate (see the module docstring for the measurements).
NEAR_DUPLICATE_COSINE = 0.96
#: Nearest stored memories checked for a near-duplicate.
CANDIDATES = 5
#: Cosine at which two memories offered to one session-start block are one fact told twice, so the block shows it
#: once (``block_repeats``): the lowest paraphrase pair measured above (0.857), rounded down. Nothing is merged or
#: lost: the one left out of the block still answers every recall. On the scripted dev week
#: (``benchmarks/data/week/dev.json``) the repeats are an agent's MCP save of what the user asked to keep and the
#: user's own request (0.876, 0.957; 0.790 stays two).
BLOCK_REPEAT_COSINE = 0.85
#: Cosine at which a user's statement (``capture:prompt-statement``) and the agent's save (``mcp``) of one session
#: are one fact told twice, for ``block_repeats``. 0.75: on the scripted weeks' stores (``benchmarks/capture_week.py``,
#: dev splits) the agent's saves of what the user asked to keep sit at 0.788-0.957 to the user's statement, and an
#: agent's save of another fact at 0.416 or less to the nearest statement of its session.
TOLD_TWICE_COSINE = 0.75
#: Cosine at which a statement is one sentence of an agent's save that holds more (``told_twice``: all the
#: statement's numbers, at least one, are in the save): a part sits further from the whole than a rewording does
#: (0.620 on the dev4 week's "eps 104 to 115 are sponsored by Seedbox" in a two-sentence save), and an agent's save of
#: another fact sits at 0.416 or less to the nearest statement of its session; 0.55 lies between.
TOLD_IN_PART_COSINE = 0.55
#: The stored ``source`` of a user's statement captured from a prompt, and of the agent's save through MCP
#: (``capture.prompts.SIGNAL`` behind the gate's ``capture:`` prefix; ``agent_writes.AGENT_SOURCE``).
TOLD_TWICE_SOURCES = frozenset({"capture:prompt-statement", AGENT_SOURCE})
#: When the agent's save carries its MCP server's own session id (``core.session_ids.MCP_SERVER_SESSION_PREFIX``:
#: Codex gives an MCP server no session), the statement it repeats is the one made at most this long before or
#: after it (s): the agent saves what the user asked to keep within the same turn.
TOLD_TWICE_WINDOW_S = 600.0

_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_PATH = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.\-]*://\S+|(?:~|\.{1,2})?/?(?:[\w.\-]+/)+[\w.\-]*)")
_BACKTICKED = re.compile(r"`([^`\n]+)`")
_SNAKE = re.compile(r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b|\b_[A-Za-z0-9_]+\b")
_CAMEL = re.compile(r"\b[a-z]+[A-Z][A-Za-z0-9]*\b|\b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b")
_DOTTED = re.compile(r"\b[A-Za-z_][\w\-]*(?:\.[A-Za-z_][\w\-]*)+(?:\(\))?")
#: Words whose swap for their opposite reverses a statement while barely moving its embedding (case C26): the
#: stems of common antonym pairs in engineering notes, matched with any inflection ("enable", "enabled",
#: "enables", "enabling"). Where one side of a pair is an everyday word ("on", "add", "keep", "pass") only the
#: other side is listed: one text having a polarity word the other lacks is enough to keep them apart, and a
#: missed merge only adds a row.
POLARITY = (
    "allow", "permit", "forbid", "forbidden", "prohibit", "ban", "banned", "block", "deny", "denied",
    "enable", "disable", "increase", "decrease", "lower", "higher", "remove", "exclude", "reject", "optional",
    "mandatory", "true", "false", "off", "stop", "close", "public", "private", "sync", "async", "synchronous",
    "asynchronous", "fewer", "faster", "slower", "downgrade", "drop", "unlock", "encrypt", "decrypt", "unsafe",
    "invalid", "fail", "min", "max", "minimum", "maximum", "internal", "external", "include", "inclusive",
    "exclusive", "before", "after", "ascending", "descending", "above", "below", "least", "most", "old", "new",
    "older", "newer", "oldest", "newest", "larger", "smaller", "bigger", "highest", "lowest", "first", "last",
    "inside", "outside", "upper", "down", "end", "left", "right", "low", "less", "late", "later", "early",
    "earlier",
)
_POLARITY = re.compile(r"\b(" + "|".join(sorted(POLARITY, key=len, reverse=True)) + r")(?:s|d|ed|es|ing|ped|ping)?\b",
                       re.IGNORECASE)
#: A number with a unit that reads like a polarity word: "15 min" is minutes, not a minimum.
_UNIT = re.compile(r"\b\d+(?:[.,]\d+)?\s*mins?\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|no|never|none|nothing|nobody|neither|nor|without|cannot|\w+n't)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Specifics:
    """What must agree between two near-duplicates: ``numbers`` in order, ``names`` (identifiers, paths, URLs),
    ``negations`` and ``polarity`` (``POLARITY`` stems, lower case) as sorted multisets."""

    numbers: tuple[str, ...]
    names: tuple[str, ...]
    negations: tuple[str, ...]
    polarity: tuple[str, ...] = ()


def specifics(text: str) -> Specifics:
    """The numbers, identifiers, paths and negations of ``text`` (see the module docstring)."""
    names: Counter[str] = Counter()
    rest = text
    for pattern in (_PATH, _BACKTICKED):
        for m in pattern.finditer(rest):
            names[(m.group(1) if m.groups() else m.group(0)).rstrip(".,;:)")] += 1
        rest = pattern.sub(" ", rest)
    for pattern in (_DOTTED, _SNAKE, _CAMEL):
        for m in pattern.finditer(rest):
            token = m.group(0)
            if pattern is _DOTTED and all(len(part) == 1 for part in token.split(".")):
                continue  # "e.g", "i.e"
            names[token] += 1
        rest = pattern.sub(" ", rest)
    numbers = tuple(_NUMBER.findall(text))
    negations = sorted(m.group(0).lower() for m in _NEGATION.finditer(text))
    polarity = sorted(m.group(1).lower() for m in _POLARITY.finditer(_UNIT.sub(" ", text)))
    return Specifics(numbers, tuple(sorted(names.elements())), tuple(negations), tuple(polarity))


def same_specifics(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` state the same numbers, identifiers, paths, negations and polarity words."""
    return specifics(a) == specifics(b)


def block_repeats(rows: Sequence[Mapping[str, Any]], vectors: Mapping[int, np.ndarray]) -> dict[int, int]:
    """The ids of ``rows`` (in a block's order; each with ``memory_id``, ``content`` and ``pinned``, and optionally
    ``source`` and ``session_id``) that repeat a row before them, each mapped to the id of the first row it repeats:
    cosine similarity of their unit ``vectors`` at least ``BLOCK_REPEAT_COSINE`` and the same specifics
    (``specifics``, read once per row), or a user's statement and the agent's save of it in one session
    (``told_twice``). A pinned row is never left out; a row without a vector is never compared. About 40 ms for 100
    rows of 300 characters (CJK, emoji) that all sit above the cosine, only their numbers differing."""
    kept: list[np.ndarray] = []
    kept_rows: list[tuple[Mapping[str, Any], Specifics]] = []
    out: dict[int, int] = {}
    for row in rows:
        vector = vectors.get(int(row["memory_id"]))
        if vector is None:
            continue
        told = specifics(str(row["content"]))
        if kept and not row.get("pinned"):
            cosines = np.stack(kept) @ vector
            twin = next((i for i in np.flatnonzero(cosines >= min(TOLD_TWICE_COSINE, TOLD_IN_PART_COSINE))
                         if cosines[i] >= BLOCK_REPEAT_COSINE and kept_rows[i][1] == told
                         or told_twice((row, told), kept_rows[i], float(cosines[i]))), None)
            if twin is not None:
                out[int(row["memory_id"])] = int(kept_rows[twin][0]["memory_id"])
                continue
        kept.append(vector)
        kept_rows.append((row, told))
    return out


def told_twice(a: tuple[Mapping[str, Any], Specifics], b: tuple[Mapping[str, Any], Specifics], cosine: float) -> bool:
    """Whether rows ``a`` and ``b`` (each a row with ``source``, ``session_id`` and ``created_at``, and its
    ``specifics``) are a user's statement and the agent's save of it: one of each source (``TOLD_TWICE_SOURCES``),
    one conversation (``same_conversation``), and either ``cosine`` at least ``TOLD_TWICE_COSINE``, the same numbers,
    the same polarity words and both negated or neither; or, when ``a`` is the statement (the row a block leaves
    out), ``cosine`` at least ``TOLD_IN_PART_COSINE`` and numbers (at least one), polarity words and a negation (if it
    has one) all of which the agent's save ``b`` holds, with more numbers besides: the agent may save two sentences
    of the user's as one ("eps 104 to 115 are sponsored by Seedbox." and "their sponsor line … until 31 march 2026,
    don't trim it" in one save, two statements), and the save's "never" may belong to the other sentence."""
    (row_a, told_a), (row_b, told_b) = a, b
    sources = {row_a.get("source"), row_b.get("source")}
    if not (sources == TOLD_TWICE_SOURCES and same_conversation(row_a, row_b)):
        return False
    if told_a.numbers == told_b.numbers:
        return (cosine >= TOLD_TWICE_COSINE and told_a.polarity == told_b.polarity
                and bool(told_a.negations) == bool(told_b.negations))
    return (cosine >= TOLD_IN_PART_COSINE and str(row_b.get("source")) == AGENT_SOURCE and bool(told_a.numbers)
            and not Counter(told_a.numbers) - Counter(told_b.numbers)
            and not Counter(told_a.polarity) - Counter(told_b.polarity)
            and bool(told_b.negations) >= bool(told_a.negations))


def same_conversation(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Rows ``a`` and ``b`` were written in one conversation: the same session id, or one of them carries its MCP
    server's own id (the harness gave the server none) and they were written at most ``TOLD_TWICE_WINDOW_S``
    apart (``created_at``, Unix s)."""
    sa, sb = str(a.get("session_id") or ""), str(b.get("session_id") or "")
    if sa and sa == sb:
        return True
    if not (sa and sb) or not (sa.startswith(MCP_SERVER_SESSION_PREFIX) or sb.startswith(MCP_SERVER_SESSION_PREFIX)):
        return False
    try:
        return abs(float(a["created_at"]) - float(b["created_at"])) <= TOLD_TWICE_WINDOW_S
    except (KeyError, TypeError, ValueError):
        return False


@dataclass(frozen=True)
class NearCheck:
    """The outcome of ``find_near_duplicate``: the stored memory it duplicates (``memory_id``, ``cosine``) or
    None, the new text's ``vector`` when one was computed (to store with a new row), and the memory as
    ``prepared`` for the store (None only in a ``NearCheck()`` built by hand): write that rather than the
    ``NewMemory``, and report its ``redacted`` count for a duplicate."""

    memory_id: int | None = None
    cosine: float = 0.0
    vector: np.ndarray | None = None
    prepared: PreparedWrite | None = None


def find_near_duplicate(store: Store, index: VectorIndex, embedder: Embedder | None, memory: NewMemory) -> NearCheck:
    """Look for a stored near-duplicate of ``memory`` (see the module docstring). Skipped (a ``NearCheck``
    with only ``prepared``) while the model warms up, without a bound vector table, and for captured prompts,
    episodes and record kinds; the memory is prepared for the store in every case. Raises what embedding and the
    store's reads raise."""
    prepared = prepare_write(memory)
    if embedder is None or embedder.state != "ready" or store.vector_dim is None:
        return NearCheck(prepared=prepared)
    text, project = prepared.content, prepared.project
    if memory.kind in ("request", "episode", *RECORD_KINDS) or not text.strip():
        return NearCheck(prepared=prepared)
    vector = embedder.embed([text])[0]
    if vector.shape[0] != store.vector_dim:
        return NearCheck(prepared=prepared)
    hits = [(mid, cos) for mid, cos in index.search(store, vector, project=project, k=CANDIDATES)
            if cos >= NEAR_DUPLICATE_COSINE]
    if not hits:
        return NearCheck(vector=vector, prepared=prepared)
    rows = store.fetch([mid for mid, _ in hits])
    for mid, cos in hits:
        row = rows.get(mid)
        if row is not None and _comparable(row, project, memory.kind) and same_specifics(text, row["content"]):
            return NearCheck(mid, cos, vector, prepared)
    return NearCheck(vector=vector, prepared=prepared)


def _comparable(row: dict[str, Any], project: str, kind: str) -> bool:
    return (row["project"] == project and row["kind"] == (kind or "note") and not row["bookkeeping"]
            and row["superseded_by"] is None and row.get("forgotten_at") is None)


def near_duplicates(text: str, vector: np.ndarray, others: Sequence[tuple[str, np.ndarray]]) -> list[tuple[int, float]]:
    """Positions in ``others`` (``(text, unit vector)`` pairs, in the same project and kind as ``text``) that are
    near-duplicates of ``text`` (unit ``vector``) by the rule ``find_near_duplicate`` applies to stored memories:
    cosine similarity at least ``NEAR_DUPLICATE_COSINE`` and ``same_specifics``. Returns ``(position, cosine)``,
    closest first; a vector of another length is left out."""
    found: list[tuple[int, float]] = []
    for i, (other, vec) in enumerate(others):
        if vec.shape != vector.shape:
            continue
        cos = float(np.dot(vector, vec))
        if cos >= NEAR_DUPLICATE_COSINE and same_specifics(text, other):
            found.append((i, cos))
    return sorted(found, key=lambda hit: -hit[1])
