"""What redaction costs the hook (case C25): the spool writer's ``redact_record`` in a fresh ``python -I -S``
process, as a capture hook runs it, import of the rules included, on the records a hook spools.

Run: ``.venv/bin/python benchmarks/redaction_cost.py`` (about 10 s; ``--runs N``, default 15). Each row runs a
fresh interpreter ``--runs`` times; each run imports ``memcue.core.spool_format`` (as the hook has by then), builds
the record, and times ``redact_record`` alone (ms, median and 90th percentile). Whole-hook wall times are in
``tool_hook_latency.py``; on a busy machine they vary by more than this whole cost, which is why it is measured
apart. Writes ``benchmarks/results/redaction_cost.{json,md}``.

Records: a passed test command's tool record (no secret: most calls), one with secrets in its command and key
line, an agent's answer of 1 KB and of 12 KB dense with config shapes (a compose ``environment:`` block, ``curl
-u``, ``--api-key``), and a 300 KB pasted build log as a prompt (pre-cut to 32,000 characters, redacted, cut).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS_DIR, git_commit, git_dirty, write_results  # noqa: E402
from capture_cost import build_log  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

#: The child: builds record ``argv[2]`` (text from file ``argv[3]``) and prints redact_record's time in ms.
CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import json, re  # loaded on the capture path before the spool writer runs
from memcue.core import spool_format
kind, text = sys.argv[2], open(sys.argv[3], encoding="utf-8").read()
if kind.startswith("tool"):
    command, key = text.split("\n", 1)
    rec = spool_format.tool_call({"type": "shell", "tool": "Bash", "command": command, "exit_code": 1,
                                  "failed": True, "key_line": key}, project="/p", session_id="s",
                                 harness="claude-code", turn="t")
else:
    rec = spool_format.remember_prompt(text, project="/p", session_id="s", harness="claude-code",
                                       kind="episode" if kind.startswith("answer") else "request")
started = time.perf_counter()
spool_format.redact_record(rec)
print((time.perf_counter() - started) * 1000)
"""


def dense_answer(chars: int) -> str:
    """An agent's answer of about ``chars`` characters, a config shape or a credential every 400 characters."""
    part = ("I updated docker-compose.yml: the db service now has environment:\n  MYSQL_ROOT_PASSWORD: example\n"
            "  MYSQL_DATABASE: shop\nand the deploy step calls `curl -u ci:" + "cipass99" + " https://ci.example.com/api`"
            " with --api-key " + "K3yK3yK3y" + "; tests pass: 12 passed in 0.4s.\nThe totals parser now accepts '1,5' "
            "as 1.5 and rejects empty strings; see src/shop/totals.py lines 10-40.\n")
    return (part * (chars // len(part) + 1))[:chars]


def records() -> list[tuple[str, str, str]]:
    """(label, kind, text) of each measured record."""
    return [
        ("tool record, passed test command", "tool", "pytest tests/test_x.py\nE   AssertionError: assert 1 == 2"),
        ("tool record with secrets", "tool",
         "PGPASSWORD=" + "Tl29pgPass" + " pytest tests/test_db.py --password " + "Tl28toolPass"
         + "\nE   AssertionError: login failed for password=" + "Tl30keyLine"),
        ("answer, 1 KB with config shapes", "answer", dense_answer(1_000)),
        ("answer, 12 KB dense with config shapes", "answer", dense_answer(12_000)),
        ("prompt, 300 KB pasted build log", "prompt", "this build fails, why?\n" + build_log(300_000)),
    ]


def measure(kind: str, text: str, runs: int, tmp: Path) -> tuple[float, float]:
    """Median and 90th percentile (ms) of ``redact_record`` over ``runs`` fresh processes."""
    path = tmp / "text.txt"
    path.write_text(text, encoding="utf-8")
    times = sorted(float(subprocess.run([sys.executable, "-I", "-S", "-c", CHILD, str(REPO), kind, str(path)],
                                        capture_output=True, text=True, check=True).stdout) for _ in range(runs))
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def main() -> None:
    """Measure every record and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, kind, text in records():
            p50, p90 = measure(kind, text, args.runs, Path(tmp))
            rows.append({"record": label, "chars": len(text), "p50_ms": round(p50, 2), "p90_ms": round(p90, 2)})
    report = {"benchmark": "redaction_cost", "commit": git_commit(), "dirty": git_dirty(), "runs": args.runs,
              "python": sys.version.split()[0], "rows": rows}
    lines = ["# Redaction on the hook path: `redact_record` in a fresh `python -I -S` process", "",
             f"{args.runs} fresh processes per row; the rules' import included, interpreter start-up not.", "",
             "| record | chars | p50 ms | p90 ms |", "|---|---:|---:|---:|"]
    lines += [f"| {r['record']} | {r['chars']:,} | {r['p50_ms']} | {r['p90_ms']} |" for r in rows]
    write_results(RESULTS_DIR, "redaction_cost", report, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
