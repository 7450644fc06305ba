"""The session-start block shows each memory as its brief (``sidecar.inject.brief``), so it holds more of the
project: a commit's file list and a test transition's commands go (a commit's tests stay), text a signal wrote from
git or a test run is cut past ``SIGNAL_BRIEF_CHARS``, a person's or an agent's words only past ``BRIEF_CHARS``. A
real sidecar's block then holds more memories than whole texts allowed."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from conftest import Sidecar, context_of, prompt_payload, run_hook, start_sidecar

from memcue.core.blocks import MEMORY_LINE_START
from memcue.core.session_ids import MCP_SERVER_SESSION_PREFIX
from memcue.sidecar.dedup import (
    BLOCK_REPEAT_COSINE,
    TOLD_TWICE_COSINE,
    TOLD_TWICE_WINDOW_S,
    block_repeats,
    same_specifics,
)
from memcue.sidecar.inject.brief import BRIEF_CHARS, SIGNAL_BRIEF_CHARS, SIGNAL_SOURCES, brief, was_cut
from memcue.sidecar.inject.covered import covered_transitions
from memcue.sidecar.runtime.embedding import Embedder

COMMIT = ("boxes: never hand out A1, it holds the reference aliquot\n\nSlot A1 of every box holds the box's "
          "reference aliquot. next_free_slot gave it to new samples; it now skips config.RESERVED_SLOTS.\n\n"
          "Tests added: test_a1_is_reserved\n\nFiles: cryobox/boxes.py, cryobox/config.py")
TRANSITION = ("`python3 -m unittest -q tests.test_boxes` failed with `AssertionError: 'A1' != 'A2'`; it passed "
              "after editing cryobox/boxes.py and running `sed -i 's/range(0, n)/range(1, n)/' cryobox/boxes.py`.")


def test_a_commit_brief_drops_its_file_list_and_keeps_what_changed_why_and_its_tests() -> None:
    out = brief(COMMIT, SIGNAL_SOURCES[0])
    assert out.startswith("boxes: never hand out A1") and "RESERVED_SLOTS" in out
    assert "Files:" not in out and out.endswith("\n\nTests added: test_a1_is_reserved")
    assert not was_cut(COMMIT, out)
    long = ("thaw: count a thaw only past the grace period\n\n" + "People take a tube out for a minute. " * 12
            + "\n\nTests added: test_a, test_b, test_c, test_d, test_e\n\nFiles: cryobox/thaw.py")
    cut = brief(long, SIGNAL_SOURCES[0])
    assert cut.endswith(" …\n\nTests added: test_a, test_b, test_c (+2 more)"), cut
    assert was_cut(long, cut) and len(cut.split("\n\n")[0]) <= SIGNAL_BRIEF_CHARS + 2


def test_a_test_transition_brief_keeps_the_failure_and_the_files_not_the_commands() -> None:
    out = brief(TRANSITION, SIGNAL_SOURCES[1])
    assert out == ("`python3 -m unittest -q tests.test_boxes` failed with `AssertionError: 'A1' != 'A2'`; it passed "
                   "after editing cryobox/boxes.py.")
    only_commands = brief("`pytest -q` failed with `E assert 1 == 2`; it passed after running `sed -i s/1/2/ a.py`.")
    assert only_commands == "`pytest -q` failed with `E assert 1 == 2`; it passed after a change."
    assert brief("`pytest` failed; it passed on a later run.") == "`pytest` failed; it passed on a later run."


def test_a_signal_text_is_cut_sooner_than_a_persons_words() -> None:
    words = " ".join(f"word{i}" for i in range(80))  # about 520 characters
    signal = brief(words, SIGNAL_SOURCES[0])
    assert signal.endswith(" …") and len(signal) <= SIGNAL_BRIEF_CHARS + 2 and words.startswith(signal[:-2])
    person = brief(words[:BRIEF_CHARS - 10], "cli")
    assert person == words[:BRIEF_CHARS - 10], "a person's words under BRIEF_CHARS are kept whole"
    assert brief(words, "mcp").endswith(" …") and len(brief(words, "mcp")) <= BRIEF_CHARS + 2


def test_the_session_block_of_a_busy_project_holds_more_memories_as_briefs(tmp_path: Path) -> None:
    """40 memories of about 560 characters, a person's (cut past ``BRIEF_CHARS``): whole, about 11 would fit the
    2,200-token block (7 the old 1,500); as briefs 15 or more do, the newest first, each cut marked."""
    project = os.path.realpath(tmp_path / "freezer")
    os.makedirs(project)
    sc: Sidecar = start_sidecar(tmp_path / "home")
    try:
        text = ("note {i:02d}: the freezer in room {i} logs a reading every minute and the exporter sends the "
                "day's readings to the LIMS at night; when a reading is missing the exporter writes the last "
                "known one and marks it estimated, so the lab can see the gap, and a person checks the logger "
                "the next morning before the samples in room {i} are handled again. The logger's battery is "
                "changed every six months by facilities, who keep the spare loggers in the cupboard by the door "
                "of room {i}; a logger that reads warmer than -70.0 C twice in a row raises the freezer alarm.")
        sc.client.remember_batch([{"content": text.format(i=i), "project": project} for i in range(40)])
        sc.client.wait_idle(timeout_s=120)
        block = sc.client.session_context(project=project)["context"]
    finally:
        sc.stop()
    assert len(text) > BRIEF_CHARS + 150
    assert block.count(MEMORY_LINE_START) >= 15, block
    assert "note 39:" in block and block.count(" …</memory>") == block.count(MEMORY_LINE_START)


COVERING = ("boxes: fill_percent counts the usable slots only\n\nA1 is reserved, so a box of 80 tubes is full.\n\n"
            "Tests added: test_full_box_is_100_percent, test_empty_box\n\nFiles: cryobox/boxes.py")
COVERED = ("`python3 -m unittest -q tests.test_boxes` failed with `FAIL: test_full_box_is_100_percent "
           "(tests.test_boxes.FillTest.test_full_box_is_100_percent): AssertionError: 99 != 100`; it passed after "
           "a change.")
UNCOVERED = ("`pytest -q` failed with `FAILED tests/test_boxes.py::test_full_box_is_100_percent_for_9x9 - assert "
             "99 == 100`; it passed after a change.")


def test_covered_transitions_are_those_whose_failing_test_a_commit_added() -> None:
    rows = [{"memory_id": 1, "content": COVERING, "source": "capture:commit-landed"},
            {"memory_id": 2, "content": COVERED, "source": "capture:test-passed"},
            {"memory_id": 3, "content": UNCOVERED, "source": "capture:test-passed"},
            {"memory_id": 4, "content": "we test_full_box_is_100_percent by hand", "source": "cli"}]
    assert covered_transitions(rows) == {2}, "a longer test name or a person's note is not covered"
    assert covered_transitions(rows[1:]) == set(), "no commit among the rows, nothing covered"


def test_the_session_block_shows_a_fix_once_not_as_its_commit_and_its_test_transition(tmp_path: Path) -> None:
    project = os.path.realpath(tmp_path / "freezer")
    os.makedirs(project)
    sc: Sidecar = start_sidecar(tmp_path / "home")
    try:
        sc.client.remember_batch([
            {"content": COVERED, "project": project, "source": "capture:test-passed"},
            {"content": UNCOVERED, "project": project, "source": "capture:test-passed"},
            {"content": COVERING, "project": project, "source": "capture:commit-landed", "kind": "change"}])
        sc.client.wait_idle(timeout_s=120)
        block = sc.client.session_context(project=project)["context"]
    finally:
        sc.stop()
    assert "fill_percent counts the usable slots only" in block, block
    assert "test_full_box_is_100_percent_for_9x9" in block, "a transition no commit tells is shown"
    assert "FillTest" not in block, "the transition the commit tells is left out of the block"
    assert "left out" not in block, "a transition the commit tells is not a memory the budget left out"


REPEAT_A = "The nightly invoice export job runs at 02:30 UTC from cron/export.cron and writes to /srv/exports."
REPEAT_B = "The nightly export job runs at 02:30 UTC from cron/export.cron, writing to /srv/exports."
OTHER = "The nightly invoice export job runs at 03:30 UTC from cron/export.cron and writes to /srv/exports."


def _unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_block_repeats_are_later_rows_close_to_an_earlier_one_with_the_same_specifics() -> None:
    rows = [{"memory_id": 1, "content": REPEAT_A}, {"memory_id": 2, "content": REPEAT_B},
            {"memory_id": 3, "content": OTHER}, {"memory_id": 4, "content": REPEAT_B, "pinned": True},
            {"memory_id": 5, "content": REPEAT_B}, {"memory_id": 6, "content": "not embedded yet"}]
    close = {1: _unit(1, 0.1), 2: _unit(1, 0.2), 3: _unit(1, 0.1), 4: _unit(1, 0.2), 5: _unit(0.2, 1)}
    assert float(np.dot(close[1], close[2])) >= BLOCK_REPEAT_COSINE > float(np.dot(close[1], close[5]))
    assert block_repeats(rows, close) == {2: 1}, "3 says 03:30, 4 is pinned, 5 is far, 6 has no vector"


STATED = "heads up, the staging db listens on 5433 not the default port, nobody points the test suite at 5432"
SAVED = "The staging database listens on port 5433 rather than the default; the test suite must never use 5432."


def test_a_statement_and_the_agents_save_of_it_in_one_session_are_one_fact_told_twice(embedder: Embedder) -> None:
    """The agent rewords what the user said (other words, "never" for "nobody"): the strict rule keeps both; one
    session, one statement and one agent save, the same numbers and negated alike show it once."""
    variants = {
        3: SAVED,
        4: SAVED.replace("5433", "5434"),  # another number: another fact
        5: SAVED.replace("must never use", "must always use"),  # no longer negated: a reversal
        6: SAVED,  # saved in another session
        7: SAVED,  # a second statement, not an agent's save
    }
    texts = [STATED, *variants.values()]
    matrix = np.asarray(embedder.embed(texts), dtype=np.float32)
    vectors = {mid: v / np.linalg.norm(v) for mid, v in zip([1, *variants], matrix, strict=True)}
    assert float(vectors[1] @ vectors[3]) >= TOLD_TWICE_COSINE and not same_specifics(STATED, SAVED)
    statement = {"memory_id": 1, "content": STATED, "source": "capture:prompt-statement", "session_id": "s1"}
    sources = {3: "mcp", 4: "mcp", 5: "mcp", 6: "mcp", 7: "capture:prompt-statement"}
    for mid, text in variants.items():
        row = {"memory_id": mid, "content": text, "source": sources[mid], "session_id": "s2" if mid == 6 else "s1"}
        assert block_repeats([statement, row], vectors) == ({3: 1} if mid == 3 else {}), (mid, text)
        assert block_repeats([row, statement], vectors) == ({1: 3} if mid == 3 else {}), "either order"


def test_a_statement_the_agents_save_holds_with_more_numbers_is_left_out_behind_the_save(embedder: Embedder
                                                                                         ) -> None:
    """The agent may save two of the user's sentences as one (the dev4 week: "eps 104 to 115 are sponsored by
    Seedbox." and "their sponsor line … until 31 march 2026"): the statement whose numbers the save all holds is one
    fact told twice and shows once, behind the save; the save, which holds more, is never left out behind it, and a
    statement with a number the save lacks stays."""
    stated = ("their sponsor line ('This episode is supported by Seedbox...') is at the end of the description and by "
              "contract has to stay in the feed, word for word, until 31 march 2026. don't trim it or rewrite it")
    saved = ("Episodes 104-115 are sponsored by Seedbox. The sponsor line at the end of their descriptions ('This "
             "episode is supported by Seedbox ...') must stay in the feed word for word until 31 March 2026 "
             "(contract): never trim or rewrite it.")
    other = stated.replace("31 march 2026", "30 june 2026")
    sponsors = "eps 104 to 115 are sponsored by Seedbox (the seed subscription people)."
    negated = "eps 104 to 115 are not sponsored by Seedbox any more"
    texts = [stated, saved, other, sponsors, negated, saved.replace(": never trim or rewrite it", "")]
    matrix = np.asarray(embedder.embed(texts), dtype=np.float32)
    vectors = {mid: v / np.linalg.norm(v) for mid, v in zip([1, 2, 3, 4, 5, 6], matrix, strict=True)}
    sources = ["capture:prompt-statement", "mcp", "capture:prompt-statement", "capture:prompt-statement",
               "capture:prompt-statement", "mcp"]
    rows = {mid: {"memory_id": mid, "content": text, "source": source, "session_id": "s1"}
            for mid, (text, source) in enumerate(zip(texts, sources, strict=True), start=1)}
    assert block_repeats([rows[2], rows[1]], vectors) == {1: 2}
    assert block_repeats([rows[1], rows[2]], vectors) == {}, "the save holds more: both shown"
    assert block_repeats([rows[2], rows[3]], vectors) == {}, "a date the save does not hold"
    assert block_repeats([rows[2], rows[4]], vectors) == {4: 2}, "the save's 'never' is the other sentence's"
    assert block_repeats([rows[6], rows[5]], vectors) == {}, "the statement is negated, the save is not"


def test_a_codex_agents_save_under_its_mcp_servers_own_session_is_told_twice_within_the_turn(embedder: Embedder
                                                                                             ) -> None:
    """Codex gives its MCP server no session id, so the server's save carries its own ("mcp-<uuid>"): the
    statement it repeats is the one made within ``TOLD_TWICE_WINDOW_S`` of it, not one an hour away."""
    matrix = np.asarray(embedder.embed([STATED, SAVED]), dtype=np.float32)
    vectors = {mid: v / np.linalg.norm(v) for mid, v in zip([1, 2], matrix, strict=True)}
    statement = {"memory_id": 1, "content": STATED, "source": "capture:prompt-statement",
                 "session_id": "019a2b3c-4d5e-7f60-8a7b-9c0d1e2f3a4b", "created_at": 1_780_000_000.0}
    for offset, twins in ((3.0, {2: 1}), (TOLD_TWICE_WINDOW_S + 1, {})):
        save = {"memory_id": 2, "content": SAVED, "source": "mcp", "session_id": f"{MCP_SERVER_SESSION_PREFIX}x1",
                "created_at": 1_780_000_000.0 + offset}
        assert block_repeats([statement, save], vectors) == twins, offset


def test_the_session_block_shows_a_fact_told_twice_once(tmp_path: Path) -> None:
    project = os.path.realpath(tmp_path / "shop")
    os.makedirs(project)
    sc: Sidecar = start_sidecar(tmp_path / "home")
    try:
        sc.client.remember_batch([{"content": text, "project": project, "kind": "note"}
                                  for text in (REPEAT_A, "Invoices are numbered INV-YYYY-NNNNN.", REPEAT_B, OTHER)])
        sc.client.wait_idle(timeout_s=120)
        block = sc.client.session_context(project=project)["context"]
        listed = sc.client.list_recent(project=project)["results"]
    finally:
        sc.stop()
    assert len(listed) == 4, "nothing is merged in the store"
    assert REPEAT_B in block and REPEAT_A not in block, "the newer telling is shown, once"
    assert OTHER in block and "INV-YYYY-NNNNN" in block
    assert "left out" not in block, "a repeat is not a memory the budget left out"
    assert 'age="today"' in block and 'created="' not in block, "the session block's lines say when by age alone"


def test_a_prompt_block_shows_a_statement_and_the_agents_save_of_it_once(sidecar: Sidecar, tmp_path: Path) -> None:
    """The same-session rule holds in a prompt's block too: recall results carry their ``session_id``."""
    project = os.path.realpath(tmp_path / "shop")
    os.makedirs(project)
    sidecar.client.wait_idle(120)
    for text, source in ((STATED, "capture:prompt-statement"), (SAVED, "mcp")):
        sidecar.client.remember(text, kind="note", project=project, source=source, session_id="s1")
    sidecar.client.wait_idle(timeout_s=120)
    env = {**os.environ, "MEMCUE_HOOK_DEADLINE_S": "10"}
    context = context_of(run_hook(prompt_payload("which port does the staging database listen on?", project,
                                                 session_id="a-later-session"), env=env))
    assert "5433" in context and context.count(MEMORY_LINE_START) == 1, context


