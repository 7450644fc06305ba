"""Wall time of the PostToolUse capture hook (issue 14: "PostToolUse adds <= 15 ms p50").

Run: ``.venv/bin/python benchmarks/tool_hook_latency.py`` (about 20 s). Each row runs the installed hook command
(``python -I -S memcue/hooks/launch.py <harness> <event>``) as a subprocess ``--runs`` times with a real payload
on stdin, no sidecar (the hook never asks one: it spools and returns), in a fresh data dir; it reports the p50 and
p90 wall time in ms beside ``python -I -S -c pass`` (the interpreter's own start) and the Stop hook (the capture
hook that existed before). "added" is the p50 minus the bare interpreter's. Claude Code runs the hook
asynchronously (``"async": true``), so there the agent waits for none of it; Codex runs it in the foreground.
Writes ``benchmarks/results/tool_hook_latency.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS_DIR, git_commit, git_dirty, write_results  # noqa: E402

import memcue.hooks.launch as launch  # noqa: E402

_BASE = {"session_id": "5a1f2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b", "transcript_path": "/tmp/none.jsonl",
         "permission_mode": "default"}
FAILURE = {**_BASE, "hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_use_id": "toolu_01",
           "tool_input": {"command": "pytest tests/test_x.py", "description": "Run the tests"},
           "error": "Exit code 1\n=== FAILURES ===\nE   AssertionError: assert 1 == 2\n=== 1 failed in 0.1s ===",
           "is_interrupt": False}
SUCCESS = {**_BASE, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "toolu_02",
           "tool_input": {"command": "pytest tests/test_x.py"},
           "tool_response": {"stdout": "1 passed in 0.1s", "stderr": "", "interrupted": False, "isImage": False}}
EDIT = {**_BASE, "hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_use_id": "toolu_03",
        "tool_input": {"file_path": "/src/x.py", "old_string": "a", "new_string": "b"},
        "tool_response": {"filePath": "/src/x.py"}}
STOP = {**_BASE, "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "Fixed it."}


def p50_p90(argv: list[str], payload: bytes, env: dict[str, str], runs: int) -> tuple[float, float]:
    """Median and 90th percentile wall time (ms) of ``runs`` runs of ``argv`` with ``payload`` on stdin."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, input=payload, capture_output=True, env=env, check=True)
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    py = sys.executable
    hook = [py, "-I", "-S", launch.__file__]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as project:
        env = {**os.environ, "MEMCUE_HOME": home, "MEMCUE_HOOK_SPAWN": "0"}
        cases = [("python -I -S -c pass", [py, "-I", "-S", "-c", "pass"], None),
                 ("claude-code PostToolUse (Bash passed)", [*hook, "claude-code", "post-tool-use"], SUCCESS),
                 ("claude-code PostToolUseFailure (Bash failed)", [*hook, "claude-code", "post-tool-use-failure"],
                  FAILURE),
                 ("claude-code PostToolUse (Edit)", [*hook, "claude-code", "post-tool-use"], EDIT),
                 ("codex PostToolUse (Bash)", [*hook, "codex", "post-tool-use"],
                  {**SUCCESS, "turn_id": "t-1", "model": "gpt-5"}),
                 ("claude-code Stop", [*hook, "claude-code", "stop"], STOP)]
        for name, argv, payload in cases:
            data = json.dumps({**payload, "cwd": project}).encode() if payload else b""
            p50, p90 = p50_p90(argv, data, env, args.runs)
            rows.append({"case": name, "p50_ms": round(p50, 1), "p90_ms": round(p90, 1)})
    bare = rows[0]["p50_ms"]
    for row in rows[1:]:
        row["added_p50_ms"] = round(row["p50_ms"] - bare, 1)
    report = {"commit": git_commit(), "dirty": git_dirty(), "runs": args.runs, "python": sys.version.split()[0],
              "rows": rows}
    lines = ["# PostToolUse capture hook: wall time (subprocess, real payload, no sidecar)", "",
             f"{args.runs} runs per row; added = p50 minus `python -I -S -c pass`.", "",
             "| case | p50 ms | p90 ms | added p50 ms |", "|---|---:|---:|---:|"]
    lines += [f"| {r['case']} | {r['p50_ms']} | {r['p90_ms']} | {r.get('added_p50_ms', '')} |" for r in rows]
    write_results(RESULTS_DIR, "tool_hook_latency", report, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
