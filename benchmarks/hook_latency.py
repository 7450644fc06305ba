"""Latency of the Claude Code UserPromptSubmit hook, measured the way the harness sees it.

Steps: a fresh temporary ``MEMCUE_HOME`` and project folder (a git repo when git is installed; its
realpath is the project); start the sidecar; seed 1,000 memories into that project (the demo's
``seed.jsonl`` plus generated variants in the same style); wait until every memory has its vector;
run the hook 5 times to warm up; then run the hook as the installer writes it
(``python -I -S <memcue>/hooks/launch.py claude-code user-prompt-submit``, ``memcue.hooks.command``) as a
subprocess ``--runs`` times (default 100) with real UserPromptSubmit payloads and varied prompts,
timing each from just before the process is started until its output is complete.

For comparison it also measures:

- the bare interpreter start-up (``python -c pass``);
- the hook with an empty prompt (start-up, imports and payload parsing; no sidecar call);
- the sidecar side: the same prompts sent straight to ``POST /hooks/claude-code/user-prompt-submit``
  over the unix socket, reporting the sidecar's own ``retrieval_time_ms`` and the round trip;
- the in-process time the hook logs itself (``MEMCUE_HOOK_DEBUG``), from its first line to its output.

Results: ``benchmarks/results/hook_latency.json`` and ``.md``. The project's target is hook p50 <= 60 ms.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from _common import RESULTS_DIR, git_commit, injected_context, percentiles, say, stop_sidecar, write_results
from hook_corpus import SEED_TOTAL, payload, prompts, seed_rows

from memcue.client import Client
from memcue.core.paths import Locations
from memcue.hooks import command

TARGET_P50_MS = 60.0
WARMUP_RUNS = 5
#: The hook as the installer writes it (``memcue.hooks.command``), minus the interpreter.
HOOK_ARGS = command("claude-code", "user-prompt-submit")[1:]
#: The body fields the hook itself sends with every prompt (see memcue/hooks/run.py).
HOOK_BUDGET = {"budget_s": 2.25, "max_tokens": 600, "max_chars": 9500}


@dataclass
class HookRuns:
    """The measured hook runs: wall times (ms) and pids in run order, exit codes, how many injected
    context, and one record per run for the report."""

    wall: list[float] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    codes: Counter[int] = field(default_factory=Counter)
    injected: int = 0
    per_run: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class SidecarRuns:
    """The direct sidecar posts: ``retrieval_time_ms`` and client round trips (ms), answered_by and tiers."""

    retrieval: list[float] = field(default_factory=list)
    round_trip: list[float] = field(default_factory=list)
    answered_by: Counter[str] = field(default_factory=Counter)
    tiers: Counter[str] = field(default_factory=Counter)


# -- measuring -------------------------------------------------------------------------------------


def run_process(argv: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, bytes, int, int]:
    """Start ``argv``, write ``stdin``, read stdout to EOF; return (ms, stdout, exit code, pid)."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, _ = proc.communicate(stdin, timeout=30)
    return (time.perf_counter() - started) * 1000, out, proc.returncode, proc.pid


def hook_log_times(loc: Locations) -> dict[int, float]:
    """pid -> the in-process time the hook logged ("done in X ms"), from ``MEMCUE_HOOK_DEBUG`` lines."""
    out: dict[int, float] = {}
    for path in (loc.hook_log.with_name(loc.hook_log.name + ".1"), loc.hook_log):
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            m = re.search(r"pid=(\d+) .*done in ([\d.]+) ms", line)
            if m:
                out[int(m.group(1))] = float(m.group(2))
    return out



def hook_stdin(prompt: str, project: str, session_id: str) -> bytes:
    """The hook's stdin for ``prompt``: the UserPromptSubmit payload as JSON bytes."""
    return json.dumps(payload(prompt, project, session_id)).encode()


def time_hook(texts: list[str], project: str, session_id: str, env: dict[str, str], gap_ms: float) -> HookRuns:
    """Run the hook once per prompt, pausing ``gap_ms`` (ms) before each, and time every run."""
    runs = HookRuns()
    for i, prompt in enumerate(texts, start=1):
        time.sleep(gap_ms / 1000)
        ms, out, code, pid = run_process([sys.executable, *HOOK_ARGS], hook_stdin(prompt, project, session_id), env)
        runs.wall.append(ms)
        runs.pids.append(pid)
        runs.codes[code] += 1
        context = injected_context(out)
        runs.injected += bool(context)
        runs.per_run.append({"prompt": prompt, "wall_ms": round(ms, 2), "exit_code": code,
                             "injected_chars": len(context)})
        if i % 25 == 0:
            say(f"hook: {i}/{len(texts)} runs, p50 so far {percentiles(runs.wall)['p50']} ms")
    return runs


