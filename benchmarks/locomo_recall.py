"""Recall quality of memcue on LoCoMo: recall@5, recall@10 and MRR per question category.

Every dialogue turn of the LoCoMo conversations becomes one memory ("[session date] speaker: text",
plus the image caption when there is one) in a fresh temporary store served by the real sidecar.
Each answerable question (categories 1-4) is asked through ``POST /recall``, scoped to its
conversation's project with ``limit`` 10, in three runs on the same store:

- ``hybrid``: the default pipeline (semantic + BM25, weighted RRF);
- ``bm25``: ``mode="keyword"`` (BM25 only);
- ``semantic``: ``weights={"bm25": 0}`` (BM25 still runs but adds nothing to the ranking).

The sidecar answers after its evidence floor and support-tier gate, which drop candidates (and cut a
``related`` answer to three). To measure the *ranking* itself, the script then stops the sidecar, opens
the same store in-process and runs the same pipeline with the floor and the tier gate switched off
(``--no-ungated`` skips this). Category 5 (adversarial: the answer is "not mentioned") is scored by
abstention: the share answered with tier ``none`` or ``related`` rather than ``supported``.

Usage::

    .venv/bin/python benchmarks/locomo_recall.py                      # everything (make bench-locomo)
    .venv/bin/python benchmarks/locomo_recall.py --limit-conversations 1 --max-questions 50

Results: ``benchmarks/results/locomo_recall.json`` and ``.md``. Progress goes to stderr.
The data set (CC BY-NC 4.0) is read in place and never copied into the repository.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcue.client import Client
from memcue.hooks.locations import Locations

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo10.json"
RESULTS_DIR = REPO / "benchmarks" / "results"
#: sha256 of ``locomo10.json`` as published in the shared data folder's README.
EXPECTED_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ANSWERABLE = (1, 2, 3, 4)
#: Memories per ``/remember/batch`` call.
BATCH = 500
#: Results asked for per question; recall@k is computed for k in ``KS`` (each <= LIMIT).
LIMIT = 10
KS = (5, 10)
#: The three runs: extra fields of the ``POST /recall`` body.
RUNS: dict[str, dict[str, Any]] = {
    "hybrid": {},
    "bm25": {"mode": "keyword"},
    "semantic": {"weights": {"bm25": 0.0}},
}
DATE_FORMATS = (
    "%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %d %B %Y", "%d %B, %Y", "%d %B %Y",
)
_DATE_FALLBACK = re.compile(r"(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})")
_DIA_ID = re.compile(r"D\W*(\d+)\s*:\s*0*(\d+)$")


def say(message: str) -> None:
    """A progress line on stderr."""
    print(message, file=sys.stderr, flush=True)


# -- data ------------------------------------------------------------------------------------------


@dataclass
class Question:
    """One LoCoMo QA item with its gold evidence resolved to dia_ids of its conversation."""

    conv: int
    project: str
    text: str
    category: int
    gold: list[str]
    raw_evidence: list[str] = field(default_factory=list)


@dataclass
class Dataset:
    """Turns to import, questions to ask, and what the evidence cleanup did."""

    memories: list[dict[str, Any]]
    questions: list[Question]
    skipped: Counter[str]
    dropped_ids: int
    repaired_ids: int
    unparsed_dates: int


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def parse_session_date(text: str) -> float | None:
    """Unix seconds (UTC) of a LoCoMo session date like "1:56 pm on 8 May, 2023"; None if unparsable."""
    text = " ".join(str(text).split())
    for fmt in DATE_FORMATS:
        try:
            return dt.datetime.strptime(text, fmt).replace(tzinfo=dt.UTC).timestamp()
        except ValueError:
            continue
    match = _DATE_FALLBACK.search(text)
    if match:
        for fmt in ("%d %B %Y", "%d %b %Y"):
            try:
                return dt.datetime.strptime(" ".join(match.groups()), fmt).replace(tzinfo=dt.UTC).timestamp()
            except ValueError:
                continue
    return None


def sessions(conversation: dict[str, Any]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    """``(session number, date_time text, turns)`` in order."""
    out = []
    for key, turns in conversation.items():
        m = re.fullmatch(r"session_(\d+)", key)
        if m and isinstance(turns, list):
            out.append((int(m.group(1)), str(conversation.get(f"{key}_date_time", "")), turns))
    return sorted(out, key=lambda s: s[0])


def normalise_evidence(raw: list[str]) -> tuple[list[str], int]:
    """Split and repair evidence ids ("D8:6; D9:17" -> two ids, "D30:05" -> "D30:5", "D:11:26" ->
    "D11:26"). Returns the candidate ids and how many raw ids needed a repair."""
    out, repaired = [], 0
    for item in raw:
        parts = [p for p in re.split(r"[;,\s]+", str(item)) if p]
        fixed = []
        for part in parts:
            m = _DIA_ID.match(part)
            fixed.append(f"D{int(m.group(1))}:{int(m.group(2))}" if m else part)
        if fixed != [item]:
            repaired += 1
        out.extend(fixed)
    return list(dict.fromkeys(out)), repaired


def load_dataset(path: Path, limit_conversations: int | None) -> Dataset:
    """Read LoCoMo and build the memories (one per turn) and the questions with resolvable evidence."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if limit_conversations:
        data = data[:limit_conversations]
    memories: list[dict[str, Any]] = []
    questions: list[Question] = []
    skipped: Counter[str] = Counter()
    dropped = repaired = unparsed = 0
    for conv_index, conv in enumerate(data):
        sample = str(conv.get("sample_id") or conv_index)
        project = f"locomo/{sample}"
        turn_ids: set[str] = set()
        for number, date_text, turns in sessions(conv["conversation"]):
            base = parse_session_date(date_text)
            if base is None:
                unparsed += 1
                base = 0.0
            for position, turn in enumerate(turns):
                dia_id = str(turn.get("dia_id", ""))
                content = f"[{date_text}] {turn.get('speaker', '')}: {turn.get('text', '')}"
                if turn.get("blip_caption"):
                    content += f" [image: {turn['blip_caption']}]"
                memories.append({
                    "content": content,
                    "kind": "note",
                    "project": project,
                    "session_id": f"{sample}:session_{number}",
                    "created_at": base + position,
                    "source": "locomo",
                    "source_id": f"locomo:{sample}:{dia_id}",
                    "metadata": {"dia_id": dia_id, "speaker": turn.get("speaker", ""), "session": number},
                })
                turn_ids.add(dia_id)
        for qa in conv.get("qa", []):
            category = int(qa.get("category", 0))
            if category not in CATEGORIES:
                skipped["unknown category"] += 1
                continue
            raw = [str(e) for e in qa.get("evidence") or []]
            candidates, fixes = normalise_evidence(raw)
            repaired += fixes
            gold = [e for e in candidates if e in turn_ids]
            dropped += len(candidates) - len(gold)
            if not gold:
                skipped[f"{CATEGORIES[category]}: no evidence resolves to a turn"] += 1
                continue
            questions.append(Question(conv_index, project, str(qa["question"]), category, gold, raw))
    return Dataset(memories, questions, skipped, dropped, repaired, unparsed)


