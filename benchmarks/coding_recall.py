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
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from _common import RESULTS_DIR, git_commit, git_dirty, percentile, say, stop_sidecar, write_results
from coding_data import (
    ABSTAIN_TIERS,
    CATEGORIES,
    DEFAULT_MEMORIES,
    DEFAULT_QUESTIONS,
    HOOK_LIMIT,
    LIMIT,
    NOW_FIELDS,
    PROGRESS_EVERY,
    TOP_K,
    DataError,
    Memory,
    Question,
    load_memories,
    load_questions,
)
from coding_report import (
    is_miss,
    markdown,
    score,
    summarise,
)

import memcue
from memcue.client import Client, ClientError
from memcue.core.paths import Locations
from memcue.sidecar.inject import INJECT_COSINE_GAP, injectable

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
    is dated 2025, so the two differ by months).
    Longer than 60 lines: one question's request, timing and answer record read as one step."""
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
    0 done, 1 the sidecar failed, 2 the data files are missing or malformed.
    Longer than 60 lines: the run's steps in the order they happen, each with its own error exit."""
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
