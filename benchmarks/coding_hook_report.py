"""The hook benchmark's scoring and report: per split and per category, what the real prompt hook injected
against the labels, the targets of issue 15, and a table of every miss. Imported by ``coding_hook.py``.
"""

from __future__ import annotations

from typing import Any

from _common import percentile
from coding_hook_data import CATEGORIES, Split

#: Issue 15's targets: (summary key, at least / at most, limit, what it is).
TARGETS: list[tuple[str, str, float, str]] = [
    ("answerable_hit", ">=", 0.85, "right memory injected, answerable prompts"),
    ("paraphrase_hit", ">=", 0.60, "right memory injected, paraphrase"),
    ("task_conflict_hit", ">=", 0.80, "right memory injected, task_conflict"),
    ("precision", ">=", 0.80, "injected precision (pooled)"),
    ("no_answer_clean", ">=", 0.90, "nothing injected, no_answer prompts"),
    ("noise_injected", "<=", 0, "superseded + bookkeeping + request rows injected"),
]
#: Characters of a prompt shown in the miss table.
PROMPT_CHARS = 90


def noise(split: Split, labels: list[str]) -> dict[str, int]:
    """Rows among ``labels`` that must never be injected: ``superseded``, ``bookkeeping``, ``request`` (labelled
    captured prompts) and ``captured`` (``?<id>``: a row not in the data, a prompt this run captured)."""
    kinds = {m.id: m.kind for m in split.memories}
    superseded = split.superseded()
    return {"superseded": sum(x in superseded for x in labels),
            "bookkeeping": sum(kinds.get(x) == "bookkeeping" for x in labels),
            "request": sum(kinds.get(x) == "request" for x in labels),
            "captured": sum(x.startswith("?") for x in labels)}


def score_prompt(split: Split, prompt_index: int, injected: list[str], session_start: list[str]) -> dict[str, Any]:
    """One prompt's score from the labels the prompt hook injected and those of its project's session-start
    block. Returns ``hit`` (a relevant label injected by the prompt hook), ``in_session_start`` (a relevant label
    in the session-start block), ``right``/``wrong`` counts of the prompt hook's block and its ``noise``."""
    p = split.prompts[prompt_index]
    right = [x for x in injected if x in p.relevant]
    return {"hit": bool(right), "in_session_start": any(x in p.relevant for x in session_start),
            "right": len(right), "wrong": len(injected) - len(right), **noise(split, injected)}


def _share(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def summarise(split: Split, idx: list[int], scores: list[dict[str, Any]], walls: list[float]) -> dict[str, Any]:
    """The numbers over the prompts ``idx`` of ``split`` (``scores``/``walls`` indexed like its prompts):
    shares are 0..1 (None when nothing to count), wall times in ms."""
    ans = [i for i in idx if split.prompts[i].answerable]
    none = [i for i in idx if not split.prompts[i].answerable]
    injected = sum(scores[i]["right"] + scores[i]["wrong"] for i in idx)
    right = sum(scores[i]["right"] for i in idx)
    counts = {k: sum(scores[i][k] for i in idx) for k in ("superseded", "bookkeeping", "request", "captured")}
    either = sum(scores[i]["hit"] or scores[i]["in_session_start"] for i in ans)
    return {
        "prompts": len(idx), "answerable": len(ans), "no_answer": len(none),
        "hits": sum(scores[i]["hit"] for i in ans), "hit_share": _share(sum(scores[i]["hit"] for i in ans), len(ans)),
        "session_start_share": _share(sum(scores[i]["in_session_start"] for i in ans), len(ans)),
        "hit_or_session_start_share": _share(either, len(ans)),
        "injected": injected, "right_injected": right, "precision": _share(right, injected),
        "prompts_injecting": sum(scores[i]["right"] + scores[i]["wrong"] > 0 for i in idx),
        "no_answer_clean": _share(sum(scores[i]["right"] + scores[i]["wrong"] == 0 for i in none), len(none)),
        "noise": counts, "noise_injected": sum(counts.values()),
        "hook_wall_ms": {"p50": percentile([walls[i] for i in idx], 0.5),
                         "p90": percentile([walls[i] for i in idx], 0.9)},
    }


def summarise_split(split: Split, scores: list[dict[str, Any]], walls: list[float]) -> dict[str, Any]:
    """``overall`` and ``per_category`` summaries of a split, and ``targets``: each target's value and whether
    it is met."""
    overall = summarise(split, list(range(len(split.prompts))), scores, walls)
    per_cat = {c: summarise(split, [i for i, p in enumerate(split.prompts) if p.category == c], scores, walls)
               for c in CATEGORIES if any(p.category == c for p in split.prompts)}
    values = {"answerable_hit": overall["hit_share"], "precision": overall["precision"],
              "no_answer_clean": overall["no_answer_clean"], "noise_injected": overall["noise_injected"],
              "paraphrase_hit": per_cat.get("paraphrase", {}).get("hit_share"),
              "task_conflict_hit": per_cat.get("task_conflict", {}).get("hit_share")}
    targets = []
    for key, op, limit, what in TARGETS:
        v = values[key]
        met = None if v is None else (v >= limit if op == ">=" else v <= limit)
        targets.append({"key": key, "what": what, "target": f"{op} {limit:g}", "value": v, "met": met})
    return {"overall": overall, "per_category": per_cat, "targets": targets}


# -- Markdown ----------------------------------------------------------------------------------------


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.0f}%"


def _num(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}"


