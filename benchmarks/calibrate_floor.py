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

from memcue.sidecar.embedding import Embedder  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def turns_of(conv: dict) -> dict[str, str]:
    """dia_id -> "[date] speaker: text" for one LoCoMo conversation."""
    c, out = conv["conversation"], {}
    for key, value in c.items():
        if key.startswith("session_") and isinstance(value, list):
            date = c.get(f"{key}_date_time", "")
            for turn in value:
                text = f"[{date}] {turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [image: {turn['blip_caption']}]"
                out[turn["dia_id"]] = text
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"))
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "calibrate_floor.json"))
    args = parser.parse_args()
    data = json.loads(Path(args.data).read_text())
    emb = Embedder(Path(tempfile.mkdtemp(prefix="memcue-cal-")) / "models")
    emb.load()
    if emb.state != "ready":
        print(f"model failed: {emb.error}", file=sys.stderr)
        return 1
    rng = random.Random(7)
    convs = [turns_of(c) for c in data]
    t0 = time.time()
    vecs = []
    for turns in convs:
        ids = list(turns)
        mat = np.stack(emb.embed([turns[i] for i in ids]))
        vecs.append((ids, mat))
        print(f"embedded {sum(len(v[0]) for v in vecs)} turns", file=sys.stderr)
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