def time_empty_prompt(runs: int, project: str, session_id: str, env: dict[str, str], gap_ms: float) -> list[float]:
    """Wall times (ms) of ``runs`` hook runs with an empty prompt, pausing ``gap_ms`` (ms) before each."""
    out = []
    for _ in range(runs):
        time.sleep(gap_ms / 1000)
        out.append(run_process([sys.executable, *HOOK_ARGS], hook_stdin("", project, session_id), env)[0])
    return out


def hook_event(prompt: str, project: str, session_id: str) -> dict[str, Any]:
    """The ``POST /hooks/claude-code/user-prompt-submit`` body the hook sends (its budget fields included)."""
    event = {"harness": "claude-code", "event": "user-prompt-submit", "session_id": session_id, "cwd": project,
             "project": project, "prompt": prompt, "source": "", "transcript_path": "", "extra": {}}
    return {"event": event, **HOOK_BUDGET}


def post_hook_prompt(http: httpx.Client, prompt: str, project: str, session_id: str) -> tuple[float, dict[str, Any]]:
    """Post ``prompt`` as the hook would, straight to the sidecar: (client round trip in ms, answer body).
    Raises ``httpx.HTTPStatusError`` on a non-2xx answer."""
    t0 = time.perf_counter()
    response = http.post("/hooks/claude-code/user-prompt-submit", json=hook_event(prompt, project, session_id))
    round_trip = (time.perf_counter() - t0) * 1000
    response.raise_for_status()
    return round_trip, response.json()


def time_sidecar(loc: Locations, texts: list[str], project: str, session_id: str, gap_ms: float) -> SidecarRuns:
    """Post each prompt straight to ``/hooks/claude-code/user-prompt-submit`` over the unix socket, pausing
    ``gap_ms`` (ms) before each, with the hook's own budget fields."""
    runs = SidecarRuns()
    transport = httpx.HTTPTransport(uds=str(loc.socket))
    with httpx.Client(transport=transport, base_url="http://memcue", timeout=30) as http:
        for prompt in texts:
            time.sleep(gap_ms / 1000)
            round_trip, body = post_hook_prompt(http, prompt, project, session_id)
            runs.round_trip.append(round_trip)
            runs.retrieval.append(float(body["retrieval_time_ms"]))
            runs.answered_by[body["answered_by"]] += 1
            runs.tiers[body["tier"]] += 1
    return runs


