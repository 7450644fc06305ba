"""The one write-preparation path: every memory written (``Store.remember_many``, ``Store.update``) and the
near-duplicate check of ``/remember`` (``sidecar.dedup``) see its text through ``prepare_write``, so one write
is cleaned and redacted once.

The steps, in order: sanitise (``sanitize``: invalid Unicode, control bytes, line ends); strip memcue's own
injected blocks out of a captured prompt (kind ``request``, ``strip``); redact secrets (``memcue.core.redaction``,
the one redactor the hook's spool writer also uses: the content, and every string in ``metadata``, such as
``embed_text``, the text embedded instead when given); cut a captured text (``records.CAPTURED_KINDS``) to
``memcue.core.limits.CAPTURE_MAX_CHARS`` at a line or word, with a marker saying how much was left out (after
redaction, so a secret is never cut into a piece the redactor no longer knows; a captured text far over the cap
is first cut to ``PRECUT_CHARS`` at a line, so a pasted megabyte costs the redactor no more than a long answer,
and what is stored then ends at least ``PRECUT_GUARD_CHARS`` before that cut: ``redaction.redact_captured``);
flag bookkeeping rows (a prompt that was only a pasted block, a record kind, an agent's answer too short to be
an episode, or a line a tool writes about itself: ``bookkeeping``); the digest that finds the same text written
again in the same project; and the entities the text names (``entities.extract_entities``, for the entity graph).

All of it is text work done before the store takes its writer lock, so a long text never holds up other
writers, and only the SQL runs under the lock.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from memcue.core import redaction
from memcue.core.limits import CAPTURE_MAX_CHARS, PRECUT_CHARS, PRECUT_GUARD_CHARS
from memcue.core.text import sanitize_text
from memcue.sidecar.store.write.bookkeeping import is_bookkeeping, is_trivial_answer
from memcue.sidecar.store.write.entities import extract_entities
from memcue.sidecar.store.write.records import CAPTURED_KINDS, EPISODE, RECORD_KINDS, NewMemory
from memcue.sidecar.store.write.strip import strip_injected
from memcue.sidecar.store.write.tags import normalize_tags

__all__ = ["CAPTURE_MAX_CHARS", "PRECUT_CHARS", "PRECUT_GUARD_CHARS", "PreparedWrite", "prepare_write"]


@dataclass(frozen=True)
class PreparedWrite:
    """A memory ready to store: ``memory`` as given (its ``source_id``, ``pinned``, times), the cleaned fields,
    ``bookkeeping`` (never recalled, never embedded), ``digest`` (sha1 hex of kind and content),
    ``redacted`` (secrets replaced in the content) and ``entities`` (``(name, kind)`` pairs of
    ``extract_entities``; none for a bookkeeping row), ``tags`` normalised (``store.write.tags``). ``content`` may be
    empty (the store refuses it then)."""

    memory: NewMemory
    content: str
    kind: str
    project: str
    session_id: str
    source: str
    metadata: dict[str, Any]
    bookkeeping: bool
    digest: str
    redacted: int
    entities: tuple[tuple[str, str], ...] = ()
    tags: tuple[str, ...] = ()


def prepare_write(memory: NewMemory) -> PreparedWrite:
    """``memory`` through the steps of the module docstring. Never raises on any ``str`` fields; raises
    ``ValueError`` for a tag that is not one (``store.write.tags.normalize_tags``)."""
    content = sanitize_text(memory.content)
    # A captured prompt: memcue's own injected block is not stored again. A prompt that was only such a
    # block is kept as it was, as a bookkeeping row (never recalled, never embedded).
    stripped = strip_injected(content) if memory.kind == "request" else content
    only_block = bool(content.strip()) and not stripped.strip()
    content = content if only_block else stripped
    secrets = (redaction.redact_captured if memory.kind in CAPTURED_KINDS else redaction.redact)(content)
    content = secrets.text
    bookkeeping = (only_block or memory.kind in RECORD_KINDS or is_bookkeeping(content)
                   or (memory.kind == EPISODE and is_trivial_answer(content)))
    return PreparedWrite(
        memory=memory,
        content=content,
        kind=sanitize_text(memory.kind or "note"),
        project=sanitize_text(memory.project or ""),
        session_id=sanitize_text(memory.session_id or ""),
        source=sanitize_text(memory.source or ""),
        metadata=_redact_metadata(memory.metadata),
        bookkeeping=bookkeeping,
        digest=hashlib.sha1(f"{memory.kind}\x00{content}".encode()).hexdigest(),
        redacted=secrets.count,
        entities=() if bookkeeping else tuple(extract_entities(content)),
        tags=normalize_tags(memory.tags),
    )


def _redact_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` with secrets out of every string in it, at any depth (``embed_text``, embedded instead of the
    content when present, a capture's evidence, an importer's fields); keys are kept as they are."""
    return {key: redaction.redact_value(value) for key, value in metadata.items()}
