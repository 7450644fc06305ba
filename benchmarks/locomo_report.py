"""Scoring and reporting for the LoCoMo recall benchmark: recall@k and MRR per question category,
retrieval times and answer shape per run, abstention on adversarial questions, what the evidence floor
and tier gate hid, and the Markdown tables of the report.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from typing import Any

from _common import percentile
from locomo_data import ANSWERABLE, CATEGORIES, Question

#: Results asked for per question; recall@k is computed for k in ``KS`` (each <= LIMIT).
LIMIT = 10
KS = (5, 10)


# -- metrics ---------------------------------------------------------------------------------------


def score(ranked: list[str], gold: list[str]) -> dict[str, float]:
    """recall@k for each k in ``KS`` (share of gold turns in the top k) and the reciprocal rank."""
    gold_set = set(gold)
    out = {f"recall@{k}": len(gold_set & set(ranked[:k])) / len(gold_set) for k in KS}
    out["rr"] = next((1.0 / rank for rank, d in enumerate(ranked, start=1) if d in gold_set), 0.0)
    return out


def summarise(rows: list[dict[str, float]]) -> dict[str, Any]:
    """Mean recall@k and MRR over per-question scores."""
    if not rows:
        return {"n": 0}
    out: dict[str, Any] = {"n": len(rows)}
    for k in KS:
        out[f"recall@{k}"] = round(statistics.fmean(r[f"recall@{k}"] for r in rows), 4)
    out["mrr"] = round(statistics.fmean(r["rr"] for r in rows), 4)
    return out


def by_category(questions: list[Question], scores: list[dict[str, float]]) -> dict[str, Any]:
    """``summarise`` per category name and ``overall``."""
    out = {}
    for cat in ANSWERABLE:
        rows = [s for q, s in zip(questions, scores, strict=True) if q.category == cat]
        out[CATEGORIES[cat]] = summarise(rows)
    out["overall"] = summarise(scores)
    return out



def run_stats(answers: list[dict[str, Any]], answerable: list[dict[str, Any]]) -> dict[str, Any]:
    """Times (ms: p50/p90 of the sidecar's ``retrieval_time_ms`` and the client round trip, over all
    ``answers``) and answer shape (mean results, tiers, channel status, over the ``answerable`` ones)
    of one run."""
    return {
        "retrieval_ms_p50": percentile([a["retrieval_ms"] for a in answers], 0.5),
        "retrieval_ms_p90": percentile([a["retrieval_ms"] for a in answers], 0.9),
        "round_trip_ms_p50": percentile([a["round_trip_ms"] for a in answers], 0.5),
        "round_trip_ms_p90": percentile([a["round_trip_ms"] for a in answers], 0.9),
        "mean_results": round(statistics.fmean(a["n"] for a in answerable), 2) if answerable else None,
        "tiers": dict(Counter(a["tier"] for a in answerable)),
        "channel_status": {ch: dict(Counter(a["channel_status"].get(ch, "-") for a in answerable))
                           for ch in ("semantic", "bm25")},
    }


def abstention(answers: list[dict[str, Any]]) -> dict[str, Any]:
    """Tier shares for adversarial questions: abstained = tier none or related."""
    tiers = Counter(a["tier"] for a in answers)
    n = len(answers)
    return {"n": n, "tiers": dict(tiers),
            "abstained": round((tiers["none"] + tiers["related"]) / n, 4) if n else None,
            "supported": round(tiers["supported"] / n, 4) if n else None}


def gate_effects(
    gated: list[dict[str, Any]], ranked: list[list[str]], gold: list[list[str]]
) -> dict[str, Any]:
    """How often the floor/tier gate hid a gold turn that the ungated top 10 had."""
    hid = hidden_turns = 0
    for answer, ungated_top, g in zip(gated, ranked, gold, strict=True):
        lost = (set(ungated_top[:LIMIT]) & set(g)) - set(answer["ranked"])
        if lost:
            hid += 1
            hidden_turns += len(lost)
    n = len(gated)
    return {"questions_with_hidden_gold": hid, "share": round(hid / n, 4) if n else None,
            "gold_turns_hidden": hidden_turns}



# -- Markdown --------------------------------------------------------------------------------------


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown tables (times in ms, embedding time in s)."""
    meta = report["meta"]
    lines = [
        "# LoCoMo recall (memcue)",
        "",
        f"- date: {meta['date']}; commit: {meta['git_commit'] or 'n/a'}; model: {meta['model_id']}",
        f"- store: {meta['store']['memories']} memories from {meta['conversations']} conversations "
        f"({meta['store']['db_bytes'] / 1e6:.1f} MB); embedding took {meta['embed_s']} s",
        f"- questions: {meta['questions']['answerable']} answerable (categories 1-4), "
        f"{meta['questions']['adversarial']} adversarial; skipped {sum(meta['skipped'].values())} "
        f"(no resolvable evidence); {meta['evidence_ids_repaired']} evidence ids repaired, "
        f"{meta['evidence_ids_dropped']} unresolvable ids dropped from otherwise usable items",
        f"- recall settings: {json.dumps(meta.get('pipeline_constants', {}))}",
        f"- recall through `POST /recall`, project-scoped, limit {LIMIT}; recall@k = share of gold turns in "
        "the top k, averaged per question; MRR = 1/rank of the first gold turn (0 if none in the top 10)",
        "",
        "## As answered (after the evidence floor and support-tier gate)",
        "",
    ]
    lines += _metric_table(report["gated"])
    lines += ["", "Retrieval time (sidecar `retrieval_time_ms`) and answer shape:", "",
              "| run | p50 ms | p90 ms | client round trip p50 ms | mean results | tier supported | "
              "tier related | tier none |", "|---|---|---|---|---|---|---|---|"]
    for run, info in report["runs"].items():
        t = info["tiers"]
        n = sum(t.values()) or 1
        shares = " | ".join(f"{t.get(tier, 0) / n:.1%}" for tier in ("supported", "related", "none"))
        lines.append(f"| {run} | {info['retrieval_ms_p50']} | {info['retrieval_ms_p90']} | "
                     f"{info['round_trip_ms_p50']} | {info['mean_results']} | {shares} |")
    if isinstance(report.get("ungated"), dict):
        lines += ["", "## Ranking before the gate (same pipeline in-process, floor and tiers off)", ""]
        lines += _metric_table(report["ungated"])
        lines += ["", "| run | questions where the gate hid a gold turn of the ungated top 10 | "
                  "gold turns hidden |", "|---|---|---|"]
        for run, eff in report["gate_effects"].items():
            lines.append(f"| {run} | {eff['questions_with_hidden_gold']} ({eff['share']:.1%}) | "
                         f"{eff['gold_turns_hidden']} |")
    elif report.get("ungated"):
        lines += ["", f"Ungated ranking not measured: {report['ungated']}"]
    lines += ["", "## Adversarial questions (category 5): abstention", "",
              "| run | n | abstained (none or related) | supported | tiers |", "|---|---|---|---|---|"]
    for run, ab in report["adversarial"].items():
        if ab["n"]:
            lines.append(f"| {run} | {ab['n']} | {ab['abstained']:.1%} | {ab['supported']:.1%} | "
                         f"{json.dumps(ab['tiers'])} |")
    lines.append("")
    return "\n".join(lines)


def _metric_table(metrics: dict[str, dict[str, Any]]) -> list[str]:
    """Markdown table lines: recall@k and MRR per run (rows) and category (columns, with n)."""
    cats = [*(CATEGORIES[c] for c in ANSWERABLE), "overall"]
    first = next(iter(metrics.values()))
    head = "| run | metric | " + " | ".join(f"{c} (n={first[c]['n']})" for c in cats) + " |"
    lines = [head, "|---|---|" + "---|" * len(cats)]
    for run, per_cat in metrics.items():
        for metric in (*(f"recall@{k}" for k in KS), "mrr"):
            cells = [f"{per_cat[c][metric]:.3f}" if per_cat[c]["n"] else "-" for c in cats]
            lines.append(f"| {run} | {metric} | " + " | ".join(cells) + " |")
    return lines
