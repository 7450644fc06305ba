"""LoCoMo, in process: the full recall pipeline, one stage switched off at a time, and abstention.

The LoCoMo turns are stored once in a real SQLite store with the real embedding model (vectors and
per-memory baselines as the sidecar computes them); the store is cached under ``--cache`` keyed by the
data, the model and the code that shapes the store, so later runs skip the ~100 s of embedding. Then,
for every configuration, each answerable question (categories 1-4) is asked through
``memcue.sidecar.recall.pipeline.recall`` scoped to its conversation, limit 10:

- ``full``: the default pipeline, as answered (after the evidence floor and support tiers);
- ``full_ungated``: the same ranking with the support gate off (``RecallOptions(support_gate=False)``);
- ``bm25`` / ``semantic`` / ``plain_rrf``: single channels alone (no boosts), and semantic + BM25 at equal
  weights (no boosts): the baselines;
- ``no_<stage>``: the full pipeline without one channel (temporal, graph, hopfield), without every
  boost, or without one boost (owner, session context, entity, agreement).

Abstention: each conversation's answerable questions asked against the next conversation's store
(``cross_store``: share ending in tier none or related, target >= 90%), the share of answerable questions
ending none/related in their own store (target <= 5%), and category 5 (adversarial) answered supported.

Usage: ``.venv/bin/python benchmarks/locomo_ablation.py [--configs full,bm25] [--max-questions N]``.
Results: ``benchmarks/results/locomo_ablation.json`` and ``.md``; progress on stderr.
The data set (CC BY-NC 4.0) is read in place and never copied into the repository.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import os
import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _common import REPO, RESULTS_DIR, git_commit, percentiles, say, write_results  # noqa: E402
from locomo_data import ANSWERABLE, CATEGORIES, DEFAULT_DATA, Question, load_dataset, sha256_of  # noqa: E402
from locomo_report import LIMIT, by_category, score  # noqa: E402

from memcue.sidecar.inject.policy import injectable  # noqa: E402
from memcue.sidecar.recall import (  # noqa: E402  # noqa: E402  # noqa: E402
    ALL_CHANNELS,
    BM25,
    GRAPH,
    HOPFIELD,
    SEMANTIC,
    TEMPORAL,
    RecallOptions,
    baselines,
    boosts,
    pipeline,
    probe_vectors,
)
from memcue.sidecar.runtime.embedding import Embedder  # noqa: E402
from memcue.sidecar.store import NewMemory, Store  # noqa: E402

#: Code whose change invalidates a cached store (what is written per memory).
STORE_CODE = ("memcue/sidecar/store/sqlite/memories.py", "memcue/sidecar/store/write/prepare.py",
              "memcue/sidecar/store/write/entities.py", "memcue/sidecar/store/sqlite/graph.py",
              "memcue/sidecar/store/sqlite/migrations.py", "memcue/sidecar/recall/baseline.py",
              "memcue/sidecar/runtime/assets.py")
#: Results a prompt hook injects at most (``MEMCUE_HOOK_RECALL_LIMIT`` default).
HOOK_LIMIT = 8
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "memcue-bench"

#: Configurations: request overrides (channels, weights) and whether the support gate and boosts are on.
CONFIGS: dict[str, dict[str, Any]] = {
    "full": {},
    "full_ungated": {"gate": False},
    "bm25": {"channels": (BM25,), "gate": False, "boosts": False},
    "semantic": {"channels": (SEMANTIC,), "gate": False, "boosts": False},
    "plain_rrf": {"channels": (SEMANTIC, BM25), "weights": {SEMANTIC: 1.0, BM25: 1.0}, "gate": False,
                  "boosts": False},
    "no_temporal": {"drop": TEMPORAL, "gate": False},
    "no_graph": {"drop": GRAPH, "gate": False},
    "no_hopfield": {"drop": HOPFIELD, "gate": False},
    "no_boosts": {"boosts": False, "gate": False},
    "no_owner_boost": {"boost_off": "OWNER_BOOST", "gate": False},
    "no_session_context": {"boost_off": "SESSION_CONTEXT_GAMMA", "gate": False},
    "no_entity_boost": {"boost_off": "ENTITY_BOOST", "gate": False},
    "no_agreement_boost": {"boost_off": "AGREEMENT_BOOST", "gate": False},
    "no_time_window_boost": {"boost_off": "TIME_WINDOW_BOOST", "gate": False},
}


def cache_key(data: Path, model_id: str) -> str:
    """sha256 over the data file, the model id and the store-shaping code: 16 hex characters."""
    h = hashlib.sha256(sha256_of(data).encode() + model_id.encode())
    for rel in STORE_CODE:
        h.update((REPO / rel).read_bytes())
    return h.hexdigest()[:16]


def build_store(path: Path, memories: list[dict[str, Any]], emb: Embedder) -> None:
    """Write every turn, embed it and compute its baseline (as the sidecar's worker does)."""
    store = Store(path)
    store.remember_many([NewMemory(**m) for m in memories])
    assert store.bind_model(emb.model_id, emb.dim), store.vector_note
    probes = probe_vectors(emb.embed)
    t0, done = time.monotonic(), 0
    while rows := store.pending_embeddings(256):
        matrix = np.vstack(emb.embed_bulk([content for _, content, _, _ in rows]))
        store.set_embeddings([(mid, matrix[i].tobytes()) for i, (mid, _, _, _) in enumerate(rows)])
        base = baselines(matrix, probes)
        store.set_baselines([(mid, float(base[i])) for i, (mid, _, _, _) in enumerate(rows)])
        done += len(rows)
        say(f"embedded {done}/{len(memories)} ({time.monotonic() - t0:.0f} s)")
    store.close()


@contextlib.contextmanager
def boosts_off(off: bool | str) -> Iterator[None]:
    """Zero the boost constants for one configuration (this process only): every one when ``off`` is True,
    the one named by ``off`` when it is a name."""
    names = ("ENTITY_BOOST", "AGREEMENT_BOOST", "OWNER_BOOST", "SESSION_CONTEXT_GAMMA", "TIME_WINDOW_BOOST")
    saved = {n: getattr(boosts, n) for n in names}
    for n in names:
        if off is True or off == n:
            setattr(boosts, n, 0.0)
    try:
        yield
    finally:
        for n, v in saved.items():
            setattr(boosts, n, v)


def ask(store: Store, emb: Embedder, questions: list[Question], config: dict[str, Any], nows: dict[str, float],
        *, project_of: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Ask ``questions`` under ``config``; per question the ranked dia_ids, tier, results and time (ms)."""
    channels = config.get("channels", ALL_CHANNELS)
    if "drop" in config:
        channels = tuple(c for c in channels if c != config["drop"])
    services = pipeline.RecallServices(config=RecallOptions(support_gate=config.get("gate", True)))
    out = []
    with boosts_off(config.get("boost_off") or not config.get("boosts", True)):
        for q in questions:
            project = (project_of or {}).get(q.project, q.project)
            req = pipeline.RecallRequest(query=q.text, project=project, limit=LIMIT, channels=channels,
                                         weights=config.get("weights"), now=nows[q.project])
            answer = pipeline.recall(store, emb, req, services)
            ids = [r["memory_id"] for r in answer["results"]]
            rows = store.fetch(ids)
            out.append({"ranked": [rows[i]["metadata"].get("dia_id", "?") for i in ids], "tier": answer["tier"],
                        "ms": answer["retrieval_time_ms"], "query_type": answer["query_type"],
                        "injects": bool(injectable(answer, HOOK_LIMIT))})
    return out


def summary(questions: list[Question], answers: list[dict[str, Any]]) -> dict[str, Any]:
    """Per category and overall recall@k/MRR, tier shares and retrieval time percentiles (ms)."""
    scores = [score(a["ranked"], q.gold) for q, a in zip(questions, answers, strict=True)]
    tiers = Counter(a["tier"] for a in answers)
    return {"metrics": by_category(questions, scores),
            "tiers": {t: round(n / max(1, len(answers)), 4) for t, n in tiers.items()},
            "retrieval_ms": percentiles([a["ms"] for a in answers])}


def abstained_share(answers: list[dict[str, Any]]) -> float:
    """Share of answers ending in tier none or related."""
    return round(sum(a["tier"] in ("none", "related") for a in answers) / max(1, len(answers)), 4)


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown tables."""
    meta = report["meta"]
    lines = ["# LoCoMo ablation (memcue, in process)", "",
             f"- date: {meta['date']}; commit: {meta['git_commit']}; model: {meta['model_id']}",
             f"- {meta['memories']} memories; {meta['answerable']} answerable, {meta['adversarial']} adversarial "
             "questions; limit 10; recall@k = share of gold turns in the top k; MRR = 1/rank of the first gold turn",
             "", "| config | multi-hop R@10 | temporal R@10 | open-domain R@10 | single-hop R@10 | R@5 | R@10 | MRR |"
             " supported | p50 ms |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, res in report["configs"].items():
        m = res["metrics"]
        cats = [m.get(CATEGORIES[c], {}).get("recall@10", "") for c in (1, 2, 3, 4)]
        lines.append(f"| {name} | " + " | ".join(str(c) for c in cats)
                     + f" | {m['overall']['recall@5']} | {m['overall']['recall@10']} | {m['overall']['mrr']} |"
                     f" {res['tiers'].get('supported', 0)} | {res['retrieval_ms'].get('p50')} |")
    if "abstention" in report:
        a = report["abstention"]
        lines += ["", "## Abstention", "",
                  "| measure | share | target |", "|---|---|---|",
                  f"| answerable asked of another conversation's store: none or related | {a['cross_store']} |"
                  " >= 0.90 |",
                  f"| answerable in their own store: none or related | {a['own_store']} | <= 0.05 |",
                  f"| adversarial (category 5): supported | {a['adversarial_supported']} | low |",
                  "| adversarial (category 5): a prompt hook would inject something | "
                  f"{a['adversarial_injected']} | low |",
                  f"| answerable asked of another conversation's store: a prompt hook would inject | "
                  f"{a['cross_store_injected']} | low |",
                  f"| answerable in their own store: a prompt hook would inject | {a['own_store_injected']} | high |"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the ablation; write ``locomo_ablation.json`` and ``.md``. Returns the exit code.
    Longer than 60 lines: its options, then the run's steps in the order they happen."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated, of: " + ", ".join(CONFIGS))
    parser.add_argument("--max-questions", type=int, default=None)
    parser.add_argument("--no-abstention", action="store_true")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help=f"store cache (default {DEFAULT_CACHE})")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        say(f"error: {args.data} not found (pass --data PATH)")
        return 2
    names = [n for n in args.configs.split(",") if n]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        say(f"error: unknown config(s) {unknown}; known: {', '.join(CONFIGS)}")
        return 2
    ds = load_dataset(args.data, None)
    emb = Embedder(args.cache / "models")
    emb.load()
    if emb.state != "ready":
        say(f"error: model did not load: {emb.error}")
        return 1
    path = args.cache / f"locomo-{cache_key(args.data, emb.model_id)}.db"
    if not path.exists():
        args.cache.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".building")
        for p in tmp.parent.glob(tmp.name + "*"):
            p.unlink()
        build_store(tmp, ds.memories, emb)
        shutil.move(tmp, path)
    store = Store(path)
    assert store.bind_model(emb.model_id, emb.dim), store.vector_note
    questions = ds.questions[: args.max_questions] if args.max_questions else ds.questions
    answerable = [q for q in questions if q.category in ANSWERABLE]
    adversarial = [q for q in questions if q.category == 5]
    last = {}
    for m in ds.memories:
        last[m["project"]] = max(last.get(m["project"], 0.0), m["created_at"])
    nows = {p: t + 86400 for p, t in last.items()}
    report: dict[str, Any] = {"meta": {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "git_commit": git_commit(),
        "model_id": emb.model_id, "memories": len(ds.memories), "answerable": len(answerable),
        "adversarial": len(adversarial), "store": str(path)}, "configs": {}}
    full_answers = None
    for name in names:
        t0 = time.monotonic()
        answers = ask(store, emb, answerable, CONFIGS[name], nows)
        report["configs"][name] = summary(answerable, answers)
        if name == "full":
            full_answers = answers
        m = report["configs"][name]["metrics"]["overall"]
        say(f"{name}: R@10 {m['recall@10']} MRR {m['mrr']} ({time.monotonic() - t0:.0f} s)")
    if not args.no_abstention:
        projects = sorted({q.project for q in answerable})
        other = {p: projects[(i + 1) % len(projects)] for i, p in enumerate(projects)}
        cross = ask(store, emb, answerable, CONFIGS["full"], {**nows, **{p: nows[other[p]] for p in projects}},
                    project_of=other)
        own = full_answers or ask(store, emb, answerable, CONFIGS["full"], nows)
        adv = ask(store, emb, adversarial, CONFIGS["full"], nows)
        report["abstention"] = {
            "cross_store": abstained_share(cross), "own_store": abstained_share(own),
            "adversarial_supported": round(1 - abstained_share(adv), 4),
            "adversarial_injected": round(sum(a["injects"] for a in adv) / max(1, len(adv)), 4),
            "cross_store_injected": round(sum(a["injects"] for a in cross) / max(1, len(cross)), 4),
            "own_store_injected": round(sum(a["injects"] for a in own) / max(1, len(own)), 4),
            "cross_store_by_type": {t: abstained_share([a for a in cross if a["query_type"] == t])
                                    for t in sorted({a["query_type"] for a in cross})},
        }
        say(f"abstention: {report['abstention']}")
    store.close()
    write_results(args.out, "locomo_ablation", report, markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
