"""The real-hook coding benchmark (``benchmarks/coding_hook.py``) end to end on a tiny split, so it cannot rot:
a real sidecar, the rows imported (one superseded through the import path's new version, one bookkeeping row),
the real hook run per prompt, its block parsed back to labels and scored.

The superseded decision and its replacement both share the question's words: the block must hold the new one
and never the old (nor may the session-start block); the question about something the store does not hold
must inject nothing; a split naming a memory it does not hold is refused with exit code 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.slow

SCRIPT = REPO / "benchmarks" / "coding_hook.py"
REFERENCE = 1764000000
META = {"meta": {"reference_unix": REFERENCE, "author": "test", "description": "tiny fixture"}}
MEMORIES = [
    {"id": "m001", "project": "kiln", "kind": "decision", "created_at": REFERENCE - 900_000, "pinned": False,
     "supersedes": None,
     "content": "The kiln scheduler retries a failed firing job 3 times with a 20 second backoff."},
    {"id": "m002", "project": "kiln", "kind": "decision", "created_at": REFERENCE - 400_000, "pinned": False,
     "supersedes": "m001",
     "content": "The kiln scheduler retries a failed firing job 5 times with a 90 second backoff "
                "(3 times was not enough for the glaze ovens)."},
    {"id": "m003", "project": "kiln", "kind": "bookkeeping", "created_at": REFERENCE - 399_000, "pinned": False,
     "supersedes": None, "content": "File changed: kiln/scheduler.py"},
]
PROMPTS = [
    {"id": "q001", "project": "kiln", "category": "question", "relevant": ["m002"], "asked_at": REFERENCE,
     "prompt": "how many times does the kiln scheduler retry a failed firing job?"},
    {"id": "q002", "project": "kiln", "category": "no_answer", "relevant": [], "asked_at": REFERENCE,
     "prompt": "what is the capital of Peru?"},
]


def _write(folder: Path, memories: list[dict], prompts: list[dict]) -> None:
    folder.mkdir(parents=True)
    for name, rows in (("memories.jsonl", memories), ("questions.jsonl", prompts)):
        lines = [json.dumps(META), *(json.dumps(r) for r in rows)]
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _run(data: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "--data", str(data), "--split", "dev", "--out", str(out),
                           "--json", "--gap-ms", "0"], capture_output=True, text=True, timeout=300, check=False)


def test_the_benchmark_runs_the_real_hook_and_scores_its_block(tmp_path: Path) -> None:
    _write(tmp_path / "data" / "dev", MEMORIES, PROMPTS)
    proc = _run(tmp_path / "data", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)["splits"]["dev"]
    report = json.loads((tmp_path / "out" / "coding_hook.json").read_text(encoding="utf-8"))
    (run,) = report["splits"]
    assert run["import"]["superseded_ok"] == 1 and run["import"]["flagged_bookkeeping"] == 1, run["import"]
    q1, q2 = run["per_prompt"]
    assert q1["exit_code"] == 0 and q1["context_chars"] > 0, q1
    assert "m002" in q1["injected"] and "m001" not in q1["injected"], q1
    assert q1["recall"]["first_relevant_rank"] == 1, q1["recall"]
    assert q2["injected"] == [], q2
    assert "m002" in run["session_start"]["kiln"] and "m001" not in run["session_start"]["kiln"], run["session_start"]
    assert sum(run["session_start_noise"].values()) == 0, run["session_start_noise"]
    overall = summary["overall"]
    assert (overall["hits"], overall["answerable"], overall["no_answer_clean"]) == (1, 1, 1.0), overall
    assert overall["noise"]["superseded"] == 0 and summary["per_category"]["question"]["hit_share"] == 1.0
    assert (tmp_path / "out" / "coding_hook.md").read_text(encoding="utf-8").startswith("# Coding memories")


def test_a_malformed_split_is_refused(tmp_path: Path) -> None:
    bad = [dict(PROMPTS[0], relevant=["m009"])]  # no such memory
    _write(tmp_path / "data" / "dev", MEMORIES, bad)
    proc = _run(tmp_path / "data", tmp_path / "out")
    assert proc.returncode == 2 and "relevant m009" in proc.stderr, proc.stderr
