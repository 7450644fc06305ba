"""Recall quality of memcue on a small labelled coding-memory set: recall@3, MRR, injected precision and abstention.

The set (``benchmarks/data/coding_memories.jsonl``) is an imagined team's memory over three projects
(``tally-api``, a Python billing API; ``tally-web``, a React frontend; ``tally-infra``, Terraform and
Kubernetes) across about three months: decisions, preferences, bug notes with their fixes, conventions,
procedures and notes, plus captured prompts (kind ``request``), bookkeeping rows ("File changed: ...",
"Tool: Bash completed (exit 0)") as noise, a few pinned memories, and near-miss distractors (same topic,
other facts; facts that differ only in a number). Each memory has a label id (``m001`` ...).

The questions (``benchmarks/data/coding_questions.jsonl``) carry a project, a category (decision,
preference, bug, procedure, time, present_tense, request_recall, unanswerable), the relevant memory ids
(none for unanswerable ones) and an asking time ``asked_at`` (Unix s).

The script starts a real sidecar in a fresh temporary ``MEMCUE_HOME``, imports the memories through
``POST /remember/batch`` (``source_id`` = ``coding:<label id>``; the returned ids map results back), waits
until every memory has its vector, then asks every question through ``POST /recall`` with its project,
``limit`` 10 and ``now`` = the question's ``asked_at`` (``include_requests`` is left unset: the pipeline
decides). It reports, overall and per category:

- recall@3: share of a question's relevant ids in the top 3, averaged over answerable questions; MRR:
  1/rank of the first relevant id in the top 10 (0 when none);
- injected precision: of the results the prompt hook would inject (answer tier ``supported``, results
  labelled ``supported``, never weak ones, at most the hook's limit of 8), the share that are relevant:
  averaged over questions with any injected result, and pooled over all injected results;
- abstention: the share of unanswerable questions ending in tier ``none`` or ``related``; false abstention:
  the same share for answerable questions;

plus noise counters (bookkeeping rows and captured prompts among the results, near-miss distractors ranked
above the first relevant memory) and a table of every miss.

Usage::

    .venv/bin/python benchmarks/coding_recall.py            # make bench-coding
    .venv/bin/python benchmarks/coding_recall.py --json     # the summary as JSON on stdout

Results: ``benchmarks/results/coding_recall.json`` and ``.md``. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import io
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import REPO, RESULTS_DIR, git_commit, git_dirty, percentile, say, stop_sidecar, write_results

import memcue
from memcue.client import Client, ClientError
from memcue.hooks.locations import Locations
from memcue.sidecar.injection import INJECT_COSINE_GAP, injectable

DATA_DIR = REPO / "benchmarks" / "data"
DEFAULT_MEMORIES = DATA_DIR / "coding_memories.jsonl"
DEFAULT_QUESTIONS = DATA_DIR / "coding_questions.jsonl"
#: Results asked for per question (``limit`` of ``POST /recall``).
LIMIT = 10
#: recall@K is reported for this K.
TOP_K = 3
#: Results the prompt hook injects at most (``PROMPT_LIMIT`` of ``memcue.sidecar.hook_service``).
try:
    from memcue.sidecar.hook_service import PROMPT_LIMIT as HOOK_LIMIT
except Exception:  # moved or mid-edit: the documented default
    HOOK_LIMIT = 8
#: Answer tiers that count as abstaining.
ABSTAIN_TIERS = ("none", "related")
CATEGORIES = ("decision", "preference", "bug", "procedure", "time", "present_tense", "request_recall",
              "unanswerable")
ROLES = ("memory", "request", "bookkeeping")
#: Result fields that may echo the asking time sent as ``now`` (checked in this order).
NOW_FIELDS = ("now", "asked_at", "as_of_now", "reference_time", "query_time")
#: Questions asked between two progress lines.
PROGRESS_EVERY = 10


class DataError(ValueError):
    """The data files are missing or malformed; the message names the file and line."""


@dataclass
class Memory:
    """One labelled memory: ``created_at`` in Unix s; ``role`` memory, request or bookkeeping."""

    id: str
    project: str
    kind: str
    role: str
    created_at: int
    pinned: bool
    content: str


@dataclass
class Question:
    """One labelled question: ``relevant`` memory ids (empty for unanswerable), ``distractors`` near-miss
    ids (informational), ``asked_at`` in Unix s."""

    id: str
    project: str
    category: str
    text: str
    relevant: list[str]
    distractors: list[str] = field(default_factory=list)
    asked_at: int | None = None

    @property
    def answerable(self) -> bool:
        return self.category != "unanswerable"


# -- data ------------------------------------------------------------------------------------------


def read_jsonl(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``{"meta": ...}`` header (empty if absent) and the other rows of a JSON Lines file.
    Raises ``DataError`` naming the line of any bad row."""
    if not path.is_file():
        raise DataError(f"{path} not found")
    meta: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{n}: not JSON: {exc}") from None
        if not isinstance(row, dict):
            raise DataError(f"{path}:{n}: expected an object")
        if "meta" in row:
            meta = row["meta"]
        else:
            row["_line"] = n
            rows.append(row)
    return meta, rows


