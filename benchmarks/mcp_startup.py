"""How long memcue's MCP server takes to offer its tools: ``python -m memcue mcp`` started as a harness starts it
(stdio), timed from the spawn to its answers to ``initialize`` and ``tools/list``.

Run: ``.venv/bin/python benchmarks/mcp_startup.py`` (about a minute; ``--runs N``, default 10). Codex gives an
optional MCP server about 1 s (its ``mcp_optional_startup_grace_ms``) before a turn starts without that server's
tools, so this is the number that decides whether the agent can save in a Codex session's first turn. Three
cases, runs alternating: a first start with no handshake cache (``mcp.early``: it answers once the SDK is
imported, and teaches the cache), then, with the cache, the sidecar already running (the common case: it stays up
two idle hours) and not running (the server starts it in the background once its SDK is imported).
Writes ``benchmarks/results/mcp_startup.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS_DIR, git_commit, git_dirty, percentiles, say, stop_sidecar, write_results  # noqa: E402

from memcue.mcp.early import CACHE_NAME  # noqa: E402

#: Codex's grace for an optional MCP server (ms): ``mcp_optional_startup_grace_ms``, default 1,000 in Codex 0.171.
CODEX_GRACE_MS = 1000
#: The case of a start with no handshake cache (``mcp.early``): the first after an install or upgrade that did not
#: start the server, which answers only once the SDK is imported.
FIRST = "first start, no handshake cache (sidecar running)"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "mcp_startup", "version": "1"}}}


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def one_start(env: dict[str, str], wait_for_cache: Path | None = None) -> tuple[float, float]:
    """Spawn the server, ask ``initialize`` then ``tools/list``; returns the ms from the spawn to each answer.
    With ``wait_for_cache``, the server is stopped only once that handshake cache file is written (at most 10 s).
    Raises RuntimeError when the server answers neither."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "memcue", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, cwd=tempfile.gettempdir())
    try:
        assert proc.stdout is not None
        _send(proc, INITIALIZE)
        if not proc.stdout.readline():
            raise RuntimeError("the MCP server closed without answering initialize")
        initialized = time.perf_counter()
        _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        if not proc.stdout.readline():
            raise RuntimeError("the MCP server closed without answering tools/list")
        listed = time.perf_counter()
        while wait_for_cache is not None and not wait_for_cache.exists() and time.perf_counter() - listed < 10:
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait(timeout=10)
    return (initialized - started) * 1000, (listed - started) * 1000


def measure(runs: int) -> dict[str, Any]:
    """``runs`` starts per case, alternating; per case the percentiles of both answers (ms) and how many runs
    listed the tools within ``CODEX_GRACE_MS``."""
    times: dict[str, list[tuple[float, float]]] = {FIRST: [], "sidecar running": [], "sidecar not running": []}
    with tempfile.TemporaryDirectory(prefix="memcue-mcp-") as home:
        env = {**os.environ, "MEMCUE_HOME": home, "OPENBLAS_NUM_THREADS": "1"}
        for i in range(runs):
            say(f"run {i + 1}/{runs}")
            subprocess.run([sys.executable, "-m", "memcue", "list", "--json"], env=env, capture_output=True,
                           check=False, timeout=120)  # starts the sidecar and waits for it, as any command does
            Path(home, CACHE_NAME).unlink(missing_ok=True)
            times[FIRST].append(one_start(env, wait_for_cache=Path(home, CACHE_NAME)))
            times["sidecar running"].append(one_start(env))
            stop_sidecar(env)
            times["sidecar not running"].append(one_start(env))
            time.sleep(2)  # a sidecar the server began to start comes up (or not) before it is stopped
            stop_sidecar(env)
    return {case: {"initialize_ms": percentiles([t[0] for t in rows]),
                   "tools_list_ms": percentiles([t[1] for t in rows]),
                   "within_grace": sum(1 for t in rows if t[1] <= CODEX_GRACE_MS), "runs": len(rows)}
            for case, rows in times.items()}


def main() -> None:
    """Run the benchmark and write its results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="starts per case (default 10)")
    args = parser.parse_args()
    cases = measure(args.runs)
    report = {"benchmark": "mcp_startup", "commit": git_commit(), "dirty": git_dirty(), "runs": args.runs,
              "codex_grace_ms": CODEX_GRACE_MS, "cases": cases}
    lines = ["# memcue's MCP server: spawn to tools listed", "",
             f"{args.runs} starts per case; Codex waits {CODEX_GRACE_MS} ms for an optional server.", "",
             "| case | initialize p50 / p90 ms | tools/list p50 / p90 ms | within Codex's grace |",
             "|---|---:|---:|---:|"]
    for case, row in cases.items():
        init, listed = row["initialize_ms"], row["tools_list_ms"]
        lines.append(f"| {case} | {init['p50']:.0f} / {init['p90']:.0f} | {listed['p50']:.0f} / {listed['p90']:.0f} | "
                     f"{row['within_grace']}/{row['runs']} |")
    write_results(RESULTS_DIR, "mcp_startup", report, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
