"""Measure the cosine evidence floor of the default embedding model on LoCoMo.

For every answerable LoCoMo question (categories 1-4) it computes the cosine similarity between the
question and (a) its gold evidence turns, (b) 20 random turns of *other* conversations, which cannot be
evidence. The floor is the 99th percentile of (b), rounded up to 0.05; the support cosine is the median
of (a), rounded down to 0.05. Memory text is "[session date] speaker: text", as stored by the benchmark.

Run: ``.venv/bin/python benchmarks/calibrate_floor.py`` (about 2 minutes on 2 cores). Writes
``benchmarks/results/calibrate_floor.json``. The data is read from ``../shared`` and never copied.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from _common import RESULTS_DIR, say  # noqa: E402
from locomo_data import DEFAULT_DATA, turn_texts  # noqa: E402

from memcue.sidecar.runtime.embedding import Embedder  # noqa: E402


def main() -> int:
    """Embed every LoCoMo turn, compare questions with gold and unrelated turns, write ``--out`` (JSON,
    cosines; ``seconds`` in s) and print it. Returns the exit code (1 when the model does not load)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--out", default=str(RESULTS_DIR / "calibrate_floor.json"))
    args = parser.parse_args()
    data = json.loads(Path(args.data).read_text())
    emb = Embedder(Path(tempfile.mkdtemp(prefix="memcue-cal-")) / "models")
    emb.load()
    if emb.state != "ready":
        say(f"model failed: {emb.error}")
        return 1
    rng = random.Random(7)
    convs = [turn_texts(c["conversation"]) for c in data]
    t0 = time.time()
    vecs = []
    for turns in convs:
        ids = list(turns)
        mat = np.stack(emb.embed([turns[i] for i in ids]))
        vecs.append((ids, mat))
        say(f"embedded {sum(len(v[0]) for v in vecs)} turns")
    related, unrelated = [], []
    for ci, conv in enumerate(data):
        ids, mat = vecs[ci]
        index = {d: i for i, d in enumerate(ids)}
        others = [j for j in range(len(data)) if j != ci]
        for qa in conv["qa"]:
            if qa.get("category") not in (1, 2, 3, 4):
                continue
            gold = [index[e] for e in qa.get("evidence", []) if e in index]
            if not gold:
                continue
            q = emb.embed_query(qa["question"])
            related.extend(float(mat[g] @ q) for g in gold)
            for _ in range(20):
                oid, omat = vecs[rng.choice(others)]
                unrelated.append(float(omat[rng.randrange(len(oid))] @ q))
    rel, unr = np.array(related), np.array(unrelated)
    result = {
        "model": emb.model_id,
        "pairs_related": len(rel), "pairs_unrelated": len(unr),
        "related_percentiles": {p: round(float(np.percentile(rel, p)), 4) for p in (10, 25, 50, 75, 90)},
        "unrelated_percentiles": {p: round(float(np.percentile(unr, p)), 4) for p in (50, 90, 95, 99, 99.9)},
        "cosine_floor": math.ceil(float(np.percentile(unr, 99)) * 20) / 20,
        "support_cosine": math.floor(float(np.percentile(rel, 50)) * 20) / 20,
        "share_of_gold_above_floor": None,
        "seconds": round(time.time() - t0, 1),
    }
    result["share_of_gold_above_floor"] = round(float((rel >= result["cosine_floor"]).mean()), 4)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
