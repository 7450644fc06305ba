"""Wall time of the PreToolUse hook (recall at the point of action, issue 15: p50 <= 60 ms end to end).

Run: ``.venv/bin/python benchmarks/pre_tool_latency.py`` (about 2 minutes). A fresh ``MEMCUE_HOME`` and project (a
git repository), a real sidecar with the embedding model, 1,000 memories seeded in the project
(``hook_corpus.seed_rows``: the demo seed plus generated ones naming the project's modules and commands), every
vector computed. Then the hook as the installer writes it (``python -I -S <memcue>/hooks/launch.py <harness>
pre-tool-use``) runs as a subprocess ``--runs`` times per row with the payload the harness sends, timed from just
before the process starts until its output is complete. Each run is a new session, so a memory that names the call
is injected every time (the costlier case; within one session it is given once). Rows: edits of files many memories
name, of a file none names, shell commands, a Read (the hook answers it without asking the sidecar), a Codex shell
command, and for reference the bare interpreter and the PostToolUse capture hook, all run round-robin. Writes
``benchmarks/results/pre_tool_latency.{json,md}`` (``pre_tool_latency_<n>`` for ``--memories n`` other than 1,000).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    RESULTS_DIR,
    git_commit,
    git_dirty,
    injected_context,
    percentiles,
    say,
    stop_sidecar,
    write_results,
)
from hook_corpus import SEED_TOTAL, seed_rows  # noqa: E402

from memcue.client import Client  # noqa: E402
from memcue.core.paths import Locations  # noqa: E402
from memcue.hooks import command  # noqa: E402

TARGET_P50_MS = 60.0
WARMUP_RUNS = 5
BARE = "python -I -S -c pass (bare interpreter)"
#: A reference row: the PostToolUse capture hook (spools, never asks the sidecar), 17 ms p50 on an idle machine
#: (``tool_hook_latency.md``), so a loaded machine's factor can be read off.
POST = "reference: claude-code PostToolUse capture (no sidecar call)"


def claude_payload(project: str, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """Claude Code 2.1.x's PreToolUse stdin, in a new session."""
    session = str(uuid.uuid4())
    return {"session_id": session, "transcript_path": f"/home/dev/.claude/projects/x/{session}.jsonl", "cwd": project,
            "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input,
            "tool_use_id": f"toolu_{uuid.uuid4().hex[:20]}"}


