"""The request id of one hook event: the same for every copy of one delivery, a new one for each turn.

A harness with memcue's hook registered twice (two interpreter paths, user and project settings) or that fires
one event twice runs two hook processes with the same payload at the same moment. The id the hook sends to the
sidecar (``event.extra["request_id"]``) and writes as the spool record's ``spool_id`` becomes the stored
memory's ``source_id``, and the store counts one id once (``delivered_ids``), whether it arrives live or
through the spool. So the id is derived from the event: a BLAKE2b hash of the harness, the event, the session
id, the text the event records (the prompt, the turn's answer, the session end) and a *turn marker*, which
tells one turn from the next so that a person asking the same thing again later counts again:

- the turn id the harness sends: Codex's ``turn_id`` (every event but SessionEnd), Claude Code's
  ``prompt_id`` (2.1.x: one per prompt, carried by that turn's Stop and by SessionEnd);
- else the transcript file's state (``event.transcript_path``: inode, size in bytes, ``st_mtime_ns``), when the
  file exists: every turn appends to it, and both harnesses write nothing to it while their hooks run;
- else none: the id is random (``spool_format.new_id``), as two copies cannot be told from a repeat.

Ids are 32 lowercase hex digits in UUID form (RFC 9562): version 8 (custom) when derived, version 4 when
random, the form ``spool_format`` writes and the store keeps as ``source_id``. Standard library only; the hash
comes from ``_blake2``, the builtin module ``hashlib`` itself serves BLAKE2 from, since importing ``hashlib``
also loads OpenSSL (about 2 ms on every prompt).
"""

from __future__ import annotations

import os
import stat

from memcue.adapters.base import HookEvent

try:
    from _blake2 import blake2b
except ImportError:  # an interpreter built without its builtin BLAKE2
    from hashlib import blake2b

#: ``HookEvent.extra`` keys holding a harness's own turn id, in the order they are looked for.
TURN_KEYS = ("turn_id", "prompt_id")
#: BLAKE2b personalisation (at most 16 bytes): a new derivation gets a new one, so old and new ids never meet.
_PERSON = b"memcue-request-1"


def turn_marker(event: HookEvent) -> str | None:
    """What tells this turn from the session's others: ``"turn:<id>"`` (a turn id the harness sent, see
    ``TURN_KEYS``), ``"transcript:<inode>:<size>:<mtime_ns>"`` (the transcript file, when it is a regular file
    that can be stat'ed), or None. Never raises."""
    for key in TURN_KEYS:
        value = event.extra.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            return f"turn:{value}"
    if not event.transcript_path:
        return None
    try:
        st = os.stat(event.transcript_path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return f"transcript:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def request_id(event: HookEvent, text: str) -> str:
    """The request id of ``event`` recording ``text`` (see the module docstring): derived, version 8, when the
    event has a ``turn_marker``, else a random version-4 id. 32 lowercase hex digits. Never raises."""
    marker = turn_marker(event)
    if marker is None:
        from memcue.core.spool_format import new_id

        return new_id()
    digest = blake2b(digest_size=16, person=_PERSON)
    for part in (event.harness, event.event, event.session_id, marker, text):
        data = part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    raw = bytearray(digest.digest())
    raw[6] = (raw[6] & 0x0F) | 0x80
    raw[8] = (raw[8] & 0x3F) | 0x80
    return raw.hex()
