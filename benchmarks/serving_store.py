"""Stores of a given size for the serving benchmark, built once and cached.

A store of ``N`` memories holds LoCoMo dialogue turns (a quarter of ``N`` at most; the data set has about
5,900) and generated project memories for the rest (``hook_corpus``: the demo seed, then decisions, bugs,
how-tos, notes, preferences and deploy events), all in one project. It is built in process the way the
sidecar's worker builds it (write, extract entities, embed on the bulk session, baselines) and cached as
``<cache>/serving-<N>-<key>.db``, the key covering the data, the model and the code that shapes a row.
LoCoMo is read from ``../shared`` in place (CC BY-NC 4.0: never copied into the repository); without it
the store is all generated text.

Run alone to build the caches ahead of time: ``python benchmarks/serving_store.py 1000 27000 270000``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import REPO, say
from hook_corpus import seed_rows
from locomo_data import DEFAULT_DATA, load_dataset, sha256_of

from memcue.sidecar.recall import baselines, probe_vectors
from memcue.sidecar.runtime.embedding import Embedder
from memcue.sidecar.store import NewMemory, Store

DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "memcue-bench"
PROJECT = "/work/billing-api"
#: Code whose change invalidates a cached store: the text generated, the entities and baselines computed
#: per memory and the model. Schema changes do not: the sidecar migrates a cached store when it opens it.
STORE_CODE = ("memcue/sidecar/store/write/entities.py", "memcue/sidecar/recall/baseline.py",
              "memcue/sidecar/runtime/assets.py", "benchmarks/hook_corpus.py")
#: Rows written per transaction and embedded per step while building (progress is reported per step).
WRITE_CHUNK = 5000
EMBED_CHUNK = 512


def corpus(n: int, project: str = PROJECT, data: Path = DEFAULT_DATA) -> list[dict[str, Any]]:
    """``n`` memory rows (``NewMemory`` fields) for ``project``: LoCoMo turns first (at most ``n // 4``),
    then generated project memories. Deterministic."""
    turns: list[dict[str, Any]] = []
    if data.is_file():
        turns = load_dataset(data, None).memories[: n // 4]
    for t in turns:
        t["project"] = project
        t.pop("metadata", None)
    rest = seed_rows(project, random.Random(27), n - len(turns))
    for r in rest:
        r.pop("metadata", None)
    return turns + rest


def cache_key(n: int, model_id: str, data: Path = DEFAULT_DATA) -> str:
    """16 hex characters over ``n``, the LoCoMo file, the model id and ``STORE_CODE``."""
    h = hashlib.sha256(f"{n}:{model_id}:".encode())
    h.update((sha256_of(data) if data.is_file() else "no-locomo").encode())
    for rel in STORE_CODE:
        h.update((REPO / rel).read_bytes())
    return h.hexdigest()[:16]


def build(path: Path, rows: list[dict[str, Any]], emb: Embedder) -> dict[str, float]:
    """Write, embed and baseline ``rows`` into a new store at ``path``; returns the build's timings (s)
    and rates (memories/s)."""
    store = Store(path)
    t0 = time.monotonic()
    for i in range(0, len(rows), WRITE_CHUNK):
        store.remember_many([NewMemory(**r) for r in rows[i:i + WRITE_CHUNK]])
        say(f"  written {min(i + WRITE_CHUNK, len(rows))}/{len(rows)}")
    t_write = time.monotonic() - t0
    if not store.bind_model(emb.model_id, emb.dim):
        raise SystemExit(f"cannot store vectors: {store.vector_note}")
    probes = probe_vectors(emb.embed)
    t1, done = time.monotonic(), 0
    total = store.counts()["pending_embeddings"]
    while pending := store.pending_embeddings(EMBED_CHUNK):
        matrix = np.vstack(emb.embed_bulk([content for _, content, _, _ in pending]))
        ids = [mid for mid, _, _, _ in pending]
        store.set_embeddings([(mid, matrix[i].tobytes()) for i, mid in enumerate(ids)])
        store.set_baselines(list(zip(ids, baselines(matrix, probes).tolist(), strict=True)))
        done += len(ids)
        rate = done / max(1e-9, time.monotonic() - t1)
        say(f"  embedded {done}/{total} ({rate:.0f}/s, about {(total - done) / rate / 60:.1f} min left)")
    t_embed = time.monotonic() - t1
    store.optimize_if_due(every=0)
    store.close()
    return {"write_s": round(t_write, 1), "embed_s": round(t_embed, 1),
            "write_per_s": round(len(rows) / max(t_write, 1e-9)), "embed_per_s": round(done / max(t_embed, 1e-9))}


def cached_store(n: int, cache: Path = DEFAULT_CACHE, emb: Embedder | None = None) -> Path:
    """The path of a built store of ``n`` memories, building it first when the cache lacks it."""
    emb = emb or _embedder(cache)
    path = cache / f"serving-{n}-{cache_key(n, emb.model_id)}.db"
    if path.exists():
        return path
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".building")
    for leftover in cache.glob(tmp.name + "*"):
        leftover.unlink()
    say(f"building a store of {n} memories at {path} (once; later runs reuse it)")
    timings = build(tmp, corpus(n), emb)
    say(f"  built: {timings}")
    tmp.rename(path)
    return path


def _embedder(cache: Path) -> Embedder:
    emb = Embedder(cache / "models")
    emb.load()
    if emb.state != "ready":
        raise SystemExit(f"the embedding model did not load: {emb.error}")
    return emb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build (or find) the serving benchmark's cached stores.")
    parser.add_argument("sizes", nargs="+", type=int, help="store sizes in memories, e.g. 1000 27000 270000")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help=f"store cache (default {DEFAULT_CACHE})")
    args = parser.parse_args(argv)
    emb = _embedder(args.cache)
    for n in args.sizes:
        print(cached_store(n, args.cache, emb))
    return 0


if __name__ == "__main__":
    sys.exit(main())
