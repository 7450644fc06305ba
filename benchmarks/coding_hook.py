"""Coding memories through the real prompt hook: does the block Claude Code receives hold the right memory?

The data (``benchmarks/data/coding2/<split>/``, splits ``dev`` and ``test``; format in ``coding_hook_data.py``)
is a labelled team memory over a few projects (decisions, preferences, bugs, conventions, procedures, notes,
captured prompts, bookkeeping rows, superseded pairs, near-miss distractors) and prompts in five categories:
question, paraphrase, task_conflict, identifier and no_answer.

Per split, in a fresh temporary ``MEMCUE_HOME`` with a real sidecar and one temporary git folder per project
(its realpath is the project the hook resolves):

1. the rows are imported through ``POST /import`` (kind, pinned, created_at; ``source_id`` per row): a row that
   ``supersedes`` another is imported afterwards under the older row's ``source_id``, which the import path
   writes as a new version of it (``Store.update``, as ``memcue update``/``edit`` do); every supersession and
   the bookkeeping flags are then checked through ``POST /fetch``. The sidecar has no clock override, so every
   time is shifted by one offset that puts the split's ``reference_unix`` at the wall clock of the import;
2. it waits until every row has its vector;
3. each prompt runs the real hook (``python -I -S memcue/hooks/launch.py claude-code user-prompt-submit``, the
   command the installer writes) as a subprocess with a Claude Code UserPromptSubmit payload, cwd the
   project's folder and a fresh ``session_id`` per prompt (so the session ledger hides nothing); the memory
   ids of the additionalContext's ``<memory id=...>`` elements are mapped back to labels;
4. each prompt is then asked through ``POST /recall`` (limit 10, ``now`` = its shifted ``asked_at``) to show
   where the right memory ranked when the hook missed it.

Reported per split and category: share of answerable prompts with a right memory injected, injected
precision (pooled), share of no_answer prompts with nothing injected, superseded / bookkeeping / request rows
injected, hook wall p50 (ms), the targets of issue 15 and a table of every miss.

Usage::

    .venv/bin/python benchmarks/coding_hook.py                 # make bench-coding-hook (both splits)
    .venv/bin/python benchmarks/coding_hook.py --split dev --json

Results: ``benchmarks/results/coding_hook.json`` and ``.md``. Progress goes to stderr.
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
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import RESULTS_DIR, git_commit, git_dirty, injected_context, say, stop_sidecar, write_results
from coding_hook_data import DATA_ROOT, NOISE_KINDS, SPLITS, DataError, Memory, Split, chain_depth, load_split
from coding_hook_report import markdown, noise, score_prompt, summarise_split
from hook_corpus import payload

from memcue.client import Client, ClientError
from memcue.core.blocks import MEMORY_TAG
from memcue.core.paths import Locations
from memcue.core.project import resolve_project
from memcue.hooks import command

HOOK_ARGV = command("claude-code", "user-prompt-submit")
#: A memory element of a full block (``core.blocks``): its ``id`` attribute comes first.
MEMORY_ID = re.compile(rf'<{MEMORY_TAG} id="(\d+)"')
#: A memory address of a compact block (``memcue://<project>/<id>``).
ADDRESS_ID = re.compile(r"memcue://[^\s\"'<>]*/(\d+)")
#: Results asked of ``POST /recall`` per prompt for the miss table.
RECALL_LIMIT = 10
PROGRESS_EVERY = 20
SOURCE = "benchmark:coding2"


@dataclass
class Home:
    """One split's temporary world: the data dir, the project folders and their project keys, the
    environment the sidecar and the hook run with."""

    root: Path
    loc: Locations
    folders: dict[str, Path]
    keys: dict[str, str]
    env: dict[str, str]


def make_home(root: Path, projects: list[str]) -> Home:
    """A data dir and one git folder per project under ``root``; the environment drops inherited
    ``MEMCUE_*`` variables (a user's prompt-block or gate settings would change what is measured)."""
    folders: dict[str, Path] = {}
    for name in projects:
        folder = root / "work" / re.sub(r"[^A-Za-z0-9._-]", "-", name)
        (folder / ".git").mkdir(parents=True)
        folders[name] = folder
    loc = Locations(root / "home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCUE_")}
    env.update(MEMCUE_HOME=str(loc.root), OPENBLAS_NUM_THREADS="1")
    return Home(root, loc, folders, {n: resolve_project(str(f)) for n, f in folders.items()}, env)