# -- metrics ---------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) by linear interpolation; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return round(ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo), 2)


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


# -- runs ------------------------------------------------------------------------------------------


def import_memories(client: Client, memories: list[dict[str, Any]]) -> dict[int, str]:
    """Store the turns in batches; return memory id -> dia_id."""
    ids: dict[int, str] = {}
    for start in range(0, len(memories), BATCH):
        chunk = memories[start:start + BATCH]
        for memory, result in zip(chunk, client.remember_batch(chunk), strict=True):
            ids[int(result["id"])] = memory["metadata"]["dia_id"]
        say(f"imported {min(start + BATCH, len(memories))}/{len(memories)} turns")
    return ids


def wait_for_vectors(client: Client) -> dict[str, Any]:
    """``wait_idle`` with a progress line at most every 5 s."""
    last = [0.0]

    def progress(health: dict[str, Any]) -> None:
        now = time.monotonic()
        if now - last[0] >= 5:
            last[0] = now
            pending = health["counts"]["pending_embeddings"]
            say(f"embedding: model {health['model']['state']}, {pending} waiting")

    return client.wait_idle(timeout_s=1800, on_progress=progress)


def ask_all(client: Client, questions: list[Question], ids: dict[int, str], run: str) -> list[dict[str, Any]]:
    """Ask every question in one run; per question: ranked dia_ids, tier, result count, times."""
    out = []
    started = time.monotonic()
    for i, q in enumerate(questions, start=1):
        t0 = time.perf_counter()
        answer = client.recall(q.text, project=q.project, limit=LIMIT, **RUNS[run])
        round_trip = (time.perf_counter() - t0) * 1000
        ranked = [ids.get(int(r["memory_id"]), f"?{r['memory_id']}") for r in answer["results"]]
        out.append({"ranked": ranked, "tier": answer["tier"], "n": len(ranked),
                    "retrieval_ms": float(answer.get("retrieval_time_ms") or 0.0),
                    "round_trip_ms": round_trip, "channel_status": answer.get("channel_status", {})})
        if i % 250 == 0 or i == len(questions):
            say(f"{run}: {i}/{len(questions)} questions ({time.monotonic() - started:.0f} s)")
    return out