def _need(row: dict[str, Any], path: Path, key: str, kind: type | tuple[type, ...]) -> Any:
    value = row.get(key)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise DataError(f"{path}:{row['_line']}: field {key!r} missing or not {getattr(kind, '__name__', kind)}")
    return value


def load_memories(path: Path) -> tuple[dict[str, Any], list[Memory]]:
    """The memories file: its meta header and the memories. Raises ``DataError``."""
    meta, rows = read_jsonl(path)
    out: list[Memory] = []
    seen: set[str] = set()
    for r in rows:
        m = Memory(id=_need(r, path, "id", str), project=_need(r, path, "project", str),
                   kind=_need(r, path, "kind", str), role=_need(r, path, "role", str),
                   created_at=int(_need(r, path, "created_at", (int, float))), pinned=bool(r.get("pinned")),
                   content=_need(r, path, "content", str))
        if m.id in seen:
            raise DataError(f"{path}:{r['_line']}: duplicate id {m.id}")
        if m.role not in ROLES:
            raise DataError(f"{path}:{r['_line']}: role {m.role!r} is not one of {', '.join(ROLES)}")
        seen.add(m.id)
        out.append(m)
    if not out:
        raise DataError(f"{path}: no memories")
    return meta, out


def load_questions(path: Path, memories: list[Memory]) -> list[Question]:
    """The questions file, checked against the memories (ids exist, same project, no bookkeeping row is
    relevant, answerable questions have relevant ids and unanswerable ones none). Raises ``DataError``."""
    _, rows = read_jsonl(path)
    by_id = {m.id: m for m in memories}
    out: list[Question] = []
    for r in rows:
        where = f"{path}:{r['_line']}"
        q = Question(id=_need(r, path, "id", str), project=_need(r, path, "project", str),
                     category=_need(r, path, "category", str), text=_need(r, path, "question", str),
                     relevant=list(r.get("relevant") or []), distractors=list(r.get("distractors") or []),
                     asked_at=int(r["asked_at"]) if r.get("asked_at") is not None else None)
        if q.category not in CATEGORIES:
            raise DataError(f"{where}: category {q.category!r} is not one of {', '.join(CATEGORIES)}")
        if q.answerable != bool(q.relevant):
            raise DataError(f"{where}: {'no relevant ids' if q.answerable else 'unanswerable but has relevant ids'}")
        for mid in q.relevant + q.distractors:
            if mid not in by_id:
                raise DataError(f"{where}: unknown memory id {mid}")
        for mid in q.relevant:
            if by_id[mid].role == "bookkeeping" or by_id[mid].project != q.project:
                raise DataError(f"{where}: {mid} is bookkeeping or in another project")
        out.append(q)
    if not out:
        raise DataError(f"{path}: no questions")
    return out


# -- run -------------------------------------------------------------------------------------------


def remember_body(m: Memory) -> dict[str, Any]:
    """The ``POST /remember/batch`` entry of one memory (its session id: project and day)."""
    day = dt.datetime.fromtimestamp(m.created_at, dt.UTC).strftime("%Y%m%d")
    return {"content": m.content, "kind": m.kind, "project": m.project, "pinned": m.pinned,
            "source": "benchmark:coding", "source_id": f"coding:{m.id}", "created_at": float(m.created_at),
            "session_id": f"{m.project}-{day}", "metadata": {"label": m.id, "role": m.role}}


