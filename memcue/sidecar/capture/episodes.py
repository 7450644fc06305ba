"""What an episode (the agent's final answer of a turn) is embedded as: the turn's prompt, then the answer.

An answer says what was done ("The two ends use different clocks; check_in now converts both to UTC"), while a
later question names the problem as the user saw it ("what did we conclude about those negative out-times?"),
and the user's words are in the turn's prompt, not in the answer. So the text embedded for an episode (its
``metadata["embed_text"]``, see ``capture.embed_text``) is the prompt that opened the turn, cut to
``REQUEST_CHARS``, then the answer; the stored and shown text stays the answer alone. Prepending a chunk's
context before embedding it is the "contextual retrieval" technique (Anthropic, "Introducing Contextual
Retrieval", 2024).

Measured on the dev week's store (``benchmarks/data/week/dev.json``): the cosine between a "what did we do
about X" prompt and the episode it needs rose by 0.128 on average (7 pairs), to every other episode by 0.015
(677 pairs).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from memcue.sidecar.store import NewMemory, StoreProtocol

#: Characters of the turn's prompt kept before the answer (cut at a word). The default model reads 256 word
#: pieces (all-MiniLM-L6-v2's max_seq_length, from its model card), about 1,000 characters of English: a
#: pasted log in the prompt must not push the answer out of that window.
REQUEST_CHARS = 500
#: Episodes looked at per step of the backfill (``backfill_turn_prompts``).
BACKFILL_BATCH = 64
#: The store's ``meta`` key holding the highest episode id the backfill has looked at.
BACKFILL_MARK = "episode_context_after"
#: ``(session_id, before) -> the text of the prompt that opened the turn, or None`` (``Store.turn_request``).
RequestLookup = Callable[[str, float], str | None]


def episode_embedding_text(request: str, answer: str) -> str:
    """The text to embed for an episode: the turn's ``request`` cut to ``REQUEST_CHARS`` characters at a word
    (" …" marks a cut), a blank line, then the ``answer``; the ``answer`` alone when ``request`` is blank."""
    request = " ".join(request.split())
    if not request:
        return answer
    if len(request) > REQUEST_CHARS:
        request = request[:REQUEST_CHARS].rsplit(" ", 1)[0] + " …"
    return f"{request}\n\n{answer}"


def with_turn_requests(memories: Sequence[NewMemory], lookup: RequestLookup) -> list[NewMemory]:
    """``memories`` with each episode's ``metadata["embed_text"]`` set to ``episode_embedding_text`` of its turn's
    prompt: the last request of the same session earlier in ``memories`` (a spool file holds both when the
    sidecar was down), else ``lookup(session_id, created_at)``. An episode with an ``embed_text`` already, without
    a session, or whose turn's prompt is unknown (an episode came after the last request) is left as it is."""
    last: dict[str, NewMemory] = {}  # session -> its newest request or episode in this batch
    out: list[NewMemory] = []
    for memory in memories:
        if memory.kind == "episode" and memory.session_id and not memory.metadata.get("embed_text"):
            prior = last.get(memory.session_id)
            if prior is not None:
                request = prior.content if prior.kind == "request" else None
            else:
                request = lookup(memory.session_id, memory.created_at or time.time())
            if request:
                metadata = {**memory.metadata, "embed_text": episode_embedding_text(request, memory.content)}
                memory = replace(memory, metadata=metadata)
        if memory.kind in ("request", "episode") and memory.session_id:
            last[memory.session_id] = memory
        out.append(memory)
    return out


def backfill_turn_prompts(store: StoreProtocol, limit: int = BACKFILL_BATCH) -> int:
    """Give up to ``limit`` episodes stored without their turn's prompt (before episodes were embedded with it)
    the ``embed_text`` that ``with_turn_requests`` gives a new one, and mark them for embedding again; returns
    how many episodes were looked at (0: none left). Resumable: the highest id looked at is kept in the store's
    ``meta`` (``BACKFILL_MARK``), so each episode is looked at once, also one whose turn's prompt is unknown."""
    after = int(store.get_meta(BACKFILL_MARK) or 0)
    rows = store.episodes_without_context(after, limit)
    if not rows:
        return 0
    store.reembed_with([(mid, episode_embedding_text(request, content)) for mid, content, request in rows
                        if request and request.strip()])
    store.set_meta(BACKFILL_MARK, str(rows[-1][0]))
    return len(rows)
