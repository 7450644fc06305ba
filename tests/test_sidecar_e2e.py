"""The real sidecar process, the real embedding model and the real hook subprocess, end to end."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import context_of, prompt_payload, run_hook, start_sidecar

from memcue.sidecar.store.memories import Store

C20_BOOKKEEPING = [
    "session ended", "Session started in billing", "[codex] session ended (exit) at 17:42 in billing",
    "File changed: src/app.py", "File changed: app.py", "File edited: app.py", "file created:",
    "files: a.py, b.md", "files: app.py", "[claude-code] session closed (exit) at 09:10 in billing",
    "Tool: Edit completed (exit 0)", "Read 3 files", "billing: session started", "File changed",
    "Session resumed", "[codex] File changed: app.py", "PostToolUse: Edit app.py ✔", "Files changed: app.py, b.py",
    "session ended (clear) at 10:01", "File modified: src/app.py (12 lines)",
]
C20_REAL = ("We changed app.py to retry the payment call with exponential backoff because Stripe timeouts "
            "were double-charging customers.")


def _project(tmp: Path, name: str = "billing") -> str:
    path = tmp / "work" / name
    path.mkdir(parents=True, exist_ok=True)
    return os.path.realpath(path)


def test_remember_is_searchable_at_once_and_semantic_after_embedding(sidecar) -> None:
    c = sidecar.client
    project = _project(sidecar.root)
    c.remember("We pinned httpx to 0.28 because 0.29 broke unix-socket transports", project=project,
               kind="decision")
    c.remember("The staging database snapshot runs nightly at 02:00 UTC", project=project)
    kw = c.recall("httpx", project=project, mode="keyword")
    assert kw["results"] and "httpx" in kw["results"][0]["content"]
    c.wait_idle(timeout_s=60)
    answer = c.recall("why is httpx stuck on an old version?", project=project)
    assert answer["channel_status"]["semantic"] == "ok"
    assert answer["results"][0]["content"].startswith("We pinned httpx")
    assert answer["results"][0]["channel_scores"]["semantic"] > 0.4
    for key in ("results", "tier", "query_type", "channel_weights", "channel_status", "incomplete_channels",
                "retrieval_time_ms", "query_id", "abstained", "abstention_reason", "warming_up",
                "calibration_status", "answer_confidence", "answerability", "answerability_reason", "layers"):
        assert key in answer
    for key in ("fact_id", "memory_id", "content", "score", "tier", "memory_kind", "age_label",
                "channel_scores", "cue_terms"):
        assert key in answer["results"][0]
    assert answer["calibration_status"] == "uncalibrated" and answer["answer_confidence"] is None
    nothing = c.recall("write a haiku about autumn leaves", project=project)
    assert nothing["tier"] in ("none", "related") and nothing["abstained"] == (nothing["tier"] == "none")


def test_C20_bookkeeping_never_answers_or_gets_injected(sidecar) -> None:
    c = sidecar.client
    project = _project(sidecar.root)
    out = c.remember_batch([{"content": t, "project": project, "kind": "event"} for t in C20_BOOKKEEPING])
    assert all(o["bookkeeping"] for o in out)
    c.remember(C20_REAL, project=project, kind="decision")
    c.wait_idle(timeout_s=60)
    answer = c.recall("what did we change in app.py and why?", project=project, limit=50)
    contents = [r["content"] for r in answer["results"]]
    assert contents and contents[0] == C20_REAL
    assert not set(contents) & set(C20_BOOKKEEPING)
    prompt = run_hook(prompt_payload("what did we change in app.py and why?", project))
    assert prompt.returncode == 0
    block = context_of(prompt)
    assert C20_REAL in block
    start = run_hook({"session_id": "s2", "transcript_path": "", "cwd": project, "hook_event_name": "SessionStart",
                      "source": "startup"}, "session-start")
    session_block = context_of(start)
    assert C20_REAL in session_block
    for text in C20_BOOKKEEPING:
        assert f") {text}\n" not in block + "\n" and f") {text}\n" not in session_block + "\n"
    assert c.health()["counts"]["bookkeeping"] == len(C20_BOOKKEEPING)  # still stored and listable


def test_C07_hook_block_under_cap_with_cjk_and_emoji(home: Path) -> None:
    sidecar = start_sidecar(home, MEMCUE_HOOK_RECALL_LIMIT="100")
    c = sidecar.client
    project = _project(sidecar.root)
    filler = "部署キャッシュ🚀 cache rotation 数据库 ✅ "
    rows = [{"content": (f"cache rotation note {i}: " + filler * 12)[:300], "project": project}
            for i in range(200)]
    c.remember_batch(rows)
    c.wait_idle(timeout_s=120)
    env = {**os.environ, "MEMCUE_PROMPT_TOKENS": "50000"}
    proc = run_hook(prompt_payload("cache rotation note 数据库", project), env=env)
    block = context_of(proc)
    assert block, proc.stderr
    assert len(block) <= 9500
    assert block.splitlines()[-1].startswith("[memcue: ") and "left out" in block.splitlines()[-1]
    sidecar.stop()


def test_hook_captures_prompt_exactly_C05(sidecar) -> None:
    project = _project(sidecar.root)
    prompt = ('fix this:\n```python\nprint("a\\tb")\n```\n\tC:\\new\\table\\x {"k": "v \\"q\\""} end\\')
    proc = run_hook(prompt_payload(prompt, project))
    assert proc.returncode == 0 and proc.stderr == b""
    if proc.stdout.strip():
        json.loads(proc.stdout.decode("utf-8"))
    rows = Store(sidecar.loc.database).list_memories(project=project)
    assert [r["content"] for r in rows if r["kind"] == "request"] == [prompt]


def test_C01_sigstopped_sidecar_fails_open_without_escalation(sidecar) -> None:
    project = _project(sidecar.root)
    pid = sidecar.proc.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        env = {**os.environ, "MEMCUE_HOOK_DEADLINE_S": "1.0"}
        for i in range(10):
            started = time.monotonic()
            proc = run_hook(prompt_payload(f"prompt {i} about caches", project), env=env)
            took = time.monotonic() - started
            assert proc.returncode == 0 and took < 3.0
            assert context_of(proc) == ""
        assert int(sidecar.loc.pid_file.read_text()) == pid  # no second sidecar took over
    finally:
        os.kill(pid, signal.SIGCONT)


def test_C18_without_sqlite_vec_serves_keyword_only_with_one_warning(home: Path) -> None:
    sc = start_sidecar(home, MEMCUE_DISABLE_VEC="1")
    try:
        health = sc.client.health()
        assert not health["sqlite_vec"]["available"] and not health["vector_search"]
        sc.client.remember("rotate the build-cache key after every release", project="p")
        time.sleep(1.5)  # let the model load and the worker try to bind vectors
        answer = sc.client.recall("build-cache", project="p")
        assert answer["channel_status"]["semantic"] == "disabled"
        assert answer["results"][0]["content"].startswith("rotate the build-cache")
        log = sc.log()
        assert log.count("sqlite-vec could not load") == 1
    finally:
        sc.stop()


def test_spool_is_ingested_exactly_once(home: Path) -> None:
    spool = home / "spool"
    spool.mkdir(parents=True)
    lines = [json.dumps({"spool_id": f"id{i}", "op": "remember", "ts": time.time(), "content": f"spooled prompt {i}",
                         "kind": "request", "project": "p", "session_id": "s", "source": "hook:claude-code"})
             for i in range(3)]
    (spool / "hook.jsonl").write_text("\n".join(lines) + "\n{broken\n")
    for _ in range(2):
        sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
        deadline = time.monotonic() + 10
        while sc.client.health()["counts"]["memories"] < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        sc.stop()
    rows = Store(home / "memcue.db").list_memories(project="p")
    assert sorted(r["content"] for r in rows) == [f"spooled prompt {i}" for i in range(3)]


@pytest.mark.skipif(shutil.which("unshare") is None, reason="unshare is not installed")
def test_C19_offline_sidecar_serves_semantic_results(home: Path) -> None:
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare -n is not permitted here: {probe.stderr.decode().strip()}")
    env = {**os.environ, "MEMCUE_HOME": str(home), "OPENBLAS_NUM_THREADS": "1", "HF_HUB_OFFLINE": "0"}
    proc = subprocess.Popen(["unshare", "-n", sys.executable, "-m", "memcue.sidecar"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        from memcue.client import Client
        from memcue.hooks.locations import Locations

        client = Client(Locations(home))
        deadline = time.monotonic() + 60
        while not client.is_up():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        client.remember("Our invoices are rendered to PDF with WeasyPrint in a background worker", project="p")
        client.remember("Lunch on Fridays is at the Thai place", project="p")
        health = client.wait_idle(timeout_s=60)
        assert health["model"]["state"] == "ready" and health["tokenizer"] == "tiktoken"
        answer = client.recall("how are invoice PDFs generated?", project="p", mode="full")
        assert answer["channel_status"]["semantic"] == "ok"
        assert answer["results"][0]["content"].startswith("Our invoices")
        assert answer["results"][0]["channel_scores"]["semantic"] > 0.4
        client.close()
    finally:
        proc.terminate()
        proc.wait(10)
