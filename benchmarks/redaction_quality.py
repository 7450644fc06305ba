"""Redaction quality (issue 16): misses on realistic fake secrets and false positives on ordinary technical
lines, per kind and per split, for ``memcue.core.redaction.redact``.

Run: ``.venv/bin/python benchmarks/redaction_quality.py`` (under a second). Reads
``benchmarks/data/redaction/<split>_{secrets,ordinary}.jsonl`` for every split present; writes
``benchmarks/results/redaction_quality.{json,md}``. ``--split NAME`` runs one split.

Sets: ``*_secrets.jsonl`` rows are ``{"text", "secret", "kind"}`` (a line or short block holding one FAKE
secret; ``secret`` is its exact value as it appears in ``text``; ``kind`` its shape); ``*_ordinary.jsonl`` rows
are ``{"text"}`` (a technical line with no secret). Each test split was written without reading the redactor's
rules or the other splits, measured once held out, and then had its kinds fixed (benchmarks/README.md).

Scoring: a **miss** is a secret whose value, or any 8-character run of it, is still in the redacted text. Runs
that also occur in the text around the secret (a user name, a host) are not counted, nor a leading part of the
secret that the redactor kept right before its marker (a vendor prefix such as ``ghp_`` followed by
``[REDACTED``: it carries no secret material); a secret shorter than 8 characters must be gone whole. A **false
positive** is an ordinary line that comes back changed in any way.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import RESULTS_DIR, git_commit, git_dirty, write_results  # noqa: E402

from memcue.core.redaction import redact  # noqa: E402

DATA_DIR = Path(__file__).resolve().parent / "data" / "redaction"
#: The splits present: every ``<split>_secrets.jsonl``, dev first, then the test splits in the order written.
SPLITS = tuple(sorted((p.name.removesuffix("_secrets.jsonl") for p in DATA_DIR.glob("*_secrets.jsonl")),
                      key=lambda name: (name != "dev", len(name), name)))
WINDOW = 8
MARKER = "[REDACTED"
#: A marker as the redactor writes it; its kind name (``rubygems-token``) is no part of the secret.
MARKED = r"\[REDACTED:[a-z0-9-]+\]"


def load(split: str, name: str) -> list[dict[str, Any]]:
    """The rows of ``<split>_<name>.jsonl`` (name ``secrets`` or ``ordinary``). Raises OSError when the file
    is missing, ValueError on a line that is not JSON."""
    path = DATA_DIR / f"{split}_{name}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def leaked(text: str, secret: str, out: str) -> list[str]:
    """The parts of ``secret`` still in ``out`` (``text`` redacted): the whole value when shorter than
    ``WINDOW``, else every ``WINDOW``-character run found in ``out`` that is neither in ``text`` outside the
    secret nor inside a prefix the redactor kept right before its marker, nor in a marker's kind name. Empty: no
    leak."""
    if len(secret) < WINDOW:
        return [secret] if secret in out else []
    around = text.replace(secret, "\x00")
    kept = 0
    for n in range(len(secret), 0, -1):
        if secret[:n] + MARKER in out:
            kept = n
            break
    out = re.sub(MARKED, "\x00", out)
    runs = []
    for i in range(len(secret) - WINDOW + 1):
        run = secret[i:i + WINDOW]
        if i + WINDOW <= kept or run in around:
            continue
        if run in out:
            runs.append(run)
    return runs


def score_secrets(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kind: ``n`` and ``missed``; overall totals and the missed rows (kind, text, output, leaked runs)."""
    per_kind: dict[str, dict[str, int]] = defaultdict(lambda: {"n": 0, "missed": 0})
    misses = []
    for row in rows:
        out = redact(row["text"]).text
        runs = leaked(row["text"], row["secret"], out)
        stats = per_kind[row["kind"]]
        stats["n"] += 1
        if runs:
            stats["missed"] += 1
            misses.append({"kind": row["kind"], "text": row["text"], "output": out, "leaked": runs[:3]})
    return {"n": len(rows), "missed": len(misses), "kinds": len(per_kind),
            "per_kind": dict(sorted(per_kind.items())), "misses": misses}


def score_ordinary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``n``, ``changed``, ``fp_rate`` (percent, 2 decimals) and the changed lines with their output."""
    changed = []
    for row in rows:
        out = redact(row["text"]).text
        if out != row["text"]:
            changed.append({"text": row["text"], "output": out})
    n = len(rows)
    return {"n": n, "changed": len(changed), "fp_rate": round(100 * len(changed) / n, 2) if n else 0.0,
            "false_positives": changed}


def run_split(split: str) -> dict[str, Any]:
    """Both scores of one split, and whether it meets the targets (0 misses, <= 1% false positives)."""
    secrets, ordinary = score_secrets(load(split, "secrets")), score_ordinary(load(split, "ordinary"))
    return {"secrets": secrets, "ordinary": ordinary,
            "meets_targets": secrets["missed"] == 0 and ordinary["fp_rate"] <= 1.0}


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: a summary table, then per split the misses by kind and the false positives."""
    lines = ["# Redaction quality (issue 16)", "",
             f"commit `{report['commit']}`{' (dirty)' if report['dirty'] else ''}. Targets: 0 misses of listed "
             "kinds, <= 1% false positives.", "",
             "| split | secrets | kinds | missed | ordinary lines | changed | false-positive rate | targets |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for split, res in report["splits"].items():
        s, o = res["secrets"], res["ordinary"]
        lines.append(f"| {split} | {s['n']} | {s['kinds']} | {s['missed']} | {o['n']} | {o['changed']} | "
                     f"{o['fp_rate']}% | {'met' if res['meets_targets'] else 'NOT met'} |")
    for split, res in report["splits"].items():
        lines += ["", f"## {split}", "", "| kind | secrets | missed |", "|---|---:|---:|"]
        lines += [f"| {kind} | {k['n']} | {k['missed']} |" for kind, k in res["secrets"]["per_kind"].items()]
        for miss in res["secrets"]["misses"]:
            lines.append(f"\nMissed ({miss['kind']}): `{json.dumps(miss['output'])[:300]}`")
        for fp in res["ordinary"]["false_positives"]:
            lines.append(f"\nChanged: `{json.dumps(fp['text'])[:200]}` -> `{json.dumps(fp['output'])[:200]}`")
    return "\n".join(lines) + "\n"


def main() -> None:
    """Score the chosen splits, write the results, exit 1 when a split misses its targets."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=SPLITS, action="append", help="one split (repeatable; default every split)")
    args = parser.parse_args()
    splits = {split: run_split(split) for split in (args.split or SPLITS)}
    report = {"commit": git_commit(), "dirty": git_dirty(), "splits": splits}
    write_results(RESULTS_DIR, "redaction_quality", report, markdown(report), ensure_ascii=False)
    sys.exit(0 if all(res["meets_targets"] for res in splits.values()) else 1)


if __name__ == "__main__":
    main()