def _summary_row(name: str, s: dict[str, Any]) -> str:
    n = s["noise"]
    hit = f"{_pct(s['hit_share'])} ({s['hits']}/{s['answerable']})" if s["answerable"] else "n/a"
    clean = f"{_pct(s['no_answer_clean'])} (of {s['no_answer']})" if s["no_answer"] else "n/a"
    return (f"| {name} | {s['prompts']} | {hit} | {_num(s['precision'])} ({s['right_injected']}/{s['injected']}) "
            f"| {clean} | {n['superseded']} / {n['bookkeeping']} / {n['request']} / {n['captured']} "
            f"| {s['hook_wall_ms']['p50']} | {_pct(s['session_start_share'])} | "
            f"{_pct(s['hit_or_session_start_share'])} |")


def _miss_rows(run: dict[str, Any]) -> list[str]:
    rows = []
    for p in run["per_prompt"]:
        if p["answerable"] and p["hit"] or not p["answerable"] and not p["injected"]:
            continue
        text = p["prompt"] if len(p["prompt"]) <= PROMPT_CHARS else p["prompt"][: PROMPT_CHARS - 1] + "…"
        got = ", ".join(x + ("*" if x in p["relevant"] else "") for x in p["injected"]) or "—"
        probe = p.get("recall") or {}
        rank = probe.get("first_relevant_rank")
        where = (f"#{rank} ({probe.get('first_relevant_label') or '?'})" if rank else "not in top 10") \
            if p["answerable"] else "—"
        rows.append(f"| {p['id']} | {p['category']} | {text.replace('|', '/')} | {', '.join(p['relevant']) or '—'} "
                    f"| {got} | {where} | {probe.get('tier', '?')} / {probe.get('query_type', '?')} |")
    return rows


def _session_line(run: dict[str, Any]) -> str:
    """What the session-start blocks held (secondary: the targets are the prompt hook's)."""
    blocks, current = run["session_start"], run["current_rows"]
    sizes = ", ".join(f"{name} {len(labels)} of {current.get(name, '?')}" for name, labels in blocks.items())
    n = run["session_start_noise"]
    warn = f"; data warnings: {'; '.join(run['data_warnings'])}" if run["data_warnings"] else ""
    return (f"- session-start blocks (the real SessionStart hook, source startup, once per project; secondary, the "
            f"targets are the prompt hook's): memories in the block of the project's current ones: {sizes} (a "
            f"store this small puts a large share of itself in one block; a real one would not); superseded / "
            f"bookkeeping / request / captured in them: {n['superseded']} / {n['bookkeeping']} / {n['request']} / "
            f"{n['captured']}{warn}")


def split_markdown(run: dict[str, Any]) -> list[str]:
    """One split's section: set-up facts, the summary table, the targets and the misses."""
    s, imp = run["summary"], run["import"]
    lines = [f"## split `{run['split']}`", "",
             f"- {imp['memories']} memory rows over {', '.join(run['projects'])}; {imp['stored']} stored, "
             f"{imp['superseded_ok']}/{imp['superseded_pairs']} supersessions applied (POST /import of a changed "
             f"text under the row's source_id: Store.update), the sidecar flagged {imp['flagged_bookkeeping']}/"
             f"{imp['bookkeeping_rows']} bookkeeping rows; vectors ready in {run['embed_s']} s",
             f"- {len(run['per_prompt'])} prompts through the real hook, each in a fresh session; exit codes "
             f"{run['exit_codes']}; rows shifted by {run['shift_s']} s so the split's reference time is the "
             "sidecar's wall clock",
             _session_line(run),
             "", "| prompts | n | right memory injected | injected precision (right/all) | nothing injected "
             "(no_answer) | injected superseded / bookkeeping / request / this run's captured | hook p50 ms "
             "| right memory in the session-start block | prompt hook or session start |",
             "|---|---|---|---|---|---|---|---|---|", _summary_row("**all**", s["overall"])]
    lines += [_summary_row(c, v) for c, v in s["per_category"].items()]
    lines += ["", "| target | value | goal | met |", "|---|---|---|---|"]
    for t in s["targets"]:
        value = t["value"] if t["key"] == "noise_injected" else (_num(t["value"]) if t["key"] == "precision"
                                                                  else _pct(t["value"]))
        lines.append(f"| {t['what']} | {value} | {t['target']} | "
                     f"{'n/a' if t['met'] is None else 'met' if t['met'] else '**NOT met**'} |")
    misses = _miss_rows(run)
    lines += ["", f"### misses ({len(misses)}): answerable prompts without a right memory, no_answer prompts "
              "with an injection", "",
              "`*` marks a right memory; `?N` a row not in the data (a prompt this run captured). The last two "
              "columns come from `POST /recall` of the same prompt (limit 10, `now` = asked_at): where the first "
              "right memory ranked with its result label, and the answer's tier / query type.", "",
              "| id | category | prompt | relevant | injected | right memory in /recall | tier / query type |",
              "|---|---|---|---|---|---|---|", *misses, ""]
    return lines


def markdown(report: dict[str, Any]) -> str:
    """The whole report as Markdown."""
    meta = report["meta"]
    lines = ["# Coding memories through the real prompt hook (issue 15)", "",
             f"- date {meta['date']}; commit {meta['git_commit'] or 'n/a'}{' (dirty)' if meta['dirty'] else ''}; "
             f"model {meta.get('model_id')}; wall {meta['wall_s']} s",
             f"- hook: `{' '.join(meta['hook_argv'])}` with a Claude Code UserPromptSubmit payload on stdin, "
             "cwd = the project's temporary git folder; the injected ids are read from the additionalContext's "
             "`<memory id=...>` elements", ""]
    for name, why in report["skipped"].items():
        lines += [f"- split `{name}` skipped: {why}", ""]
    for run in report["splits"]:
        lines += split_markdown(run)
    return "\n".join(lines) + "\n"
