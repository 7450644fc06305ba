"""The coding2 sets in process, one injection change switched off at a time (issue 15's ablation).

Each split of ``benchmarks/data/coding2`` is stored once in a real SQLite store with the real embedding model
(vectors and per-memory baselines as the sidecar's worker computes them; a superseding row is written through
``Store.update``), then every prompt is asked through ``recall.pipeline.recall`` (limit 8, its project, ``now``
= its ``asked_at``) and the prompt hook's policy (``inject.policy.injectable``) picks what would be injected.
That is the real hook's decision without the hook's process, socket and session ledger
(``benchmarks/coding_hook.py`` measures through those); numbers can differ from it by a prompt or two (the real
hook's keyword race, its clock).

Configurations (each the full pipeline with one change undone):

| config | what is switched off |
|---|---|
| ``full`` | nothing |
| ``no_identifiers`` | identifiers matched whole (``query.identifiers``: support, sibling cap, ``IDENTIFIER_BOOST``) |
| ``no_task_kinds`` | task prompts touching a constraining memory (``store.CONSTRAINING_KINDS`` emptied) |
| ``no_standout`` | the closest memory standing out (``support.STANDOUT_GAP`` out of reach) |
| ``no_repeat_work`` | a task supported by a strongly close memory carrying a key term (``support.repeats_work``) |
| ``no_cosine_gap`` | the hook leaving out results far below the best (``inject.policy.INJECT_COSINE_GAP`` unlimited) |

The ``ceiling_*`` columns bound what any injection gate could reach over the same ranking: the share of answerable
prompts (and of paraphrases) whose right memory is the recall's first result (``top1``) or among its first three
(``top3``), whatever its support label. A gate cannot inject a memory the ranking does not put near the top.

Usage: ``.venv/bin/python benchmarks/coding_ablation.py [--split dev|test|all] [--configs full,no_standout]``.
Results: ``benchmarks/results/coding_ablation.{json,md}``; progress on stderr. Takes about a minute.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _common import REPO, RESULTS_DIR, git_commit, say, write_results  # noqa: E402

DEFAULT_DATA = REPO / "benchmarks" / "data" / "coding2"
from coding_hook_data import Split, load_split  # noqa: E402

from memcue.sidecar.inject import policy  # noqa: E402
from memcue.sidecar.inject.policy import injectable  # noqa: E402
from memcue.sidecar.recall import boosts, pipeline, support  # noqa: E402
from memcue.sidecar.recall.baseline import baselines, probe_vectors  # noqa: E402
from memcue.sidecar.runtime.embedding import Embedder  # noqa: E402
from memcue.sidecar.store import NewMemory, Store  # noqa: E402

#: Results the prompt hook asks recall for (``inject.service.PROMPT_LIMIT``).
HOOK_LIMIT = 8
CONFIGS = ("full", "no_identifiers", "no_task_kinds", "no_standout", "no_repeat_work", "no_cosine_gap")
NOISE_KINDS = ("bookkeeping", "request")


@contextlib.contextmanager
def switched_off(config: str) -> Iterator[None]:
    """Undo one change for the duration (this process only); see the module docstring."""
    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, value: Any) -> None:
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    if config == "no_identifiers":
        patch(boosts, "identifiers", lambda text: [])
    elif config == "no_task_kinds":
        patch(support, "CONSTRAINING_KINDS", ())
    elif config == "no_standout":
        patch(support, "STANDOUT_GAP", float("inf"))
    elif config == "no_repeat_work":
        patch(support, "repeats_work", lambda s, strong: False)
    elif config == "no_cosine_gap":
        patch(policy, "INJECT_COSINE_GAP", float("inf"))
    try:
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


def build(split: Split, folder: Path, emb: Embedder) -> tuple[Store, dict[int, str]]:
    """Store ``split``'s rows (superseding ones through ``Store.update``) and embed them; returns the store
    and memory id -> row label."""
    store = Store(folder / f"{split.name}.db")
    first = [m for m in split.memories if not m.supersedes]
    written = store.remember_many([NewMemory(content=m.content, kind=m.kind, project=m.project, pinned=m.pinned,
                                             created_at=float(m.created_at), source="benchmark:coding2",
                                             source_id=f"coding2:{m.id}") for m in first])
    label = {m.id: int(r.id) for m, r in zip(first, written, strict=True)}
    for m in sorted((m for m in split.memories if m.supersedes), key=lambda m: m.created_at):
        res = store.update(label[m.supersedes], NewMemory(content=m.content, kind=m.kind, project=m.project,
                                                          pinned=m.pinned, created_at=float(m.created_at),
                                                          source="benchmark:coding2", source_id=f"coding2:{m.id}"))
        label[m.id] = int(res.id)
    assert store.bind_model(emb.model_id, emb.dim), store.vector_note
    probes = probe_vectors(emb.embed)
    while rows := store.pending_embeddings(256):
        matrix = np.vstack(emb.embed_bulk([content for _, content, _, _ in rows]))
        store.set_embeddings([(mid, matrix[i].tobytes()) for i, (mid, _, _, _) in enumerate(rows)])
        base = baselines(matrix, probes)
        store.set_baselines([(mid, float(base[i])) for i, (mid, _, _, _) in enumerate(rows)])
    return store, {mid: name for name, mid in label.items()}


def ask(store: Store, emb: Embedder, split: Split, labels: dict[int, str]) -> dict[str, Any]:
    """Every prompt of ``split`` through recall and the hook's policy: the counts per category."""
    stale = {m.supersedes for m in split.memories if m.supersedes}
    noise = {m.id for m in split.memories if m.kind in NOISE_KINDS} | stale
    by: dict[str, Counter] = {}
    for p in split.prompts:
        answer = pipeline.recall(store, emb, pipeline.RecallRequest(query=p.prompt, project=p.project,
                                                                    limit=HOOK_LIMIT, now=float(p.asked_at)))
        got = [labels.get(r["memory_id"], "?") for r in injectable(answer, HOOK_LIMIT)]
        c = by.setdefault(p.category, Counter())
        c["n"] += 1
        c["injected"] += len(got)
        c["right"] += sum(1 for g in got if g in p.relevant)
        c["noise"] += sum(1 for g in got if g in noise)
        c["hit" if p.relevant else "clean"] += bool(set(got) & set(p.relevant)) if p.relevant else not got
        ranked = [labels.get(r["memory_id"], "?") for r in answer["results"]]
        c["top1"] += bool(set(ranked[:1]) & set(p.relevant))
        c["top3"] += bool(set(ranked[:3]) & set(p.relevant))
    return summary(by)


