"""The real sidecar process, the real embedding model and the real hook subprocess, end to end."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import Sidecar, context_of, prompt_payload, run_hook, start_sidecar
from hookutil import hook_env, kill_spawned_sidecars, sidecar_pids

from memcue.adapters import claude_code
from memcue.adapters.base import SESSION_START
from memcue.core.blocks import PROMPT_HEADER, SESSION_HEADER, STANDING_NOTE
from memcue.sidecar.runtime.tokenizer import TokenCounter
from memcue.sidecar.store import Store

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


#: Bookkeeping rows written through the CLI, and a bookkeeping-looking prompt typed into the harness.
C20_CLI = ["File changed: src/app.py", "files: src/app.py, README.md"]
C20_PROMPT = "[claude-code] session ended (exit) at 18:03 in billing"


def test_C20_bookkeeping_never_answers_or_gets_injected(sidecar) -> None:
    c = sidecar.client
    project = _project(sidecar.root)
    out = c.remember_batch([{"content": t, "project": project, "kind": "event"} for t in C20_BOOKKEEPING])
    assert all(o["bookkeeping"] for o in out)
    for text in C20_CLI:  # the CLI, run in the project directory, says the row was flagged
        cli = subprocess.run([sys.executable, "-m", "memcue", "remember", text], cwd=project, capture_output=True,
                             text=True, env={**os.environ, "MEMCUE_HOME": str(sidecar.root)}, timeout=60)
        assert cli.returncode == 0, cli.stderr
        assert "flagged as bookkeeping" in cli.stdout, cli.stdout
    typed = run_hook(prompt_payload(C20_PROMPT, project))
    assert typed.returncode == 0 and typed.stderr == b""
    c.remember(C20_REAL, project=project, kind="decision")
    c.wait_idle(timeout_s=60)
    bookkeeping = [*C20_BOOKKEEPING, *C20_CLI, C20_PROMPT]

    # Still stored and listable, each one flagged.
    listed = {(r["content"], r["kind"]): r for r in _memories(sidecar.loc.database, project)}
    for text in C20_BOOKKEEPING:
        assert listed[(text, "event")]["bookkeeping"], text
    for text in C20_CLI:
        assert listed[(text, "note")]["bookkeeping"] and listed[(text, "note")]["source"] == "cli", text
    assert listed[(C20_PROMPT, "request")]["bookkeeping"]
    assert not listed[(C20_REAL, "decision")]["bookkeeping"]
    assert c.health()["counts"]["bookkeeping"] == len(bookkeeping)

    question = "what did we change in app.py and why?"
    for mode in ("full", "keyword"):
        answer = c.recall(question, project=project, limit=50, mode=mode)
        contents = [r["content"] for r in answer["results"]]
        assert contents and contents[0] == C20_REAL, mode
        assert not set(contents) & set(bookkeeping), mode
    prompt = run_hook(prompt_payload(question, project))
    assert prompt.returncode == 0
    block = context_of(prompt)
    assert C20_REAL in block
    start = run_hook({"session_id": "s2", "transcript_path": "", "cwd": project, "hook_event_name": "SessionStart",
                      "source": "startup"}, "session-start")
    session_block = context_of(start)
    assert C20_REAL in session_block
    for text in bookkeeping:
        assert text not in block, text
        assert text not in session_block, text


C07_FILLER = "部署キャッシュ🚀 cache rotation 数据库 ✅ "
C07_LINE = re.compile(r"<memory ([^>]*)>(.*)</memory>")
C07_LEFT_OUT = re.compile(r"\[memcue: (\d+) more memor(?:y|ies) left out of this block; recall finds them\]")


@pytest.fixture(scope="module")
def c07() -> Iterator[tuple[Sidecar, str, dict[str, bool]]]:
    """A real sidecar holding 200 memories of about 300 characters (CJK, emoji), every tenth pinned."""
    root = Path(tempfile.mkdtemp(prefix="mc-", dir="/tmp"))
    sidecar = start_sidecar(root, MEMCUE_HOOK_RECALL_LIMIT="100")
    try:
        project = _project(root)
        rows = [{"content": (f"cache rotation note {i}: " + C07_FILLER * 12)[:300], "project": project,
                 "pinned": i % 10 == 0} for i in range(200)]
        out = sidecar.client.remember_batch(rows)
        assert not any(o["duplicate"] or o["bookkeeping"] for o in out)
        sidecar.client.wait_idle(timeout_s=120)
        yield sidecar, project, {r["content"].strip(): r["pinned"] for r in rows}
    finally:
        sidecar.stop()
        kill_spawned_sidecars(root)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> TokenCounter:
    counter = TokenCounter(tmp_path_factory.mktemp("tiktoken"))
    assert counter.mode == "tiktoken", counter.error  # the real o200k_base count, not the estimate
    return counter


def _check_block(block: str, header: str, stored: dict[str, bool]) -> tuple[list[str], int]:
    """Assert ``block`` is a header, whole memory lines of stored memories and a left-out line; returns
    the memories' texts and the left-out count."""
    lines = block.split("\n")
    assert lines[0] == header and lines[1] == "<memcue-memories>" and lines[-1] == "</memcue-memories>"
    found = C07_LEFT_OUT.fullmatch(lines[-2])
    assert found, f"the block must end with a left-out line: {lines[-2]!r}"
    contents = []
    for line in lines[2:-2]:
        match = C07_LINE.fullmatch(line)
        assert match, f"not a whole memory line: {line!r}"
        assert match.group(2) in stored, f"not one stored memory (cut inside a memory?): {line!r}"
        assert ("pinned" in match.group(1)) == stored[match.group(2)]
        contents.append(match.group(2))
    assert contents and len(set(contents)) == len(contents)
    return contents, int(found.group(1))


