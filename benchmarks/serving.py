"""Serving benchmark (issue 4): start-up, recall, the hook, three agents at once, the sidecar down, ingest
and memory, on cached stores of 1,000, 27,000 and 270,000 memories.

For each size in ``--sizes`` the store cached by ``serving_store.py`` is copied into a fresh temporary
``MEMCUE_HOME`` (migrated and its rows moved to the project a temporary git folder resolves to, so the
hook's project is the store's), then:

1. start-up, 3 times: ms from ``Popen`` to keyword-ready (``POST /recall`` answers with results) and to
   semantic-ready (``/health``: model ready and vector search on, and a recall with semantic status ok);
2. sidecar recall: ``--runs`` prompts to ``POST /hooks/claude-code/user-prompt-submit`` (hook mode) and
   ``--runs`` others to ``POST /recall`` (question mode), 100 ms apart: server ``retrieval_time_ms`` and
   client round trip (ms);
3. the real hook as a subprocess, ``--runs`` times 100 ms apart after 5 warm-up runs: wall time (ms);
4. three agents at once: 3 threads running the hook back to back (``--runs``/3 each); p90 over the idle p90;
5. ingest: 2,000 new memories through ``POST /remember/batch`` (200 a call), memories/s stored and embedded;
6. resident memory of the sidecar (``VmRSS``/``VmHWM``, MB) after the runs and after the ingest;
7. the sidecar down: 30 hook runs with ``MEMCUE_HOOK_SPAWN=0`` (ms; prompts must land in the spool), then
   3 runs that start the sidecar themselves (ms; each prompt must reach the store).

Prompts are distinct across steps, so no step is answered from another's caches. Sizes whose store is not
cached are skipped unless ``--build``. Results: ``serving.json`` and ``serving.md`` in ``--out``.
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import itertools
import os
import platform
import random
import shutil
import sys
import tempfile
import time
import traceback
import uuid
from pathlib import Path
from typing import Any

from _common import RESULTS_DIR, git_commit, git_dirty, percentiles, say, stop_sidecar, write_results
from hook_latency import HOOK_ARGS, WARMUP_RUNS, hook_stdin, run_process, time_hook
from serving_measure import (
    concurrent_hooks,
    health,
    hook_starts_sidecar,
    http_client,
    ingest,
    memory_mb,
    prompt_pool,
    sidecar_hook_mode,
    sidecar_question_mode,
    spool_records,
    time_start_up,
    wait_idle,
    wait_stored,
)
from serving_store import DEFAULT_CACHE, cache_key, cached_store

from memcue.core.paths import Locations
from memcue.core.project import resolve_project
from memcue.sidecar.runtime.assets import MODEL_ID, assemble_default_model
from memcue.sidecar.store import Store
from memcue.sidecar.store.sqlite import connect

#: Targets per measurement: {store size: limit}; ``None`` as the size means every size.
TARGETS: dict[str, dict[int | None, float]] = {
    "keyword_ready_ms": {27000: 1000.0}, "semantic_ready_ms": {27000: 3000.0},
    "recall_p50_ms": {27000: 25.0, 270000: 100.0},
    "hook_p50_ms": {27000: 60.0}, "hook_p90_ms": {27000: 100.0},
    "concurrent_ratio": {None: 1.5}, "down_p90_ms": {None: 100.0},
    "ingest_per_s": {None: 300.0}, "rss_mb": {None: 350.0},
}
STARTS = 3
GAP_MS = 100.0
DOWN_RUNS = 30
SPAWN_RUNS = 3
INGEST_TOTAL = 2000
INGEST_BATCH = 200
AGENTS = 3
PROBE = "how do I replay a stripe webhook locally?"


def target(name: str, size: int) -> float | None:
    """The limit of measurement ``name`` at ``size`` memories, or None where no target applies."""
    limits = TARGETS[name]
    return limits.get(size, limits.get(None))


def store_path(n: int) -> Path:
    """Where ``serving_store`` caches the store of ``n`` memories (it may not exist yet)."""
    return DEFAULT_CACHE / f"serving-{n}-{cache_key(n, MODEL_ID)}.db"


def find_store(n: int, build: bool) -> tuple[Path | None, str]:
    """The cached store of ``n`` memories, or (None, why it is skipped). Builds it with ``build``, unless
    another process is building it now."""
    path = store_path(n)
    if path.exists():
        return path, ""
    if path.with_suffix(".building").exists():
        return None, f"the store of {n} is being built right now ({path.with_suffix('.building')}); try later"
    if not build:
        return None, (f"no cached store of {n} ({path}); build it with "
                      f"`python benchmarks/serving_store.py {n}` or --build")
    return cached_store(n), ""


def build_timings(log: Path | None, db: Path) -> dict[str, Any] | None:
    """The ``built: {...}`` timings (s, memories/s) ``serving_store`` logged for ``db``, from a saved log."""
    if log is None or not log.is_file():
        return None
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    for i, line in enumerate(lines):
        if line.startswith("building a store") and f" at {db} " in line + " ":
            for later in lines[i + 1:]:
                if later.strip().startswith("built:"):
                    return dict(ast.literal_eval(later.split("built:", 1)[1].strip()))
                if later.startswith("building a store"):
                    break
    return None


def prepare_home(db: Path, root: Path) -> tuple[Locations, str, dict[str, str], dict[str, Any]]:
    """A data dir under ``root`` holding a copy of ``db`` (migrated; every row moved to the project of a
    new git folder under ``root``, statistics re-analysed) and the model folder. Returns the locations, the project, the
    environment for the sidecar and the hook (inherited ``MEMCUE_*`` variables dropped) and set-up facts."""
    project_dir = root / "work" / "billing-api"
    (project_dir / ".git").mkdir(parents=True)
    project = resolve_project(str(project_dir))
    loc = Locations(root / "home")
    loc.root.mkdir(mode=0o700)
    t0 = time.monotonic()
    shutil.copyfile(db, loc.database)
    copy_s = time.monotonic() - t0
    Store(loc.database).close()  # migrate now, so no start-up pays for it
    conn, _ = connect(loc.database)
    t1 = time.monotonic()
    with conn:
        conn.execute("UPDATE memories SET project = ?", (project,))
        moved = conn.changes()
        conn.execute("UPDATE memories_vec SET project = ?", (project,))
    # The planner's statistics (sqlite_stat4 samples) still name the old project: without a fresh ANALYZE
    # it takes the new one for a rare value and drives the BM25 join from the project index (seconds at 27k).
    conn.execute("ANALYZE")
    conn.close()
    assemble_default_model(loc.models_dir)  # the copy a first start makes, done once before timing
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCUE_")}
    env.update(MEMCUE_HOME=str(loc.root), OPENBLAS_NUM_THREADS="1")
    facts = {"db_bytes": db.stat().st_size, "copy_s": round(copy_s, 2), "rows_moved": moved,
             "project_rewrite_s": round(time.monotonic() - t1, 2)}
    return loc, project, env, facts


def run_size(n: int, db: Path, runs: int, root: Path, rng: random.Random) -> dict[str, Any]:
    """Every step on the store ``db`` of ``n`` memories (see the module docstring); the sidecar is always
    stopped at the end.
    Longer than 60 lines: one size's steps in the order they happen, inside the ``finally`` that stops the sidecar."""
    loc, project, env, facts = prepare_home(db, root)
    say(f"[{n}] store copied to {loc.database} ({facts['db_bytes'] / 1e6:.0f} MB), project {project}")
    per_agent = max(1, runs // AGENTS)
    pool = [p for p in prompt_pool(3 * runs + AGENTS * per_agent + DOWN_RUNS + SPAWN_RUNS + WARMUP_RUNS + 1, rng)
            if p != PROBE]
    take = itertools.count()

    def texts(k: int) -> list[str]:
        return [pool[next(take) % len(pool)] for _ in range(k)]

    report: dict[str, Any] = {"size": n, "store": {"path": str(db), **facts}, "project": project,
                              "load_avg_at_start": [round(x, 2) for x in os.getloadavg()]}
    try:
        starts = []
        for i in range(STARTS):
            if i:
                stop_sidecar(env)
            starts.append(time_start_up(loc, env, project, PROBE))
            say(f"[{n}] start-up {i + 1}: keyword-ready {starts[-1]['keyword_ready_ms']} ms, "
                f"semantic-ready {starts[-1]['semantic_ready_ms']} ms")
        report["start_up"] = starts
        with http_client(loc) as http:
            first = wait_idle(http)
            report["store"]["counts"] = first["counts"]
            report["model_id"] = first["model"]["id"]
            check = sidecar_hook_mode(http, [PROBE], project, 0)
            if not check.non_empty:
                raise RuntimeError(f"the hook injects nothing for {PROBE!r} (tiers {dict(check.tiers)}): "
                                   "the store's project does not match the hook's, or recall is broken")
            say(f"[{n}] sidecar recall, hook mode: {runs} prompts")
            report["sidecar_hook"] = sidecar_hook_mode(http, texts(runs), project, GAP_MS).summary()
            say(f"[{n}] sidecar recall, question mode: {runs} prompts")
            report["sidecar_question"] = sidecar_question_mode(http, texts(runs), project, GAP_MS).summary()

            say(f"[{n}] hook end to end: {WARMUP_RUNS} warm-up runs, then {runs}")
            for prompt in texts(WARMUP_RUNS):
                run_process([sys.executable, *HOOK_ARGS], hook_stdin(prompt, project, str(uuid.uuid4())), env)
            wait_idle(http)
            hook = time_hook(texts(runs), project, str(uuid.uuid4()), env, GAP_MS)
            report["hook"] = {"wall_ms": percentiles(hook.wall), "injected": hook.injected,
                              "exit_codes": dict(hook.codes)}

            say(f"[{n}] {AGENTS} agents at once, {per_agent} prompts each")
            wait_idle(http)
            conc = concurrent_hooks([texts(per_agent) for _ in range(AGENTS)], project, env)
            idle_p90 = report["hook"]["wall_ms"]["p90"]
            conc_ms = percentiles(conc.pop("wall"))
            report["concurrent"] = {"wall_ms": conc_ms, **conc,
                                    "p90_ratio": round(conc_ms["p90"] / idle_p90, 2) if idle_p90 else None}
            pid = int(health(http)["pid"])
            report["memory_after_runs"] = memory_mb(pid)

            say(f"[{n}] ingest: {INGEST_TOTAL} memories in batches of {INGEST_BATCH}")
            report["ingest"] = ingest(http, project, INGEST_TOTAL, INGEST_BATCH)
            report["memory_after_ingest"] = memory_mb(pid)
            report["store"]["counts_at_end"] = health(http)["counts"]

        say(f"[{n}] sidecar down: {DOWN_RUNS} hook runs with MEMCUE_HOOK_SPAWN=0")
        stop_sidecar(env)
        before = {r.get("spool_id") for r in spool_records(loc)}
        down = time_hook(texts(DOWN_RUNS), project, str(uuid.uuid4()), {**env, "MEMCUE_HOOK_SPAWN": "0"}, GAP_MS)
        spooled = [str(r.get("spool_id")) for r in spool_records(loc) if r.get("spool_id") not in before]
        report["down"] = {"wall_ms": percentiles(down.wall), "exit_codes": dict(down.codes),
                          "injected": down.injected, "spooled": len(spooled)}
        say(f"[{n}] sidecar down, the hook starts it: {SPAWN_RUNS} runs")
        report["spawn"] = hook_starts_sidecar(loc, env, texts(SPAWN_RUNS), project, lambda: stop_sidecar(env))
        stored, waited = wait_stored(loc, spooled)
        report["down"].update(spooled_stored=stored, spooled_stored_wait_s=waited)
    finally:
        stop_sidecar(env)
    report["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    return report


# -- report ----------------------------------------------------------------------------------------


def _row(name: str, unit: str, n: Any, p50: Any, p90: Any = None, limit: float | None = None,
         value: Any = None, above: bool = False) -> str:
    """One table row; ``value`` (default p50) is judged against ``limit`` (at most, or at least with ``above``)."""
    value = p50 if value is None else value
    if limit is None or value is None:
        goal, verdict = "", ""
    else:
        goal = f"{'>=' if above else '<='} {limit:g}"
        verdict = "met" if (value >= limit if above else value <= limit) else "**NOT met**"
    return f"| {name} | {unit} | {n} | {p50} | {'' if p90 is None else p90} | {goal} | {verdict} |"


def size_markdown(r: dict[str, Any]) -> list[str]:
    """The table and notes of one size.
    Longer than 60 lines: one table's rows and notes in the order they print."""
    n = r["size"]
    kw = percentiles([s["keyword_ready_ms"] for s in r["start_up"]])
    sem = percentiles([s["semantic_ready_ms"] for s in r["start_up"]])
    sh, sq, hook, conc, down = r["sidecar_hook"], r["sidecar_question"], r["hook"], r["concurrent"], r["down"]
    spawn = percentiles([s["wall_ms"] for s in r["spawn"]])
    ing = r["ingest"]
    mem, mem2 = r["memory_after_runs"], r["memory_after_ingest"]
    rate_ok = max(ing["stored_per_s"], ing["embedded_per_s"])
    rows = [
        _row("start-up to keyword-ready", "ms", kw["n"], kw["p50"], kw["p90"], target("keyword_ready_ms", n)),
        _row("start-up to semantic-ready", "ms", sem["n"], sem["p50"], sem["p90"], target("semantic_ready_ms", n)),
        _row("sidecar recall, hook mode, `retrieval_time_ms`", "ms", sh["retrieval_time_ms"]["n"],
             sh["retrieval_time_ms"]["p50"], sh["retrieval_time_ms"]["p90"], target("recall_p50_ms", n)),
        _row("sidecar recall, hook mode, round trip", "ms", sh["round_trip_ms"]["n"], sh["round_trip_ms"]["p50"],
             sh["round_trip_ms"]["p90"]),
        _row("sidecar recall, question mode (`/recall`), `retrieval_time_ms`", "ms", sq["retrieval_time_ms"]["n"],
             sq["retrieval_time_ms"]["p50"], sq["retrieval_time_ms"]["p90"], target("recall_p50_ms", n)),
        _row("sidecar recall, question mode, round trip", "ms", sq["round_trip_ms"]["n"], sq["round_trip_ms"]["p50"],
             sq["round_trip_ms"]["p90"]),
        _row("hook end to end, p50", "ms", hook["wall_ms"]["n"], hook["wall_ms"]["p50"], hook["wall_ms"]["p90"],
             target("hook_p50_ms", n)),
        _row("hook end to end, p90", "ms", hook["wall_ms"]["n"], hook["wall_ms"]["p50"], hook["wall_ms"]["p90"],
             target("hook_p90_ms", n), value=hook["wall_ms"]["p90"]),
        _row(f"{AGENTS} agents at once, hook end to end", "ms", conc["wall_ms"]["n"], conc["wall_ms"]["p50"],
             conc["wall_ms"]["p90"]),
        _row(f"{AGENTS} agents at once, p90 / idle p90", "ratio", "", conc["p90_ratio"], None,
             target("concurrent_ratio", n)),
        _row("sidecar down (`MEMCUE_HOOK_SPAWN=0`), hook", "ms", down["wall_ms"]["n"], down["wall_ms"]["p50"],
             down["wall_ms"]["p90"], target("down_p90_ms", n), value=down["wall_ms"]["p90"]),
        _row("sidecar down, hook starts it", "ms", spawn["n"], spawn["p50"], spawn["p90"]),
        _row("ingest, until every call returned (stored)", "memories/s", ing["memories"], ing["stored_per_s"]),
        _row("ingest, until no embedding pending (embedded)", "memories/s", ing["memories"], ing["embedded_per_s"]),
        _row("ingest, the better of the two", "memories/s", ing["memories"], rate_ok, None,
             target("ingest_per_s", n), above=True),
        _row("sidecar VmRSS after the runs (VmHWM as p90)", "MB", 1, mem["rss_mb"], mem["hwm_mb"], target("rss_mb", n)),
        _row("sidecar VmRSS after the ingest (VmHWM as p90)", "MB", 1, mem2["rss_mb"], mem2["hwm_mb"],
             target("rss_mb", n)),
    ]
    counts = r["store"].get("counts", {})
    starts = "; ".join(f"{s['keyword_ready_ms']} / {s['semantic_ready_ms']} ms (socket {s['socket_ms']} ms)"
                       for s in r["start_up"])
    spawn_notes = "; ".join(f"{s['wall_ms']} ms, sidecar up {s['sidecar_up_after_ms']} ms later, prompt stored "
                            f"{s['stored']}/{s['spooled']}" for s in r["spawn"])
    return [
        f"## {n:,} memories", "",
        f"- store: {counts.get('memories', '?')} rows ({counts.get('embedded', '?')} embedded, "
        f"{counts.get('bookkeeping', '?')} bookkeeping), {r['store']['db_bytes'] / 1e6:.0f} MB; build "
        f"{r['store'].get('build') or 'timings not found'}",
        f"- load average (1, 5, 15 min) at the start {r['load_avg_at_start']}, at the end {r.get('load_avg_at_end')}",
        "",
        "| measurement | unit | n | p50 | p90 | target | result |",
        "|---|---|---|---|---|---|---|",
        *rows, "",
        f"- start-ups (keyword-ready / semantic-ready): {starts}",
        f"- hook mode: context on {sh['non_empty']}/{sh['retrieval_time_ms']['n']}; answered_by "
        f"{sh['answered_by']}; tiers {sh['tiers']}",
        f"- question mode: results on {sq['non_empty']}/{sq['retrieval_time_ms']['n']}; tiers {sq['tiers']}; "
        f"semantic channel {sq['semantic_status']}; mode {sq['answered_by']}",
        f"- hook end to end: context injected on {hook['injected']}/{hook['wall_ms']['n']}; exit codes "
        f"{hook['exit_codes']}",
        f"- {AGENTS} agents: injected on {conc['injected']}/{conc['wall_ms']['n']}; step took {conc['step_s']} s; "
        f"exit codes {conc['exit_codes']}",
        f"- sidecar down: {down['spooled']}/{down['wall_ms']['n']} prompts spooled, {down['spooled_stored']} "
        f"stored after the restart; exit codes {down['exit_codes']}; hook starts it: {spawn_notes}",
        f"- ingest: {ing['memories']} memories in calls of {ing['batch']}: stored in {ing['stored_s']} s, embedded "
        f"in {ing['embedded_s']} s; duplicates {ing['duplicates']}; keyword search finds one: "
        f"{ing['keyword_check_found']}",
        "",
    ]


def markdown(report: dict[str, Any]) -> str:
    """The whole report as Markdown."""
    meta = report["meta"]
    lines = ["# Serving (issue 4)", "",
             f"- date: {meta['date']}; commit: {meta['git_commit'] or 'n/a'}{' (dirty)' if meta['git_dirty'] else ''}; "
             f"python {meta['python']}; {meta['cpus']} CPUs; {meta['platform']}; model {meta['model_id']}",
             f"- {meta['runs']} runs per measurement, {GAP_MS:g} ms apart; {STARTS} start-ups; targets at 27,000 "
             "memories (recall also at 270,000) and at every size for the ratio, the sidecar down, ingest and RSS",
             ""]
    for name, why in report["skipped"].items():
        lines.append(f"- skipped {name}: {why}")
    for r in report["sizes"]:
        lines += size_markdown(r) if "error" not in r else [f"## {r['size']:,} memories", "",
                                                             f"FAILED: {r['error']}", ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; write ``serving.json`` and ``serving.md`` to ``--out``. Returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 27000, 270000],
                        help="store sizes in memories (default 1000 27000 270000)")
    parser.add_argument("--runs", type=int, default=100, help="prompts per measurement (default 100)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results folder (default benchmarks/results)")
    parser.add_argument("--build", action="store_true", help="build a missing store first (minutes to an hour)")
    parser.add_argument("--build-log", type=Path, default=None,
                        help="a saved log of serving_store.py, to report each store's build timings")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders (sidecar stopped)")
    args = parser.parse_args(argv)
    if args.runs < AGENTS:
        parser.error(f"--runs must be at least {AGENTS}")
    started = time.time()
    report: dict[str, Any] = {"meta": {}, "skipped": {}, "sizes": []}
    for n in args.sizes:
        db, why = find_store(n, args.build)
        if db is None:
            say(f"skipping {n}: {why}")
            report["skipped"][str(n)] = why
            continue
        root = Path(tempfile.mkdtemp(prefix=f"memcue-serving-{n}-"))
        try:
            r = run_size(n, db, args.runs, root, random.Random(20240607 + n))
            r["store"]["build"] = build_timings(args.build_log, db)
        except Exception as exc:  # noqa: BLE001 - report it and go on with the next size
            say(f"[{n}] FAILED: {exc}\n{traceback.format_exc()}")
            r = {"size": n, "error": f"{type(exc).__name__}: {exc}"}
        finally:
            if args.keep:
                say(f"kept {root}")
            else:
                shutil.rmtree(root, ignore_errors=True)
        report["sizes"].append(r)
    model = next((r["model_id"] for r in report["sizes"] if "model_id" in r), MODEL_ID)
    report["meta"] = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "git_commit": git_commit(),
                      "git_dirty": git_dirty(), "python": sys.version.split()[0], "cpus": os.cpu_count(),
                      "platform": platform.platform(), "model_id": model, "runs": args.runs,
                      "wall_s": round(time.time() - started, 1),
                      "targets": {k: {str(s): v for s, v in lim.items()} for k, lim in TARGETS.items()}}
    if not report["sizes"]:
        say("no store to measure")
        return 1
    write_results(args.out, "serving", report, markdown(report), ensure_ascii=False)
    return 0 if all("error" not in r for r in report["sizes"]) else 1


if __name__ == "__main__":
    sys.exit(main())
