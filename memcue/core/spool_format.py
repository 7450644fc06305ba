"""The spool's record format, shared by its writer (the hook, ``memcue/hooks/spool.py``) and its reader (the
sidecar, ``memcue/sidecar/capture/spool.py``).

A spool file holds one JSON object per line::

    {"spool_id": "<32 hex>", "op": "remember", "ts": <Unix s>, "content": "...", "kind": "request",
     "project": "...", "session_id": "...", "source": "hook:<harness>", "cwd": "..."}

``spool_id`` (32 hex digits in UUID form: version 4 when random, 8 when the hook derived it from the event)
becomes the stored memory's ``source_id``, so a record read twice is stored once. ``op`` is
``remember`` (a record without one counts as ``remember``) or ``tool``: a finished tool call's compact record
(``tool_call``: ``{"spool_id", "op": "tool", "ts", "project", "session_id", "source", "turn", "tool": {...}}``,
the ``tool`` object as ``memcue.adapters.tools`` builds it), read by ``parse_tool`` and never stored as a memory.
``kind`` is ``request`` for a captured prompt, ``event`` for a session end, ``episode`` for an agent's answer
(``response`` in records spooled before episodes existed). ``content`` holds at most
``memcue.core.limits.CAPTURE_MAX_CHARS`` characters (the writer's ``redact_record`` cuts a longer text, with a marker).
``cwd`` (optional: Stop and SessionEnd records carry it) is the event's working directory, which the commit
signal reads git in (a linked worktree's project is its main repository, its commits are on its own branch).

No secret is written: the hook's writer (``memcue.hooks.spool.append``) passes every record through
``redact_record`` first, which redacts every text field but the ones that identify and route it
(``ROUTING_FIELDS``), the ``content`` cut as every captured text is (``memcue.core.redaction.redact_captured``:
pre-cut, redacted, cut to ``CAPTURE_MAX_CHARS``).

Standard library only (the hook imports it when the sidecar cannot be reached).
"""

from __future__ import annotations

import json
import math
import os
import time

#: The one operation a record can ask for.
OP_REMEMBER = "remember"
#: The operation of a finished tool call's record.
OP_TOOL = "tool"
#: The kind of a captured prompt, and of a record that names none.
KIND_REQUEST = "request"
#: ``source`` of a record that names none.
DEFAULT_SOURCE = "spool"
#: Fields that identify and route a record (ids, times, the project and working directory): written as they are.
ROUTING_FIELDS = frozenset({"spool_id", "op", "ts", "kind", "project", "session_id", "source", "turn", "cwd"})