def test_C07_hook_block_under_cap_with_cjk_and_emoji(c07, tokens: TokenCounter) -> None:
    sidecar, project, stored = c07
    query = "cache rotation note 数据库"
    expected = len(sidecar.client.recall(query, project=project, limit=100)["results"])
    assert expected > 30, "enough supported memories to overflow any budget"
    blocks = {}
    for budget in ("50000", "600"):
        proc = run_hook(prompt_payload(query, project, session_id=f"c07-{budget}"),  # a fresh conversation each
                        env=hook_env(sidecar.root, MEMCUE_PROMPT_TOKENS=budget))
        assert proc.returncode == 0 and proc.stderr == b""
        block = blocks[budget] = context_of(proc)
        assert block, proc.stdout
        assert len(block) <= 9500
        assert tokens.count(block) <= int(budget)
        kept, left_out = _check_block(block, PROMPT_HEADER, stored)
        assert len(kept) + left_out == expected, "the left-out line counts every memory not shown"
    assert len(blocks["50000"]) > 9000, "the character cap, not the token budget, cut the generous block"
    assert tokens.count(blocks["600"]) > 400, "the 600-token block is filled, not cut short"


def test_C07_session_start_block_under_default_budget(c07, tokens: TokenCounter) -> None:
    sidecar, project, stored = c07
    payload = {"session_id": "s7", "transcript_path": "", "cwd": project, "hook_event_name": "SessionStart",
               "source": "startup"}
    proc = run_hook(payload, "session-start", env=hook_env(sidecar.root))  # Claude Code's default budget
    assert proc.returncode == 0 and proc.stderr == b""
    block = context_of(proc)
    assert block, proc.stdout
    assert len(block) <= 9500
    assert 1500 < tokens.count(block) <= claude_code.budget(SESSION_START).max_tokens
    note, memories = block.split("\n\n", 1)  # memcue's standing note first, then the memories within the budget
    assert note == STANDING_NOTE
    kept, left_out = _check_block(memories, SESSION_HEADER, stored)
    assert left_out > 0
    pinned = [stored[c] for c in kept]
    assert pinned[0] and pinned == sorted(pinned, reverse=True), "pinned memories come first"