def import_memories(client: Client, memories: list[Memory]) -> tuple[dict[int, str], dict[str, Any]]:
    """Store the memories in one batch; return sidecar id -> label id, and what the sidecar flagged
    (bookkeeping rows it recognised, real memories it flagged by mistake, duplicates)."""
    say(f"importing {len(memories)} memories")
    results = client.remember_batch([remember_body(m) for m in memories])
    ids: dict[int, str] = {}
    flagged = Counter()
    wrong: list[str] = []
    duplicates: list[str] = []
    for m, res in zip(memories, results, strict=True):
        ids[int(res["id"])] = m.id
        flagged[m.role] += bool(res["bookkeeping"])
        if bool(res["bookkeeping"]) != (m.role == "bookkeeping"):
            wrong.append(m.id)
        if res.get("duplicate"):
            duplicates.append(m.id)
    roles = Counter(m.role for m in memories)
    say(f"imported {len(memories)}/{len(memories)} memories; the sidecar flagged "
        f"{flagged['bookkeeping']}/{roles['bookkeeping']} bookkeeping rows")
    return ids, {"bookkeeping_rows": roles["bookkeeping"], "flagged_bookkeeping": flagged["bookkeeping"],
                 "misflagged": wrong, "duplicates": duplicates}


def wait_for_vectors(client: Client) -> dict[str, Any]:
    """Poll ``/health`` until the model is ready, no memory waits for a vector and vector search is on;
    a progress line at most every 5 s. Returns the last health."""
    last = [0.0]

    def progress(health: dict[str, Any]) -> None:
        now = time.monotonic()
        if now - last[0] >= 5:
            last[0] = now
            say(f"embedding: model {health['model']['state']}, {health['counts']['pending_embeddings']} waiting")

    return client.wait_idle(timeout_s=600, on_progress=progress)


def _echoed_now(answer: dict[str, Any], sent: float) -> str | None:
    """The response field that carries the asking time sent as ``now`` (within 1 s), or None."""
    for name in NOW_FIELDS:
        value = answer.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool) and abs(value - sent) <= 1:
            return name
        if isinstance(value, str) and value:
            with contextlib.suppress(ValueError):
                parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
                if parsed.tzinfo is not None and abs(parsed.timestamp() - sent) <= 1:
                    return name
    return None


_AGE = re.compile(r"^(\d+) (day|week|month|year)s? ago$")
#: Days each age-label unit spans (memcue's age labels: "today", "yesterday", "5 days ago", "3 weeks ago", ...).
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}


def _age_fits(label: str, days: float) -> bool | None:
    """Whether an age label ("today", "5 days ago", "3 weeks ago", ...) fits an age of ``days``; None when
    the label is not understood."""
    if label == "today":
        return days < 1
    if label == "yesterday":
        return 1 <= days < 2
    match = _AGE.match(label)
    if not match:
        return None
    low = int(match.group(1)) * _UNIT_DAYS[match.group(2)]
    return low <= days < low + _UNIT_DAYS[match.group(2)] + 1


def _age_clock(answer: dict[str, Any], sent: float, wall: float) -> str:
    """Which clock the answer's age labels follow: "now" (the sent asking time), "wall" (the sidecar's own
    clock) or "unknown" (no result, unreadable labels, or both fit)."""
    votes: Counter[str] = Counter()
    for r in answer.get("results") or []:
        created, label = r.get("created_at"), r.get("age_label")
        if not isinstance(created, int | float) or not isinstance(label, str):
            continue
        by_now, by_wall = _age_fits(label, (sent - created) / 86400), _age_fits(label, (wall - created) / 86400)
        if by_now and not by_wall:
            votes["now"] += 1
        elif by_wall and not by_now:
            votes["wall"] += 1
    return votes.most_common(1)[0][0] if votes else "unknown"


