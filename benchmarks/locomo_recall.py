"""Recall quality of memcue on LoCoMo: recall@5, recall@10 and MRR per question category.

Every dialogue turn of the LoCoMo conversations becomes one memory ("[session date] speaker: text",
plus the image caption when there is one) in a fresh temporary store served by the real sidecar.
Each answerable question (categories 1-4) is asked through ``POST /recall``, scoped to its
conversation's project with ``limit`` 10, in three runs on the same store:

- ``hybrid``: the default pipeline (every channel, weighted RRF, boosts);
- ``bm25``: ``mode="keyword"`` (BM25 only);
- ``semantic``: every other channel weighted 0 (they still run but add nothing to the ranking).

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
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import RESULTS_DIR, git_commit, say, stop_sidecar, write_results
from locomo_data import ANSWERABLE, CATEGORIES, DEFAULT_DATA, EXPECTED_SHA256, Question, load_dataset, sha256_of
from locomo_report import LIMIT, abstention, by_category, gate_effects, markdown, run_stats, score

from memcue.client import Client
from memcue.core.paths import Locations

#: Memories per ``/remember/batch`` call.
BATCH = 500
#: The three runs: extra fields of the ``POST /recall`` body.
RUNS: dict[str, dict[str, Any]] = {
    "hybrid": {},
    "bm25": {"mode": "keyword"},
    "semantic": {"weights": {"bm25": 0.0, "temporal": 0.0, "graph": 0.0, "hopfield": 0.0}},
}


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
def gates_off(floor: Any, support: Any) -> Iterator[None]:
    """Switch off the evidence floor and the support-tier gate (the recall stage modules ``floor`` and
    ``support``; this process only)."""
    saved = (floor.passes_floor, support.judge)
    floor.passes_floor = lambda ev, *a, **k: True
    support.judge = lambda ev: (support.SUPPORTED, "gate_off")
    try:
        yield
    finally:
        floor.passes_floor, support.judge = saved


def ungated(
    loc: Locations, questions: list[Question], ids: dict[int, str]
) -> dict[str, list[list[str]]] | str:
    """Rank every question in-process with the floor and tier gate off, per run. The sidecar must be
    stopped (this opens the store). Returns the rankings, or a note saying why it could not run."""
    try:
        from memcue.sidecar.recall import BM25, SEMANTIC, floor, pipeline, support
        from memcue.sidecar.runtime.embedding import Embedder
        from memcue.sidecar.store import Store
    except ImportError as exc:
        return f"memcue internals not importable: {exc}"
    if not hasattr(floor, "passes_floor") or not hasattr(support, "judge"):
        return "recall no longer has floor.passes_floor / support.judge to switch off"
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    store = Store(loc.database)
    embedder = Embedder(loc.models_dir)
    embedder.load()
    if embedder.state != "ready" or not store.bind_model(embedder.model_id, embedder.dim):
        return f"model not usable in-process: {embedder.error or store.vector_note}"
    requests = {
        "hybrid": {},
        "bm25": {"channels": (BM25,)},
        "semantic": {"channels": (SEMANTIC,)},
    }
    out: dict[str, list[list[str]]] = {}
    try:
        with gates_off(floor, support):
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
        "memcue.sidecar.recall.support": ("MIN_KEY_COVERAGE", "WORDED_COSINE_SLACK", "SUPPORT_MARGIN"),
        "memcue.sidecar.recall.fusion": ("RRF_K",),
        "memcue.sidecar.recall.classify": ("CHANNEL_WEIGHTS",),
        "memcue.sidecar.recall.boosts": ("ENTITY_BOOST", "ENTITY_BOOST_MAX", "AGREEMENT_BOOST"),
        "memcue.sidecar.recall.candidates": ("CHANNEL_DEPTH",),
        "memcue.sidecar.recall.outcome": ("RELATED_LIMIT",),
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


# -- main ------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line options (``--help`` lists them)."""
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
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; write ``locomo_recall.json`` and ``.md`` to ``--out``. Returns the exit code
    (2 when the data file is missing).
    Longer than 60 lines: the run's steps in the order they happen, each with its own error exit."""
    args = parse_args(argv)
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
    report["runs"] = {run: run_stats(answers[run], [answers[run][i] for i in ans_idx]) for run in RUNS}
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

    write_results(args.out, "locomo_recall", report, markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