def codex_payload(project: str, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    """Codex 0.171's PreToolUse stdin (``pre-tool-use.command.input``), in a new session."""
    return {"session_id": str(uuid.uuid4()), "turn_id": "turn-1", "transcript_path": None, "cwd": project,
            "hook_event_name": "PreToolUse", "model": "gpt-5", "permission_mode": "default", "tool_name": tool,
            "tool_input": tool_input, "tool_use_id": f"call_{uuid.uuid4().hex[:12]}"}


def cases(project: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(row name, harness, payload) per measured row."""
    def edit(path: str) -> dict[str, Any]:
        return {"file_path": f"{project}/{path}", "old_string": "a = 1", "new_string": "a = 2"}

    return [
        ("claude-code Edit billing/tax/taxly.py (named by many)", "claude-code",
         claude_payload(project, "Edit", edit("billing/tax/taxly.py"))),
        ("claude-code Edit billing/money.py (named by many)", "claude-code",
         claude_payload(project, "Edit", edit("billing/money.py"))),
        ("claude-code Edit src/unrelated/thing.py (named by none)", "claude-code",
         claude_payload(project, "Edit", edit("src/unrelated/thing.py"))),
        ("claude-code Bash `make db-reset`", "claude-code",
         claude_payload(project, "Bash", {"command": "make db-reset"})),
        ("claude-code Bash `pytest -m slow tests/`", "claude-code",
         claude_payload(project, "Bash", {"command": "pytest -m slow tests/"})),
        ("claude-code Bash `git status` (named by none)", "claude-code",
         claude_payload(project, "Bash", {"command": "git status"})),
        ("claude-code Read (no lookup)", "claude-code",
         claude_payload(project, "Read", {"file_path": f"{project}/billing/money.py"})),
        ("codex Bash `make db-reset`", "codex", codex_payload(project, "Bash", {"command": "make db-reset"})),
    ]


def run_process(argv: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, bytes, int]:
    """Start ``argv``, write ``stdin``, read stdout to EOF; return (ms, stdout, exit code)."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, _ = proc.communicate(stdin, timeout=30)
    return (time.perf_counter() - started) * 1000, out, proc.returncode


def measure(rows: list[tuple[str, list[str], dict[str, Any] | None]], env: dict[str, str], runs: int,
            gap_ms: float) -> list[dict[str, Any]]:
    """``runs`` rounds, each running every row's ``argv`` once with its payload (a fresh session id each time), so
    a change in the machine's load touches every row alike; per row: wall ms percentiles, exit codes, how many
    injected, the largest block (characters)."""
    wall: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    codes: dict[str, set[int]] = {name: set() for name, _, _ in rows}
    injected = dict.fromkeys(wall, 0)
    largest = dict.fromkeys(wall, 0)
    for _ in range(runs):
        for name, argv, payload in rows:
            time.sleep(gap_ms / 1000)
            data = json.dumps({**payload, "session_id": str(uuid.uuid4())}).encode() if payload is not None else b""
            ms, out, code = run_process(argv, data, env)
            wall[name].append(ms)
            codes[name].add(code)
            context = injected_context(out)
            injected[name] += bool(context)
            largest[name] = max(largest[name], len(context))
    return [{"case": name, "wall_ms": percentiles(wall[name]), "exit_codes": sorted(codes[name]),
             "injected": injected[name], "largest_block_chars": largest[name]} for name, _, _ in rows]


def sidecar_ms(loc: Locations, project: str, runs: int) -> dict[str, Any]:
    """The sidecar's own ``retrieval_time_ms`` for the lookup rows, posted straight to ``/hooks/<harness>/
    pre-tool-use`` as the hook posts them (the adapter's event, a fresh session each time): percentiles (ms)."""
    from memcue import adapters

    times: list[float] = []
    transport = httpx.HTTPTransport(uds=str(loc.socket))
    with httpx.Client(transport=transport, base_url="http://memcue", timeout=30) as http:
        for _ in range(runs):
            for _name, harness, payload in cases(project):
                event = adapters.get(harness).parse("pre-tool-use", {**payload, "session_id": str(uuid.uuid4())})
                if not event.extra.get("tool_query"):
                    continue
                body = {"event": event.to_dict(), "budget_s": 0.75, "max_tokens": 300, "max_chars": 9500}
                answer = http.post(f"/hooks/{harness}/pre-tool-use", json=body).raise_for_status().json()
                times.append(float(answer["retrieval_time_ms"]))
    return percentiles(times)


def seeded_sidecar(env: dict[str, str], loc: Locations, project: str, total: int) -> dict[str, Any]:
    """Start the sidecar of ``env``, seed ``total`` memories into ``project`` and wait for every vector; its
    health at the end."""
    subprocess.Popen([sys.executable, "-m", "memcue.sidecar"], env=env, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)
    client = Client(loc, timeout_s=600)
    deadline = time.monotonic() + 120
    while not client.is_up():
        if time.monotonic() > deadline:
            raise SystemExit("the sidecar did not start")
        time.sleep(0.1)
    rows = seed_rows(project, random.Random(15), total)
    for start in range(0, len(rows), 200):
        client.remember_batch(rows[start:start + 200])
    client.wait_idle(timeout_s=900)
    health = client.health()
    client.close()
    return health


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown."""
    meta = report["meta"]
    lines = ["# PreToolUse hook: wall time (subprocess, real payload, real sidecar)", "",
             f"- date: {meta['date']}; commit: {meta['git_commit'] or 'n/a'} (dirty: {meta['dirty']}); python "
             f"{meta['python']}; {meta['cpus']} CPUs",
             f"- store: {meta['seeded']} memories in the project ({meta['rows']} rows); {meta['runs']} runs per row "
             f"after {WARMUP_RUNS} warm-up runs, {meta['gap_ms']} ms apart; every run a new session",
             f"- rows run round-robin (one run of each per round), so the machine's load (1/5/15-min load average "
             f"at the end: {', '.join(f'{x:.1f}' for x in report['load_average'])}) touches every row alike; "
             f"added = p50 minus the bare interpreter's",
             f"- the sidecar's own time for a lookup (`retrieval_time_ms`, posted straight to the route): p50 "
             f"{report['sidecar_retrieval_ms']['p50']} ms, p90 {report['sidecar_retrieval_ms']['p90']} ms",
             f"- target p50 <= {TARGET_P50_MS:.0f} ms: **{report['verdict']}** (worst lookup row p50 "
             f"{report['worst_p50_ms']} ms)", "",
             "| case | p50 ms | p90 ms | max ms | added p50 ms | injected | largest block (chars) | exit codes |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for row in report["rows"]:
        w = row["wall_ms"]
        lines.append(f"| {row['case']} | {w['p50']} | {w['p90']} | {w['max']} | {row.get('added_p50_ms', '')} | "
                     f"{row['injected']}/{w['n']} | {row['largest_block_chars']} | {row['exit_codes']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--memories", type=int, default=SEED_TOTAL)
    parser.add_argument("--gap-ms", type=float, default=50.0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mcpt"))
    home, project = root / "h", root / "shop"
    project.mkdir()
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(project)], check=True)
    project_id = str(project.resolve())
    env = {**os.environ, "MEMCUE_HOME": str(home), "OPENBLAS_NUM_THREADS": "1"}
    env.pop("MEMCUE_HOOK_DEBUG", None)
    loc = Locations(home)
    try:
        say(f"seeding {args.memories} memories")
        health = seeded_sidecar(env, loc, project_id, args.memories)
        post = {**claude_payload(project_id, "Bash", {"command": "make db-reset"}), "hook_event_name": "PostToolUse",
                "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False}}
        plan: list[tuple[str, list[str], dict[str, Any] | None]] = [
            (BARE, [sys.executable, "-I", "-S", "-c", "pass"], None),
            (POST, command("claude-code", "post-tool-use", sys.executable), post),
            *((name, command(harness, "pre-tool-use", sys.executable), payload)
              for name, harness, payload in cases(project_id))]
        measure(plan, env, WARMUP_RUNS, args.gap_ms)
        say(f"measuring {len(plan)} rows x {args.runs} rounds")
        rows = measure(plan, env, args.runs, args.gap_ms)
        in_sidecar = sidecar_ms(loc, project_id, 20)
    finally:
        stop_sidecar(env)
        shutil.rmtree(root, ignore_errors=True)
    bare = rows[0]["wall_ms"]["p50"]
    for row in rows[1:]:
        row["added_p50_ms"] = round(row["wall_ms"]["p50"] - bare, 2)
    worst = max(r["wall_ms"]["p50"] for r in rows[2:])
    report = {"meta": {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "git_commit": git_commit(),
                       "dirty": git_dirty(), "python": sys.version.split()[0], "cpus": os.cpu_count(),
                       "seeded": args.memories, "rows": health.get("counts", {}).get("memories"),
                       "runs": args.runs, "gap_ms": args.gap_ms},
              "target_p50_ms": TARGET_P50_MS, "worst_p50_ms": worst, "sidecar_retrieval_ms": in_sidecar,
              "load_average": os.getloadavg(),
              "verdict": "met" if worst <= TARGET_P50_MS else "NOT met", "rows": rows}
    name = "pre_tool_latency" if args.memories == SEED_TOTAL else f"pre_tool_latency_{args.memories}"
    write_results(RESULTS_DIR, name, report, markdown(report))


if __name__ == "__main__":
    main()
