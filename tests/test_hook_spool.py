"""Prompts typed while the sidecar is unreachable are spooled, one JSON line each, nothing lost."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest
from hookutil import cleanup_home, hook_log, make_home, run_hook, spool_files, spool_records

PROMPTS = [
    "first prompt",
    "second\nwith a newline and a tab\tand C:\\new\\table\\",
    "third: 构建缓存 🔑 \"quoted\" {'json': [1, 2]}",
]


@pytest.fixture
def home(tmp_path: Path):
    home = make_home(tmp_path)
    yield home
    cleanup_home(home)


def test_spool_one_line_per_prompt_when_unreachable(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    before = time.time()
    for prompt in PROMPTS:
        run = run_hook(
            {"session_id": "sess-spool", "cwd": str(project), "prompt": prompt},
            home,
            MEMCUE_HOOK_SPAWN="0",
            MEMCUE_HOOK_DEADLINE_S="1.0",
        )
        assert (run.returncode, run.stdout, run.stderr) == (0, b"", b"")
        assert run.elapsed_s < 1.0, "no sidecar and no spawn: nothing to wait for"
    records = spool_records(home)
    assert [r["content"] for r in records] == PROMPTS
    assert len({r["spool_id"] for r in records}) == len(PROMPTS)
    for record in records:
        assert set(record) == {"spool_id", "op", "ts", "content", "kind", "project", "session_id", "source"}
        assert len(record["spool_id"]) == 32 and int(record["spool_id"], 16) >= 0
        assert record["spool_id"][12] == "4", "uuid4 form"
        assert (record["op"], record["kind"], record["source"]) == ("remember", "request", "hook:claude-code")
        assert record["project"] == str(project.resolve())
        assert record["session_id"] == "sess-spool"
        assert before <= record["ts"] <= time.time()
    (spool_file,) = spool_files(home)  # one writer (harness and session): one file
    assert spool_file.name.startswith("hook-claude-code-")
    assert stat.S_IMODE(spool_file.stat().st_mode) == 0o600


def test_spool_session_id_falls_back_to_env(home: Path) -> None:
    run = run_hook(
        {"cwd": "/tmp", "prompt": "no session id in the payload"},
        home,
        MEMCUE_HOOK_SPAWN="0",
        CLAUDE_CODE_SESSION_ID="from-env",
    )
    assert run.returncode == 0
    assert [r["session_id"] for r in spool_records(home)] == ["from-env"]


def test_spool_skips_blank_prompts(home: Path) -> None:
    run = run_hook({"cwd": "/tmp", "prompt": "  \n\t "}, home, MEMCUE_HOOK_SPAWN="0")
    assert (run.returncode, run.stdout, run.stderr) == (0, b"", b"")
    assert spool_records(home) == []


def test_spool_failure_is_logged_and_swallowed(home: Path) -> None:
    (home / "spool").write_text("a file where the spool directory should be")
    run = run_hook({"cwd": "/tmp", "prompt": "cannot be spooled"}, home, MEMCUE_HOOK_SPAWN="0")
    assert (run.returncode, run.stdout, run.stderr) == (0, b"", b"")
    assert "could not spool the prompt" in hook_log(home)


def test_spool_with_spawn_enabled_still_records_the_prompt(home: Path) -> None:
    run = run_hook(
        {"cwd": "/tmp", "prompt": "typed while the sidecar was down"}, home, MEMCUE_HOOK_DEADLINE_S="0.5"
    )
    assert (run.returncode, run.stdout, run.stderr) == (0, b"", b"")
    # A prompt hook starts the sidecar and goes on at once (it answers the next prompt); the prompt is spooled.
    assert [r["content"] for r in spool_records(home)] == ["typed while the sidecar was down"]
    log = hook_log(home)
    assert log.count("started pid=") == 1
    assert "not waiting for it on a prompt" in log
