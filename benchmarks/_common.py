"""What the benchmark scripts share: paths, progress lines, the git commit, percentiles, writing results
and stopping the sidecar.

The scripts run as files (``python benchmarks/<name>.py``), so this module is imported as ``_common``
with the ``benchmarks`` folder on ``sys.path``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "benchmarks" / "results"


def say(message: str) -> None:
    """Write one progress line to stderr (flushed at once; stdout is kept for the results)."""
    print(message, file=sys.stderr, flush=True)


def _git(*args: str) -> str | None:
    """stdout of ``git -C REPO <args>``, or None when git is missing, fails or takes over 10 s."""
    try:
        out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=10,
                             check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def git_commit() -> str | None:
    """The repository's ``HEAD`` commit hash, or None when git is unavailable."""
    out = _git("rev-parse", "HEAD")
    return (out or "").strip() or None


def git_dirty() -> bool | None:
    """True when the working tree has uncommitted changes; None when git is unavailable."""
    out = _git("status", "--porcelain")
    return None if out is None else bool(out.strip())


def _quantile(ordered: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of already sorted, non-empty values by linear interpolation, rounded to
    2 decimals (in the values' unit, e.g. ms)."""
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return round(ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo), 2)


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) of ``values`` (e.g. times in ms) by linear interpolation, rounded to
    2 decimals; None for no values."""
    if not values:
        return None
    return _quantile(sorted(values), q)


def percentiles(values: list[float]) -> dict[str, float | int | None]:
    """n, p50, p90, p99, max and mean of ``values`` (times in ms; linear interpolation, rounded to
    2 decimals). All but n are None for no values."""
    if not values:
        return {"n": 0, "p50": None, "p90": None, "p99": None, "max": None, "mean": None}
    ordered = sorted(values)
    return {"n": len(ordered), "p50": _quantile(ordered, 0.5), "p90": _quantile(ordered, 0.9),
            "p99": _quantile(ordered, 0.99), "max": round(ordered[-1], 2),
            "mean": round(sum(ordered) / len(ordered), 2)}


def write_results(out_dir: Path, name: str, report: dict[str, Any], markdown_text: str, *,
                  ensure_ascii: bool = True) -> None:
    """Write ``<out_dir>/<name>.json`` (the report, indented) and ``<name>.md`` (``markdown_text``),
    creating ``out_dir``; then print the Markdown on stdout and say where the files went.
    ``ensure_ascii`` is passed to ``json.dumps``."""
    json_path, md_path = out_dir / f"{name}.json", out_dir / f"{name}.md"
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(report, indent=2, ensure_ascii=ensure_ascii) + "\n", encoding="utf-8")
    md_path.write_text(markdown_text, encoding="utf-8")
    print(markdown_text)
    say(f"wrote {json_path} and {md_path}")


def stop_sidecar(env: dict[str, str]) -> None:
    """Stop the sidecar that ``env`` (its ``MEMCUE_HOME``) points at; waits at most 60 s, never raises
    on a non-zero exit."""
    subprocess.run([sys.executable, "-m", "memcue", "stop"], env=env, capture_output=True, check=False,
                   timeout=60)


def injected_context(stdout: bytes) -> str:
    """The ``additionalContext`` a UserPromptSubmit hook printed ("" for none or unparsable output)."""
    if not stdout.strip():
        return ""
    try:
        return str(json.loads(stdout)["hookSpecificOutput"]["additionalContext"])
    except (ValueError, KeyError, TypeError):
        return ""
