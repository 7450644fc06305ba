"""How often an idle sidecar wakes up: a laptop's battery pays for every wakeup of a process that runs all day.

Run: ``.venv/bin/python benchmarks/idle_wakeups.py`` (about a minute; ``--seconds N`` per measurement, default
20; ``--runs N``, default 3). A sidecar is started on a fresh data folder with the real embedding model and a
Claude Code memory folder to watch, left to settle (model loaded, start-up work done), then its threads'
context switches (``/proc/<pid>/task/*/status``: voluntary and involuntary) are counted over the window, and its
CPU time (``/proc/<pid>/stat`` utime + stime) with them. Linux only. Writes
``benchmarks/results/idle_wakeups.{json,md}``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS_DIR, git_commit, git_dirty, say, stop_sidecar, write_results  # noqa: E402

#: Seconds the started sidecar is left alone before counting (model load and start-up syncs are done by then).
SETTLE_S = 15.0


def _switches(pid: int) -> dict[str, int]:
    """Context switches so far per thread of ``pid``, keyed ``<tid> <thread name>``."""
    out: dict[str, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            status = (task / "status").read_text()
            name = (task / "comm").read_text().strip()
        except OSError:
            continue  # the thread ended meanwhile
        total = sum(int(line.split()[1]) for line in status.splitlines() if "ctxt_switches" in line)
        out[f"{task.name} {name}"] = total
    return out


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds ``pid`` has used (``/proc/<pid>/stat`` fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(seconds: float) -> dict[str, Any]:
    """One idle sidecar's wakeups per second (all threads, and the three busiest) and CPU share (%) over
    ``seconds``; raises ``RuntimeError`` when it does not start."""
    home = Path(tempfile.mkdtemp(prefix="memcue-idle-"))
    native = home / "native-home"
    (native / ".claude").mkdir(parents=True)
    env = {**os.environ, "MEMCUE_HOME": str(home / "data"), "MEMCUE_NATIVE_HOME": str(native),
           "OPENBLAS_NUM_THREADS": "1"}
    try:
        started = subprocess.run([sys.executable, "-m", "memcue", "stats", "--json"], env=env, capture_output=True,
                                 check=False, timeout=120)
        pid_file = home / "data" / "sidecar.pid"
        if started.returncode != 0 or not pid_file.exists():
            raise RuntimeError(f"the sidecar did not start: {started.stderr.decode(errors='replace')[-400:]}")
        pid = int(pid_file.read_text().split()[0])
        time.sleep(SETTLE_S)
        before, cpu_before, t0 = _switches(pid), _cpu_s(pid), time.monotonic()
        time.sleep(seconds)
        after, cpu_after, elapsed = _switches(pid), _cpu_s(pid), time.monotonic() - t0
    finally:
        stop_sidecar(env)
    per_thread = {k: (after[k] - before.get(k, 0)) / elapsed for k in after}
    busiest = sorted(per_thread.items(), key=lambda kv: -kv[1])[:3]
    return {"wakeups_per_s": round(sum(per_thread.values()), 1),
            "busiest_threads": [{"thread": k, "wakeups_per_s": round(v, 1)} for k, v in busiest],
            "cpu_percent": round(100 * (cpu_after - cpu_before) / elapsed, 2), "seconds": round(elapsed, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of one measurement (s; default 20)")
    parser.add_argument("--runs", type=int, default=3, help="sidecars measured one after another (default 3)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder for the results")
    args = parser.parse_args(argv)
    if not Path("/proc/self/task").is_dir():
        parser.error("needs Linux's /proc")
    runs = []
    for i in range(args.runs):
        say(f"run {i + 1}/{args.runs}: starting a sidecar, {SETTLE_S:g} s to settle, {args.seconds:g} s counted")
        runs.append(measure(args.seconds))
    rates = sorted(r["wakeups_per_s"] for r in runs)
    report = {"benchmark": "idle_wakeups", "commit": git_commit(), "dirty": git_dirty(), "runs": runs,
              "median_wakeups_per_s": rates[len(rates) // 2],
              "median_cpu_percent": sorted(r["cpu_percent"] for r in runs)[len(runs) // 2]}
    lines = ["# Idle sidecar wakeups", "", f"commit {report['commit']}; {args.runs} sidecars, each counted "
             f"{args.seconds:g} s after {SETTLE_S:g} s to settle (real model, a watched Claude Code folder).", "",
             f"Median: **{report['median_wakeups_per_s']} wakeups/s**, {report['median_cpu_percent']}% of a core.",
             "", "| run | wakeups/s | CPU % | busiest threads (wakeups/s) |", "|---|---:|---:|---|"]
    for i, r in enumerate(runs, 1):
        busy = ", ".join(f"{t['thread']} {t['wakeups_per_s']}" for t in r["busiest_threads"])
        lines.append(f"| {i} | {r['wakeups_per_s']} | {r['cpu_percent']} | {busy} |")
    write_results(args.out, "idle_wakeups", report, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
