"""What the sidecar does for a hook: capture the prompt, race recall under the budget, render the block.

Prompt hooks inject only what ``injection.injectable`` allows: supported memories close to the best one,
never a weak match (a person asking sees those, labelled) and never a ``related`` answer, so a bad match
is dropped rather than dressed up. Session start injects the project's pinned memories,
its newest memories (no bookkeeping, no captured prompts) and a recall on the project's name.

A prompt hook's block is "full" (each memory's text) unless the sidecar's ``MEMCUE_PROMPT_BLOCK=compact`` or
config ``[hooks] prompt_block = "compact"`` asks for the compact block (``render.render_compact``: one line per
memory with its ``memcue://`` address, the agent fetches what it needs). Compact is not the default yet: it
only helps an agent that can fetch, the installers do not register the MCP server in every harness yet, and
the real-harness tests (issue 5) check that a fact's text reaches the model. Session start is always full.
Every prompt recall that injected something is queued for the usage log (``sidecar/usage.py``) after the
block is rendered; the write happens on the worker thread, not here.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

import anyio
import anyio.to_thread

from memcue import __version__
from memcue.core.blocks import POINTER, PROMPT_HEADER, SESSION_HEADER
from memcue.sidecar.api_models import HookIn, HookOut
from memcue.sidecar.engine import Engine
from memcue.sidecar.inject.policy import injectable
from memcue.sidecar.inject.render import Block, render_block, render_compact
from memcue.sidecar.recall import RecallRequest, age_label
from memcue.sidecar.store import NewMemory
from memcue.sidecar.usage import served_recall

#: Newest memories offered at session start, before the budget cut.
SESSION_RECENT = 8
#: Results a prompt hook asks recall for, before the budget cut (env ``MEMCUE_HOOK_RECALL_LIMIT``).
PROMPT_LIMIT = 8


def prompt_limit() -> int:
    """How many results a prompt hook asks for: ``MEMCUE_HOOK_RECALL_LIMIT`` or ``PROMPT_LIMIT``."""
    try:
        return max(1, min(100, int(os.environ.get("MEMCUE_HOOK_RECALL_LIMIT", PROMPT_LIMIT))))
    except ValueError:
        return PROMPT_LIMIT


def _nothing(started: float, query_id: str = "") -> HookOut:
    elapsed = round((time.perf_counter() - started) * 1000, 2)
    return HookOut(version=__version__, context="", answered_by="none", tier="none", retrieval_time_ms=elapsed,
                   query_id=query_id)


def _injected(block: Block, answered_by: str, tier: str, started: float, query_id: str) -> HookOut:
    return HookOut(version=__version__, context=block.text, answered_by=answered_by, tier=tier,
                   retrieval_time_ms=round((time.perf_counter() - started) * 1000, 2), query_id=query_id,
                   included=block.included, left_out=block.left_out, tokens=block.tokens)


async def handle_hook(engine: Engine, harness: str, event_name: str, body: HookIn,
                      limiter: anyio.CapacityLimiter) -> HookOut:
    """Serve one hook call (see module docstring). Never raises for bad event content."""
    ev = body.event
    started = time.perf_counter()
    if event_name == "user-prompt-submit":
        return await _prompt(engine, harness, ev, body, limiter, started)
    if event_name == "session-start":
        return await session_block(engine, harness, str(ev.get("session_id") or ""), str(ev.get("project") or ""),
                                   session_source(ev), budget_s=body.budget_s, max_tokens=body.max_tokens,
                                   max_chars=body.max_chars, limiter=limiter, started=started)
    return _nothing(started)


async def _prompt(engine: Engine, harness: str, ev: dict[str, Any], body: HookIn,
                  limiter: anyio.CapacityLimiter, started: float) -> HookOut:
    prompt = str(ev.get("prompt") or "")
    project = str(ev.get("project") or "") or None
    if not prompt.strip():
        return _nothing(started)
    limit = prompt_limit()
    request = RecallRequest(query=prompt, project=project, limit=limit, session_id=str(ev.get("session_id") or ""))
    try:
        # Recall first, background work (embedding, baselines) held back meanwhile: the captured prompt's
        # own embedding would otherwise take a core from this recall (issue 4, hook latency).
        with engine.question_running():
            remaining = body.budget_s - (time.perf_counter() - started)
            answer, answered_by = await engine.recall_within(request, remaining, limiter)
    finally:
        # Then capture the prompt, before answering. The hook spools the same prompt under the same id when
        # it gets no answer: stored once either way.
        request_id = str((ev.get("extra") or {}).get("request_id") or "") or None
        memory = NewMemory(content=prompt, kind="request", project=project or "",
                           session_id=str(ev.get("session_id") or ""), source=f"hook:{harness}",
                           source_id=request_id)
        await anyio.to_thread.run_sync(engine.remember_prompt, memory, limiter=limiter)
    if answer is None:
        return _nothing(started)
    session_id = str(ev.get("session_id") or "")
    key = engine.sessions.key(harness, session_id)
    shown = engine.sessions.injected(key)  # already in the conversation: not repeated
    results = [r for r in injectable(answer, limit) if r["memory_id"] not in shown]
    shape = engine.config.prompt_block
    if shape == "compact":
        block = render_compact(results, session_id=session_id, query_id=answer["query_id"],
                               count_tokens=engine.tokens.count, max_tokens=body.max_tokens, max_chars=body.max_chars)
    else:
        block = render_block(PROMPT_HEADER, results, count_tokens=engine.tokens.count,
                             max_tokens=body.max_tokens, max_chars=body.max_chars)
    if block.text:
        engine.sessions.add_injected(key, (r["memory_id"] for r in results[:block.included]))
        engine.usage.record(served_recall(answer["query_id"], session_id, "hook", results[:block.included], shape))
    return _injected(block, answered_by, answer["tier"], started, answer["query_id"])


#: SessionStart sources the harnesses send (Claude Code: startup, resume, clear, compact, fork); any other
#: value is treated as startup (case C15).
SOURCES = ("startup", "resume", "clear", "compact", "fork")


def session_source(ev: dict[str, Any]) -> str:
    """The event's SessionStart source, unknown values (and none) as ``startup``."""
    source = str(ev.get("source") or "").strip().lower()
    return source if source in SOURCES else "startup"


