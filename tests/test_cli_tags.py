"""Tags end to end and ``recall --kind`` (issue 17, part 5) through the real CLI and a real sidecar (keyword-only):
``remember --tag`` (repeatable, normalised), ``list --tag`` / ``recall --tag`` keep memories carrying every tag
given, a new version keeps its tags, ``recall --kind`` keeps one kind, and a bad tag or kind is a usage error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import start_sidecar


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memcue", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "MEMCUE_HOME": str(home)})


def _data(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)["data"]


def _ids(answer: dict[str, Any]) -> list[int]:
    return [r["memory_id"] for r in answer["results"]]


def test_tags_are_stored_filtered_and_kept_by_a_new_version(home: Path) -> None:
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        both = _data(_cli(home, "remember", "The billing cron runs at 02:00 UTC", "--kind", "decision", "--tag",
                          "Billing", "--tag", "on call", "--project", "p", "--json"))["id"]
        one = _data(_cli(home, "remember", "The billing cron retries three times", "--tag", "billing", "--project",
                         "p", "--json"))["id"]
        none = _data(_cli(home, "remember", "The billing cron logs to /var/log/cron", "--project", "p",
                          "--json"))["id"]
        again = _data(_cli(home, "remember", "The billing cron retries three times", "--tag", "retries",
                           "--project", "p", "--json"))
        listed = _data(_cli(home, "list", "--tag", "billing", "--project", "p", "--json"))["results"]
        listed_both = _data(_cli(home, "list", "--tag", "billing", "--tag", "on-call", "--project", "p", "--json"))
        text = _cli(home, "list", "--tag", "on-call", "--project", "p")
        recalled = _data(_cli(home, "recall", "billing cron", "--keyword", "--tag", "BILLING", "--project", "p",
                              "--json"))
        recall_text = _cli(home, "recall", "billing cron", "--keyword", "--tag", "on-call", "--project", "p")
        updated = _data(_cli(home, "update", str(both), "The billing cron runs at 03:00 UTC", "--json"))["id"]
        after = _data(_cli(home, "list", "--tag", "on-call", "--project", "p", "--json"))["results"]
        bad = _cli(home, "remember", "anything", "--tag", "no!", "--project", "p")
    finally:
        sc.stop()
    assert again["duplicate"] and again["id"] == one, "the same text again is the same memory"
    assert {m["memory_id"]: m["tags"] for m in listed} == {one: ["billing", "retries"], both: ["billing", "on-call"]}
    assert _ids(listed_both) == [both], "a memory must carry every tag asked for"
    assert text.returncode == 0 and "#billing, #on-call" in text.stdout, text.stdout
    assert set(_ids(recalled)) == {both, one} and none not in _ids(recalled)
    assert {r["memory_id"]: r["tags"] for r in recalled["results"]}[both] == ["billing", "on-call"]
    assert f"#{both} " in recall_text.stdout and "#billing, #on-call" in recall_text.stdout, recall_text.stdout
    assert _ids({"results": after}) == [updated], "the new version keeps the tags; the old one no longer answers"
    assert bad.returncode == 2 and "is a letter or digit" in bad.stderr, bad.stderr


def test_recall_kind_keeps_one_kind_and_a_bad_kind_is_a_usage_error(home: Path) -> None:
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        decision = sc.client.remember("We deploy the invoice service with Helm", kind="decision", project="p")["id"]
        howto = sc.client.remember("To deploy the invoice service run make helm-up", kind="howto", project="p")["id"]
        prompt = sc.client.remember("please deploy the invoice service to staging", kind="request", project="p")["id"]
        episode = sc.client.remember("I refactored the invoice service deploy script to call make helm-up and added"
                                     " a test for it", kind="episode", project="p")
        assert not episode["bookkeeping"]
        plain = _data(_cli(home, "recall", "deploy invoice service", "--keyword", "--project", "p", "--json"))
        howtos = _data(_cli(home, "recall", "deploy invoice service", "--keyword", "--kind", "HowTo", "--project",
                            "p", "--json"))
        prompts = _data(_cli(home, "recall", "deploy invoice service", "--keyword", "--kind", "request",
                             "--project", "p", "--json"))
        episodes = _data(_cli(home, "recall", "deploy invoice service", "--keyword", "--kind", "episode",
                              "--project", "p", "--json"))
        none = _cli(home, "recall", "deploy invoice service", "--keyword", "--kind", "bug", "--project", "p")
        bad = _cli(home, "recall", "deploy invoice service", "--kind", "how to!")
    finally:
        sc.stop()
    assert set(_ids(plain)) == {decision, howto}, "without --kind: both saved memories, nothing captured"
    assert _ids(howtos) == [howto] and howtos["filters"]["kind"] == "howto"
    assert _ids(prompts) == [prompt], "--kind request searches the captured prompts"
    assert _ids(episodes) == [episode["id"]], "--kind episode searches the agent's captured answers"
    assert none.returncode == 0 and "only memories with kind bug were searched" in none.stdout, none.stdout
    assert bad.returncode == 2 and "a kind is one word" in bad.stderr, bad.stderr