@contextlib.contextmanager
def gates_off(pipeline: Any) -> Iterator[None]:
    """Switch off the pipeline's evidence floor and support-tier gate (this process only)."""
    tiers = pipeline.tiers
    saved = (pipeline.passes_floor, tiers.support_label)
    pipeline.passes_floor = lambda ev, *a, **k: True
    tiers.support_label = lambda ev: tiers.SUPPORTED
    try:
        yield
    finally:
        pipeline.passes_floor, tiers.support_label = saved


def ungated(
    loc: Locations, questions: list[Question], ids: dict[int, str]
) -> dict[str, list[list[str]]] | str:
    """Rank every question in-process with the floor and tier gate off, per run. The sidecar must be
    stopped (this opens the store). Returns the rankings, or a note saying why it could not run."""
    try:
        from memcue.sidecar.embedding import Embedder
        from memcue.sidecar.recall import pipeline
        from memcue.sidecar.recall.channels import BM25, SEMANTIC
        from memcue.sidecar.store.memories import Store
    except ImportError as exc:
        return f"memcue internals not importable: {exc}"
    if not hasattr(pipeline, "passes_floor") or not hasattr(pipeline.tiers, "support_label"):
        return "the pipeline no longer has passes_floor / tiers.support_label to switch off"
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    store = Store(loc.database)
    embedder = Embedder(loc.models_dir)
    embedder.load()
    if embedder.state != "ready" or not store.bind_model(embedder.model_id, embedder.dim):
        return f"model not usable in-process: {embedder.error or store.vector_note}"
    requests = {
        "hybrid": {"channels": (SEMANTIC, BM25), "weights": dict(pipeline.DEFAULT_WEIGHTS)},
        "bm25": {"channels": (BM25,), "weights": dict(pipeline.DEFAULT_WEIGHTS)},
        "semantic": {"channels": (SEMANTIC, BM25), "weights": {**pipeline.DEFAULT_WEIGHTS, BM25: 0.0}},
    }
    out: dict[str, list[list[str]]] = {}
    try:
        with gates_off(pipeline):
            for run, fields in requests.items():
                ranked = []
                for q in questions:
                    req = pipeline.RecallRequest(query=q.text, project=q.project, limit=LIMIT, **fields)
                    answer = pipeline.recall(store, embedder, req)
                    ranked.append([ids.get(int(r["memory_id"]), "?") for r in answer["results"]])
                out[run] = ranked
                say(f"ungated {run}: {len(ranked)} questions ranked")
    finally:
        store.close()
    return out