async def session_block(engine: Engine, harness: str, session_id: str, project: str, source: str = "startup", *,
                        budget_s: float, max_tokens: int, max_chars: int, limiter: anyio.CapacityLimiter,
                        started: float | None = None) -> HookOut:
    """The session-start block of ``project`` for the session ``session_id`` of ``harness`` (the SessionStart
    hook and ``POST /session_context`` both come here): pinned memories, the newest ones and a recall on the
    project's name, rendered under ``max_tokens`` / ``max_chars``, built within ``budget_s`` (s). A session
    gets it once (``SessionLedger``); a resumed session, or one asking again, gets the one-line ``POINTER``.
    ``source`` is a SessionStart source (``SOURCES``). Nothing ("" context) without a project."""
    started = time.perf_counter() if started is None else started
    query_id = uuid.uuid4().hex[:16]
    key = engine.sessions.key(harness, session_id)
    if source in ("clear", "compact"):
        engine.sessions.forget_injected(key)  # the conversation no longer holds what was injected
    if project and (source == "resume" or engine.sessions.had_block(key)):
        # The conversation already holds memcue's block (resumed, or compacted/cleared in the same session):
        # a one-line pointer, never a second full block (case C15).
        count = await anyio.to_thread.run_sync(engine.store.doc_count, project, limiter=limiter)
        text = POINTER.format(count=f"{count} {'memory' if count == 1 else 'memories'}")
        tokens = engine.tokens.count(text)
        if not count or tokens > max_tokens or len(text) > max_chars:
            return _nothing(started, query_id)
        return HookOut(version=__version__, context=text, answered_by="session", tier="supported",
                       retrieval_time_ms=round((time.perf_counter() - started) * 1000, 2), query_id=query_id,
                       included=0, left_out=0, tokens=tokens)

    def build() -> list[dict[str, Any]]:
        store, now = engine.store, time.time()
        pinned = store.list_memories(project=project, limit=20, include_bookkeeping=False, pinned_only=True)
        recent = store.list_memories(project=project, limit=SESSION_RECENT, include_bookkeeping=False,
                                     kinds_excluded=("request",))
        name = os.path.basename(project.rstrip("/")) if project else ""
        named = []
        if name:
            answer = engine.recall(RecallRequest(query=name.replace("-", " ").replace("_", " "), project=project,
                                                 limit=5))
            named = [r for r in answer["results"] if r["tier"] == "supported"]
        seen: set[int] = set()
        out = []
        for row in [*pinned, *recent, *named]:
            mid = row.get("id", row.get("memory_id"))
            if mid in seen:
                continue
            seen.add(mid)
            out.append({"memory_id": mid, "content": row["content"], "memory_kind": row.get("kind",
                        row.get("memory_kind")), "pinned": row.get("pinned", False),
                        "age_label": age_label(row["created_at"], now), "tier": "supported"})
        return out

    if not project:
        return _nothing(started, query_id)
    with anyio.move_on_after(budget_s):
        rows = await anyio.to_thread.run_sync(build, abandon_on_cancel=True, limiter=limiter)
        block = render_block(SESSION_HEADER, rows, count_tokens=engine.tokens.count,
                             max_tokens=max_tokens, max_chars=max_chars)
        if block.text:  # only a block that was given counts as the session's one full block (C15)
            engine.sessions.mark_block(key)
            engine.sessions.add_injected(key, (r["memory_id"] for r in rows[:block.included]))
        return _injected(block, "session", "supported" if rows else "none", started, query_id)
    return _nothing(started, query_id)
