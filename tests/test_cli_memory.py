"""``memcue search|fetch|list|forget|expand|session-context`` end to end: the real CLI against a real sidecar."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import start_sidecar

from memcue.cli.memory import _line

LONG = "The release checklist lives in docs/release.md; " + "it covers tagging, changelog and rollout. " * 6


def _cli(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memcue", *args], env={**os.environ, "MEMCUE_HOME": str(home)},
                          cwd=cwd, capture_output=True, text=True, timeout=60)


def _json(home: Path, cwd: Path, *args: str) -> dict:
    proc = _cli(home, cwd, *args, "--json")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    out = json.loads(proc.stdout)
    assert out["success"] is True
    return out["data"]


def test_search_fetch_list_forget_expand_session_context(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "billing-api"
    project.mkdir()
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        ids = [_json(home, project, "remember", text, "--kind", "decision")["id"] for text in (
            "Error BILL-4021 means the Taxly call timed out; retry it from the worker", LONG,
            "Deploys are frozen on Fridays; ask Priya before shipping")]
        searched = _json(home, project, "search", "BILL-4021")
        listed = _cli(home, project, "list")
        fetched = _json(home, project, "fetch", f"#{ids[0]}, {ids[1]}")
        missing = _cli(home, project, "fetch", "999999")
        forgot = _cli(home, project, "forget", str(ids[0]))
        again = _json(home, project, "forget", str(ids[0]))
        after = _json(home, project, "search", "BILL-4021")
        hidden = _json(home, project, "list")
        shown = _cli(home, project, "list", "--include-forgotten")
        expanded = _json(home, project, "expand", str(ids[2]))
        first = _json(home, project, "session-context", "--session-id", "cli-s1")
        second = _json(home, project, "session-context", "--session-id", "cli-s1")
        other = _cli(home, tmp_path, "list")  # another folder, another project
        typo = _cli(home, project, "list", "--kind", "decisions")  # the project holds decisions, none "decisions"
        piped = subprocess.run(f"{sys.executable} -m memcue list --json --limit 200 | head -c 5", shell=True,
                               env={**os.environ, "MEMCUE_HOME": str(home)}, cwd=project, capture_output=True,
                               text=True, timeout=60)
    finally:
        sc.stop()
    assert searched["results"][0]["memory_id"] == ids[0]
    assert listed.returncode == 0 and all(f"#{i} (decision" in listed.stdout for i in ids)
    assert max(len(line) for line in listed.stdout.splitlines()) < 120 + 40, "long texts are cut in the list"
    assert [m["memory_id"] for m in fetched["results"]] == ids[:2] and fetched["results"][1]["content"] == LONG
    assert missing.returncode == 1 and "not found: #999999" in missing.stdout
    assert forgot.returncode == 0 and f"forgotten: #{ids[0]}" in forgot.stdout
    assert again["already"] == [ids[0]]
    assert all(r["memory_id"] != ids[0] for r in after["results"]), "a forgotten memory no longer answers"
    assert ids[0] not in [m["memory_id"] for m in hidden["results"]]
    assert f"#{ids[0]} (decision" in shown.stdout and "forgotten" in shown.stdout
    assert [item["memory_id"] for item in expanded["items"]] == [ids[2]]
    assert "Deploys are frozen on Fridays" in first["context"] and first["session_id"] == "cli-s1"
    assert "Deploys are frozen" not in second["context"], "one full block per session"
    assert other.returncode == 0 and "(no memories in project " in other.stdout
    assert typo.returncode == 0 and "(no memories of kind 'decisions' in project " in typo.stdout, typo.stdout
    assert piped.stderr == "", "a reader that stops early (| head) is no error"


def test_usage_errors_exit_2_and_speak_json_when_asked(home: Path, tmp_path: Path) -> None:
    bad_ids = _cli(home, tmp_path, "fetch", "abc")
    empty_search = _cli(home, tmp_path, "search", "  ")
    empty_recall = _cli(home, tmp_path, "recall", "  ", "--json")
    assert bad_ids.returncode == 2 and "give memory ids like 12" in bad_ids.stderr
    assert empty_search.returncode == 2 and "search term is empty" in empty_search.stderr
    assert empty_recall.returncode == 2
    assert json.loads(empty_recall.stdout) == {"success": False, "error": "the question is empty"}


def test_bad_numbers_and_kinds_are_usage_errors_that_name_the_rule(home: Path, tmp_path: Path) -> None:
    """Fresh-user finding: `list --limit 0` and `remember --kind "a b"` were server refusals (exit 1, raw
    validation text); they are usage errors now, and so is a token budget outside the API's 1-100,000. A kind's
    case does not matter."""
    for args, said in ((("list", "--limit", "0"), "from 1 to 500"), (("review", "--limit", "x"), "from 1 to 500"),
                       (("remember", "x", "--kind", "a b"), "a kind is one word"),
                       (("list", "--kind", "note\nASSISTANT"), "a kind is one word"),
                       (("session-context", "--max-tokens", "0"), "from 1 to 100000"),
                       (("recall", "x", "--max-tokens", "-3"), "from 1 to 100000")):
        out = _cli(home, tmp_path, *args)
        assert out.returncode == 2 and said in out.stderr, (args, out.stderr)
        as_json = _cli(home, tmp_path, *args, "--json")  # argparse's own refusals speak JSON when asked too
        assert as_json.returncode == 2 and said in json.loads(as_json.stdout)["error"], (args, as_json.stdout)
    missing = _cli(home, tmp_path, "recall", "--json")
    assert missing.returncode == 2 and json.loads(missing.stdout)["success"] is False


def test_an_argument_a_command_does_not_take_shows_that_commands_usage(home: Path, tmp_path: Path) -> None:
    """Found by a trial: `memcue uninstall claude-code --no-mcp` printed the root's usage line, which tells nothing
    about what `uninstall` takes."""
    out = _cli(home, tmp_path, "uninstall", "claude-code", "--no-mcp")
    assert out.returncode == 2 and "usage: memcue uninstall" in out.stderr, out.stderr
    assert "memcue uninstall: error: unrecognized arguments: --no-mcp" in out.stderr
    as_json = _cli(home, tmp_path, "recall", "x", "--bogus", "--json")
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["error"] == (
        "memcue recall: unrecognized arguments: --bogus")


def test_a_search_for_an_absent_term_finds_nothing_even_with_a_pinned_memory(home: Path, tmp_path: Path) -> None:
    """Fresh-user finding: `search "zzzqqq nothing"` returned the pinned memory as a "closest" match. A keyword
    search for a term no memory holds finds nothing; a question still gets the pinned memory as related, after
    the closest memories."""
    project = tmp_path / "billing-api"
    project.mkdir()
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        _json(home, project, "remember", "Deploys are frozen on Fridays; ask Priya before shipping", "--pinned")
        searched = _json(home, project, "search", "zzzqqq nothing")
    finally:
        sc.stop()
    assert searched["results"] == [] and searched["tier"] == "none", searched


def test_fetch_json_says_success_once(home: Path, tmp_path: Path) -> None:
    """Fresh-user finding: `fetch --json` nested a second "success" inside "data"."""
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        written = _json(home, tmp_path, "remember", "the staging bucket is shop-staging-eu")["id"]
        fetched = json.loads(_cli(home, tmp_path, "fetch", str(written), "--json").stdout)
        missing = json.loads(_cli(home, tmp_path, "fetch", "999999", "--json").stdout)
    finally:
        sc.stop()
    assert fetched["success"] is True and "success" not in fetched["data"]
    assert missing["success"] is False and "success" not in missing["data"] and missing["data"]["not_found"]


def test_fetch_and_list_say_who_wrote_a_memory_and_why_it_was_kept(home: Path, tmp_path: Path) -> None:
    """Reviewing what memcue keeps: a captured statement says it came from the prompt and why it was promoted; a
    memory written with `memcue remember` says `cli` and no promotion."""
    project = tmp_path / "shop"
    project.mkdir()
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        written = _json(home, project, "remember", "the staging bucket is shop-staging-eu")["id"]
        hook = subprocess.run([sys.executable, "-m", "memcue.hooks", "claude-code", "user-prompt-submit"],
                              input=json.dumps({"session_id": "s-why", "transcript_path": "", "cwd": str(project),
                                                "hook_event_name": "UserPromptSubmit",
                                                "prompt": "From now on every migration gets a down step."}),
                              env={**os.environ, "MEMCUE_HOME": str(home)}, capture_output=True, text=True,
                              timeout=60)
        assert hook.returncode == 0
        deadline = time.monotonic() + 30
        while True:
            rows = _json(home, project, "list", "--kind", "decision")["results"]
            if rows or time.monotonic() > deadline:
                break
        text = _cli(home, project, "fetch", str(rows[0]["memory_id"])).stdout
        mine = _json(home, project, "fetch", str(written))["results"][0]
    finally:
        sc.stop()
    assert (rows[0]["source"], rows[0]["promoted_by"]) == ("capture:prompt-statement", "user-statement"), rows
    assert "by capture:prompt-statement, kept because user-statement" in text, text
    assert (mine["source"], mine["promoted_by"]) == ("cli", None)


def test_list_leaves_out_captured_prompts_unless_asked(home: Path, tmp_path: Path) -> None:
    """A captured prompt (kind ``request``) answers only "what did I ask?": ``memcue list`` shows the memories, and
    the prompts with ``--include-captured`` or ``--kind request``."""
    project = tmp_path / "billing-api"
    project.mkdir()
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        kept = _json(home, project, "remember", "Invoices are numbered INV-YYYY-NNNNN", "--kind", "decision")["id"]
        asked = _json(home, project, "remember", "can you make the invoice export faster?", "--kind", "request")["id"]
        plain = [m["memory_id"] for m in _json(home, project, "list")["results"]]
        both = [m["memory_id"] for m in _json(home, project, "list", "--include-captured")["results"]]
        only = [m["memory_id"] for m in _json(home, project, "list", "--kind", "request")["results"]]
        text = _cli(home, project, "list", "--help").stdout
    finally:
        sc.stop()
    assert plain == [kept]
    assert both == [asked, kept] and only == [asked]
    assert "--include-captured" in text


def test_update_says_it_replaced_a_secret_as_remember_does(home: Path, tmp_path: Path) -> None:
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        first = _json(home, tmp_path, "remember", "the staging database is reached through pgbouncer")["id"]
        told = _cli(home, tmp_path, "update", str(first),
                    "the staging database: export PGPASSWORD=Zx9-staging-Pw-2231 then psql -h db.staging")
        shown = _json(home, tmp_path, "fetch", str(first + 1))
    finally:
        sc.stop()
    assert told.returncode == 0, told.stderr
    assert "1 secret replaced by [REDACTED:…] markers" in told.stdout, told.stdout
    assert "Zx9-staging-Pw-2231" not in json.dumps(shown)


def test_a_data_dir_that_is_a_file_is_named_as_such(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "memcue-home"
    not_a_folder.write_text("")
    run = _cli(not_a_folder, tmp_path, "list")
    assert run.returncode == 1 and f"the data dir {not_a_folder} is not a folder" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr and not_a_folder.read_text() == ""


def test_fetch_shows_a_memorys_lines_apart(home: Path, tmp_path: Path) -> None:
    """Fresh-clone trial: `memcue fetch` ran a commit's subject into its body ("…took more The buffer is …"), then
    flattened YAML's indent."""
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        text = "Size the read buffer by bytes\n\nUTF-8 names took more room than their length.\nIt is fixed now."
        written = _json(home, tmp_path, "remember", text)["id"]
        shown = _cli(home, tmp_path, "fetch", str(written))
    finally:
        sc.stop()
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].endswith(") Size the read buffer by bytes"), lines
    assert lines[1:3] == ["    UTF-8 names took more room than their length.", "    It is fixed now."], lines
    assert _line({"memory_id": 1, "content": "deploy:\n  image: app:2\n\tport: 8087"}, full=True).endswith(
        ") deploy:\n      image: app:2\n        port: 8087")  # YAML and code keep their own indent


def test_recall_says_what_a_small_token_budget_cut_and_nothing_it_did_not(home: Path, tmp_path: Path) -> None:
    """Fresh-user finding: `recall … --max-tokens 5` said "1 left out, 0 shortened, context dropped from 0"; it
    names only the cuts made, and a budget that fits says nothing of cuts."""
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        _json(home, tmp_path, "remember", "Billing's Postgres 16 listens on port 5433, not the default 5432")
        small = _cli(home, tmp_path, "recall", "billing postgres port 5433", "--max-tokens", "5")
        assert small.returncode == 0, small.stderr
        assert "(to fit 5 tokens: 1 result left out)" in small.stdout, small.stdout
        assert "--all-projects" not in small.stdout, "it found one; the budget left it out"
        roomy = _cli(home, tmp_path, "recall", "billing postgres port 5433", "--max-tokens", "400")
        assert "5433" in roomy.stdout and "to fit" not in roomy.stdout, roomy.stdout
    finally:
        sc.stop()