def _root_label(m: Memory, by_id: dict[str, Memory]) -> str:
    """The first row of ``m``'s supersession chain (its ``source_id`` is the chain's)."""
    while m.supersedes:
        m = by_id[m.supersedes]
    return m.id


def _body(split: Split, m: Memory, key: str, shift: int, root: str) -> dict[str, Any]:
    """The ``POST /import`` entry of one row (a bookkeeping row as a ``note``: the sidecar flags it by its text)."""
    created = m.created_at + shift
    day = dt.datetime.fromtimestamp(created, dt.UTC).strftime("%Y%m%d")
    return {"content": m.content, "kind": "note" if m.kind == "bookkeeping" else m.kind, "project": key,
            "pinned": m.pinned, "source": SOURCE, "source_id": f"coding2:{split.name}:{root}",
            "created_at": float(created), "session_id": f"{m.project}-{day}",
            "metadata": {"label": m.id, "data_kind": m.kind}}


def import_split(client: Client, split: Split, home: Home, shift: int) -> tuple[dict[int, str], dict[str, Any]]:
    """Import the rows (new ones in one call, then each superseding row on its own) and check the result through
    ``POST /fetch``. Returns sidecar id -> label and the import facts. Raises ``ClientError``."""
    by_id = {m.id: m for m in split.memories}
    first = [m for m in split.memories if not m.supersedes]
    later = sorted((m for m in split.memories if m.supersedes), key=lambda m: chain_depth(m, by_id))
    ids: dict[str, int] = {}
    statuses: Counter[str] = Counter()
    out = client.import_batch([_body(split, m, home.keys[m.project], shift, m.id) for m in first])
    replaced: dict[str, int | None] = {}
    for m, res in zip(first, out, strict=True):
        statuses[res["status"]] += 1
        if res.get("id") is not None:
            ids[m.id] = int(res["id"])
    for m in later:
        (res,) = client.import_batch([_body(split, m, home.keys[m.project], shift, _root_label(m, by_id))])
        statuses[res["status"]] += 1
        if res.get("id") is not None:
            ids[m.id] = int(res["id"])
            replaced[m.id] = res.get("replaced")
    labels: dict[int, str] = {}
    for label, mid in ids.items():
        labels.setdefault(mid, label)  # a repeated text (a bookkeeping line) is one row: its first label
    rows = {int(r["memory_id"]): r for r in client.fetch(sorted(set(ids.values())))["results"]}
    ok = sum(1 for m in later if m.id in ids and m.supersedes in ids and replaced.get(m.id) == ids[m.supersedes]
             and rows.get(ids[m.supersedes], {}).get("superseded_by") == ids[m.id])
    bookkeeping = [m.id for m in split.memories if m.kind == "bookkeeping"]
    info = {"memories": len(split.memories), "stored": len(labels), "statuses": dict(statuses),
            "missing": [m.id for m in split.memories if m.id not in ids],
            "superseded_pairs": len(later), "superseded_ok": ok, "bookkeeping_rows": len(bookkeeping),
            "flagged_bookkeeping": sum(bool(rows.get(ids.get(x, -1), {}).get("bookkeeping")) for x in bookkeeping),
            "misflagged": sorted(x for x, mid in ids.items()
                                 if bool(rows.get(mid, {}).get("bookkeeping")) != (by_id[x].kind == "bookkeeping"))}
    say(f"[{split.name}] imported: {info['statuses']}; supersessions {ok}/{len(later)}; bookkeeping flagged "
        f"{info['flagged_bookkeeping']}/{len(bookkeeping)}")
    return labels, info


def injected_ids(context: str) -> list[int]:
    """Memory ids in an injected block, in order, each once (full block elements, else compact addresses)."""
    found = MEMORY_ID.findall(context) or ADDRESS_ID.findall(context)
    return list(dict.fromkeys(int(x) for x in found))


def run_hook(event: str, body: dict[str, Any], cwd: Path, env: dict[str, str]) -> tuple[float, int, str]:
    """Run the real Claude Code hook for ``event`` once with ``body`` on stdin; returns (wall ms, exit code,
    additionalContext)."""
    argv = HOOK_ARGV if event == "user-prompt-submit" else command("claude-code", event)
    started = time.perf_counter()
    proc = subprocess.run(argv, input=json.dumps(body).encode(), capture_output=True, env=env, cwd=cwd, timeout=30,
                          check=False)
    return (time.perf_counter() - started) * 1000, proc.returncode, injected_context(proc.stdout)