def test_hook_captures_prompt_exactly_C05(sidecar) -> None:
    project = _project(sidecar.root)
    prompt = ('fix this:\n```python\nprint("a\\tb")\n```\n\tC:\\new\\table\\x {"k": "v \\"q\\""} end\\')
    proc = run_hook(prompt_payload(prompt, project))
    assert proc.returncode == 0 and proc.stderr == b""
    if proc.stdout.strip():
        json.loads(proc.stdout.decode("utf-8"))
    rows = Store(sidecar.loc.database).list_memories(project=project)
    assert [r["content"] for r in rows if r["kind"] == "request"] == [prompt]


def _memories(db: Path, project: str) -> list[dict]:
    """Every row of ``project`` (bookkeeping included), read through a second ``Store`` on the file."""
    store = Store(db)
    try:
        return store.list_memories(project=project, limit=10_000)
    finally:
        store.close()


def test_C01_sigstopped_sidecar_fails_open_without_escalation(sidecar) -> None:
    """The real sidecar, SIGSTOPped; the hook at its DEFAULT deadline (no MEMCUE_HOOK_DEADLINE_S)."""
    project = _project(sidecar.root)
    pid = sidecar.proc.pid
    prompts = [f"prompt {i} about caches" for i in range(10)]
    env = {k: v for k, v in os.environ.items() if k != "MEMCUE_HOOK_DEADLINE_S"}
    os.kill(pid, signal.SIGSTOP)
    try:
        for prompt in prompts:
            started = time.monotonic()
            proc = run_hook(prompt_payload(prompt, project), env=env)
            took = time.monotonic() - started
            assert proc.returncode == 0 and took < 3.0, f"hook took {took:.2f} s"
            assert proc.stdout == b"" and proc.stderr == b""
        assert int(sidecar.loc.pid_file.read_text()) == pid  # no second sidecar took over
        assert sidecar_pids(sidecar.root) == [pid], "the hook started another sidecar"
    finally:
        os.kill(pid, signal.SIGCONT)
    hook_log = (sidecar.root / "logs" / "hook.log").read_text()
    assert hook_log.count("timed out waiting for the answer") == 10
    assert "started pid=" not in hook_log
    (spool_file,) = (sidecar.root / "spool").glob("hook-claude-code-*.jsonl")  # one session: one writer's file
    spooled = [json.loads(line) for line in spool_file.read_text().splitlines()]
    assert [r["content"] for r in spooled] == prompts
    # Resumed, the sidecar gets each prompt twice: the request it had queued (if it still reads it) and
    # the spool line (ingested about every second), both under the same id. Each must be stored once.
    store = Store(sidecar.loc.database)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if store.get_meta(f"spool_offset:{spool_file.name}") == str(spool_file.stat().st_size):
                break
            time.sleep(0.1)
        else:
            raise AssertionError("the spool was not ingested")
    finally:
        store.close()
    assert sidecar.client.health()["status"] == "ok"  # answered after every queued connection was accepted
    time.sleep(1.0)  # let the queued hook requests finish their writes
    rows = [r for r in _memories(sidecar.loc.database, project) if r["kind"] == "request"]
    assert sorted(r["content"] for r in rows) == sorted(prompts), "each prompt stored exactly once"
    assert {r["source_id"] for r in rows} == {r["spool_id"] for r in spooled}
    assert sidecar_pids(sidecar.root) == [pid]


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


def _failing_sqlite_vec(tmp_path: Path) -> dict[str, str]:
    """Environment whose ``sqlite_vec`` points at a library that does not exist, so apsw's real
    ``load_extension`` fails (as on a Python built without extension loading, or a broken wheel)."""
    fake = tmp_path / "fakevec"
    (fake / "sqlite_vec").mkdir(parents=True)
    (fake / "sqlite_vec" / "__init__.py").write_text(
        'def loadable_path():\n    return "/nonexistent/memcue-test/vec0"\n'
    )
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(fake), os.environ.get("PYTHONPATH", "")) if p)}


