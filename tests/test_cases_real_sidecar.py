"""Field cases through one real sidecar (real model, real SQLite) and the real hook subprocess (C03, C04, C06).

The unit tests in test_keyword_channel.py and test_hook_payload.py check the pieces; these check that the
same inputs survive the whole path: HTTP API, recall pipeline, hook, store.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import Sidecar, start_sidecar
from hookutil import HookRun, hook_log, kill_spawned_sidecars, run_hook
from test_keyword_channel import C03_MEMORIES, C03_PROMPTS

from memcue.sidecar.store import Store

C04_MEMORIES = ["the plugin cache keeps an orphaned version directory", "pin the plugin version in CI"]
C04_OTHER = "the weather was nice at the offsite"
C04_PROMPT = (
    "So I was looking at the thing again this morning and honestly I am not sure what happened, but it "
    "seems like something is orphaned somewhere after the last upgrade, and the plugin that we load at "
    "startup keeps complaining about which version it should be using, could you help me figure out why "
    "this keeps happening every single time we deploy the app?"
)
C06_MEMORY = "the tenant column col1 is shown in red on the billing dashboard because col2 holds nulls"


@dataclass
class Env:
    sidecar: Sidecar
    home: Path
    projects: dict[str, str]  # case id -> project path (also the cwd the hook is given)


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    """One real sidecar for the module; each case gets its own project so they never see each other."""
    home = Path(tempfile.mkdtemp(prefix="mc-", dir="/tmp"))
    projects = {}
    for case in ("C03", "C04", "C06"):
        path = home / "work" / case.lower()
        path.mkdir(parents=True)
        projects[case] = os.path.realpath(path)
    sidecar = start_sidecar(home)
    try:
        c = sidecar.client
        c.remember_batch([{"content": m, "project": projects["C03"]} for m in C03_MEMORIES])
        c.remember_batch([{"content": m, "project": projects["C04"]} for m in [*C04_MEMORIES, C04_OTHER]])
        c.remember(C06_MEMORY, project=projects["C06"])
        health = c.wait_idle(timeout_s=60)
        assert health["counts"]["embedded"] == 8, health
        yield Env(sidecar, home, projects)
    finally:
        sidecar.stop()
        kill_spawned_sidecars(home)
        shutil.rmtree(home, ignore_errors=True)


def hook(env: Env, stdin: bytes | dict, case: str) -> HookRun:
    """The real hook against the module's sidecar, run from the case's project directory."""
    return run_hook(stdin, env.home, cwd=Path(env.projects[case]), MEMCUE_HOOK_SPAWN="0")


def strict_output(run: HookRun) -> str:
    """The injected context ("" for empty stdout); stdout must be strict UTF-8 and strict JSON."""
    if not run.stdout:
        return ""
    out = json.loads(run.stdout.decode("utf-8"))  # both strict: bad UTF-8 or raw control chars raise
    assert set(out) == {"hookSpecificOutput"}
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    return out["hookSpecificOutput"]["additionalContext"]


def assert_never_silent(answer: dict) -> None:
    """An empty keyword result says why; a keyword channel that reports "ok" has results."""
    status = answer["channel_status"]["bm25"]
    if not answer["results"]:
        assert status != "ok", answer
        assert answer["channel_notes"].get("bm25"), answer
    if status == "ok":
        assert answer["results"], answer


@pytest.mark.parametrize("prompt", C03_PROMPTS)
def test_C03_hostile_prompts_through_the_sidecar_and_the_hook(env: Env, prompt: str) -> None:
    project = env.projects["C03"]
    full = env.sidecar.client.recall(prompt, project=project, mode="full")
    assert full["channel_status"]["bm25"] in ("ok", "empty", "no_candidates"), full
    assert full["channel_status"]["semantic"] == "ok", full
    keyword = env.sidecar.client.recall(prompt, project=project, mode="keyword")
    assert keyword["channel_status"]["bm25"] in ("ok", "empty", "no_candidates"), keyword
    assert_never_silent(keyword)
    assert_never_silent(full)
    run = hook(env, {"session_id": "s3", "cwd": project, "prompt": prompt}, "C03")
    assert (run.returncode, run.stderr) == (0, b"")
    strict_output(run)
    assert "sidecar call failed" not in hook_log(env.home), "the sidecar answered"


@pytest.mark.parametrize("prompt,expected", list(zip(C03_PROMPTS[:4], C03_MEMORIES, strict=True)))
def test_C03_bm25_channel_returns_the_matching_memory_on_the_sidecar(env: Env, prompt: str, expected: str) -> None:
    project = env.projects["C03"]
    for mode in ("full", "keyword"):
        answer = env.sidecar.client.recall(prompt, project=project, mode=mode)
        assert answer["channel_status"]["bm25"] == "ok", answer
        found = [r for r in answer["results"] if r["content"] == expected]
        assert found, f"{mode}: {answer['results']}"
        assert found[0]["channel_scores"].get("bm25", 0) > 0, found[0]
        assert answer["results"][0]["content"] == expected, f"{mode}: the match ranks first"
    # A session of its own: one that was already given this memory is not given it again (sidecar/sessions.py).
    run = hook(env, {"session_id": f"s3-{C03_MEMORIES.index(expected)}", "cwd": project, "prompt": prompt}, "C03")
    assert (run.returncode, run.stderr) == (0, b"")
    assert f">{expected}</memory>" in strict_output(run), "the hook injects the matching memory"


def test_C04_long_prompt_keyword_recall_on_the_sidecar(env: Env) -> None:
    assert len(C04_PROMPT.split()) >= 60
    answer = env.sidecar.client.recall(C04_PROMPT, project=env.projects["C04"], mode="keyword", limit=10)
    contents = [r["content"] for r in answer["results"]]
    assert set(C04_MEMORIES) <= set(contents), answer
    assert C04_OTHER not in contents, "only stop words in common: no match"
    for r in answer["results"]:
        assert r["channel_scores"]["bm25"] > 0
    # Words matched one by one: neither memory holds "orphaned ... plugin ... version" as a phrase.
    assert {"orphaned", "plugin", "version"} <= set(answer["query_terms"])


def _stored_requests(env: Env, case: str, want: int) -> list[str]:
    deadline = time.monotonic() + 10
    while True:
        store = Store(env.sidecar.loc.database)
        try:
            rows = store.list_memories(project=env.projects[case], limit=1000)
        finally:
            store.close()
        requests = [r["content"] for r in rows if r["kind"] == "request"]
        if len(requests) >= want or time.monotonic() > deadline:
            return requests
        time.sleep(0.1)


def test_C06_control_characters_and_lone_surrogate_are_stored_clean(env: Env) -> None:
    # Transcript reading does not exist yet (the hook never opens transcript_path), so the case's raw
    # 0xB2 0xFF transcript bytes are covered only as bytes on stdin (test_hook_payload.py
    # test_C06_invalid_utf8_bytes and the third prompt here).
    project = env.projects["C06"].encode()
    raw_prompts = [
        # Raw, unescaped TAB, LF, NUL and an ANSI colour sequence inside the JSON string.
        b'{"session_id": "s6", "cwd": "' + project + b'", "prompt": "col1\tcol2\nwhy is col1 nul[\x00] '
        b'\x1b[31mred\x1b[0m on the billing dashboard?"}',
        # An escaped lone surrogate (valid JSON, not encodable as UTF-8).
        b'{"session_id": "s6", "cwd": "' + project + b'", "prompt": "why is col1 \\ud800 red on the dashboard?"}',
        # Invalid UTF-8 bytes.
        b'{"session_id": "s6", "cwd": "' + project + b'", "prompt": "col1 shows \xb2\xff in red"}',
    ]
    contexts = []
    for raw in raw_prompts:
        run = hook(env, raw, "C06")
        assert (run.returncode, run.stderr) == (0, b"")
        contexts.append(strict_output(run))
    assert any(C06_MEMORY in c for c in contexts), "at least one prompt got the memory injected"
    stored = _stored_requests(env, "C06", want=3)
    assert sorted(stored) == sorted(
        [
            "col1\tcol2\nwhy is col1 nul[] red on the billing dashboard?",
            "why is col1 \ufffd red on the dashboard?",
            "col1 shows \ufffd\ufffd in red",
        ]
    )
    for content in stored:
        assert "\x00" not in content and "\x1b" not in content
        content.encode("utf-8")  # raises on a surrogate
    assert "\t" in stored[0] + stored[1] + stored[2] and "\n" in "".join(stored), "TAB and LF are kept"