def _told_twice(sidecar: Sidecar, tmp_path: Path) -> tuple[str, dict[str, str]]:
    """A project holding REPEAT_A and REPEAT_B, embedded; its folder and the environment a hook runs in."""
    project = os.path.realpath(tmp_path / "shop")
    os.makedirs(project)
    sidecar.client.wait_idle(120)
    sidecar.client.remember_batch([{"content": text, "project": project, "kind": "note"}
                                   for text in (REPEAT_A, REPEAT_B)])
    sidecar.client.wait_idle(timeout_s=120)
    return project, {**os.environ, "MEMCUE_HOOK_DEADLINE_S": "10"}


def test_a_prompt_block_shows_a_fact_told_twice_once(sidecar: Sidecar, tmp_path: Path) -> None:
    project, env = _told_twice(sidecar, tmp_path)
    context = context_of(run_hook(prompt_payload("nightly export job cron schedule", project,
                                                 session_id="repeat-session"), env=env))
    assert "02:30 UTC" in context, context
    assert context.count(MEMORY_LINE_START) == 1, context
    assert 'created="' in context, "a prompt's block keeps the date: a question about when reads it there"


def test_a_repeat_the_session_block_left_out_is_not_brought_by_a_later_prompt(sidecar: Sidecar,
                                                                               tmp_path: Path) -> None:
    """The session block shows a fact told twice once; the telling it left out is in the conversation too (its twin
    stands for it), so a prompt of that session that recalls it does not bring it as news."""
    project, env = _told_twice(sidecar, tmp_path)
    start = {"session_id": "twin-session", "cwd": project, "hook_event_name": "SessionStart", "source": "startup"}
    block = context_of(run_hook(start, env=env, event="session-start"))
    assert REPEAT_B in block and REPEAT_A not in block
    prompt = context_of(run_hook(prompt_payload("nightly invoice export job cron schedule", project,
                                                session_id="twin-session"), env=env))
    assert MEMORY_LINE_START not in prompt, prompt
    other = context_of(run_hook(prompt_payload("nightly invoice export job cron schedule", project,
                                               session_id="another-session"), env=env))
    assert "02:30 UTC" in other, "another session, shown nothing yet, gets it"


def test_a_sidecar_without_its_model_yet_still_shows_a_fact_told_twice_once(tmp_path: Path) -> None:
    """Right after a start the model is still loading (``MEMCUE_NO_MODEL`` keeps it so): the vectors an earlier run
    stored compare with each other, so the session-start block already shows the fact once."""
    project = os.path.realpath(tmp_path / "shop")
    os.makedirs(project)
    first: Sidecar = start_sidecar(tmp_path / "home")
    try:
        first.client.remember_batch([{"content": text, "project": project, "kind": "note"}
                                     for text in (REPEAT_A, REPEAT_B)])
        first.client.wait_idle(timeout_s=120)
    finally:
        first.stop()
    cold: Sidecar = start_sidecar(tmp_path / "home", MEMCUE_NO_MODEL="1")
    try:
        block = cold.client.session_context(project=project)["context"]
    finally:
        cold.stop()
    assert REPEAT_B in block and REPEAT_A not in block, block
