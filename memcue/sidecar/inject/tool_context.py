"""Recall at the point of action: the memories that name the file a tool call edits or the command it runs.

A PreToolUse hook sends the call's lookup (``memcue.adapters.tool_query``: ``paths`` and shell ``terms``). The
answer is not a semantic recall: a memory is given only when its text carries one of them as a whole identifier:

- a path: the same path, a longer one ending in it (``/home/ana/api/src/billing/tax.py``), a shorter one it ends
  in on a ``/`` boundary (``billing/tax.py``, the basename ``tax.py``), a folder it lies in (``src/billing/``), or
  its module name (``billing.tax``); ``tests/tax.py`` does not name ``src/billing/tax.py``;
- a shell term (``make check``, ``alembic``, ``--force``, ``DATABASE_URL``): the same words, case and all, not
  inside a longer identifier (``pytest`` does not match ``pytest-cov``).

Candidates come from the keyword index (one FTS5 query of the identifiers' words, ``CANDIDATES`` best), which never
holds bookkeeping rows, and skips superseded and forgotten ones and the captured kinds (prompts, answers, session
events: ``CAPTURED_KINDS``); each candidate is then checked word for word. A test that failed and then passed is
given beside a shell call only when the call names a file it names (``unittest`` alone matches every one). Kinds
that say how to work (``store.CONSTRAINING_KINDS``: decisions, preferences, conventions, bugs, lessons, procedures)
come first, then the closer match, then the newest. A memory already injected in the session (by the prompt hook,
the session-start block or an earlier tool call: the shared ``SessionLedger``) is not given again beside a tool
call; the prompt hook may still give one shown only beside a tool call, when a prompt asks for it. At most
``MAX_MEMORIES``, rendered under the hook's token budget (300 by default) with the same untrusted-data framing as
every block (``TOOL_HEADER``).
"""

from __future__ import annotations

import os
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from memcue.core.blocks import TOOL_HEADER
from memcue.sidecar.inject.backend import HookBackend
from memcue.sidecar.inject.ledger import SessionLedger
from memcue.sidecar.inject.render import Block, render_block
from memcue.sidecar.recall import age_label
from memcue.sidecar.store.write import CAPTURED_KINDS, CONSTRAINING_KINDS

#: Memories given beside one tool call at most.
MAX_MEMORIES = 3
#: Keyword candidates checked word for word.
CANDIDATES = 100
#: Paths and terms of one lookup read at most (the hook sends fewer).
MAX_IDENTIFIERS = 24
#: Why a tool call got nothing (the usage log's ``skipped``).
SKIP_NOTHING = "no memory names the file or command"
SKIP_SHOWN = "already shown in this session"
SKIP_NO_ROOM = "did not fit the block's budget"
SKIP_TIMEOUT = "budget timeout: no answer within the hook's budget"

#: The source of memories promoted from a test that failed and then passed (``capture.test_runs``).
TEST_TRANSITION_SOURCE = "capture:test-passed"
#: A run of path-ish characters in a memory's text (backquotes, quotes, brackets, ``:line`` end it).
_RUN = re.compile(r"[\w./@+~-]+")


@dataclass(frozen=True)
class ToolAnswer:
    """What one tool call gets: the rendered ``block`` (empty for nothing), the ``rows`` it holds, best first, the
    usage log's ``skipped`` reason when nothing was given, and the lookup's ``query_id``."""

    block: Block
    rows: list[dict[str, Any]]
    skipped: str
    query_id: str