def summary(by: dict[str, Counter]) -> dict[str, Any]:
    """Per category and overall: right memory injected (answerable), precision, nothing injected (no_answer)."""
    total = sum(by.values(), Counter())
    answerable = total["n"] - by.get("no_answer", Counter())["n"]
    out: dict[str, Any] = {"categories": {k: dict(v) for k, v in sorted(by.items())}}
    out["right_injected"] = round(total["hit"] / answerable, 3) if answerable else None
    out["precision"] = round(total["right"] / total["injected"], 3) if total["injected"] else None
    na = by.get("no_answer", Counter())
    out["no_answer_clean"] = round(na["clean"] / na["n"], 3) if na["n"] else None
    for cat in ("paraphrase", "task_conflict", "identifier", "question"):
        c = by.get(cat, Counter())
        out[cat] = round(c["hit"] / c["n"], 3) if c["n"] else None
    out["noise_injected"] = total["noise"]
    for k in ("top1", "top3"):  # the ceiling of any injection gate over this ranking (one or three memories)
        out[f"ceiling_{k}"] = round(total[k] / answerable, 3) if answerable else None
        para = by.get("paraphrase", Counter())
        out[f"ceiling_{k}_paraphrase"] = round(para[k] / para["n"], 3) if para["n"] else None
    return out


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: one table per split, one row per configuration."""
    lines = ["# coding2 in process: each injection change switched off (issue 15 ablation)", "",
             f"- commit {report['commit']}; model {report['model']}; limit {HOOK_LIMIT}; "
             "`inject.policy.injectable` on `recall.pipeline.recall` (see the script's docstring)", ""]
    cols = ("right_injected", "paraphrase", "task_conflict", "identifier", "question", "precision",
            "no_answer_clean", "noise_injected", "ceiling_top1", "ceiling_top1_paraphrase", "ceiling_top3",
            "ceiling_top3_paraphrase")
    for split, rows in report["splits"].items():
        lines += [f"## {split}", "", "| config | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
        for config, s in rows.items():
            lines.append(f"| {config} | " + " | ".join("" if s[c] is None else str(s[c]) for c in cols) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--split", choices=("dev", "test", "all"), default="all")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated: " + ", ".join(CONFIGS))
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder with dev/ and test/ (default: %(default)s)")
    args = ap.parse_args(argv)
    configs = [c for c in args.configs.split(",") if c]
    if unknown := [c for c in configs if c not in CONFIGS]:
        ap.error(f"unknown config(s): {', '.join(unknown)}")
    emb = Embedder(Path(tempfile.mkdtemp(prefix="memcue-ablation-")) / "models")
    emb.load()
    report: dict[str, Any] = {"commit": git_commit(), "model": emb.model_id, "splits": {}}
    with tempfile.TemporaryDirectory(prefix="memcue-ablation-") as tmp:
        for name in (("dev", "test") if args.split == "all" else (args.split,)):
            split = load_split(args.data, name)
            t0 = time.monotonic()
            store, labels = build(split, Path(tmp), emb)
            say(f"{name}: {len(split.memories)} rows stored and embedded ({time.monotonic() - t0:.0f} s)")
            report["splits"][name] = {}
            for config in configs:
                with switched_off(config):
                    report["splits"][name][config] = ask(store, emb, split, labels)
                say(f"{name} {config}: {report['splits'][name][config]['right_injected']} right injected")
            store.close()
    text = markdown(report)
    write_results(RESULTS_DIR, "coding_ablation", report, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