def ask_all(client: Client, questions: list[Question], ids: dict[int, str],
            reference: int | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Ask every question through ``POST /recall`` (project, ``limit`` 10, ``now`` = ``asked_at`` or the
    set's reference time). Returns per-question answers (labels, result tiers and kinds, answer tier,
    query_type, channel_status, times in ms) and what became of ``now``: echoed in the response, rejected,
    and which clock the results' age labels follow (the sent ``now`` or the sidecar's wall clock: the set
    is dated 2025, so the two differ by months)."""
    answers: list[dict[str, Any]] = []
    send_now = True
    echoed: Counter[str] = Counter()
    clocks: Counter[str] = Counter()
    rejected = ""
    started = time.monotonic()
    for i, q in enumerate(questions, start=1):
        fields: dict[str, Any] = {"project": q.project, "limit": LIMIT}
        now = q.asked_at if q.asked_at is not None else reference
        if send_now and now is not None:
            fields["now"] = float(now)
        t0 = time.perf_counter()
        try:
            answer = client.recall(q.text, **fields)
        except ClientError as exc:
            if "now" not in fields or "now" not in str(exc):
                raise
            send_now, rejected = False, str(exc)
            say(f"the sidecar rejected the 'now' field ({exc}); asking without it")
            fields.pop("now")
            answer = client.recall(q.text, **fields)
        round_trip = (time.perf_counter() - t0) * 1000
        if "now" in fields:
            echoed[_echoed_now(answer, fields["now"]) or ""] += 1
            clocks[_age_clock(answer, fields["now"], time.time())] += 1
        results = answer.get("results") or []
        answers.append({
            "ranked": [ids.get(int(r["memory_id"]), f"?{r['memory_id']}") for r in results],
            "labels": [str(r.get("tier") or "") for r in results],
            "injected": [ids.get(int(r["memory_id"]), f"?{r['memory_id']}") for r in injectable(answer, HOOK_LIMIT)],
            "kinds": [str(r.get("memory_kind") or "") for r in results],
            "tier": answer.get("tier"),
            "abstained": answer.get("abstained"),
            "abstention_reason": answer.get("abstention_reason"),
            "note": answer.get("note"),
            "query_type": answer.get("query_type"),
            "channel_status": answer.get("channel_status") or {},
            "retrieval_ms": float(answer.get("retrieval_time_ms") or 0.0),
            "round_trip_ms": round(round_trip, 2),
        })
        if i % PROGRESS_EVERY == 0 or i == len(questions):
            say(f"asked {i}/{len(questions)} questions ({time.monotonic() - started:.1f} s)")
    asked_with_now = sum(echoed.values())
    field_names = sorted(k for k in echoed if k)
    now_info = {
        "sent": asked_with_now > 0,
        "questions_with_now": asked_with_now,
        "echoed": bool(field_names) and echoed[""] == 0,
        "echoed_in": field_names,
        "not_echoed": echoed[""],
        "rejected": rejected or None,
        "age_labels_follow": {"now": clocks["now"], "wall_clock": clocks["wall"], "unknown": clocks["unknown"]},
    }
    return answers, now_info


# -- scoring ---------------------------------------------------------------------------------------


def injected(answer: dict[str, Any]) -> list[str]:
    """Label ids the prompt hook would inject: the hook's own policy (``memcue.sidecar.injection``), applied
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
    """The report as Markdown: run facts, the summary, one row per category, noise, and every miss."""
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