def session_starts(home: Home, labels: dict[int, str]) -> dict[str, list[str]]:
    """Each project's session-start block (the real SessionStart hook, source startup, a fresh session) as
    labels: what a new conversation holds before its first prompt."""
    out = {}
    for name, folder in home.folders.items():
        sid = str(uuid.uuid4())
        body = {"session_id": sid, "transcript_path": payload("", str(folder), sid)["transcript_path"],
                "cwd": str(folder), "hook_event_name": "SessionStart", "source": "startup"}
        _, _, context = run_hook("session-start", body, folder, home.env)
        out[name] = [labels.get(mid, f"?{mid}") for mid in injected_ids(context)]
    return out


def hook_all(split: Split, home: Home, labels: dict[int, str], gap_ms: float) -> list[dict[str, Any]]:
    """Every prompt of ``split`` through the real hook, ``gap_ms`` apart: wall ms, exit code, injected labels
    (``?<id>`` for a row not in the data) and the context's length."""
    runs = []
    started = time.monotonic()
    for i, p in enumerate(split.prompts, start=1):
        time.sleep(gap_ms / 1000)
        folder = home.folders[p.project]
        wall, code, context = run_hook("user-prompt-submit", payload(p.prompt, str(folder), str(uuid.uuid4())),
                                       folder, home.env)
        runs.append({"wall_ms": round(wall, 2), "exit_code": code, "context_chars": len(context),
                     "injected": [labels.get(mid, f"?{mid}") for mid in injected_ids(context)]})
        if i % PROGRESS_EVERY == 0 or i == len(split.prompts):
            say(f"[{split.name}] hook: {i}/{len(split.prompts)} prompts ({time.monotonic() - started:.1f} s)")
    return runs


def recall_all(client: Client, split: Split, home: Home, labels: dict[int, str], shift: int) -> list[dict[str, Any]]:
    """Every prompt through ``POST /recall`` (limit ``RECALL_LIMIT``, ``now`` = shifted asked_at): the top
    labels, where the first relevant one ranked (1-based) and its result label, the answer's tier and query type."""
    out = []
    for p in split.prompts:
        answer = client.recall(p.prompt, project=home.keys[p.project], limit=RECALL_LIMIT,
                               now=float(p.asked_at + shift))
        results = answer.get("results") or []
        ranked = [labels.get(int(r["memory_id"]), f"?{r['memory_id']}") for r in results]
        rank = next((k for k, x in enumerate(ranked, start=1) if x in p.relevant), None)
        out.append({"ranked": ranked, "result_labels": [str(r.get("tier") or "") for r in results],
                    "first_relevant_rank": rank,
                    "first_relevant_label": str(results[rank - 1].get("tier") or "") if rank else None,
                    "tier": answer.get("tier"), "query_type": answer.get("query_type")})
    return out