def _wait_model_ready(sc: Sidecar) -> dict:
    deadline = time.monotonic() + 60
    while sc.client.health()["model"]["state"] == "warming":
        assert time.monotonic() < deadline, "the model did not load"
        time.sleep(0.1)
    time.sleep(2 * 1.0)  # two worker ticks: the worker has tried to bind vectors (and would have warned)
    return sc.client.health()


def test_C18_sqlite_vec_load_failure_serves_keyword_only_with_one_warning(home: Path, tmp_path: Path) -> None:
    sc = start_sidecar(home, **_failing_sqlite_vec(tmp_path))
    try:
        health = _wait_model_ready(sc)
        assert health["model"]["state"] == "disabled"  # no vector search: the model is not even loaded
        assert health["sqlite_vec"]["available"] is False
        assert "/nonexistent/memcue-test/vec0" in health["sqlite_vec"]["error"]
        assert health["vector_search"] is False and not health["warming_up"]
        sc.client.remember("rotate the build-cache key after every release", project="p")
        keyword = sc.client.recall("build-cache key", project="p", mode="keyword")
        assert keyword["results"][0]["content"].startswith("rotate the build-cache")
        full = sc.client.recall("how often do we rotate the build-cache key?", project="p")
        assert full["channel_status"]["semantic"] == "disabled"
        assert full["channel_status"]["bm25"] == "ok"
        assert full["results"][0]["content"].startswith("rotate the build-cache")
        time.sleep(1.5)  # the worker wakes for the new row: still no vec0, still no new warning
        status = subprocess.run([sys.executable, "-m", "memcue", "status"], capture_output=True, text=True,
                                env={**os.environ, "MEMCUE_HOME": str(home)}, timeout=30)
        assert status.returncode == 0, status.stderr
        assert "vector search: off" in status.stdout and "sqlite-vec" in status.stdout, status.stdout
        warnings = [line for line in sc.log().splitlines() if "WARNING" in line]
        assert len(warnings) == 1 and "sqlite-vec could not load" in warnings[0], warnings
    finally:
        sc.stop()
    store = Store(home / "memcue.db", want_vec=False)
    try:  # vec0 was never touched: no vector table was created
        assert not store._reader().execute("SELECT name FROM sqlite_master WHERE name = 'memories_vec'").fetchall()
    finally:
        store.close()


def test_C18_existing_vectors_survive_a_sqlite_vec_load_failure(home: Path, tmp_path: Path) -> None:
    texts = ["Our invoices are rendered to PDF with WeasyPrint in a background worker",
             "rotate the build-cache key after every release", "ticket OPS-4821 is blocked on the VPN change"]
    sc = start_sidecar(home)  # a normal sidecar makes the vectors first
    try:
        sc.client.remember_batch([{"content": t, "project": "p"} for t in texts])
        assert sc.client.wait_idle(timeout_s=60)["counts"]["embedded"] == 3
    finally:
        sc.stop()
    sc = start_sidecar(home, **_failing_sqlite_vec(tmp_path))
    try:
        health = sc.client.health()
        assert not health["sqlite_vec"]["available"]
        assert health["counts"] == {"memories": 3, "bookkeeping": 0, "pending_embeddings": 0, "embedded": 3,
                                    "answering": 3, "captured": 0, "other_bookkeeping": 0, "inactive": 0}
        for text, query in zip(texts, ("WeasyPrint invoices", "build-cache", "OPS-4821"), strict=True):
            for mode in ("keyword", "full"):
                answer = sc.client.recall(query, project="p", mode=mode)
                assert answer["results"][0]["content"] == text, (mode, answer)
        sc.client.remember("lunch on Fridays is at the Thai place", project="p")  # writes still work
        assert sc.client.health()["counts"]["memories"] == 4
    finally:
        sc.stop()
    sc = start_sidecar(home)  # sqlite-vec back: the old vectors are all there, the new row gets one
    try:
        health = sc.client.wait_idle(timeout_s=60)
        assert health["counts"] == {"memories": 4, "bookkeeping": 0, "pending_embeddings": 0, "embedded": 4,
                                    "answering": 4, "captured": 0, "other_bookkeeping": 0, "inactive": 0}
        answer = sc.client.recall("how are invoice PDFs generated?", project="p")
        assert answer["channel_status"]["semantic"] == "ok"
        assert answer["results"][0]["content"] == texts[0]
        assert answer["results"][0]["channel_scores"]["semantic"] > 0.4
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
        from memcue.core.paths import Locations

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


