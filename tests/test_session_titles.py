"""The session-start block shows its older memories as titles when it cannot hold them whole
(``sidecar.inject.titles``): more of what the project did stays in view, the newest and the standing rules stay
whole, and a prompt that needs a memory shown as a title gets it whole."""

from __future__ import annotations

import os
from itertools import product
from pathlib import Path

from conftest import Sidecar, context_of, prompt_payload, run_hook, start_sidecar

from memcue.adapters import claude_code
from memcue.adapters.base import SESSION_START
from memcue.core.blocks import MEMORY_LINE_START
from memcue.sidecar.inject.brief import TITLE_CHARS, title, was_cut
from memcue.sidecar.inject.titles import SESSION_WHOLE, titled

COMMIT = ("boxes: never hand out A1, it holds the reference aliquot\n\nSlot A1 of every box holds the box's "
          "reference aliquot. next_free_slot gave it to new samples.\n\nTests added: test_a1_is_reserved\n\n"
          "Files: cryobox/boxes.py")
#: Two words per memory that no other memory of the project holds, so a prompt can ask for exactly one.
NAMES = [f"{a} {b}" for a, b in product(("amber", "cobalt", "crimson", "olive", "silver", "violet", "ochre"),
                                        ("heron", "lynx", "otter", "badger", "falcon", "marten", "ibis"))]


def _change(i: int) -> str:
    """A commit-like memory of about 330 characters: subject, body, file list."""
    return (f"Give the {NAMES[i]} queue its own worker pool\n\nThe {NAMES[i]} queue shared the default pool, so a "
            f"burst of its jobs held up every other queue for minutes. It now runs {i + 2} workers of its own and "
            f"the default pool keeps its 8; the dashboards show its backlog as a separate series, and an alert "
            f"fires when it stays over {100 + i} jobs.\n\nFiles: workers/pools.py")


def test_a_title_is_the_first_line_or_sentence_and_keeps_a_commits_tests() -> None:
    shown = title(COMMIT, "capture:commit-landed")
    assert shown == "boxes: never hand out A1, it holds the reference aliquot …\n\nTests added: test_a1_is_reserved"
    assert was_cut(COMMIT, shown)
    assert title("the deploy box is ops-7") == "the deploy box is ops-7"  # nothing left out: no mark
    note = ("The nightly export writes to s3://exports/nightly and keeps 14 days. Older files are deleted by a "
            "lifecycle rule, not by the job.")
    assert title(note) == "The nightly export writes to s3://exports/nightly and keeps 14 days. …"
    long = "word " * 80
    assert len(title(long)) <= TITLE_CHARS + 2 and title(long).endswith(" …")


def test_a_title_does_not_end_at_an_abbreviation_and_says_something() -> None:
    """Fresh-clone trial: "i.e." and "Dr." ended a title's sentence; a code fence or a one-word subject made a title
    that says nothing (the brief is shown instead)."""
    vendor = "We agreed with the vendor, i.e. Acme Corp, to ship the firmware monthly. The contract says so."
    assert title(vendor) == "We agreed with the vendor, i.e. Acme Corp, to ship the firmware monthly. …"
    doctor = "As described by Dr. Smith in the memo, the freezer runs at -80. More text follows."
    assert title(doctor) == "As described by Dr. Smith in the memo, the freezer runs at -80. …"
    for text in ("```\ncode here\n```\nmore", "Refactor\n\nmoved things around in a big way", "…\n\nand more text"):
        assert title(text) == text


def test_a_title_of_a_text_that_ends_in_an_ellipsis_is_still_shortened() -> None:
    """Fresh-clone trial: a note whose own text ends in "…" shown as a title counted as told whole, so a prompt that
    needed it got nothing ("already shown in this session")."""
    text = "Switch the freezer alarm to SMS\n\nThe pager app kept missing alerts at night and then…"
    row = {"memory_id": 1, "content": text, "shortened": False, "source": "cli"}
    shown = titled(row)
    assert shown["content"] == "Switch the freezer alarm to SMS …" and shown["shortened"] is True