def _strings(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    return [v.strip() for v in value[:MAX_IDENTIFIERS] if isinstance(v, str) and v.strip()]


def _module(path: str) -> str:
    """``src/billing/tax.py`` -> ``src.billing.tax``; "" for a path without an extension or a package file."""
    stem, ext = os.path.splitext(path.strip("/"))
    if not ext or os.path.basename(stem) == "__init__":
        return ""
    return stem.replace("/", ".")


def _term_pattern(term: str) -> re.Pattern[str]:
    """A shell term as a whole identifier: its words in order (any spaces between), no identifier around it."""
    words = r"\s+".join(re.escape(w) for w in term.split())
    return re.compile(r"(?<![\w/.-])" + words + r"(?![\w/-]|\.\w)")


def _path_strength(token: str, path: str, module: str) -> int:
    """How closely a path-ish ``token`` of a memory names ``path``: 3 the path itself (or a longer one ending in
    it), 2 a shorter one on a ``/`` boundary, 1 the basename, the module name or a folder it lies in; 0 none."""
    if token == path or token.endswith("/" + path):
        return 3
    if "/" in token:
        if path.endswith("/" + token):
            return 2
        return 1 if path.startswith(token + "/") or f"/{token}/" in f"/{path}" else 0
    if token == os.path.basename(path):
        return 1
    return 1 if module and "." in token and (module == token or module.endswith("." + token)) else 0


def _tokens(content: str) -> set[str]:
    """The path-ish tokens of a memory's text: runs holding a ``/`` or a ``.``, without ``./``, a trailing
    sentence dot or slash."""
    out = set()
    for found in _RUN.finditer(content):
        token = found.group(0).rstrip(".-/")
        while token.startswith(("./", "../")):
            token = token.split("/", 1)[1]
        if "/" in token or "." in token:
            out.add(token)
    return out


class Lookup:
    """One tool call's identifiers (``query``: the hook's ``tool_query``) and how to find and check them."""

    def __init__(self, query: dict[str, Any]) -> None:
        self.shell = query.get("type") == "shell"
        self.paths = [p.replace("\\", "/") for p in _strings(query.get("paths"))]
        self.terms = _strings(query.get("terms"))
        self._modules = [_module(p) for p in self.paths]
        #: Dotless basenames (``Makefile``, ``Dockerfile``) are matched as words.
        self._bare = [_term_pattern(os.path.basename(p)) for p in self.paths
                      if "." not in os.path.basename(p) and len(os.path.basename(p)) >= 4]
        self._patterns = [(_term_pattern(t), 2 if (" " in t or t.startswith("--") or t.isupper()) else 1)
                          for t in self.terms]

    def __bool__(self) -> bool:
        return bool(self.paths or self.terms)

    def match_expression(self) -> str:
        """One FTS5 expression (quoted phrases joined by OR) that every memory naming an identifier matches: each
        path's basename, its module's last two parts, its folder; each term."""
        phrases: list[str] = []
        for path, module in zip(self.paths, self._modules, strict=True):
            phrases.append(os.path.basename(path))
            if module.count(".") >= 1:
                phrases.append(".".join(module.split(".")[-2:]))
            parent = os.path.dirname(path.strip("/"))
            if "/" in parent:
                phrases.append(parent)
        phrases += self.terms
        kept = dict.fromkeys(p for p in phrases if re.search(r"\w", p))
        return " OR ".join('"' + p.replace('"', '""') + '"' for p in kept)

    def strength(self, content: str, *, paths_only: bool = False) -> int:
        """How closely ``content`` names this call (the best of its identifiers; 0 none): see ``_path_strength``;
        a term of several words, a flag or an environment variable 2, a program alone 1 (with ``paths_only``,
        terms do not count)."""
        best = 0
        if self.paths:
            for token in _tokens(content):
                for path, module in zip(self.paths, self._modules, strict=True):
                    best = max(best, _path_strength(token, path, module))
            best = max([best, *(1 for p in self._bare if p.search(content))])
        for pattern, weight in [] if paths_only else self._patterns:
            if weight > best and pattern.search(content):
                best = weight
        return best


def _rank(row: dict[str, Any], strength: int) -> tuple[int, int, float]:
    kind = str(row.get("kind") or "")
    first = CONSTRAINING_KINDS.index(kind) if kind in CONSTRAINING_KINDS else len(CONSTRAINING_KINDS)
    return first, -strength, -float(row.get("created_at") or 0.0)


def matching_rows(backend: HookBackend, lookup: Lookup, project: str) -> list[dict[str, Any]]:
    """The memories of ``project`` (and global ones) that name ``lookup``'s identifiers, best first, as block
    results (``memory_id``, ``content``, ``memory_kind``, ``source``, ``created_at``, ``age_label``, ``pinned``,
    ``tier``). Blocking (the store)."""
    rows = backend.keyword_rows(lookup.match_expression(), project=project, limit=CANDIDATES,
                                exclude_kinds=CAPTURED_KINDS)
    scored = []
    for row in rows:
        if row.get("bookkeeping") or row.get("superseded_by") is not None or row.get("forgotten_at") is not None:
            continue
        # A test that failed and then passed is that test command's own history, not a warning about running it:
        # beside a shell call it is given only for a file the call names.
        transition = lookup.shell and row.get("source") == TEST_TRANSITION_SOURCE
        strength = lookup.strength(str(row.get("content") or ""), paths_only=transition)
        if strength:
            scored.append((_rank(row, strength), row))
    scored.sort(key=lambda item: item[0])
    now = time.time()
    return [{"memory_id": row["id"], "content": row["content"], "memory_kind": row.get("kind"),
             "source": row.get("source", ""), "created_at": row["created_at"], "pinned": row.get("pinned", False),
             "age_label": age_label(row["created_at"], now), "tier": "supported"} for _, row in scored]


async def tool_context(backend: HookBackend, ledger: SessionLedger, harness: str, event: dict[str, Any], *,
                       budget_s: float, max_tokens: int, max_chars: int) -> ToolAnswer:
    """The block for one PreToolUse ``event`` of ``harness`` (a normalised ``HookEvent`` dict whose ``extra``
    holds ``tool_query``), found within ``budget_s`` (s) and rendered under ``max_tokens`` / ``max_chars``; the
    memories given are recorded in ``ledger`` and queued for the usage log (``served_by`` "tool"). Never raises
    for bad event content."""
    query_id = uuid.uuid4().hex[:16]
    extra = event.get("extra")
    query = extra.get("tool_query") if isinstance(extra, dict) else None
    lookup = Lookup(query if isinstance(query, dict) else {})
    nothing = Block("", 0, 0, 0, 0)
    if not lookup:
        return ToolAnswer(nothing, [], SKIP_NOTHING, query_id)
    session_id = str(event.get("session_id") or "")
    project = str(event.get("project") or "")
    rows: list[dict[str, Any]] | None = None
    with anyio.move_on_after(budget_s):
        rows = await anyio.to_thread.run_sync(matching_rows, backend, lookup, project, abandon_on_cancel=True,
                                              limiter=backend.limiter)
    key = ledger.key(harness, session_id)
    shown = ledger.injected(key)
    fresh = [r for r in rows or [] if r["memory_id"] not in shown][:MAX_MEMORIES]
    block = render_block(TOOL_HEADER, fresh, count_tokens=backend.count_tokens, max_tokens=max_tokens,
                         max_chars=max_chars) if fresh else nothing
    given = fresh[:block.included]
    skipped = ("" if block.text else SKIP_TIMEOUT if rows is None else SKIP_NOTHING if not rows
               else SKIP_SHOWN if not fresh else SKIP_NO_ROOM)
    if block.text:
        ledger.add_injected(key, (r["memory_id"] for r in given), beside_tool=True)
    backend.record_served(query_id, session_id, "tool", given, "full" if block.text else "", tokens=block.tokens,
                          skipped=skipped, project=project)
    return ToolAnswer(block, given, skipped, query_id)