def run_split(split: Split, gap_ms: float, keep: bool) -> dict[str, Any]:
    """Set up, import, hook and recall one split (module docstring); the sidecar is always stopped and the
    temporary folder removed unless ``keep``. Raises ``ClientError`` when the sidecar fails."""
    root = Path(tempfile.mkdtemp(prefix=f"memcue-coding2-{split.name}-"))
    home = make_home(root, sorted({m.project for m in split.memories} | {p.project for p in split.prompts}))
    # The Client starts the sidecar from this process's environment: the same one the hook gets.
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("MEMCUE_")}
    os.environ["MEMCUE_HOME"] = home.env["MEMCUE_HOME"]
    client = Client(home.loc, timeout_s=120)
    try:
        health = client.ensure_running()
        say(f"[{split.name}] sidecar {health['version']} up (pid {health['pid']}) in {root}")
        shift = int(time.time()) - split.reference_unix
        labels, info = import_split(client, split, home, shift)
        t0 = time.monotonic()
        health = client.wait_idle(timeout_s=600)
        embed_s = round(time.monotonic() - t0, 1)
        if health["model"]["state"] != "ready" or not health.get("vector_search"):
            say(f"[{split.name}] warning: semantic search unavailable ({health['model'].get('error')})")
        starts = session_starts(home, labels)
        runs = hook_all(split, home, labels, gap_ms)
        probes = recall_all(client, split, home, labels, shift)
    finally:
        client.close()
        stop_sidecar(home.env)
        os.environ.pop("MEMCUE_HOME", None)
        os.environ.update(saved)
        if keep:
            say(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    scores = [score_prompt(split, i, r["injected"], starts[p.project]) for i, (p, r)
              in enumerate(zip(split.prompts, runs, strict=True))]
    per_prompt = [{"id": p.id, "project": p.project, "category": p.category, "prompt": p.prompt,
                   "relevant": list(p.relevant), "answerable": p.answerable, **r, **s, "recall": probe}
                  for p, r, s, probe in zip(split.prompts, runs, scores, probes, strict=True)]
    return {"split": split.name, "data": str(split.folder), "meta": split.meta,
            "projects": sorted(home.keys), "model_id": health["model"]["id"], "import": info, "embed_s": embed_s,
            "shift_s": shift, "exit_codes": dict(Counter(r["exit_code"] for r in runs)), "session_start": starts,
            "session_start_noise": {k: sum(v) for k, v in _sum_noise(split, starts).items()},
            "current_rows": dict(Counter(m.project for m in split.memories
                                         if m.kind not in NOISE_KINDS and m.id not in split.superseded())),
            "data_warnings": split.warnings,
            "summary": summarise_split(split, scores, [r["wall_ms"] for r in runs]), "per_prompt": per_prompt}


def _sum_noise(split: Split, starts: dict[str, list[str]]) -> dict[str, list[int]]:
    """Noise counts (``coding_hook_report.noise``) of every session-start block, per kind."""
    out: dict[str, list[int]] = {}
    for labels in starts.values():
        for k, v in noise(split, labels).items():
            out.setdefault(k, []).append(v)
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line options (``--help`` lists them)."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=[*SPLITS, "all"], default="all",
                        help="which split to run (default all: every split whose files exist)")
    parser.add_argument("--data", type=Path, default=DATA_ROOT,
                        help="data folder holding <split>/memories.jsonl and questions.jsonl "
                             "(default benchmarks/data/coding2)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results folder (default benchmarks/results)")
    parser.add_argument("--gap-ms", type=float, default=50.0, help="pause before each hook run (ms, default 50)")
    parser.add_argument("--json", action="store_true",
                        help="print the summaries as JSON on stdout instead of the Markdown report")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders (sidecar stopped)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; write ``coding_hook.json`` and ``.md`` to ``--out``. Returns the exit code: 0 done,
    1 a sidecar failed, 2 the data is missing or malformed."""
    args = parse_args(argv)
    started = time.time()
    names = list(SPLITS) if args.split == "all" else [args.split]
    report: dict[str, Any] = {"skipped": {}, "splits": []}
    splits = []
    for name in names:
        try:
            splits.append(load_split(args.data, name))
        except DataError as exc:
            if args.split != "all" or (args.data / name).exists():
                say(f"error: {exc}")
                return 2
            report["skipped"][name] = f"no data ({args.data / name})"
            say(f"skipping split {name}: no data at {args.data / name}")
    if not splits:
        say("error: no split to run")
        return 2
    for split in splits:
        say(f"[{split.name}] {len(split.memories)} rows, {len(split.prompts)} prompts")
        for warning in split.warnings:
            say(f"[{split.name}] data warning: {warning}")
        try:
            report["splits"].append(run_split(split, args.gap_ms, args.keep))
        except ClientError as exc:
            say(f"[{split.name}] error: {exc}")
            return 1
    report["meta"] = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "git_commit": git_commit(),
                      "dirty": git_dirty(), "hook_argv": [Path(HOOK_ARGV[0]).name, *HOOK_ARGV[1:]],
                      "model_id": report["splits"][0]["model_id"], "wall_s": round(time.time() - started, 1)}
    report = {"meta": report.pop("meta"), **report}
    text = markdown(report)
    if args.json:
        with contextlib.redirect_stdout(io.StringIO()):
            write_results(args.out, "coding_hook", report, text, ensure_ascii=False)
        print(json.dumps({"meta": report["meta"], "skipped": report["skipped"],
                          "splits": {r["split"]: r["summary"] for r in report["splits"]}}, indent=2,
                         ensure_ascii=False))
    else:
        write_results(args.out, "coding_hook", report, text, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