def test_socket_is_up_before_the_model_and_recall_answers_keyword_only_while_warming(home: Path) -> None:
    sc = start_sidecar(home, MEMCUE_MODEL_LOAD_DELAY_S="30")
    try:
        health = sc.client.health()
        assert health["warming_up"] and health["model"]["state"] == "warming"
        sc.client.remember("rotate the build-cache key after every release", project="p")
        answer = sc.client.recall("how often do we rotate the build-cache key?", project="p")
        assert answer["warming_up"] is True
        assert answer["channel_status"]["semantic"] == "warming"
        assert answer["results"][0]["content"].startswith("rotate the build-cache key")
        assert answer["note"] == "memcue is still warming up — results may be incomplete."
        assert answer["tier"] == "related" and len(answer["results"]) <= 5
        assert all(r["tier"] == "related" for r in answer["results"])
        nothing = sc.client.recall("zxqv blorft", project="p")
        assert nothing["note"] != "That isn't in memcue." and nothing["warming_up"] is True
    finally:
        sc.stop()


def test_spool_appended_while_running_is_ingested_by_the_watcher(home: Path) -> None:
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        deadline = time.monotonic() + 10
        while sc.client.health()["spool_watch"] != "watchfiles" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sc.client.health()["spool_watch"] == "watchfiles"
        spool = home / "spool" / "hook.jsonl"
        with open(spool, "a", encoding="utf-8") as fh:  # as a hook that could not reach the sidecar would
            fh.write(json.dumps({"spool_id": "late1", "op": "remember", "ts": time.time(), "content": "late prompt",
                                 "kind": "request", "project": "p", "session_id": "s", "source": "hook:claude-code"})
                     + "\n")
        deadline = time.monotonic() + 10
        while sc.client.health()["counts"]["memories"] < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sc.client.health()["counts"]["memories"] == 1
    finally:
        sc.stop()


def test_captured_prompt_takes_its_recall_vector_without_a_second_embedding(sidecar, embedder) -> None:
    project = _project(sidecar.root)
    sidecar.client.remember("we rotate the build-cache key after every release", project=project)
    _wait_model_ready(sidecar)
    deadline = time.monotonic() + 30
    while sidecar.client.health()["counts"]["pending_embeddings"] and time.monotonic() < deadline:
        time.sleep(0.05)
    prompt = "when do we rotate the build-cache key?"
    proc = run_hook(prompt_payload(prompt, project))
    assert proc.returncode == 0 and proc.stderr == b""
    assert sidecar.client.health()["prompt_vectors_reused"] == 1
    store = Store(sidecar.loc.database)
    try:
        (row,) = [r for r in store.list_memories(project=project) if r["kind"] == "request"]
        assert row["baseline"] is not None
        assert store.bind_model(embedder.model_id, embedder.dim)  # this second Store reads the same vectors
        stored = np.frombuffer(store.vectors([row["id"]])[row["id"]], dtype=np.float32)
    finally:
        store.close()
    assert float(stored @ embedder.embed_query(prompt)) > 0.9999  # the same text, the same model
