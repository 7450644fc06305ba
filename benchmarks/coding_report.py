"""The coding-memory benchmark's scoring and report: recall@k, MRR, injected precision, abstention, misses,
and the Markdown table. Imported by ``coding_recall.py``.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from _common import REPO
from coding_data import (
    ABSTAIN_TIERS,
    HOOK_LIMIT,
    LIMIT,
    TOP_K,
    Question,
)

# -- scoring ---------------------------------------------------------------------------------------


def injected(answer: dict[str, Any]) -> list[str]:
    """Label ids the prompt hook would inject: the hook's own policy (``memcue.sidecar.inject.policy``), applied
    to the answer when it was received."""
    return answer["injected"]


def score(q: Question, answer: dict[str, Any], roles: dict[str, str]) -> dict[str, Any]:
    """Per-question numbers: recall@3 and recall@10 (share, answerable only), reciprocal rank, the injected
    ids and how many are relevant, whether the answer abstained, and noise counts."""
    rel = set(q.relevant)
    ranked = answer["ranked"]
    inj = injected(answer)
    out: dict[str, Any] = {
        "abstained": answer["tier"] in ABSTAIN_TIERS,
        "injected": inj,
        "injected_relevant": sum(mid in rel for mid in inj),
        "bookkeeping_returned": sum(roles.get(mid) == "bookkeeping" for mid in ranked),
        "requests_returned": sum(roles.get(mid) == "request" for mid in ranked),
        "requests_injected": sum(roles.get(mid) == "request" for mid in inj),
    }
    if q.answerable:
        out[f"recall@{TOP_K}"] = len(rel & set(ranked[:TOP_K])) / len(rel)
        out[f"recall@{LIMIT}"] = len(rel & set(ranked[:LIMIT])) / len(rel)
        first = next((rank for rank, mid in enumerate(ranked, start=1) if mid in rel), None)
        out["rr"] = 1.0 / first if first else 0.0
        dis = set(q.distractors)
        out["distractor_above"] = any(mid in dis for mid in ranked[: (first or len(ranked) + 1) - 1])
    return out


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def summarise(questions: list[Question], scores: list[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate per-question scores of one group of questions (see the module docstring for each number;
    shares are 0..1, None when the group has no question the number applies to)."""
    ans = [s for q, s in zip(questions, scores, strict=True) if q.answerable]
    una = [s for q, s in zip(questions, scores, strict=True) if not q.answerable]
    with_inj = [s for s in scores if s["injected"]]
    n_inj = sum(len(s["injected"]) for s in scores)
    return {
        "n": len(questions),
        "answerable": len(ans),
        "unanswerable": len(una),
        f"recall@{TOP_K}": _mean([s[f"recall@{TOP_K}"] for s in ans]),
        f"recall@{LIMIT}": _mean([s[f"recall@{LIMIT}"] for s in ans]),
        "mrr": _mean([s["rr"] for s in ans]),
        "injected_precision": _mean([s["injected_relevant"] / len(s["injected"]) for s in with_inj]),
        "injected_precision_pooled": round(sum(s["injected_relevant"] for s in scores) / n_inj, 4) if n_inj else None,
        "questions_injecting": len(with_inj),
        "injected_results": n_inj,
        "answerable_with_relevant_injected": _mean([float(s["injected_relevant"] > 0) for s in ans]),
        "abstention": _mean([float(s["abstained"]) for s in una]),
        "false_abstention": _mean([float(s["abstained"]) for s in ans]),
        "distractor_above_relevant": sum(bool(s.get("distractor_above")) for s in ans),
        "bookkeeping_returned": sum(s["bookkeeping_returned"] for s in scores),
        "requests_returned": sum(s["requests_returned"] for s in scores),
        "requests_injected": sum(s["requests_injected"] for s in scores),
    }


def is_miss(q: Question, s: dict[str, Any]) -> bool:
    """An answerable question missing a relevant id in the top 3 or abstaining, or an unanswerable one
    answered with tier supported."""
    if q.answerable:
        return s[f"recall@{TOP_K}"] < 1.0 or s["abstained"]
    return not s["abstained"]


