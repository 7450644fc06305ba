"""The session-start block offers the project's standing rules (decisions, preferences, corrections) however
old, the most confirmed first, before the newest memories (issue 15: an older rule is in view before the first
task prompt). Real sidecar, the real SessionStart hook."""

from __future__ import annotations

import time
from pathlib import Path

from conftest import Sidecar, context_of
from hookutil import run_hook

RULE = "Money is stored as integer cents in BIGINT columns, never as floats"
REPEATED = "Secrets live only in the OS keychain, never in localStorage or config files"


def test_an_old_standing_rule_opens_the_session_before_newer_notes(keyword_sidecar: Sidecar, tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    client = keyword_sidecar.client
    month_ago = time.time() - 40 * 86400
    client.remember(RULE, kind="decision", project=str(project), created_at=month_ago)
    for _ in range(3):  # said three times: reinforced, not stored three times
        client.remember(REPEATED, kind="preference", project=str(project), created_at=month_ago - 86400)
    client.remember_batch([{"content": f"note {i}: the nightly job {i} wrote {i * 17} rows to the warehouse",
                            "project": str(project)} for i in range(30)])
    payload = {"session_id": "standing-1", "cwd": str(project), "hook_event_name": "SessionStart",
               "source": "startup"}
    context = context_of(run_hook(payload, keyword_sidecar.root, event="session-start"))
    assert RULE in context and REPEATED in context, context
    assert context.index(REPEATED) < context.index(RULE) < context.index("note 29:"), \
        "the most confirmed rule first, then the other rules, then the newest memories"