def new_id() -> str:
    """A random id in the same form as ``uuid.uuid4().hex`` (32 hex digits), without importing uuid."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return raw.hex()


def remember_prompt(
    content: str, *, project: str, session_id: str, harness: str, spool_id: str | None = None,
    kind: str = KIND_REQUEST, cwd: str = "",
) -> dict[str, object]:
    """The spool record for a captured prompt (``op: remember``, ``kind: request``), or for another capture
    with ``kind`` (a session end is an ``event``); ``ts`` is now (Unix s); ``cwd`` (the event's working
    directory) is kept when given.

    ``spool_id`` defaults to a new id; the hook passes the event's request id (``memcue.hooks.request_id``: the
    same for two copies of one delivery), which it also sends to the sidecar as ``event.extra["request_id"]``,
    so copies are stored once whichever way they arrive. ``content`` is kept whole here: ``redact_record`` (the
    spool writer's) redacts it and cuts it to ``CAPTURE_MAX_CHARS`` at a line or word with a marker, as the
    sidecar would cut it when storing, and in that order.
    """
    record: dict[str, object] = {
        "spool_id": spool_id or new_id(),
        "op": OP_REMEMBER,
        "ts": time.time(),
        "content": content,
        "kind": kind,
        "project": project,
        "session_id": session_id,
        "source": f"hook:{harness}",
    }
    if cwd:
        record["cwd"] = cwd
    return record


def redact_record(record: dict[str, object]) -> dict[str, object]:
    """A copy of ``record`` with no secret in it (``memcue.core.redaction``): ``content`` redacted and cut as a
    captured text (``redact_captured``), every other string, at any depth (a tool record's command, key line and
    files), redacted; ``ROUTING_FIELDS`` as they are. Never raises on JSON-shaped values."""
    from memcue.core.redaction import redact_captured, redact_value  # only a record to write pays for the rules

    out: dict[str, object] = {}
    for key, value in record.items():
        if key in ROUTING_FIELDS:
            out[key] = value
        elif key == "content" and isinstance(value, str):
            out[key] = redact_captured(value).text
        else:
            out[key] = redact_value(value)
    return out


def parse_record(line: bytes) -> dict[str, object] | None:
    """One spool line as the fields of the memory it asks for: ``content``, ``kind``, ``project``,
    ``session_id``, ``source``, ``source_id`` (the ``spool_id``, None without one), ``created_at`` (the
    record's ``ts``, Unix s, None without a number) and ``metadata`` (``{"cwd": ...}`` when the record has one,
    else ``{}``). None for a blank line. Bytes that are not UTF-8 become
    U+FFFD. Raises ``ValueError`` for a line that is not JSON or not a ``remember`` record with content."""
    if not line.strip():
        return None
    rec = json.loads(line.decode("utf-8", "replace"))
    if not isinstance(rec, dict) or rec.get("op", OP_REMEMBER) != OP_REMEMBER or not rec.get("content"):
        raise ValueError("not a remember record")
    return {
        "content": str(rec["content"]),
        "kind": str(rec.get("kind") or KIND_REQUEST),
        "project": str(rec.get("project") or ""),
        "session_id": str(rec.get("session_id") or ""),
        "source": str(rec.get("source") or DEFAULT_SOURCE),
        "source_id": str(rec.get("spool_id") or "") or None,
        "created_at": finite_time(rec.get("ts")),
        "metadata": {"cwd": rec["cwd"]} if isinstance(rec.get("cwd"), str) and rec["cwd"] else {},
    }


def tool_call(tool: dict[str, object], *, project: str, session_id: str, harness: str, turn: str,
              spool_id: str | None = None) -> dict[str, object]:
    """The spool record of a finished tool call (``op: tool``): ``tool`` is the compact record
    (``memcue.adapters.tools``: already cut to its limits), ``turn`` the harness's turn id or "" ; ``ts`` is now
    (Unix s)."""
    return {"spool_id": spool_id or new_id(), "op": OP_TOOL, "ts": time.time(), "project": project,
            "session_id": session_id, "source": f"hook:{harness}", "turn": turn, "tool": tool}


def parse_tool(line: bytes) -> dict[str, object] | None:
    """One spool line as a tool-call record (``tool_call``'s fields, ``ts`` a float or None), or None when the
    line is not one (blank, another operation). Raises ``ValueError`` for a tool line that is not JSON or has no
    ``tool`` object."""
    if b'"op":"tool"' not in line and b'"op": "tool"' not in line:
        return None
    rec = json.loads(line.decode("utf-8", "replace"))
    if not isinstance(rec, dict) or rec.get("op") != OP_TOOL:
        return None
    if not isinstance(rec.get("tool"), dict):
        raise ValueError("a tool record without a tool object")
    return {
        "spool_id": str(rec.get("spool_id") or "") or None,
        "project": str(rec.get("project") or ""),
        "session_id": str(rec.get("session_id") or ""),
        "source": str(rec.get("source") or DEFAULT_SOURCE),
        "turn": str(rec.get("turn") or ""),
        "ts": finite_time(rec.get("ts")),
        "tool": rec["tool"],
    }


def spool_name(harness: str, session_id: str) -> str:
    """The spool file name of one writer: ``hook-<harness>-<sha1(session_id)[:12]>.jsonl``."""
    import re  # the spool is the failure path: keep these imports off every prompt's start-up

    try:
        from _sha1 import sha1  # the builtin module: ``hashlib`` would also load OpenSSL (about 2 ms per capture)
    except ImportError:
        from hashlib import sha1

    name = re.sub(r"[^a-z0-9_-]", "_", harness.lower())[:40] or "unknown"
    digest = sha1(session_id.encode("utf-8", "replace")).hexdigest()[:12]
    return f"hook-{name}-{digest}.jsonl"


def finite_time(value: object) -> float | None:
    """``value`` as a float when it is a finite number (a time in Unix s), else None: NaN, infinities, booleans
    and text are not times."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None