# -- main ------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line options (``--help`` lists them)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=Path, default=DEFAULT_MEMORIES,
                        help="labelled memories, JSON Lines (default benchmarks/data/coding_memories.jsonl)")
    parser.add_argument("--questions", type=Path, default=DEFAULT_QUESTIONS,
                        help="labelled questions, JSON Lines (default benchmarks/data/coding_questions.jsonl)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results folder (default benchmarks/results)")
    parser.add_argument("--json", action="store_true",
                        help="print the summary as JSON on stdout instead of the Markdown report")
    parser.add_argument("--keep", action="store_true", help="keep the temporary MEMCUE_HOME (sidecar stopped)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; write ``coding_recall.json`` and ``.md`` to ``--out``. Returns the exit code:
    0 done, 1 the sidecar failed, 2 the data files are missing or malformed."""
    args = parse_args(argv)
    try:
        meta, memories = load_memories(args.memories)
        questions = load_questions(args.questions, memories)
    except DataError as exc:
        say(f"error: {exc}")
        return 2
    reference = meta.get("reference_unix")
    roles = {m.id: m.role for m in memories}
    say(f"{len(memories)} memories ({dict(Counter(roles.values()))}), {len(questions)} questions")

    home = Path(tempfile.mkdtemp(prefix="memcue-coding-"))
    env = {**os.environ, "MEMCUE_HOME": str(home / "data"), "OPENBLAS_NUM_THREADS": "1"}
    os.environ["MEMCUE_HOME"] = env["MEMCUE_HOME"]
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    loc = Locations(Path(env["MEMCUE_HOME"]))
    client = Client(loc, timeout_s=120)
    started = time.time()
    keep = args.keep
    try:
        health = client.ensure_running()
        say(f"sidecar {health['version']} up (pid {health['pid']}) in {home}")
        ids, import_info = import_memories(client, memories)
        t0 = time.monotonic()
        health = wait_for_vectors(client)
        embed_s = round(time.monotonic() - t0, 1)
        say(f"vectors ready in {embed_s} s (model {health['model']['id']}, state {health['model']['state']}, "
            f"vector_search {health.get('vector_search')})")
        if health["model"]["state"] != "ready" or health.get("vector_note") or not health.get("vector_search"):
            why = health["model"].get("error") or health.get("vector_note") or "vector search is off"
            say(f"warning: semantic search unavailable: {why}")
        answers, now_info = ask_all(client, questions, ids, reference)
    except ClientError as exc:
        keep = True  # so the sidecar log can be read
        say(f"error: {exc}")
        say(f"sidecar log: {loc.sidecar_log}")
        return 1
    finally:
        client.close()
        stop_sidecar(env)
        if keep:
            say(f"kept {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)

    scores = [score(q, a, roles) for q, a in zip(questions, answers, strict=True)]
    per_category: dict[str, Any] = {}
    for cat in CATEGORIES:
        idx = [i for i, q in enumerate(questions) if q.category == cat]
        if not idx:
            continue
        per_category[cat] = summarise([questions[i] for i in idx], [scores[i] for i in idx])
        per_category[cat]["tiers"] = dict(Counter(answers[i]["tier"] for i in idx))
        per_category[cat]["query_types"] = dict(Counter(answers[i]["query_type"] for i in idx))
    channel_status: dict[str, Counter[str]] = defaultdict(Counter)
    for a in answers:
        for name, status in a["channel_status"].items():
            channel_status[name][str(status)] += 1
    per_question = []
    for q, a, s in zip(questions, answers, scores, strict=True):
        per_question.append({"id": q.id, "category": q.category, "project": q.project, "question": q.text,
                             "asked_at": q.asked_at, "expected": q.relevant, "distractors": q.distractors,
                             "got": a["ranked"], "labels": a["labels"], "kinds": a["kinds"], "tier": a["tier"],
                             "abstention_reason": a["abstention_reason"], "query_type": a["query_type"],
                             "channel_status": a["channel_status"], "retrieval_ms": a["retrieval_ms"],
                             **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in s.items()}})
    misses = [p for p, q, s in zip(per_question, questions, scores, strict=True) if is_miss(q, s)]
    report: dict[str, Any] = {
        "meta": {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "git_commit": git_commit(), "dirty": git_dirty(),
            "sidecar_version": health.get("version"), "memcue_package": str(Path(memcue.__file__).parent),
            "model_id": health["model"]["id"], "model_state": health["model"]["state"],
            "vector_search": health.get("vector_search"),
            "data": {"memories": str(args.memories), "questions": str(args.questions),
                     "reference_date": meta.get("reference_date")},
            "memories": len(memories), "projects": sorted({m.project for m in memories}),
            "roles": dict(Counter(roles.values())), "import": import_info, "embed_s": embed_s,
            "limit": LIMIT, "top_k": TOP_K, "hook_limit": HOOK_LIMIT, "inject_cosine_gap": INJECT_COSINE_GAP,
            "abstain_tiers": list(ABSTAIN_TIERS), "now_field": now_info,
            "channel_status": {k: dict(v) for k, v in channel_status.items()},
            "retrieval_ms": {"p50": percentile([a["retrieval_ms"] for a in answers], 0.5),
                             "p90": percentile([a["retrieval_ms"] for a in answers], 0.9)},
            "wall_s": round(time.time() - started, 1),
        },
        "summary": summarise(questions, scores),
        "per_category": per_category,
        "misses": misses,
        "per_question": per_question,
    }
    text = markdown(report)
    if args.json:
        with contextlib.redirect_stdout(io.StringIO()):
            write_results(args.out, "coding_recall", report, text, ensure_ascii=False)
        print(json.dumps({k: report[k] for k in ("meta", "summary", "per_category")}, indent=2, ensure_ascii=False))
    else:
        write_results(args.out, "coding_recall", report, text, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