def _short(mids: list[str], labels: list[str], n: int = 5) -> str:
    shown = [f"{m}:{label}" if label else m for m, label in zip(mids[:n], labels[:n], strict=False)]
    more = len(mids) - n
    return ", ".join(shown) + (f" (+{more})" if more > 0 else "") if shown else "(nothing)"


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: run facts, the summary, one row per category, noise, and every miss.
    Longer than 60 lines: the report's sections in the order they print, each a few lines of table rows."""
    meta, s = report["meta"], report["summary"]
    now = meta["now_field"]
    if now["rejected"]:
        now_text = f"rejected by the sidecar ({now['rejected']}); asked without it"
    else:
        ages = now["age_labels_follow"]
        echo = (f"echoed in `{'`, `'.join(now['echoed_in'])}`" if now["echoed"]
                else "not echoed in the response")
        if ages["now"] and not ages["wall_clock"]:
            use = f"results' age labels follow it in {ages['now']} answers (the sidecar uses it)"
        elif ages["wall_clock"] and not ages["now"]:
            use = f"results' age labels follow the wall clock in {ages['wall_clock']} answers (the sidecar ignores it)"
        else:
            use = f"age labels follow it in {ages['now']} answers and the wall clock in {ages['wall_clock']}"
        now_text = f"{echo}; {use}"
    imp = meta["import"]
    code = Path(meta["memcue_package"])
    code_text = "" if code.is_relative_to(REPO) else f" (memcue imported from {code}, not this tree)"
    lines = [
        "# Coding-memory recall (memcue)",
        "",
        f"- date: {meta['date']}; commit: {meta['git_commit']}{' (working tree has changes)' if meta['dirty'] else ''}"
        f"{code_text}; sidecar {meta['sidecar_version']}; model: {meta['model_id']} ({meta['model_state']})",
        f"- store: {meta['memories']} rows in {len(meta['projects'])} projects "
        f"({', '.join(f'{n} {role}' for role, n in meta['roles'].items())}); the sidecar "
        f"flagged {imp['flagged_bookkeeping']}/{imp['bookkeeping_rows']} bookkeeping rows"
        + (f"; misflagged: {', '.join(imp['misflagged'])}" if imp["misflagged"] else ""),
        f"- questions: {s['n']} ({s['answerable']} answerable, {s['unanswerable']} unanswerable); `POST /recall` "
        f"with project, limit {LIMIT}, `now` = the question's asked_at: {now_text}",
        f"- injected = what the prompt hook would inject: answer tier supported, results labelled supported (not "
        f"weak), at most {HOOK_LIMIT}; abstained = answer tier none or related",
        f"- retrieval_time_ms p50 {meta['retrieval_ms']['p50']}, p90 {meta['retrieval_ms']['p90']}; "
        f"wall {meta['wall_s']} s",
        "",
        "## Summary",
        "",
        "| metric | value |",
        "|---|---|",
        f"| recall@{TOP_K} (answerable) | {_fmt(s[f'recall@{TOP_K}'])} |",
        f"| recall@{LIMIT} (answerable) | {_fmt(s[f'recall@{LIMIT}'])} |",
        f"| MRR (answerable) | {_fmt(s['mrr'])} |",
        f"| injected precision (mean over {s['questions_injecting']} questions injecting) | "
        f"{_fmt(s['injected_precision'])} |",
        f"| injected precision (pooled, {s['injected_results']} injected results) | "
        f"{_fmt(s['injected_precision_pooled'])} |",
        f"| answerable questions with a relevant memory injected | {_fmt(s['answerable_with_relevant_injected'])} |",
        f"| abstention on unanswerable (tier none/related) | {_fmt(s['abstention'])} |",
        f"| false abstention on answerable (tier none/related) | {_fmt(s['false_abstention'])} |",
        f"| answerable questions with a near-miss distractor above the first relevant | "
        f"{s['distractor_above_relevant']} |",
        f"| bookkeeping rows returned / captured prompts returned / prompts injected | "
        f"{s['bookkeeping_returned']} / {s['requests_returned']} / {s['requests_injected']} |",
        "",
        "## Per category",
        "",
        f"| category | n | recall@{TOP_K} | MRR | injected precision | pooled | abstained share | tiers |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cat, c in report["per_category"].items():
        share = c["abstention"] if cat == "unanswerable" else c["false_abstention"]
        tiers = ", ".join(f"{t} {n}" for t, n in sorted(c["tiers"].items()))
        lines.append(f"| {cat} | {c['n']} | {_fmt(c[f'recall@{TOP_K}'])} | {_fmt(c['mrr'])} | "
                     f"{_fmt(c['injected_precision'])} | {_fmt(c['injected_precision_pooled'])} | {_fmt(share)} | "
                     f"{tiers} |")
    lines += ["", "Abstained share: abstention for unanswerable questions, false abstention for the others.", "",
              f"## Misses ({len(report['misses'])})", "",
              "Answerable: a relevant id missing from the top 3, or tier none/related. Unanswerable: tier "
              "supported. `got` shows the top 5 as id:label.", "",
              "| id | category | question | expected | got | tier |", "|---|---|---|---|---|---|"]
    for m in report["misses"]:
        lines.append(f"| {m['id']} | {m['category']} | {m['question']} | {', '.join(m['expected']) or '–'} | "
                     f"{_short(m['got'], m['labels'])} | {m['tier']} |")
    return "\n".join(lines) + "\n"
