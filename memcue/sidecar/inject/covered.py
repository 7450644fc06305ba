"""Test transitions the session-start block leaves out because a commit it offers tells the same fix.

A bug fixed in a session usually leaves two memories: the test transition ("`pytest -q` failed with FAIL:
test_full_box …; it passed after a change") and the commit that landed the fix with that test
("boxes: fill_percent counts the usable slots only … Tests added: test_full_box"). The commit says what changed
and why; the transition only that a test went green. In a block that holds about 24 memories, showing both spends
a line on the same fix twice, so a transition whose failing test a commit in the block added is left out of it
(it still answers a prompt that asks for it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from memcue.sidecar.capture.commits import SIGNAL as COMMIT_SIGNAL
from memcue.sidecar.capture.commits import tests_named
from memcue.sidecar.capture.test_runs import SIGNAL as TEST_SIGNAL


def covered_transitions(rows: Sequence[dict[str, Any]]) -> set[int]:
    """The ids of the test transitions among ``rows`` (stored ``source`` ``capture:test-passed``) whose text names,
    as a whole word, a test that a commit among ``rows`` (``capture:commit-landed``) added. ``rows``: memories with
    ``memory_id``, ``content`` (as stored, trailers included) and ``source``."""
    names: set[str] = set()
    for row in rows:
        if str(row.get("source", "")) == f"capture:{COMMIT_SIGNAL}":
            names.update(n for n in tests_named(str(row["content"])) if len(n) >= 4)
    if not names:
        return set()
    named = re.compile(r"(?<![\w.])(?:" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                       + r")(?!\w)")
    return {int(row["memory_id"]) for row in rows
            if str(row.get("source", "")) == f"capture:{TEST_SIGNAL}" and named.search(str(row["content"]))}
