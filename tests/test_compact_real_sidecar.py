"""The compact recall block end to end: a real sidecar started with ``MEMCUE_PROMPT_BLOCK=compact`` (keyword-only,
no model), the real Claude Code hook, then ``memcue fetch`` / ``Client.fetch`` naming the recall and
``memcue stats --json`` counting it used (issue 6, item 3)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Sidecar, context_of, prompt_payload, run_hook, start_sidecar
from hookutil import hook_env, kill_spawned_sidecars

from memcue.core.address import address, parse_address
from memcue.core.blocks import PROMPT_HEADER

FACT = "JWT validation in the auth middleware allows 60 s of clock-skew leeway for the mobile clients"
DISTRACTOR = "The billing service stores invoices in Postgres 16"
PROMPT = "why does the auth middleware allow clock-skew in JWT validation?"
TAG = re.compile(r'^<memcue-recall session_id="(?P<session>[^"]*)" query_id="(?P<query>[0-9a-f]+)">$')


@pytest.fixture(scope="module")
def sc() -> Iterator[Sidecar]:
    root = Path(tempfile.mkdtemp(prefix="mc-", dir="/tmp"))
    sidecar = start_sidecar(root, MEMCUE_PROMPT_BLOCK="compact", MEMCUE_NO_MODEL="1")
    try:
        yield sidecar
    finally:
        sidecar.stop()
        kill_spawned_sidecars(root)
        shutil.rmtree(root, ignore_errors=True)


def _project(tmp_path: Path, name: str) -> str:
    path = tmp_path / "work" / name
    path.mkdir(parents=True)
    return os.path.realpath(path)


def memcue(sc: Sidecar, *args: str) -> dict:
    """Run the real CLI against the sidecar; its ``--json`` envelope's data."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCUE_", "CLAUDE_"))}
    proc = subprocess.run([sys.executable, "-m", "memcue", *args, "--json"], capture_output=True, timeout=60,
                          env={**env, "MEMCUE_HOME": str(sc.root)})
    assert proc.returncode == 0, proc.stderr.decode()
    out = json.loads(proc.stdout)
    assert out["success"] is True
    return out["data"]


def test_compact_hook_block_then_fetch_marks_used_in_stats(sc: Sidecar, tmp_path: Path) -> None:
    project = _project(tmp_path, "billing-api")
    mid = sc.client.remember(FACT, project=project, kind="decision")["id"]
    sc.client.remember(DISTRACTOR, project=project, kind="note")
    env = hook_env(sc.root, MEMCUE_HOOK_SPAWN="0")
    proc = run_hook(prompt_payload(PROMPT, project, session_id="sess-compact"), env=env)
    context = context_of(proc)
    assert proc.returncode == 0 and PROMPT_HEADER not in context and FACT not in context
    lines = context.split("\n")
    tag = TAG.match(lines[0])
    assert tag and tag["session"] == "sess-compact", context
    assert lines[-1] == "</memcue-recall>" and f"--query-id {tag['query']}" in lines[-2]
    addresses = [line.split(" ")[1] for line in lines[1:-2] if not line.startswith("[memcue:")]
    assert address(project, mid) in addresses, context
    assert parse_address(address(project, mid)) == (project, mid)
    query_id = tag["query"]

    # The session ledger holds compact-injected ids too: the same prompt again does not repeat the memory.
    again = context_of(run_hook(prompt_payload(PROMPT, project, session_id="sess-compact"), env=env))
    assert address(project, mid) not in again

    before = memcue(sc, "stats", "--days", "1")
    assert before["by_kind"]["decision"]["unused"] >= 1 and before["by_kind"]["decision"]["used"] == 0
    assert before["by_served"]["hook/compact"]["used"] == 0

    fetched = memcue(sc, "fetch", address(project, mid), "--query-id", query_id)
    assert [m["memory_id"] for m in fetched["results"]] == [mid] and fetched["results"][0]["content"] == FACT

    after = memcue(sc, "stats", "--days", "1")
    assert after["by_kind"]["decision"]["used"] == 1
    assert after["by_channel"]["bm25"]["used"] == 1 and after["by_channel"]["bm25"]["used_fraction"] > 0
    assert after["by_served"]["hook/compact"]["used"] == 1
    assert after["recalls"]["used"] == before["recalls"]["used"] + 1


def test_question_recall_is_logged_and_a_session_fetch_marks_it(sc: Sidecar, tmp_path: Path) -> None:
    project = _project(tmp_path, "payments")
    mid = sc.client.remember("Refunds over 500 EUR need a second approver in the payments service",
                             project=project, kind="bug")["id"]
    answer = sc.client.recall("second approver for refunds", project=project, session_id="sess-question")
    assert mid in [r["memory_id"] for r in answer["results"]]
    assert sc.client.stats(days=1)["by_kind"]["bug"] == {"used": 0, "unused": 1, "total": 1, "used_fraction": 0.0}
    sc.client.fetch([mid], session_id="other-session")  # another session's fetch marks nothing
    assert sc.client.stats(days=1)["by_kind"]["bug"]["used"] == 0
    out = sc.client.expand(address(project, mid), session_id="sess-question")
    assert [i["memory_id"] for i in out["items"]] == [mid]
    stats = sc.client.stats(days=1)
    assert stats["by_kind"]["bug"] == {"used": 1, "unused": 0, "total": 1, "used_fraction": 1.0}
    assert stats["by_served"]["question"]["used"] >= 1