# -- report ----------------------------------------------------------------------------------------


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown."""
    meta = report["meta"]
    hook = report["hook"]["wall_ms"]
    verdict = "met" if hook["p50"] is not None and hook["p50"] <= TARGET_P50_MS else "NOT met"
    rows = [
        ("hook, wall time (process start to output)", hook),
        ("hook, in-process (its own log: first line to output)", report["hook"]["in_process_ms"]),
        ("hook, empty prompt (start-up + imports + parse, no sidecar call)", report["empty_prompt_ms"]),
        ("`python -c pass` (bare interpreter start-up)", report["python_startup_ms"]),
        ("sidecar, `retrieval_time_ms` of POST /hooks/claude-code/user-prompt-submit",
         report["sidecar"]["retrieval_time_ms"]),
        ("sidecar, client round trip of that POST (httpx, unix socket)", report["sidecar"]["round_trip_ms"]),
    ]
    lines = [
        "# Hook latency (Claude Code UserPromptSubmit)",
        "",
        f"- date: {meta['date']}; commit: {meta['git_commit'] or 'n/a'}; python {meta['python']}; "
        f"{meta['cpus']} CPUs; model {meta['model_id']}",
        f"- store: {meta['seeded']} memories seeded in the project ({meta['counts'].get('memories', '?')} rows at "
        f"the end, captured prompts included); {meta['warmup_runs']} warm-up runs, then {meta['runs']} measured "
        f"runs with a {meta['gap_ms']} ms pause between them",
        f"- target hook p50 <= {TARGET_P50_MS:.0f} ms: **{verdict}** (p50 {hook['p50']} ms)",
        f"- context injected on {report['hook']['injected']}/{meta['runs']} prompts; exit codes "
        f"{report['hook']['exit_codes']}; sidecar answered_by {report['sidecar']['answered_by']}, "
        f"tiers {report['sidecar']['tiers']}",
        "",
        "| measurement | n | p50 ms | p90 ms | p99 ms | max ms | mean ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, s in rows:
        lines.append(f"| {name} | {s['n']} | {s['p50']} | {s['p90']} | {s['p99']} | {s['max']} | {s['mean']} |")
    lines.append("")
    return "\n".join(lines)



# -- main ------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; write ``hook_latency.json`` and ``.md`` to ``--out``. Returns the exit code.
    Longer than 60 lines: its options, then the run's steps in the order they happen."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100, help="measured hook runs (default 100)")
    parser.add_argument("--gap-ms", type=float, default=100.0,
                        help="pause between runs, as between a user's prompts (default 100 ms)")
    parser.add_argument("--startup-runs", type=int, default=30, help="runs of `python -c pass` (default 30)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR,
                        help="results folder (default benchmarks/results)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (sidecar stopped)")
    parser.add_argument("--memories", type=int, default=SEED_TOTAL,
                        help=f"memories in the store (default {SEED_TOTAL}); results go to hook_latency_<N>.* "
                             "when not the default")
    args = parser.parse_args(argv)

    rng = random.Random(20240607)
    root = Path(tempfile.mkdtemp(prefix="memcue-hookbench-"))
    project_dir = root / "work" / "billing-api"
    project_dir.mkdir(parents=True)
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(project_dir)], check=False, capture_output=True)
    project = os.path.realpath(project_dir)
    env = {**os.environ, "MEMCUE_HOME": str(root / "data"), "OPENBLAS_NUM_THREADS": "1", "MEMCUE_HOOK_DEBUG": "1"}
    os.environ["MEMCUE_HOME"] = env["MEMCUE_HOME"]
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    loc = Locations(Path(env["MEMCUE_HOME"]))
    client = Client(loc)
    session_id = str(uuid.uuid4())
    texts = prompts(args.runs, rng)
    started = time.time()
    try:
        health = client.ensure_running()
        say(f"sidecar {health['version']} up (pid {health['pid']}) in {root}")
        rows = seed_rows(project, rng, args.memories)
        for start in range(0, len(rows), 5000):
            client.remember_batch(rows[start:start + 5000])
        t0 = time.monotonic()
        health = client.wait_idle(timeout_s=900)
        say(f"seeded {len(rows)} memories, vectors ready in {time.monotonic() - t0:.1f} s "
            f"(model {health['model']['id']}: {health['model']['state']})")
        for prompt in texts[:WARMUP_RUNS]:
            run_process([sys.executable, *HOOK_ARGS], hook_stdin(prompt, project, session_id), env)
        client.wait_idle(timeout_s=60)

        hook = time_hook(texts, project, session_id, env, args.gap_ms)
        logged = hook_log_times(loc)
        in_process = [logged[p] for p in hook.pids if p in logged]
        for record, pid in zip(hook.per_run, hook.pids, strict=True):
            record["in_process_ms"] = logged.get(pid)

        empty = time_empty_prompt(args.startup_runs, project, session_id, env, args.gap_ms)
        bare = [run_process([sys.executable, "-c", "pass"], b"", env)[0] for _ in range(args.startup_runs)]
        sidecar = time_sidecar(loc, texts, project, session_id, args.gap_ms)
        final = client.health()
    finally:
        client.close()
        stop_sidecar(env)

    report: dict[str, Any] = {
        "meta": {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "git_commit": git_commit(),
                 "python": sys.version.split()[0], "executable": sys.executable, "cpus": os.cpu_count(),
                 "model_id": final["model"]["id"], "seeded": len(rows), "counts": final["counts"],
                 "warmup_runs": WARMUP_RUNS, "runs": len(texts), "gap_ms": args.gap_ms,
                 "target_p50_ms": TARGET_P50_MS, "wall_s": round(time.time() - started, 1)},
        "hook": {"wall_ms": percentiles(hook.wall), "in_process_ms": percentiles(in_process),
                 "injected": hook.injected, "exit_codes": dict(hook.codes), "per_run": hook.per_run},
        "empty_prompt_ms": percentiles(empty),
        "python_startup_ms": percentiles(bare),
        "sidecar": {"retrieval_time_ms": percentiles(sidecar.retrieval),
                    "round_trip_ms": percentiles(sidecar.round_trip),
                    "answered_by": dict(sidecar.answered_by), "tiers": dict(sidecar.tiers)},
    }
    report["target_met"] = bool(report["hook"]["wall_ms"]["p50"] is not None
                                and report["hook"]["wall_ms"]["p50"] <= TARGET_P50_MS)
    if args.keep:
        say(f"kept {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    name = "hook_latency" if args.memories == SEED_TOTAL else f"hook_latency_{args.memories}"
    write_results(args.out, name, report, markdown(report), ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