def pipeline_constants() -> dict[str, Any]:
    """The recall settings the numbers depend on (read from memcue; empty where a name has moved)."""
    names = {
        "memcue.sidecar.recall.floor": ("COSINE_FLOOR", "SUPPORT_COSINE"),
        "memcue.sidecar.recall.tiers": ("MIN_COVERAGE", "WORDED_COSINE_SLACK"),
        "memcue.sidecar.recall.fusion": ("RRF_K",),
        "memcue.sidecar.recall.pipeline": ("DEFAULT_WEIGHTS", "CHANNEL_DEPTH", "RELATED_LIMIT"),
    }
    out: dict[str, Any] = {}
    for module_name, attrs in names.items():
        try:
            module = __import__(module_name, fromlist=["_"])
        except ImportError:
            continue
        for attr in attrs:
            if hasattr(module, attr):
                out[attr] = getattr(module, attr)
    return out


def stop_sidecar(env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "memcue", "stop"], env=env, capture_output=True, check=False,
                   timeout=60)


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


# -- report ----------------------------------------------------------------------------------------


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


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown tables."""
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
    cats = [*(CATEGORIES[c] for c in ANSWERABLE), "overall"]
    first = next(iter(metrics.values()))
    head = "| run | metric | " + " | ".join(f"{c} (n={first[c]['n']})" for c in cats) + " |"
    lines = [head, "|---|---|" + "---|" * len(cats)]
    for run, per_cat in metrics.items():
        for metric in (*(f"recall@{k}" for k in KS), "mrr"):
            cells = [f"{per_cat[c][metric]:.3f}" if per_cat[c]["n"] else "-" for c in cats]
            lines.append(f"| {run} | {metric} | " + " | ".join(cells) + " |")
    return lines


# -- main ------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help=f"locomo10.json (default {DEFAULT_DATA})")
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N",
                        help="use only the first N conversations")
    parser.add_argument("--max-questions", type=int, default=None, metavar="N",
                        help="ask at most N questions (answerable and adversarial together, in data order)")
    parser.add_argument("--no-ungated", action="store_true",
                        help="skip the in-process ranking with the evidence floor and tier gate off")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR,
                        help="results folder (default benchmarks/results)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary MEMCUE_HOME (sidecar stopped)")
    args = parser.parse_args(argv)

    if not args.data.is_file():
        say(f"error: {args.data} not found (pass --data PATH)")
        return 2
    digest = sha256_of(args.data)
    if digest != EXPECTED_SHA256:
        say(f"warning: {args.data} sha256 {digest} differs from the published {EXPECTED_SHA256}")
    ds = load_dataset(args.data, args.limit_conversations)
    questions = ds.questions[: args.max_questions] if args.max_questions else ds.questions
    answerable = [q for q in questions if q.category in ANSWERABLE]
    adversarial = [q for q in questions if q.category == 5]
    say(f"{len(ds.memories)} turns, {len(answerable)} answerable and {len(adversarial)} adversarial "
        f"questions; skipped {sum(ds.skipped.values())}")

    constants = pipeline_constants()
    home = Path(tempfile.mkdtemp(prefix="memcue-locomo-"))
    env = {**os.environ, "MEMCUE_HOME": str(home / "data"), "OPENBLAS_NUM_THREADS": "1"}
    os.environ["MEMCUE_HOME"] = env["MEMCUE_HOME"]
    loc = Locations(Path(env["MEMCUE_HOME"]))
    client = Client(loc, timeout_s=120)
    started = time.time()
    try:
        health = client.ensure_running()
        say(f"sidecar {health['version']} up (pid {health['pid']}) in {home}")
        ids = import_memories(client, ds.memories)
        t0 = time.monotonic()
        health = wait_for_vectors(client)
        embed_s = round(time.monotonic() - t0, 1)
        say(f"vectors ready in {embed_s} s (model {health['model']['id']}, state {health['model']['state']})")
        if health["model"]["state"] != "ready" or health.get("vector_note"):
            why = health["model"].get("error") or health.get("vector_note")
            say(f"warning: semantic search unavailable: {why}")
        answers = {run: ask_all(client, questions, ids, run) for run in RUNS}
        counts = client.health()["counts"]
    finally:
        client.close()
        stop_sidecar(env)
    db_bytes = sum(p.stat().st_size for p in loc.root.glob("memcue.db*") if p.is_file())

    index = {id(q): i for i, q in enumerate(questions)}
    ans_idx = [index[id(q)] for q in answerable]
    adv_idx = [index[id(q)] for q in adversarial]
    gold = [q.gold for q in answerable]
    report: dict[str, Any] = {"meta": {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "data": str(args.data), "data_sha256": digest, "data_sha256_ok": digest == EXPECTED_SHA256,
        "model_id": health["model"]["id"], "model_state": health["model"]["state"],
        "conversations": len({m["project"] for m in ds.memories}),
        "store": {"memories": len(ds.memories), "counts": counts, "db_bytes": db_bytes},
        "embed_s": embed_s,
        "questions": {"answerable": len(answerable), "adversarial": len(adversarial),
                      "per_category": dict(Counter(CATEGORIES[q.category] for q in questions))},
        "skipped": dict(ds.skipped),
        "evidence_ids_repaired": ds.repaired_ids, "evidence_ids_dropped": ds.dropped_ids,
        "unparsed_session_dates": ds.unparsed_dates,
        "limit": LIMIT, "runs": RUNS, "pipeline_constants": constants,
        "options": {"limit_conversations": args.limit_conversations, "max_questions": args.max_questions},
    }}
    report["gated"] = {}
    for run in RUNS:
        scores = [score(answers[run][i]["ranked"], g) for i, g in zip(ans_idx, gold, strict=True)]
        report["gated"][run] = by_category(answerable, scores)
    report["runs"] = {}
    for run in RUNS:
        sub = [answers[run][i] for i in ans_idx]
        report["runs"][run] = {
            "retrieval_ms_p50": percentile([a["retrieval_ms"] for a in answers[run]], 0.5),
            "retrieval_ms_p90": percentile([a["retrieval_ms"] for a in answers[run]], 0.9),
            "round_trip_ms_p50": percentile([a["round_trip_ms"] for a in answers[run]], 0.5),
            "round_trip_ms_p90": percentile([a["round_trip_ms"] for a in answers[run]], 0.9),
            "mean_results": round(statistics.fmean(a["n"] for a in sub), 2) if sub else None,
            "tiers": dict(Counter(a["tier"] for a in sub)),
            "channel_status": {ch: dict(Counter(a["channel_status"].get(ch, "-") for a in sub))
                               for ch in ("semantic", "bm25")},
        }
    report["adversarial"] = {run: abstention([answers[run][i] for i in adv_idx]) for run in RUNS}

    report["ungated"] = "skipped (--no-ungated)" if args.no_ungated else None
    if not args.no_ungated:
        say("ranking in-process with the evidence floor and tier gate off")
        ranked = ungated(loc, answerable, ids)
        if isinstance(ranked, str):
            say(f"ungated ranking not measured: {ranked}")
            report["ungated"] = ranked
        else:
            report["ungated"] = {run: by_category(answerable, [score(r, g) for r, g in zip(ranked[run], gold,
                                                                                             strict=True)])
                                 for run in ranked}
            report["gate_effects"] = {run: gate_effects([answers[run][i] for i in ans_idx], ranked[run], gold)
                                      for run in ranked}
    report["meta"]["wall_s"] = round(time.time() - started, 1)
    if not args.keep:
        shutil.rmtree(home, ignore_errors=True)
    else:
        say(f"kept {home}")

    text = markdown(report)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "locomo_recall.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (args.out / "locomo_recall.md").write_text(text, encoding="utf-8")
    print(text)
    say(f"wrote {args.out / 'locomo_recall.json'} and {args.out / 'locomo_recall.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