def test_a_confirmed_fix_is_titled_by_what_the_code_does_now() -> None:
    """A fix the agent told and a commit confirmed (``capture:episode-committed``) opens with the symptom and cause;
    its title is the sentence with the fix, which a later task must not undo. Other memories keep their first
    sentence, and a fix with no such sentence does too."""
    fix = ("roster.csv has a space after the comma on two rows, and csv.DictReader keeps it, so the slack id was "
           "' U02ANA' and the mention broke. load_roster() now reads with skipinitialspace=True, so all six "
           "mentions come out clean. Landed in commit f5d9b0a4db7d.")
    assert title(fix, "capture:episode-committed") == ("load_roster() now reads with skipinitialspace=True, so all "
                                                       "six mentions come out clean. …")
    assert title(fix, "mcp").startswith("roster.csv has a space after the comma")
    plain = "The export was slow because of an N+1 query. It was fixed with a join. Landed in commit abc."
    assert title(plain, "capture:episode-committed") == "The export was slow because of an N+1 query. …"
    row = {"memory_id": 2, "content": fix, "shortened": False, "source": "capture:episode-committed"}
    assert "skipinitialspace" in titled(row)["content"]


def test_the_session_block_of_a_long_project_shows_older_memories_as_titles(tmp_path: Path) -> None:
    """45 changes of about 330 characters each: whole, about 20 fit the 2,200-token block; with the older ones as
    titles 25 or more do. The newest ``SESSION_WHOLE``, every standing rule and an older howto the agent saved (its
    words are stored nowhere else, git keeps a change's) stay whole, the howto before the older changes; a title is
    marked shortened, and a prompt of the same session that asks about a memory shown as a title gets it whole."""
    project = os.path.realpath(tmp_path / "queues")
    os.makedirs(project)
    sc: Sidecar = start_sidecar(tmp_path / "home")
    rule = "never run two worker pools on one queue, the jobs are not idempotent"
    howto = ("Drain a queue before resizing its pool: `qctl pause NAME`, wait for `qctl depth NAME` to reach 0, then "
             "edit workers/pools.py. Resizing a busy pool drops the jobs its workers hold.")
    try:
        sc.client.remember_batch([{"content": howto, "project": project, "kind": "howto"}]
                                 + [{"content": _change(i), "project": project, "kind": "change"} for i in range(45)]
                                 + [{"content": rule, "project": project, "kind": "decision"}])
        sc.client.wait_idle(timeout_s=120)
        env = {**os.environ, "MEMCUE_HOME": str(tmp_path / "home"), "MEMCUE_HOOK_DEADLINE_S": "10"}
        start = {"session_id": "titles-1", "cwd": project, "hook_event_name": "SessionStart", "source": "startup"}
        block = context_of(run_hook(start, env=env, event="session-start"))
        lines = [line for line in block.splitlines() if line.startswith(MEMORY_LINE_START)]
        titled = [line for line in lines if " …</memory>" in line]
        assert len(lines) >= 25, block
        assert rule in block and lines[0].endswith(f">{rule}</memory>")
        assert all(f"fires when it stays over {100 + i} jobs" in block for i in range(45 - SESSION_WHOLE, 45))
        assert [line for line in lines if line.endswith("drops the jobs its workers hold.</memory>")], block
        assert lines.index(next(line for line in lines if "qctl pause" in line)) < lines.index(titled[0])
        assert titled and all(line.endswith("worker pool …</memory>") for line in titled), block
        assert "shortened" in block  # the line that says how to get a shortened note whole
        i = NAMES.index(titled[-1].split(">Give the ")[1].split(" queue")[0])  # the oldest shown
        assert i < 45 - SESSION_WHOLE
        assert f"fires when it stays over {100 + i} jobs" not in block
        prompt = context_of(run_hook(prompt_payload(f"how many workers does the {NAMES[i]} queue get now?", project,
                                                    session_id="titles-1"), env=env))
        listed = sc.client.session_context(project=project, session_id="titles-2",  # `session-context --json`
                                           max_tokens=claude_code.budget(SESSION_START).max_tokens)  # the hook's
    finally:
        sc.stop()
    assert f"fires when it stays over {100 + i} jobs" in prompt, prompt
    id_of = lambda line: int(line.split('id="')[1].split('"')[0])  # noqa: E731
    assert listed["memory_ids"] == [id_of(line) for line in lines]
    assert listed["shortened_ids"] == [id_of(line) for line in titled]


def test_a_project_whose_memories_fit_whole_shows_no_titles(tmp_path: Path) -> None:
    project = os.path.realpath(tmp_path / "small")
    os.makedirs(project)
    sc: Sidecar = start_sidecar(tmp_path / "home")
    try:
        sc.client.remember_batch([{"content": _change(i), "project": project, "kind": "change"}
                                  for i in range(SESSION_WHOLE + 4)])
        sc.client.wait_idle(timeout_s=120)
        block = sc.client.session_context(project=project)["context"]
    finally:
        sc.stop()
    assert block.count(MEMORY_LINE_START) == SESSION_WHOLE + 4, block
    assert " …</memory>" not in block
