"""What the sidecar does for a hook: capture the prompt, race recall under the budget, render the block.

Prompt hooks inject only what ``policy.injectable`` allows: supported memories close to the best one,
never a weak match (a person asking sees those, labelled) and never a ``related`` answer, so a bad match
is dropped rather than dressed up. Session start injects memcue's standing note (``blocks.STANDING_NOTES``: what
memcue is, what is worth saving with the session's tools), then the project's pinned memories, its newest memories (no
bookkeeping, no captured prompts) and a recall on the project's name.

A prompt hook's block is "full" (each memory's text) unless the sidecar's settings (``MEMCUE_PROMPT_BLOCK=compact``
or config ``[hooks] prompt_block = "compact"``) ask for the compact block (``render.render_compact``: one line per
memory with its ``memcue://`` address, the agent fetches what it needs). Compact is not the default yet: it
only helps an agent that can fetch, the installers do not register the MCP server in every harness yet, and
the real-harness tests (issue 5) check that a fact's text reaches the model. Session start is always full.
Every prompt recall is queued for the usage log (``HookBackend.record_served``) after the block is rendered,
with the block's tokens or why nothing was injected (``SKIP_*``), and so is every session-start block given;
the write happens on the sidecar's worker thread, not here. Every hook call served is kept in ``HookTimings``.
The service returns plain ``HookResult`` values; the HTTP app turns them into its response models.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import anyio
import anyio.to_thread

from memcue.core.blocks import PROMPT_HEADER, SESSION_HEADER, SHORTENED_LINES, STANDING_NOTES, pointer_line
from memcue.core.spool_format import finite_time
from memcue.sidecar.inject.backend import HookBackend
from memcue.sidecar.inject.brief import brief, kept_by_git, was_cut
from memcue.sidecar.inject.covered import covered_transitions
from memcue.sidecar.inject.ledger import SessionLedger
from memcue.sidecar.inject.policy import injectable
from memcue.sidecar.inject.render import Block, render_block, render_compact
from memcue.sidecar.inject.shown import RESET, RESET_REASON, shown_before
from memcue.sidecar.inject.timings import HookTimings
from memcue.sidecar.inject.titles import SESSION_WHOLE, fit_titles
from memcue.sidecar.inject.tool_context import tool_context
from memcue.sidecar.recall import RecallRequest, age_label
from memcue.sidecar.store import STANDING_KINDS, NewMemory

#: ``(harness, items) -> items`` it does not load itself (``HookService``'s ``native_filter``).
NativeFilter = Callable[[str, Sequence[dict[str, Any]]], list[dict[str, Any]]]
#: ``(rows) -> {id: id}``: the rows of a block, session-start or prompt (in order, with ``memory_id``, ``content``,
#: ``pinned``), that only repeat one before them, each mapped to the row it repeats (``HookService``'s ``repeats``;
#: the sidecar's is ``dedup.block_repeats``).
Repeats = Callable[[Sequence[dict[str, Any]]], dict[int, int]]
#: Newest memories offered at session start, before the budget cut: the ``titles.SESSION_WHOLE`` newest as
#: ``brief``s, the older as titles when they do not all fit whole (about 30 to 40 in the 2,200-token block; the
#: budget cuts the oldest).
SESSION_RECENT = 60
#: The session-start block offers the standing rules (``store.STANDING_KINDS``) before the newest memories,
#: however old, so a standing rule is in view before the first task prompt (issue 15). Up to
#: ``SESSION_STANDING`` of them, the most confirmed first (``seen_count``: said again, reinforced), then the newest:
#: half of the about 24 memories the 2,200-token block holds, so a project's rules do not crowd out all it did.
SESSION_STANDING = 12
#: Whether the session-start block's lines show each memory's ``created`` date. They do not: ``age`` ("today", "3
#: weeks ago") already says when, and the date costs about 9 tokens a line, a tenth of the block over its 20-odd
#: memories (measured on the scripted week's stores: 198 of 2,192 tokens), room for two or three more memories. A
#: prompt's block keeps the date: a question about when something was decided reads it there.
SESSION_DATED = False
#: Results a prompt hook asks recall for, before the budget cut (the default of ``MEMCUE_HOOK_RECALL_LIMIT``).
PROMPT_LIMIT = 8
#: A hook's ``sent_at`` dates its captured prompt when it is at most this far ahead of the sidecar's clock (s)
#: and at most ``SENT_AT_MAX_AGE_S`` behind it (a late request: the hook's budget is seconds, a spooled copy's is
#: its own ``ts``).
SENT_AT_SLACK_S = 1.0
SENT_AT_MAX_AGE_S = 600.0


@dataclass(frozen=True)
class HookResult:
    """What a hook call injects: ``context`` ("" for nothing), ``answered_by`` (full | keyword | none |
    session), the answer's ``tier``, ``retrieval_time_ms`` (ms in the sidecar), the recall's ``query_id``,
    memories ``included`` and ``left_out``, the block's size in ``tokens``, and (a session-start block) the ids
    of the memories it shows in order (``memory_ids``) and of those it shows shortened, as a brief cut short or
    a title (``shortened_ids``)."""

    context: str
    answered_by: str
    tier: str
    retrieval_time_ms: float
    query_id: str
    included: int = 0
    left_out: int = 0
    tokens: int = 0
    memory_ids: tuple[int, ...] = ()
    shortened_ids: tuple[int, ...] = ()


def _with_twins(rows: list[dict[str, Any]], repeated: dict[int, int]) -> list[dict[str, Any]]:
    """``rows`` (a block's, each with ``memory_id``), each with ``twins``: the ids of the rows left out of the block
    because they repeat it (``repeated``: left-out id -> the id it repeats)."""
    twins: dict[int, list[int]] = {}
    for hidden, kept in repeated.items():
        twins.setdefault(kept, []).append(hidden)
    return [{**r, "twins": twins.get(r["memory_id"], [])} for r in rows]


def _told(rows: Iterable[dict[str, Any]]) -> list[int]:
    """The memories a block's ``rows`` put in the conversation: each row, and the repeats it stood for (``twins``),
    so a later prompt does not bring a repeat of what the session was shown."""
    return [mid for r in rows for mid in (r["memory_id"], *r.get("twins", ()))]


def sent_time(sent_at: object, now: float | None = None) -> float | None:
    """``sent_at`` (Unix s, the hook's clock) as a captured prompt's ``created_at``: None (the store's clock) when
    it is missing, not a number, in the future by more than ``SENT_AT_SLACK_S`` or older than ``SENT_AT_MAX_AGE_S``
    (a hook's clock that is off is not trusted with the store's order)."""
    now = time.time() if now is None else now
    sent = finite_time(sent_at)
    return sent if sent is not None and now - SENT_AT_MAX_AGE_S <= sent <= now + SENT_AT_SLACK_S else None


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


def _written_here(result: dict[str, Any], session_id: str, since: float) -> bool:
    """True when ``result`` (a recall result) was written by the session ``session_id`` itself at or after
    ``since`` (Unix s, its conversation's last clear or compact): a commit, a fix or a statement of this very
    conversation, which the model has in front of it already (the turn that made it is in the transcript)."""
    try:
        return bool(session_id) and result.get("session_id") == session_id and float(result["created_at"]) >= since
    except (KeyError, TypeError, ValueError):
        return False


def _nothing(started: float, query_id: str = "") -> HookResult:
    return HookResult(context="", answered_by="none", tier="none", retrieval_time_ms=_elapsed_ms(started),
                      query_id=query_id)


def _injected(block: Block, answered_by: str, tier: str, started: float, query_id: str) -> HookResult:
    return HookResult(context=block.text, answered_by=answered_by, tier=tier, retrieval_time_ms=_elapsed_ms(started),
                      query_id=query_id, included=block.included, left_out=block.left_out, tokens=block.tokens)


#: Why a prompt hook injected nothing (kept in the usage log for the session's receipt).
SKIP_TIMEOUT = "budget timeout: no answer within the hook's budget"
SKIP_NOTHING = "no evidence: nothing matched"
SKIP_WEAK = "no evidence: only weak matches"
SKIP_WARMING = "the embedding model was still loading: keyword matches only, none strong enough"
SKIP_SHOWN = "already shown in this session"
SKIP_NO_ROOM = "did not fit the block's budget"


def _skip_reason(answer: dict[str, Any], supported: list[dict[str, Any]], results: list[dict[str, Any]]) -> str:
    """Why a prompt's ``answer`` injected nothing: ``supported`` are its injectable results, ``results`` those
    not shown in the session yet; an answer given while the model loaded (``warming_up``) says so."""
    if not answer.get("results"):
        return SKIP_NOTHING
    if not supported:
        return SKIP_WARMING if answer.get("warming_up") else SKIP_WEAK
    return SKIP_SHOWN if not results else SKIP_NO_ROOM


#: SessionStart sources the harnesses send (Claude Code: startup, resume, clear, compact, fork); any other
#: value is treated as startup (case C15).
SOURCES = ("startup", "resume", "clear", "compact", "fork")


def session_source(ev: dict[str, Any]) -> str:
    """The event's SessionStart source, unknown values (and none) as ``startup``."""
    source = str(ev.get("source") or "").strip().lower()
    return source if source in SOURCES else "startup"


class HookService:
    """Serves hook calls and session-start blocks (see the module docstring) over ``backend``.

    ``prompt_block``: "full" or "compact" (the sidecar's settings); ``prompt_limit``: results a prompt hook
    asks recall for (1..100). ``ledger``: what each session was already shown; ``timings``: the latest calls.
    ``native_filter(harness, items)``: ``items`` without the memories ``harness`` loads from its own files already
    (``capture.native``: no duplicate tokens); applied to a prompt's results and to the session-start rows.
    ``tools_of(harness)``: the tools its sessions have, a key of ``STANDING_NOTES`` (``inject.note``), which picks
    the standing note and the pointer's wording."""

    def __init__(self, backend: HookBackend, *, prompt_block: str = "full", prompt_limit: int = PROMPT_LIMIT,
                 native_filter: NativeFilter = lambda harness, items: list(items),
                 tools_of: Callable[[str], str] = lambda harness: "mcp",
                 repeats: Repeats = lambda rows: {}) -> None:
        self.backend = backend
        self.repeats = repeats
        self.prompt_block = prompt_block
        self.prompt_limit = prompt_limit
        self.native_filter = native_filter
        self.tools_of = tools_of
        #: Per session: its one full session-start block (case C15) and the memories already injected.
        self.ledger = SessionLedger(loader=lambda key: shown_before(self.backend, key))
        self.timings = HookTimings()

    async def handle(self, harness: str, event_name: str, event: dict[str, Any], *, budget_s: float,
                     max_tokens: int, max_chars: int) -> HookResult:
        """Serve one hook call of ``harness`` (a normalised ``HookEvent`` dict) within ``budget_s`` (s), its block
        under ``max_tokens`` / ``max_chars``; the call is kept in ``timings``. Never raises for bad event
        content."""
        started = time.perf_counter()
        if event_name == "user-prompt-submit":
            out = await self._prompt(harness, event, budget_s, max_tokens, max_chars, started)
        elif event_name == "session-start":
            out = await self.session_block(harness, str(event.get("session_id") or ""),
                                           str(event.get("project") or ""), session_source(event), budget_s=budget_s,
                                           max_tokens=max_tokens, max_chars=max_chars, started=started)
        elif event_name == "pre-tool-use":
            out = await self._tool(harness, event, budget_s, max_tokens, max_chars, started)
        else:
            out = _nothing(started)
        self.timings.record(harness, event_name, out.retrieval_time_ms, out.answered_by, out.included)
        return out

    async def late(self, harness: str, event_name: str, ev: dict[str, Any]) -> HookResult:
        """A hook call taken up after its hook stopped waiting: nothing is answered or recorded as shown; a prompt is
        captured (the hook spooled it under the same id: stored once) and its recall logged as skipped."""
        started = time.perf_counter()
        if event_name == "user-prompt-submit" and str(ev.get("prompt") or "").strip():
            await self._capture_prompt(harness, ev)
            self.backend.record_served(uuid.uuid4().hex[:16], str(ev.get("session_id") or ""), "hook", [],
                                       self.prompt_block, skipped=SKIP_TIMEOUT, project=str(ev.get("project") or ""))
        out = _nothing(started)
        self.timings.record(harness, event_name, out.retrieval_time_ms, out.answered_by, out.included)
        return out

    async def _capture_prompt(self, harness: str, ev: dict[str, Any]) -> None:
        """Store the event's prompt as a captured ``request``, dated when the hook sent it (``sent_at``, as the
        hook's spooled copy is; ``sent_time``): it is stored after the recall, up to the hook's budget later, while
        the agent may already be running the turn's tools. The hook spools the same prompt under the same id
        (``extra.request_id``) when it gets no answer: stored once either way."""
        request_id = str((ev.get("extra") or {}).get("request_id") or "") or None
        memory = NewMemory(content=str(ev.get("prompt") or ""), kind="request", project=str(ev.get("project") or ""),
                           session_id=str(ev.get("session_id") or ""), source=f"hook:{harness}", source_id=request_id,
                           created_at=sent_time(ev.get("sent_at")))
        await anyio.to_thread.run_sync(self.backend.remember_prompt, memory, limiter=self.backend.limiter)

    async def _prompt(self, harness: str, ev: dict[str, Any], budget_s: float, max_tokens: int, max_chars: int,
                      started: float) -> HookResult:
        backend = self.backend
        prompt = str(ev.get("prompt") or "")
        project = str(ev.get("project") or "") or None
        if not prompt.strip():
            return _nothing(started)
        limit = self.prompt_limit
        session_id = str(ev.get("session_id") or "")
        request = RecallRequest(query=prompt, project=project, limit=limit, session_id=session_id)
        try:
            # Recall first, background work (embedding, baselines) held back meanwhile: the captured prompt's
            # own embedding would otherwise take a core from this recall (issue 4, hook latency).
            with backend.question_running():
                remaining = budget_s - (time.perf_counter() - started)
                answer, answered_by = await backend.race_recall(request, remaining)
        finally:
            await self._capture_prompt(harness, ev)  # then capture the prompt, before answering
        if answer is None:
            backend.record_served(uuid.uuid4().hex[:16], session_id, "hook", [], self.prompt_block,
                                  skipped=SKIP_TIMEOUT, project=project or "")
            return _nothing(started)
        key = self.ledger.key(harness, session_id)
        shown = self.ledger.injected(key, for_prompt=True)  # already in the conversation: not repeated
        supported = self.native_filter(harness, injectable(answer, limit))
        since = self.ledger.reset_at(key)
        results = [r for r in supported if r["memory_id"] not in shown and not _written_here(r, session_id, since)]
        if len(results) > 1:  # one fact told twice (a user's save request and the agent's save of it) shows once
            repeated = await anyio.to_thread.run_sync(self.repeats, results, limiter=backend.limiter)
            results = _with_twins([r for r in results if r["memory_id"] not in repeated], repeated)
        if self.prompt_block == "compact":
            block = render_compact(results, session_id=session_id, query_id=answer["query_id"],
                                   count_tokens=backend.count_tokens, max_tokens=max_tokens, max_chars=max_chars)
        else:
            block = render_block(PROMPT_HEADER, results, count_tokens=backend.count_tokens, max_tokens=max_tokens,
                                 max_chars=max_chars)
        if block.text:
            self.ledger.add_injected(key, _told(results[:block.included]))
            backend.record_served(answer["query_id"], session_id, "hook", results[:block.included], self.prompt_block,
                                  tokens=block.tokens, project=project or "")
        else:
            backend.record_served(answer["query_id"], session_id, "hook", [], self.prompt_block,
                                  skipped=_skip_reason(answer, supported, results), project=project or "")
        return _injected(block, answered_by, answer["tier"], started, answer["query_id"])

    async def _tool(self, harness: str, ev: dict[str, Any], budget_s: float, max_tokens: int, max_chars: int,
                    started: float) -> HookResult:
        """The memories that name a tool call's file or command (``tool_context``), each once per session."""
        answer = await tool_context(self.backend, self.ledger, harness, ev, budget_s=budget_s, max_tokens=max_tokens,
                                    max_chars=max_chars)
        if not answer.block.text:
            return _nothing(started, answer.query_id)
        return _injected(answer.block, "keyword", "supported", started, answer.query_id)

    async def session_block(self, harness: str, session_id: str, project: str, source: str = "startup", *,
                            budget_s: float, max_tokens: int, max_chars: int,
                            started: float | None = None) -> HookResult:
        """The session-start block of ``project`` for the session ``session_id`` of ``harness`` (the SessionStart
        hook and ``POST /session_context`` both come here): the standing note of its tools, then pinned memories,
        the newest ones and a recall on the project's name, rendered under ``max_tokens`` / ``max_chars`` (memories are
        dropped before the note; an empty project gets the note alone), built within ``budget_s`` (s).
        ``source`` is a SessionStart source (``SOURCES``). Nothing ("" context) without a project.

        A session gets this block once (``SessionLedger``, case C15); a resumed session, or one asking again,
        gets the one-line ``POINTER`` instead, also when the project holds no memory yet, and not the note
        again: the harness keeps the earlier context on resume (Claude Code replays the transcript, which holds
        the first block and its note), so a second copy would only cost about 100 tokens per resume, and C15
        allows a resumed session a one-line pointer at most. The pointer names ``remember`` itself, for a
        compacted conversation whose summary dropped the note."""
        started = time.perf_counter() if started is None else started
        query_id = uuid.uuid4().hex[:16]
        key = self.ledger.key(harness, session_id)
        if source in ("clear", "compact"):
            self.ledger.forget_injected(key)  # the conversation no longer holds what was injected
            if key:  # logged, so a restarted sidecar's ledger forgets it too (``inject.shown``)
                self.backend.record_served(uuid.uuid4().hex[:16], session_id, "session", [], RESET,
                                           skipped=RESET_REASON, project=project)
        if not project:
            return _nothing(started, query_id)
        tools = self.tools_of(harness)
        if source == "resume" or not self.ledger.claim_block(key):
            # The conversation already holds memcue's block (resumed, compacted/cleared in the same session), or
            # another call for this session is building it right now (case C23): a one-line pointer, never a
            # second full block (case C15).
            return await self._pointer(project, tools, max_tokens, max_chars, started, query_id)
        rows: list[dict[str, Any]] = []
        available = 0
        given = cut = False
        try:
            with anyio.move_on_after(budget_s) as scope:
                rows, available = await anyio.to_thread.run_sync(self._session_rows, project, abandon_on_cancel=True,
                                                                 limiter=self.backend.limiter)
                rows = self.native_filter(harness, rows)
            # Past the budget (a cold or busy sidecar) the rows are abandoned: the note alone (it needs no store),
            # which does not count as the session's block: a later start of the session may still get it whole.
            cut = scope.cancelled_caught
            block, rows = self._render_session(rows, tools, max_tokens, max_chars, available)
            # Only a block that was given counts as the session's one full block (C15).
            given = bool(block.text)
            if not given:
                return _nothing(started, query_id)
            # A memory shown shortened may still come whole with a prompt that needs it.
            self.ledger.add_injected(key, _told(r for r in rows[:block.included] if not r["shortened"]))
            self.backend.record_served(query_id, session_id, "session", rows[:block.included], "full",
                                       tokens=block.tokens, project=project)
            shown = rows[:block.included]
            return replace(_injected(block, "session", "supported" if block.included else "none", started, query_id),
                           memory_ids=tuple(r["memory_id"] for r in shown),
                           shortened_ids=tuple(r["memory_id"] for r in shown if r["shortened"]))
        finally:
            self.ledger.end_claim(key, given and not cut)

    def _render_session(self, rows: list[dict[str, Any]], tools: str, max_tokens: int, max_chars: int,
                        available: int) -> tuple[Block, list[dict[str, Any]]]:
        """The session-start block of ``rows`` (briefs, ``may_title`` on an older one): the standing note of
        ``tools``, the rows that fit, the older ones as titles when that makes more fit (``titles.fit_titles``), a
        left-out line counting the project's ``available`` memories, and, when a shown one is shortened, the line
        that says how to get it whole (``SHORTENED_LINES``); and the rows as shown."""
        rows = self._fit_titles(rows, tools, max_tokens, max_chars, available)
        return self._render_rows(rows, tools, max_tokens, max_chars, available), rows

    def _fit_titles(self, rows: list[dict[str, Any]], tools: str, max_tokens: int, max_chars: int,
                    available: int) -> list[dict[str, Any]]:
        """``rows`` with the oldest that may be (``may_title``) shown as titles, as few as let all fit."""
        def unbounded(some: list[dict[str, Any]]) -> Block:
            return render_block(SESSION_HEADER, some, count_tokens=self.backend.count_tokens, max_tokens=10**9,
                                max_chars=10**9, preface=STANDING_NOTES[tools], footer=SHORTENED_LINES[tools],
                                available=max(available, len(rows) + 1), dated=SESSION_DATED)
        return fit_titles(rows, unbounded, max_tokens=max_tokens, max_chars=max_chars,
                          count_tokens=self.backend.count_tokens, dated=SESSION_DATED)

    def _render_rows(self, rows: list[dict[str, Any]], tools: str, max_tokens: int, max_chars: int,
                     available: int) -> Block:
        """``_render_session``'s block of ``rows`` as they are shown."""
        block = render_block(SESSION_HEADER, rows, count_tokens=self.backend.count_tokens, max_tokens=max_tokens,
                             max_chars=max_chars, preface=STANDING_NOTES[tools], available=available,
                             dated=SESSION_DATED)
        if not any(r["shortened"] for r in rows[:block.included]):
            return block
        return render_block(SESSION_HEADER, rows, count_tokens=self.backend.count_tokens, max_tokens=max_tokens,
                            max_chars=max_chars, preface=STANDING_NOTES[tools], available=available,
                            footer=SHORTENED_LINES[tools], dated=SESSION_DATED)

    async def _pointer(self, project: str, tools: str, max_tokens: int, max_chars: int, started: float,
                       query_id: str) -> HookResult:
        """The one-line ``POINTER`` for ``project`` (its count: memories that can answer, ``doc_count``; its
        saving tool: ``tools``), nothing when it does not fit."""
        count = await anyio.to_thread.run_sync(self.backend.doc_count, project, limiter=self.backend.limiter)
        text = pointer_line(count, tools)
        tokens = self.backend.count_tokens(text)
        if tokens > max_tokens or len(text) > max_chars:
            return _nothing(started, query_id)
        return HookResult(context=text, answered_by="session", tier="supported", retrieval_time_ms=_elapsed_ms(started),
                          query_id=query_id, included=0, left_out=0, tokens=tokens)

    def _session_rows(self, project: str) -> tuple[list[dict[str, Any]], int]:
        """The session-start block's memories (``_offered``), each once and as its ``brief`` (``shortened`` when that
        cut it; an older one ``may_title``: it may show as its title), less the test transitions a commit among them
        tells (``covered_transitions``) and the rows that repeat one before them (``repeats``: the row they repeat
        lists them as its ``twins``); and how many memories that can answer the project holds (``doc_count``), less
        those: the block's left-out line counts what the budget left out, not what another row tells. Blocking."""
        backend, now = self.backend, time.time()
        offered, whole = self._offered(project)
        repeated = self.repeats(offered)
        left_out = covered_transitions(offered) | set(repeated)
        out = []
        for row in offered:
            mid = row["memory_id"]
            if mid in left_out:
                continue
            shown = brief(row["content"], row.get("source", ""))
            out.append({"memory_id": mid, "content": shown, "shortened": was_cut(row["content"], shown),
                        "memory_kind": row.get("kind", row.get("memory_kind")), "pinned": row.get("pinned", False),
                        "age_label": age_label(row["created_at"], now), "tier": "supported",
                        "source": row.get("source", ""), "created_at": row["created_at"],
                        "may_title": mid not in whole})  # an older one: a title when the block cannot hold it whole
        return _with_twins(out, repeated), max(0, backend.doc_count(project) - len(left_out))  # not left out: told

    def _offered(self, project: str) -> tuple[list[dict[str, Any]], set[int]]:
        """The memories a session-start block of ``project`` offers, each once (with ``memory_id``), in its order:
        pinned, the standing rules (``STANDING_KINDS``, most confirmed first), the ``SESSION_WHOLE`` newest others (no
        bookkeeping, no captured prompts or episodes), the supported answers of a recall on the project's name, then
        the older of the ``SESSION_RECENT`` newest: first the notes, rules and howtos a person or an agent wrote,
        then the changes and what a capture signal took from git or a test run (``brief.kept_by_git``: git keeps
        their story, nothing else keeps a note's words, so the budget's cut takes the older changes first); and the
        ids of those always shown whole (all but the older changes and signal rows).
        Blocking."""
        backend = self.backend
        pinned = backend.list_memories(project=project, limit=20, include_bookkeeping=False, pinned_only=True)
        standing = [row for kind in STANDING_KINDS for row in backend.list_memories(
            project=project, limit=SESSION_STANDING, include_bookkeeping=False, kind=kind)]
        standing.sort(key=lambda r: (-int(r.get("seen_count") or 1), -float(r["created_at"])))
        head = [*pinned, *standing[:SESSION_STANDING]]
        seen = {row["id"] for row in head}
        recent = [row for row in backend.list_memories(project=project, limit=SESSION_RECENT, include_bookkeeping=False,
                                                       kinds_excluded=("request", "episode")) if row["id"] not in seen]
        name = os.path.basename(project.rstrip("/")) if project else ""
        named = []
        if name:
            answer = backend.recall(RecallRequest(query=name.replace("-", " ").replace("_", " "), project=project,
                                                  limit=5))
            named = [r for r in answer["results"] if r["tier"] == "supported"]
        written: list[dict[str, Any]] = []
        from_git: list[dict[str, Any]] = []
        for row in recent[SESSION_WHOLE:]:
            (from_git if kept_by_git(row.get("source", ""), str(row.get("kind", ""))) else written).append(row)
        offered: list[dict[str, Any]] = []
        ids: set[int] = set()
        for row in [*head, *recent[:SESSION_WHOLE], *named, *written, *from_git]:
            mid = row.get("id", row.get("memory_id"))
            if mid not in ids:
                ids.add(mid)
                offered.append({**row, "memory_id": mid})
        whole = {row.get("id", row.get("memory_id")) for row in [*head, *recent[:SESSION_WHOLE], *named, *written]}
        whole |= {row["id"] for row in recent if row.get("kind") in STANDING_KINDS}  # a rule is never a title
        return offered, whole
