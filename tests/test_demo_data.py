"""Checks for the demo's data files: memcue/demo/seed.jsonl and memcue/demo/payloads.json."""

import json
import uuid
from collections import Counter
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parent.parent / "memcue" / "demo"
SEED = DEMO / "seed.jsonl"
PAYLOADS = DEMO / "payloads.json"

KINDS = {"decision", "preference", "bug", "howto", "note", "request", "event"}
PROJECTS = {"billing-api", "web-ui", ""}
SEED_FIELDS = {
    "content": str,
    "kind": str,
    "project": str,
    "pinned": bool,
    "age_days": (int, float),
    "tags": list,
}
ENTRY_FIELDS = {"title", "event", "project", "payload", "expect_substring", "expect_nothing"}
#: Optional in a scenario: text that must NOT be injected (a replaced decision).
OPTIONAL_ENTRY_FIELDS = {"expect_absent"}
SESSION_SOURCES = {"startup", "resume", "clear", "compact", "fork"}


def load_seed() -> list[dict]:
    rows = []
    for lineno, line in enumerate(SEED.read_text(encoding="utf-8").splitlines(), 1):
        assert line.strip(), f"seed.jsonl line {lineno} is blank"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            pytest.fail(f"seed.jsonl line {lineno} is not JSON: {exc}")
        assert isinstance(row, dict), f"seed.jsonl line {lineno} is not an object"
        rows.append(row)
    return rows


def load_payloads() -> list[dict]:
    data = json.loads(PAYLOADS.read_text(encoding="utf-8"))
    assert isinstance(data, list) and data
    return data


def test_seed_rows_have_fields_and_types():
    for i, row in enumerate(load_seed(), 1):
        assert set(row) - {"replaces"} == set(SEED_FIELDS), f"row {i}: fields {sorted(row)}"
        for field, typ in SEED_FIELDS.items():
            assert isinstance(row[field], typ), f"row {i}: {field} is {type(row[field]).__name__}"
        assert not isinstance(row["age_days"], bool), f"row {i}: age_days is a bool"
        assert row["kind"] in KINDS, f"row {i}: kind {row['kind']!r}"
        assert row["project"] in PROJECTS, f"row {i}: project {row['project']!r}"
        assert row["content"].strip(), f"row {i}: empty content"
        assert 0 < row["age_days"] <= 365, f"row {i}: age_days {row['age_days']}"
        assert all(isinstance(t, str) and t for t in row["tags"]), f"row {i}: tags {row['tags']!r}"
        if row["kind"] != "event":
            assert 40 <= len(row["content"]) <= 600, f"row {i}: content length {len(row['content'])}"


def test_seed_size_and_mix():
    rows = load_seed()
    assert 250 <= len(rows) <= 350
    kinds = Counter(r["kind"] for r in rows)
    assert kinds["event"] >= 30
    assert set(kinds) == KINDS, f"missing kinds: {KINDS - set(kinds)}"
    projects = Counter(r["project"] for r in rows)
    assert set(projects) == PROJECTS
    assert projects["billing-api"] > projects["web-ui"] > projects[""]
    assert 1 <= sum(r["pinned"] for r in rows) <= 10
    assert not any(r["pinned"] for r in rows if r["kind"] == "event")


def test_seed_contents_are_unique():
    dupes = [c for c, n in Counter(r["content"] for r in load_seed()).items() if n > 1]
    assert not dupes, dupes


def test_payload_entries_have_claude_code_shapes():
    entries = load_payloads()
    for entry in entries:
        title = entry.get("title")
        assert set(entry) - OPTIONAL_ENTRY_FIELDS == ENTRY_FIELDS, f"{title}: fields {sorted(entry)}"
        assert isinstance(title, str) and title
        assert entry["event"] in {"UserPromptSubmit", "SessionStart"}, title
        assert entry["project"] in {"billing-api", "web-ui"}, title
        assert isinstance(entry["expect_nothing"], bool), title
        assert entry["expect_substring"] is None or isinstance(entry["expect_substring"], str), title
        if entry["expect_nothing"]:
            assert entry["expect_substring"] is None, title

        payload = entry["payload"]
        assert isinstance(payload, dict), title
        common = {"session_id", "transcript_path", "cwd", "hook_event_name"}
        if entry["event"] == "UserPromptSubmit":
            assert set(payload) == common | {"permission_mode", "prompt"}, title
            assert isinstance(payload["prompt"], str) and payload["prompt"].strip(), title
            assert payload["permission_mode"] == "default", title
            assert entry["expect_nothing"] or entry["expect_substring"], f"{title}: expects nothing at all"
        else:
            assert set(payload) == common | {"source"}, title
            assert payload["source"] in SESSION_SOURCES, title
        assert payload["hook_event_name"] == entry["event"], title
        assert payload["cwd"] == "{cwd}", title
        uuid.UUID(payload["session_id"])
        assert payload["transcript_path"].startswith("/home/dev/.claude/projects/"), title
        assert payload["transcript_path"].endswith(f"/{payload['session_id']}.jsonl"), title

    events = Counter(e["event"] for e in entries)
    assert events["SessionStart"] >= 1
    assert events["UserPromptSubmit"] >= 7
    assert any(e["expect_nothing"] for e in entries)
    assert any(e["project"] == "web-ui" and e["expect_substring"] for e in entries)


def test_expected_substrings_point_at_exactly_one_memory():
    rows = load_seed()
    for entry in load_payloads():
        needle = entry["expect_substring"]
        if needle is None:
            continue
        hits = [r for r in rows if needle in r["content"]]
        assert len(hits) == 1, f"{entry['title']}: {needle!r} occurs in {len(hits)} memories"
        memory = hits[0]
        assert memory["kind"] != "event", f"{entry['title']}: expected memory is a bookkeeping row"
        assert memory["project"] in {entry["project"], ""}, f"{entry['title']}: project {memory['project']!r}"
        prompt = entry["payload"].get("prompt", "")
        assert needle.lower() not in prompt.lower(), f"{entry['title']}: prompt quotes the memory"


def test_replaced_seed_rows_name_an_older_row_of_the_same_project():
    rows = load_seed()
    for row in rows:
        if "replaces" in row:
            old = [r for r in rows if r["content"].startswith(row["replaces"]) and "replaces" not in r]
            assert len(old) == 1 and old[0]["project"] == row["project"], row["replaces"]
            assert old[0]["age_days"] > row["age_days"], "a replacement is newer than what it replaces"

