"""What a session was shown before this sidecar started, read back from the usage log (``Store.session_recalls``)
to seed the ``SessionLedger`` after a restart.

The usage log holds every block given to a session (``record_served``): its session-start block (``served_by``
"session"), its prompt blocks ("hook") and the blocks beside its tool calls ("tool"), each with its memories.
A cleared or compacted conversation is logged too, as a "session" entry whose ``block`` is ``RESET`` and that
holds nothing: what came before it is no longer in front of the model.
"""

from __future__ import annotations

import logging
from typing import Any

from memcue.sidecar.inject.backend import HookBackend
from memcue.sidecar.inject.brief import title, was_cut
from memcue.sidecar.inject.ledger import Shown

log = logging.getLogger("memcue.inject")

#: The ``block`` of the usage-log entry a ``clear`` or ``compact`` SessionStart writes, and why it shows nothing.
RESET = "reset"
RESET_REASON = "the conversation was cleared or compacted: what it was shown before is gone from it"


def _whole(item: dict[str, Any]) -> bool:
    """True when a session-start block surely showed ``item`` whole: even its ``title`` leaves nothing out. The log
    does not say whether the block showed a memory as its brief or as its title (``inject.titles``), so one that a
    title would shorten counts as not shown whole: a prompt that needs it may bring it again rather than never."""
    text = item.get("content", "")
    return not was_cut(text, title(text, item.get("source", "")))


def shown_before(backend: HookBackend, key: str) -> Shown | None:
    """What the session of ledger ``key`` (``"<harness>:<session id>"``) was shown, from the usage log: whether it
    got its full session-start block, the memories its blocks held (what a session-start block may have shown
    shortened left out, as the ledger leaves them out when it gives one: ``_whole``) and those shown only beside a
    tool call, counted from its last ``RESET``. None when the log holds nothing for it or cannot be read (the ledger
    starts empty, as it would without the log). Blocking."""
    try:
        recalls = backend.session_recalls(key.partition(":")[2])
    except Exception:  # noqa: BLE001 - a store that went away: nothing known, the hooks go on
        log.warning("could not read what session %s was shown before", key, exc_info=True)
        return None
    if not recalls:
        return None
    block, injected, beside_tool = False, set(), set()
    for recall in recalls:
        ids = {int(item["memory_id"]) for item in recall["items"]}
        if recall["served_by"] == "session":
            if recall["block"] == RESET:
                injected.clear()
                beside_tool.clear()
                continue
            block = block or bool(ids) or recall["tokens"] > 0
            ids = {int(item["memory_id"]) for item in recall["items"] if _whole(item)}
        if recall["served_by"] == "tool":
            beside_tool |= ids - injected
        elif recall["served_by"] in ("session", "hook"):
            beside_tool -= ids
        else:
            continue
        injected |= ids
    return block, injected, beside_tool
