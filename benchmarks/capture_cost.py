"""Capture cost of a huge paste (issue 13, case C22): how long entity extraction and a whole captured-prompt
write take for a pasted build log of 10 KB, 100 KB and 300 KB, and how long the store's writer lock is held.

Run: ``.venv/bin/python benchmarks/capture_cost.py`` (about a minute; in process, a fresh temporary SQLite
store, no sidecar). Writes ``benchmarks/results/capture_cost.{json,md}``.

Three numbers per size, each the median of ``--repeats`` runs in ms:
- ``extract_ms``: ``extract_entities`` on the whole text (the work that grew quadratically);
- ``write_ms``: ``Store.remember`` of the text as a captured prompt (kind ``request``), everything included;
- ``lock_ms``: time the writer lock was held during that write (what a second writer waits for);
- ``spool_ms``: the hook's spool writer on the same text as a captured prompt (``spool_format.remember_prompt``
  then ``hooks.spool.append``: the cut, the redaction of every text field, the JSON line, the fsynced append),
  what a prompt hook spends when the sidecar cannot take the paste.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS_DIR, git_commit, git_dirty, say, write_results  # noqa: E402

from memcue.core import spool_format  # noqa: E402
from memcue.hooks import spool  # noqa: E402
from memcue.sidecar.store import NewMemory, Store, extract_entities  # noqa: E402

#: Paste sizes measured (characters).
SIZES = (10_000, 100_000, 300_000)


def build_log(chars: int, seed: int = 13) -> str:
    """A CI build log of about ``chars`` characters: timestamps, host names, job ids, paths, versions,
    CamelCase test names and hex ids, one event per line (deterministic for a ``seed``)."""
    rng = random.Random(seed)
    lines: list[str] = []
    total = 0
    while total < chars:
        n = len(lines)
        line = (f"2026-11-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:{(n * 7) % 60:02d}.{n % 1000:03d}Z "
                f"[worker-{rng.randrange(9999):04d}.ci-{rng.choice('abcdef')}.build.example.net] "
                f"job JOB-{rng.randrange(1, 999999)} step:{n % 9} "
                f"{rng.choice(['INFO', 'WARN', 'ERROR', 'DEBUG'])} "
                f"src/pkg_{rng.randrange(300)}/module_{rng.randrange(50)}.py "
                f"TestCase{rng.randrange(500)}Runner passed in {rng.random() * 9:.3f}s "
                f"commit {rng.getrandbits(40):010x} python 3.{rng.randrange(8, 13)} v1.{n % 40}.{n % 7}")
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)[:chars]


class _TimedLock:
    """Wraps a ``threading.Lock`` and adds up how long it was held (s)."""

    def __init__(self, lock: Any) -> None:
        self._lock, self.held, self._since = lock, 0.0, 0.0

    def __enter__(self) -> None:
        self._lock.acquire()
        self._since = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.held += time.perf_counter() - self._since
        self._lock.release()


def measure(size: int, repeats: int, store: Store, spool_dir: Path) -> dict[str, Any]:
    """Median ``extract_ms``, ``write_ms``, ``lock_ms`` and ``spool_ms`` (see the module docstring) for a
    ``size`` paste, and the stored row's length."""
    text = build_log(size)
    extract, write, held, spooled, stored = [], [], [], [], 0
    db = store._db  # the benchmark looks inside on purpose: the lock is not public
    for i in range(repeats):
        t = time.perf_counter()
        extract_entities(text)
        extract.append((time.perf_counter() - t) * 1000)
        timed = _TimedLock(threading.Lock())
        db.write_lock = timed
        t = time.perf_counter()
        res = store.remember(NewMemory(content=f"{i} {text}", kind="request", project="bench"))
        write.append((time.perf_counter() - t) * 1000)
        held.append(timed.held * 1000)
        stored = len(store.fetch([res.id])[res.id]["content"])
        t = time.perf_counter()
        record = spool_format.remember_prompt(f"{i} {text}", project="bench", session_id="s", harness="claude-code")
        spool.append(record, spool_dir / f"bench-{size}.jsonl")
        spooled.append((time.perf_counter() - t) * 1000)
    return {"chars": size, "extract_ms": round(statistics.median(extract), 1),
            "write_ms": round(statistics.median(write), 1), "lock_ms": round(statistics.median(held), 1),
            "spool_ms": round(statistics.median(spooled), 1), "stored_chars": stored}


def _markdown(rows: list[dict[str, Any]]) -> str:
    out = ["# Capture cost of a pasted build log (case C22)", "",
           "| paste (chars) | extract_entities ms | captured-prompt write ms | writer lock held ms | hook spool ms "
           "| stored chars |",
           "|---:|---:|---:|---:|---:|---:|"]
    out += [f"| {r['chars']:,} | {r['extract_ms']} | {r['write_ms']} | {r['lock_ms']} | {r['spool_ms']} "
            f"| {r['stored_chars']:,} |" for r in rows]
    return "\n".join(out) + "\n"


def main() -> None:
    """Measure every size in ``SIZES`` and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.db", want_vec=False)
        for size in SIZES:
            say(f"{size:,} characters ...")
            rows.append(measure(size, args.repeats, store, Path(tmp) / "spool"))
        store.close()
    report = {"benchmark": "capture_cost", "commit": git_commit(), "dirty": git_dirty(), "sizes": rows}
    write_results(args.out, "capture_cost", report, _markdown(rows))


if __name__ == "__main__":
    main()
