"""The measurements of the serving benchmark (``benchmarks/serving.py``), one function per step.

Every function talks to a sidecar over its unix socket (``httpx`` with a UDS transport) or runs the real
hook as a subprocess (``hook_latency.run_process``). Times are in milliseconds unless a name says
otherwise; rates are memories per second. Imported as ``serving_measure`` with the ``benchmarks``
folder on ``sys.path``.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw
import httpx
from _common import percentiles, say
from hook_corpus import generated_memories, prompts
from hook_latency import HOOK_ARGS, hook_stdin, injected_context, post_hook_prompt, run_process

from memcue.core.paths import Locations

#: How often start-up is polled (s).
POLL_S = 0.01
#: Start-up gives up after this long (s).
START_TIMEOUT_S = 300.0
#: Results asked for by every question-mode recall (as the hook asks for).
RECALL_LIMIT = 8


def http_client(loc: Locations, timeout_s: float = 30.0) -> httpx.Client:
    """An httpx client for the sidecar at ``loc`` (unix socket; ``timeout_s`` in s per request)."""
    return httpx.Client(transport=httpx.HTTPTransport(uds=str(loc.socket)), base_url="http://memcue",
                        timeout=timeout_s)


def prompt_pool(n: int, rng: random.Random) -> list[str]:
    """``n`` prompts from ``hook_corpus.prompts``, without repeats while the corpus has enough distinct ones
    (so no step is served from the query-embedding or answer cache of an earlier one), shuffled."""
    seen = dict.fromkeys(prompts(n, rng))
    tries = 0
    while len(seen) < n and tries < 50 * n:
        seen.setdefault(prompts(41, rng)[-1], None)
        tries += 1
    out = list(seen)
    while len(out) < n:  # the corpus ran out of distinct prompts: reuse some
        out.append(out[len(out) % len(seen)])
    rng.shuffle(out)
    return out[:n]


def recall_body(query: str, project: str) -> dict[str, Any]:
    """The question-mode ``POST /recall`` body: the query in ``project``, ``RECALL_LIMIT`` results."""
    return {"query": query, "project": project, "limit": RECALL_LIMIT}


def health(http: httpx.Client) -> dict[str, Any]:
    """``GET /health`` as a dict (raises on a transport error or a non-2xx status)."""
    response = http.get("/health")
    response.raise_for_status()
    return dict(response.json())


def wait_idle(http: httpx.Client, timeout_s: float = 900.0) -> dict[str, Any]:
    """Poll ``/health`` every 0.1 s until the model is ready and no memory waits for its vector (at most
    ``timeout_s`` s); returns the last health."""
    deadline = time.monotonic() + timeout_s
    while True:
        h = health(http)
        if h["model"]["state"] == "ready" and h["vector_search"] and h["counts"]["pending_embeddings"] == 0:
            return h
        if time.monotonic() > deadline:
            raise RuntimeError(f"sidecar not idle after {timeout_s:.0f} s: model {h['model']}, "
                               f"counts {h['counts']}")
        time.sleep(0.1)


# -- start-up --------------------------------------------------------------------------------------


def start_sidecar(loc: Locations, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start ``python -P -m memcue.sidecar`` the way ``memcue.hooks.client.spawn_sidecar`` does (new
    session, stdio on /dev/null, working directory the data dir)."""
    return subprocess.Popen([sys.executable, "-P", "-m", "memcue.sidecar"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
                            start_new_session=True, cwd=str(loc.root), env=env)


def _log_tail(loc: Locations, lines: int = 15) -> str:
    if not loc.sidecar_log.exists():
        return "(no sidecar log)"
    return "\n".join(loc.sidecar_log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def time_start_up(loc: Locations, env: dict[str, str], project: str, probe: str) -> dict[str, Any]:
    """Start the sidecar and time, from just before ``Popen``: the first answer on the socket
    (``socket_ms``), keyword-ready (``POST /recall`` of ``probe`` answers 200 with results) and
    semantic-ready (``/health``: model ready and vector_search, and then a recall whose semantic channel
    status is ``ok``, with results). Polls every ``POLL_S`` s. The sidecar is left running."""
    out: dict[str, Any] = {"socket_ms": None, "keyword_ready_ms": None, "semantic_ready_ms": None, "polls": 0}
    with http_client(loc, timeout_s=60) as http:
        t0 = time.perf_counter()
        proc = start_sidecar(loc, env)
        out["pid"] = proc.pid
        while out["semantic_ready_ms"] is None:
            if time.perf_counter() - t0 > START_TIMEOUT_S:
                raise RuntimeError(f"sidecar not semantic-ready after {START_TIMEOUT_S:.0f} s: {out}\n"
                                   f"{_log_tail(loc)}")
            if proc.poll() is not None:
                raise RuntimeError(f"the sidecar exited with code {proc.returncode} while starting:\n"
                                   f"{_log_tail(loc)}")
            out["polls"] += 1
            try:
                ready = True
                if out["keyword_ready_ms"] is not None:
                    h = health(http)
                    ready = h["model"]["state"] == "ready" and bool(h["vector_search"])
                if ready:
                    response = http.post("/recall", json=recall_body(probe, project))
                    ms = (time.perf_counter() - t0) * 1000
                    out["socket_ms"] = out["socket_ms"] or round(ms, 1)
                    answer = response.json() if response.status_code == 200 else {}
                    if answer.get("results"):
                        semantic = answer.get("channel_status", {}).get("semantic")
                        if out["keyword_ready_ms"] is None:
                            out["keyword_ready_ms"] = round(ms, 1)
                            out["keyword_ready_answer"] = {"tier": answer.get("tier"), "semantic": semantic,
                                                           "results": len(answer["results"])}
                            if semantic == "ok":  # already semantic: ready as soon as /health agrees
                                h = health(http)
                                ready = h["model"]["state"] == "ready" and bool(h["vector_search"])
                                ms = (time.perf_counter() - t0) * 1000
                        if ready and semantic == "ok":
                            out["semantic_ready_ms"] = round(ms, 1)
                            out["semantic_ready_answer"] = {"tier": answer.get("tier"),
                                                            "results": len(answer["results"])}
                            break
            except httpx.TransportError:
                pass
            time.sleep(POLL_S)
    return out


# -- sidecar recall --------------------------------------------------------------------------------


@dataclass
class Served:
    """Direct sidecar calls: the server's ``retrieval_time_ms`` and the client round trip (ms), how often
    context or results came back, and counters of answered_by, tiers and the semantic channel status."""

    retrieval: list[float] = field(default_factory=list)
    round_trip: list[float] = field(default_factory=list)
    non_empty: int = 0
    answered_by: Counter[str] = field(default_factory=Counter)
    tiers: Counter[str] = field(default_factory=Counter)
    semantic: Counter[str] = field(default_factory=Counter)

    def summary(self) -> dict[str, Any]:
        """The numbers for the report."""
        return {"retrieval_time_ms": percentiles(self.retrieval), "round_trip_ms": percentiles(self.round_trip),
                "non_empty": self.non_empty, "answered_by": dict(self.answered_by), "tiers": dict(self.tiers),
                "semantic_status": dict(self.semantic)}


def sidecar_hook_mode(http: httpx.Client, texts: list[str], project: str, gap_ms: float) -> Served:
    """Post each prompt to ``/hooks/claude-code/user-prompt-submit`` (one session), ``gap_ms`` ms apart;
    ``non_empty`` counts answers with context to inject."""
    runs, session_id = Served(), str(uuid.uuid4())
    for prompt in texts:
        time.sleep(gap_ms / 1000)
        round_trip, body = post_hook_prompt(http, prompt, project, session_id)
        runs.round_trip.append(round_trip)
        runs.retrieval.append(float(body["retrieval_time_ms"]))
        runs.answered_by[body["answered_by"]] += 1
        runs.tiers[body["tier"]] += 1
        runs.non_empty += bool(body["context"])
    return runs


def sidecar_question_mode(http: httpx.Client, texts: list[str], project: str, gap_ms: float) -> Served:
    """``POST /recall`` of each prompt (question mode, ``RECALL_LIMIT`` results), ``gap_ms`` ms apart;
    ``non_empty`` counts answers with results."""
    runs = Served()
    for prompt in texts:
        time.sleep(gap_ms / 1000)
        t0 = time.perf_counter()
        response = http.post("/recall", json=recall_body(prompt, project))
        runs.round_trip.append((time.perf_counter() - t0) * 1000)
        response.raise_for_status()
        body = response.json()
        runs.retrieval.append(float(body["retrieval_time_ms"]))
        runs.answered_by[str(body.get("retrieval_mode"))] += 1
        runs.tiers[str(body.get("tier"))] += 1
        runs.semantic[str(body.get("channel_status", {}).get("semantic"))] += 1
        runs.non_empty += bool(body.get("results"))
    return runs


# -- the hook as a subprocess ----------------------------------------------------------------------


def concurrent_hooks(batches: list[list[str]], project: str, env: dict[str, str]) -> dict[str, Any]:
    """One thread per batch (an agent with its own session id), all released at once, each running the
    hook for its prompts back to back. Returns every run's wall time (ms), injected count, exit codes and
    the whole step's wall time (s)."""
    walls: list[float] = []
    codes: Counter[int] = Counter()
    injected = [0]
    lock = threading.Lock()
    barrier = threading.Barrier(len(batches))
    errors: list[BaseException] = []

    def agent(texts: list[str]) -> None:
        session_id = str(uuid.uuid4())
        barrier.wait()
        try:
            for prompt in texts:
                ms, out, code, _ = run_process([sys.executable, *HOOK_ARGS], hook_stdin(prompt, project, session_id),
                                               env)
                with lock:
                    walls.append(ms)
                    codes[code] += 1
                    injected[0] += bool(injected_context(out))
        except BaseException as exc:  # noqa: BLE001 - reported after the join
            errors.append(exc)

    threads = [threading.Thread(target=agent, args=(b,), name=f"agent-{i}") for i, b in enumerate(batches)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"a concurrent hook run failed: {errors[0]!r}")
    return {"wall": walls, "injected": injected[0], "exit_codes": dict(codes),
            "step_s": round(time.perf_counter() - t0, 2)}


def spool_records(loc: Locations) -> list[dict[str, Any]]:
    """Every record in the spool folder's ``*.jsonl`` files (unreadable lines skipped)."""
    out: list[dict[str, Any]] = []
    for path in sorted(loc.spool_dir.glob("*.jsonl")) if loc.spool_dir.is_dir() else []:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def stored_count(database: Path, source_ids: list[str]) -> int:
    """How many of ``source_ids`` are memories' ``source_id`` in ``database`` (read-only connection)."""
    if not source_ids:
        return 0
    conn = apsw.Connection(str(database), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        marks = ",".join("?" * len(source_ids))
        return int(conn.execute(f"SELECT count(*) FROM memories WHERE source_id IN ({marks})",
                                source_ids).fetchall()[0][0])
    finally:
        conn.close()


def wait_stored(loc: Locations, source_ids: list[str], timeout_s: float = 30.0) -> tuple[int, float]:
    """Wait until every one of ``source_ids`` is stored (at most ``timeout_s`` s); returns (stored, waited s)."""
    t0 = time.monotonic()
    while True:
        n = stored_count(loc.database, source_ids)
        if n >= len(source_ids) or time.monotonic() - t0 > timeout_s:
            return n, round(time.monotonic() - t0, 2)
        time.sleep(0.1)


def hook_starts_sidecar(loc: Locations, env: dict[str, str], texts: list[str], project: str,
                        stop: Any) -> list[dict[str, Any]]:
    """Per prompt: ``stop()`` the sidecar, run the hook once with spawning allowed and time it; then time
    until the sidecar it started answers ``/health`` (ms from the hook's end) and check the prompt it
    spooled reached the store."""
    out = []
    for prompt in texts:
        stop()
        before = {r.get("spool_id") for r in spool_records(loc)}
        ms, stdout, code, _ = run_process([sys.executable, *HOOK_ARGS], hook_stdin(prompt, project, str(uuid.uuid4())),
                                          env)
        t_end, up_ms = time.perf_counter(), None
        with http_client(loc, timeout_s=5) as http:
            while up_ms is None and time.perf_counter() - t_end < 60:
                try:
                    health(http)
                    up_ms = round((time.perf_counter() - t_end) * 1000, 1)
                except httpx.HTTPError:
                    time.sleep(POLL_S)
        new = [str(r.get("spool_id")) for r in spool_records(loc) if r.get("spool_id") not in before]
        stored, waited = wait_stored(loc, new)
        out.append({"wall_ms": round(ms, 2), "exit_code": code, "injected": bool(injected_context(stdout)),
                    "sidecar_up_after_ms": up_ms, "spooled": len(new), "stored": stored, "stored_wait_s": waited})
        say(f"  hook with the sidecar down (spawn allowed): {ms:.0f} ms, sidecar up {up_ms} ms later, "
            f"prompt stored {stored}/{len(new)}")
    return out


# -- ingest and memory -----------------------------------------------------------------------------


def ingest(http: httpx.Client, project: str, total: int = 2000, batch: int = 200, seed: int = 4242) -> dict[str, Any]:
    """``POST /remember/batch`` ``total`` new unique memories in batches of ``batch``; returns the rates
    (memories/s) until every call returned (stored, keyword-searchable) and until ``/health`` shows no
    pending embedding (embedded), a keyword check of one of them, and the duplicates reported."""
    now = time.time()
    rows = [{"content": f"{m['content']} [ingest {i}]", "kind": m["kind"], "project": project,
             "created_at": now - float(m["age_days"]) * 86400, "source": "bench-ingest",
             "source_id": f"ingest:{seed}:{i}"}
            for i, m in enumerate(generated_memories(total, random.Random(seed)))]
    wait_idle(http)
    ids: list[int] = []
    duplicates = 0
    t0 = time.perf_counter()
    for start in range(0, total, batch):
        response = http.post("/remember/batch", json={"memories": rows[start:start + batch]})
        response.raise_for_status()
        for r in response.json():
            ids.append(int(r["id"]))
            duplicates += bool(r["duplicate"])
    stored_s = time.perf_counter() - t0
    pending = -1
    while pending != 0:
        if time.perf_counter() - t0 > 900:
            raise RuntimeError(f"ingest: still {pending} memories without vectors after 900 s")
        time.sleep(0.05)
        pending = health(http)["counts"]["pending_embeddings"]
    embedded_s = time.perf_counter() - t0
    probe = rows[total // 2]
    answer = http.post("/recall", json={"query": probe["content"], "project": project, "limit": 10,
                                        "mode": "keyword"}).json()
    found = ids[total // 2] in [r["memory_id"] for r in answer.get("results", [])]
    return {"memories": total, "batch": batch, "duplicates": duplicates, "stored_s": round(stored_s, 2),
            "embedded_s": round(embedded_s, 2), "stored_per_s": round(total / stored_s, 1),
            "embedded_per_s": round(total / embedded_s, 1), "keyword_check_found": found}


def memory_mb(pid: int) -> dict[str, float | None]:
    """``VmRSS`` and ``VmHWM`` of ``pid`` from ``/proc/<pid>/status``, in MB (None when unreadable)."""
    out: dict[str, float | None] = {"rss_mb": None, "hwm_mb": None}
    try:
        text = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return out
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out["rss_mb" if key == "VmRSS" else "hwm_mb"] = round(int(value.split()[0]) / 1024, 1)
    return out
