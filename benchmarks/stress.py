"""Stress benchmark of the hook path: nothing lost under load (issue 13).

Scenario 1, sessions under restarts, run on a fresh store and on an existing one (a few thousand
memories): ``--sessions`` Claude Code sessions at once (default 8), each doing ``--rounds`` rounds
(default 50) of a UserPromptSubmit (a prompt text unique to the session and round), a Stop (the turn's
answer in ``last_assistant_message``, unique too) and a SessionEnd, every round a new session id. Each
hook is the installed command (``python -I -S memcue/hooks/launch.py claude-code <event>``) run as a
subprocess with the real payload JSON on stdin. Meanwhile the real sidecar is stopped (SIGTERM, as
``memcue stop``) and a new one started in the same moment, ``--restarts`` times at random points of the
rounds. Afterwards the benchmark waits until the spool is ingested and counts, per kind: sent, stored
exactly once, lost (no row), duplicated (more than one row, or ``seen_count`` > 1, for one request), the
hooks' exit codes and p50/p90, and "locked"/"busy" lines in ``logs/hook.log`` and ``logs/sidecar.log``.
A SessionEnd row's text ("Session ended (reason: ...)") is the same for every session, so the store keeps
one row per reason and counts sightings in ``seen_count``: session ends are counted as the sum of those
``seen_count`` values against the number sent, and per session by the spool record the hook wrote.

Scenario 2, a huge paste: a store with the hook benchmark's memories and eight seeded facts; a normal
prompt asks about one fact (a new session each time) while idle, then while another session pastes a
``--paste-kb`` (default 300) KB build log into its prompt, again and again. Reported: the normal prompt's
hook p50/p90 in both phases, their ratio (target <= 1.5) and how many normal prompts got their fact.

Targets (issue 13): 0 lost, 0 duplicated, 0 lock errors on both stores; paste p50 <= 1.5 x idle p50 and
every normal prompt gets its memory. Only unix sockets and files in a temporary ``MEMCUE_HOME``; every loop
is bounded. Results: ``benchmarks/results/stress.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw
from _common import (
    RESULTS_DIR,
    git_commit,
    git_dirty,
    injected_context,
    percentiles,
    say,
    stop_sidecar,
    write_results,
)
from hook_corpus import prompts, seed_rows
from stress_load import (
    END_REASONS,
    FACTS,
    HookCall,
    SidecarControl,
    build_log,
    fact_rows,
    hook_env,
    prompt_payload,
    run_hook,
    session_end_payload,
    stop_payload,
)

from memcue.client import Client
from memcue.core.paths import Locations

#: The ratio a normal prompt's hook p50 during a paste may reach against its idle p50 (issue 13).
PASTE_P50_RATIO_TARGET = 1.5
#: After the rounds, the spool is given this long (s) to be ingested; counting stops earlier once every
#: request is accounted for, or after ``SETTLE_S`` without any change.
INGEST_WAIT_S = 180.0
SETTLE_S = 15.0
#: Log lines that count as lock errors (SQLite's "database is locked", SQLITE_BUSY).
LOCK_RE = re.compile(r"locked|busy", re.IGNORECASE)
#: The pause (s) between a normal prompt's runs, as between a user's prompts.
NORMAL_GAP_S = 0.2
#: The normal prompts of the paste phase start this long (s) after the first paste, so the sidecar is
#: already capturing it.
PASTE_LEAD_S = 1.0
#: At most this many pastes are sent in the paste phase (bounds the phase if normal prompts stall).
MAX_PASTES = 400
#: Distinct build logs built before the paste phase (each paste is one of them under its own first line), so
#: building a 300 KB log takes no CPU from the hooks while they are measured.
PASTE_LOGS = 4
KINDS = ("prompt", "answer", "session_end")
#: The store's ``kind`` of each captured request kind.
ROW_KIND = {"prompt": "request", "answer": "episode", "session_end": "event"}


@dataclass
class Sent:
    """One hook run of the rounds: its kind (``KINDS``), its request token (unique text marker; the
    session id for a session end), and the call."""

    kind: str
    token: str
    session_id: str
    call: HookCall


@dataclass(frozen=True)
class Load:
    """Scenario 1's load: ``sessions`` at once, ``rounds`` each, ``restarts`` of the sidecar; the first
    ``stall_sessions`` sessions run starved: each of their hooks, with probability ``stall_share``, is
    suspended for ``stall_s`` seconds at a random moment of its first ``STALL_WINDOW_S`` (the payload
    already in its pipe), as on a machine that gives it no CPU."""

    sessions: int = 8
    rounds: int = 50
    restarts: int = 5
    stall_sessions: int = 2
    stall_share: float = 0.33
    stall_s: float = 1.2


#: A starved hook is suspended at a random moment of this many seconds after its start: the hook's start-up
#: and stdin read happen then (about 20-60 ms here).
STALL_WINDOW_S = 0.08


@dataclass
class Rounds:
    """Everything the rounds produced: the hook runs (in completion order, under ``lock``), rounds done,
    and the restarts."""

    sent: list[Sent] = field(default_factory=list)
    done: int = 0
    restarts: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Setup:
    """One scenario's data dir and project: ``home`` (``MEMCUE_HOME``), ``cwd`` (the project folder the
    payloads name), ``env`` (the hook's environment) and the sidecar's ``control`` and ``client``."""

    home: Path
    cwd: str
    env: dict[str, str]
    loc: Locations
    control: SidecarControl
    client: Client

    @property
    def project(self) -> str:
        return os.path.realpath(self.cwd)


def make_setup(root: Path, name: str) -> Setup:
    """A data dir ``root/name/data`` and a git project ``root/name/work/<name>``; ``MEMCUE_HOME`` is set in
    this process too (the client starts the sidecar with this process's environment)."""
    home = root / name / "data"
    project = root / name / "work" / f"svc-{name}"
    project.mkdir(parents=True)
    home.mkdir(parents=True)
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(project)], check=False, capture_output=True)
    env = hook_env(home)
    os.environ["MEMCUE_HOME"] = str(home)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    loc = Locations(home)
    return Setup(home, str(project), env, loc, SidecarControl(loc, env), Client(loc, timeout_s=120))


def seed(setup: Setup, memories: int, rng: random.Random, *, facts: bool = False) -> float:
    """Store ``memories`` of the hook benchmark's corpus (and ``FACTS`` when asked) and wait until each has
    its vector; returns the seconds it took."""
    t0 = time.monotonic()
    rows = seed_rows(setup.project, rng, memories) if memories else []
    rows += fact_rows(setup.project) if facts else []
    for start in range(0, len(rows), 2000):
        setup.client.remember_batch(rows[start:start + 2000])
    setup.client.wait_idle(timeout_s=900)
    return time.monotonic() - t0


def finish(setup: Setup) -> None:
    """Stop the scenario's sidecar (``memcue stop``) and reap the processes the benchmark started."""
    setup.client.close()
    stop_sidecar(setup.env)
    setup.control.reap()


# -- scenario 1: sessions under restarts ----------------------------------------------------------------


def one_session(slot: int, load: Load, tag: str, setup: Setup, seed_: int, out: Rounds) -> None:
    """Session slot ``slot``: ``load.rounds`` rounds of prompt, Stop and SessionEnd, a new session id each;
    starved when ``slot < load.stall_sessions``."""
    rng = random.Random(seed_ * 1000 + slot)
    texts = prompts(40, rng)

    def hook(event: str, payload: dict[str, Any]) -> HookCall:
        starved = slot < load.stall_sessions and rng.random() < load.stall_share
        stall = (rng.uniform(0, STALL_WINDOW_S), load.stall_s) if starved else None
        return run_hook(event, payload, setup.env, stall=stall)

    for r in range(load.rounds):
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        token = f"stress-{tag}-s{slot}-r{r}"
        prompt = f"{rng.choice(texts)} (ref {token})"
        answer = (f"I checked {rng.choice(texts).rstrip('?')}: the change is in place and the tests pass. "
                  f"Summary for {token}.")
        calls = [Sent("prompt", token, sid, hook("user-prompt-submit", prompt_payload(prompt, setup.cwd, sid))),
                 Sent("answer", token, sid, hook("stop", stop_payload(answer, setup.cwd, sid))),
                 Sent("session_end", sid, sid, hook("session-end", session_end_payload(
                     setup.cwd, sid, END_REASONS[r % len(END_REASONS)])))]
        with out.lock:
            out.sent.extend(calls)
            out.done += 1


def restarter(setup: Setup, total: int, restarts: int, rng: random.Random, out: Rounds,
              stop: threading.Event) -> None:
    """Restart the sidecar ``restarts`` times, each when the rounds done pass a random point of ``total``."""
    points = sorted(rng.uniform(0.05, 0.9) * total for _ in range(restarts))
    for point in points:
        while out.done < point and not stop.is_set():
            time.sleep(0.02)
        if stop.is_set():
            return
        record = setup.control.restart(setup.client)
        record["after_rounds"] = out.done
        out.restarts.append(record)
        say(f"  restarted the sidecar after {out.done}/{total} rounds (new one up after {record['up_after_s']} s)")


def run_rounds(setup: Setup, load: Load, seed_: int, tag: str) -> Rounds:
    """Run the sessions at once with the restarter beside them; returns what was sent."""
    out = Rounds()
    stop = threading.Event()
    total = load.sessions * load.rounds
    workers = [threading.Thread(target=one_session, args=(slot, load, tag, setup, seed_, out), daemon=True)
               for slot in range(load.sessions)]
    boss = threading.Thread(target=restarter, args=(setup, total, load.restarts, random.Random(seed_), out, stop),
                            daemon=True)
    boss.start()
    for w in workers:
        w.start()
    last = time.monotonic()
    while any(w.is_alive() for w in workers):
        time.sleep(0.2)
        if time.monotonic() - last > 15:
            last = time.monotonic()
            say(f"  {out.done}/{total} rounds")
    stop.set()
    boss.join(timeout=START_JOIN_S)
    return out


#: How long (s) the end of the rounds waits for a restart under way.
START_JOIN_S = 120.0


def read_rows(database: Path, project: str) -> list[tuple[str, str, str, int, str]]:
    """``(content, kind, session_id, seen_count, source)`` of every memory of ``project`` (read-only)."""
    if not database.exists():
        return []
    conn = apsw.Connection(str(database), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        conn.setbusytimeout(5000)
        return [(str(c), str(k), str(s), int(n), str(src)) for c, k, s, n, src in conn.execute(
            "SELECT content, kind, session_id, seen_count, source FROM memories WHERE project = ?", (project,))]
    finally:
        conn.close()


def spooled_session_ends(loc: Locations) -> set[str]:
    """Session ids of the SessionEnd records in the spool files (the hook's hand-off of a session end)."""
    found: set[str] = set()
    for path in sorted(loc.spool_dir.glob("*.jsonl")) if loc.spool_dir.is_dir() else []:
        for line in path.read_text("utf-8", errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("kind") == "event" and str(rec.get("content", "")).startswith("Session ended"):
                found.add(str(rec.get("session_id")))
    return found


def tally(setup: Setup, sent: list[Sent], tag: str) -> dict[str, dict[str, Any]]:
    """Per kind: sent, stored exactly once, lost, duplicated (see the module docstring)."""
    rows = read_rows(setup.loc.database, setup.project)
    token_re = re.compile(rf"stress-{re.escape(tag)}-s\d+-r\d+")
    seen: dict[tuple[str, str], list[int]] = {}
    end_seen, end_rows, end_sessions = 0, 0, set()
    for content, kind, session_id, count, source in rows:
        if kind == "event" and content.startswith("Session ended") and source.startswith("hook:"):
            end_seen, end_rows = end_seen + count, end_rows + 1
            end_sessions.add(session_id)
            continue
        m = token_re.search(content)
        if m:
            seen.setdefault((kind, m.group(0)), []).append(count)
    out: dict[str, dict[str, Any]] = {}
    for kind in ("prompt", "answer"):
        tokens = [s.token for s in sent if s.kind == kind]
        found = [seen.get((ROW_KIND[kind], t), []) for t in tokens]
        out[kind] = {"sent": len(tokens), "stored_once": sum(1 for f in found if f == [1]),
                     "lost": sum(1 for f in found if not f),
                     "duplicated": sum(1 for f in found if len(f) > 1 or any(c > 1 for c in f))}
    ends = [s.session_id for s in sent if s.kind == "session_end"]
    handed = spooled_session_ends(setup.loc) | end_sessions
    out["session_end"] = {"sent": len(ends), "counted": end_seen, "rows": end_rows,
                          "stored_once": min(len(ends), end_seen), "lost": max(0, len(ends) - end_seen),
                          "duplicated": max(0, end_seen - len(ends)),
                          "not_handed_off": sum(1 for sid in ends if sid not in handed)}
    return out


def wait_ingested(setup: Setup, sent: list[Sent], tag: str) -> tuple[dict[str, dict[str, Any]], float]:
    """Make sure a sidecar runs, then recount until nothing is missing, nothing changed for ``SETTLE_S``,
    or ``INGEST_WAIT_S`` passed; returns the last count and the seconds waited."""
    t0 = time.monotonic()
    setup.control.wait_up(setup.client)
    last, changed = None, time.monotonic()
    while True:
        counts = tally(setup, sent, tag)
        if counts != last:
            last, changed = counts, time.monotonic()
        missing = sum(c["lost"] for c in counts.values())
        now = time.monotonic()
        if not missing or now - changed > SETTLE_S or now - t0 > INGEST_WAIT_S:
            return counts, round(now - t0, 1)
        time.sleep(1.0)


def log_lines(loc: Locations) -> dict[str, list[str]]:
    """The hook log (with its rotated copy) and the sidecar log, as lines, by file name."""
    out: dict[str, list[str]] = {}
    for path in (loc.hook_log.with_name(loc.hook_log.name + ".1"), loc.hook_log, loc.sidecar_log):
        if path.exists():
            out[path.name] = path.read_text("utf-8", errors="replace").splitlines()
    return out


def log_findings(loc: Locations) -> dict[str, Any]:
    """Lock errors ("locked"/"busy" lines, the first 10 quoted), "empty stdin" lines, prompts the hook
    spooled, and sidecar tracebacks, from the logs."""
    logs = log_lines(loc)
    hook = logs.get("hook.log.1", []) + logs.get("hook.log", [])
    everything = hook + logs.get("sidecar.log", [])
    lock = [line for line in everything if LOCK_RE.search(line)]
    return {"lock_errors": len(lock), "lock_error_lines": lock[:10],
            "empty_stdin": sum("empty stdin" in line for line in hook),
            "spooled_prompts": sum("spooled prompt" in line for line in hook),
            "watchdog_exits": sum("watchdog" in line for line in hook),
            "sidecar_tracebacks": tracebacks(logs.get("sidecar.log", []))}


def tracebacks(lines: list[str]) -> list[str]:
    """Each traceback in a log as one line: the log record before it and the exception that ends it."""
    out = []
    for i, line in enumerate(lines):
        if line.startswith("Traceback"):
            end = next((j for j in range(i + 1, len(lines)) if lines[j][:1] not in (" ", "")), i)
            out.append(f"{lines[i - 1] if i else ''} -> {lines[end] if end != i else '?'}")
    return out


def hook_stats(sent: list[Sent]) -> dict[str, Any]:
    """Per kind: exit codes and wall-time percentiles (ms)."""
    out = {}
    for kind in KINDS:
        calls = [s.call for s in sent if s.kind == kind]
        out[kind] = {"exit_codes": dict(Counter(c.exit_code for c in calls)), "stalled": sum(c.stalled for c in calls),
                     "wall_ms": percentiles([c.wall_ms for c in calls])}
    return out


def stress_scenario(setup: Setup, load: Load, *, memories: int, seed_: int) -> dict[str, Any]:
    """Scenario 1 on ``setup`` (seeded with ``memories`` first when > 0); returns its report section."""
    rng = random.Random(seed_)
    setup.control.spawn()
    if setup.control.wait_up(setup.client) is None:
        raise RuntimeError(f"the sidecar did not start; see {setup.loc.sidecar_log}")
    seed_s = seed(setup, memories, rng) if memories else 0.0
    say(f"  {load.sessions} sessions x {load.rounds} rounds, {load.restarts} restarts, {load.stall_sessions} "
        f"starved, {memories} memories in the store")
    tag = uuid.uuid4().hex[:8]
    t0 = time.monotonic()
    out = run_rounds(setup, load, seed_, tag)
    rounds_s = time.monotonic() - t0
    counts, waited = wait_ingested(setup, out.sent, tag)
    finish(setup)
    findings = log_findings(setup.loc)
    report = {"load": vars(load), "sessions": load.sessions, "rounds": load.rounds,
              "memories_before": memories, "seed_s": round(seed_s, 1),
              "rounds_s": round(rounds_s, 1), "ingest_wait_s": waited, "restarts": out.restarts,
              "counts": counts, "hooks": hook_stats(out.sent), "logs": findings}
    report["target_met"] = (all(c["lost"] == 0 and c["duplicated"] == 0 for c in counts.values())
                            and findings["lock_errors"] == 0)
    return report


# -- scenario 2: a huge paste beside a normal prompt -------------------------------------------------------


def normal_prompt(setup: Setup, i: int) -> tuple[float, bool, int]:
    """One normal prompt about ``FACTS[i]`` in a new session: (hook wall ms, got its fact, exit code)."""
    _, question, phrase = FACTS[i % len(FACTS)]
    call = run_hook("user-prompt-submit", prompt_payload(question, setup.cwd, str(uuid.uuid4())), setup.env)
    return call.wall_ms, phrase in injected_context(call.stdout), call.exit_code


def normal_phase(setup: Setup, n: int) -> dict[str, Any]:
    """``n`` normal prompts, ``NORMAL_GAP_S`` apart: wall-time percentiles (ms), how many got their fact."""
    walls, got, codes = [], 0, Counter()
    for i in range(n):
        time.sleep(NORMAL_GAP_S)
        ms, ok, code = normal_prompt(setup, i)
        walls.append(ms)
        got += ok
        codes[code] += 1
    return {"wall_ms": percentiles(walls), "got_memory": got, "prompts": n, "exit_codes": dict(codes)}


def paster(setup: Setup, logs: list[str], tag: str, stop: threading.Event, calls: list[HookCall]) -> None:
    """Paste build logs in one session's prompts, one after another, until ``stop`` (at most ``MAX_PASTES``):
    paste ``i`` is ``logs[i % len(logs)]`` (built beforehand) under a first line naming ``tag`` and ``i``."""
    sid = str(uuid.uuid4())
    for i in range(MAX_PASTES):
        if stop.is_set():
            return
        body = logs[i % len(logs)].split("\n", 1)[1]
        text = f"why did this build fail? paste {tag}-{i}:\n{body}"
        calls.append(run_hook("user-prompt-submit", prompt_payload(text, setup.cwd, sid), setup.env))


def pastes_stored(setup: Setup, tag: str, sent: int) -> tuple[int, float]:
    """Wait (at most ``INGEST_WAIT_S``) until the ``sent`` pastes are stored; returns (stored, seconds)."""
    t0 = time.monotonic()
    while True:
        rows = read_rows(setup.loc.database, setup.project)
        stored = len({m.group(0) for c, k, *_ in rows if k == "request"
                      for m in [re.search(rf"paste {re.escape(tag)}-\d+", c[:200])] if m})
        if stored >= sent or time.monotonic() - t0 > INGEST_WAIT_S:
            return stored, round(time.monotonic() - t0, 1)
        time.sleep(1.0)


def paste_scenario(setup: Setup, *, memories: int, normal: int, paste_kb: int, seed_: int) -> dict[str, Any]:
    """Scenario 2 on ``setup``; returns its report section."""
    rng = random.Random(seed_)
    setup.control.spawn()
    if setup.control.wait_up(setup.client) is None:
        raise RuntimeError(f"the sidecar did not start; see {setup.loc.sidecar_log}")
    seed_s = seed(setup, memories, rng, facts=True)
    for i in range(len(FACTS)):  # warm-up: every question once, so both phases see the same store
        normal_prompt(setup, i)
    setup.client.wait_idle(timeout_s=120)
    say(f"  idle: {normal} normal prompts")
    idle = normal_phase(setup, normal)
    setup.client.wait_idle(timeout_s=120)
    say(f"  paste: {paste_kb} KB build logs in another session, {normal} normal prompts beside them")
    tag, stop, calls = uuid.uuid4().hex[:8], threading.Event(), []
    logs = [build_log(paste_kb * 1024, rng, f"{tag}-log{n}") for n in range(PASTE_LOGS)]
    worker = threading.Thread(target=paster, args=(setup, logs, tag, stop, calls), daemon=True)
    worker.start()
    time.sleep(PASTE_LEAD_S)
    loaded = normal_phase(setup, normal)
    stop.set()
    worker.join(timeout=120)
    stored, waited = pastes_stored(setup, tag, len(calls))
    finish(setup)
    ratio = (round(loaded["wall_ms"]["p50"] / idle["wall_ms"]["p50"], 2)
             if idle["wall_ms"]["p50"] and loaded["wall_ms"]["p50"] else None)
    report = {"memories": memories + len(FACTS), "seed_s": round(seed_s, 1), "paste_bytes": paste_kb * 1024,
              "idle": idle, "during_paste": loaded, "p50_ratio": ratio,
              "pastes": {"sent": len(calls), "stored": stored, "store_wait_s": waited,
                         "exit_codes": dict(Counter(c.exit_code for c in calls)),
                         "wall_ms": percentiles([c.wall_ms for c in calls])},
              "logs": log_findings(setup.loc)}
    report["target_met"] = bool(ratio is not None and ratio <= PASTE_P50_RATIO_TARGET
                                and loaded["got_memory"] == normal and idle["got_memory"] == normal)
    return report


# -- report ---------------------------------------------------------------------------------------------


def _stress_md(name: str, s: dict[str, Any]) -> list[str]:
    verdict = "met" if s["target_met"] else "NOT met"
    load, stalled = s["load"], sum(h["stalled"] for h in s["hooks"].values())
    lines = [f"## Sessions under restarts: {name} store ({s['memories_before']} memories before)", "",
             f"{s['sessions']} sessions x {s['rounds']} rounds in {s['rounds_s']} s, {len(s['restarts'])} sidecar "
             f"restarts; {load['stall_sessions']} sessions starved ({stalled} hooks suspended {load['stall_s']} s "
             f"early in their run); spool ingested after {s['ingest_wait_s']} s. Target 0 lost, 0 duplicated, "
             f"0 lock errors: **{verdict}**.", "",
             "| kind | sent | stored once | lost | duplicated | hook exit codes | hook p50 ms | hook p90 ms |",
             "|---|---|---|---|---|---|---|---|"]
    for kind in KINDS:
        c, h = s["counts"][kind], s["hooks"][kind]
        lines.append(f"| {kind} | {c['sent']} | {c['stored_once']} | {c['lost']} | {c['duplicated']} | "
                     f"{h['exit_codes']} | {h['wall_ms']['p50']} | {h['wall_ms']['p90']} |")
    logs, ends = s["logs"], s["counts"]["session_end"]
    lines += ["", f"- session ends: {ends['counted']} counted in {ends['rows']} rows for {ends['sent']} sent; "
                  f"{ends['not_handed_off']} never reached the spool or the store",
              f"- logs: {logs['lock_errors']} lock errors, {logs['empty_stdin']} `empty stdin`, "
              f"{logs['spooled_prompts']} prompts spooled by the hook, {logs['watchdog_exits']} watchdog exits, "
              f"{len(logs['sidecar_tracebacks'])} sidecar tracebacks", ""]
    lines += [f"  - `{line}`" for line in logs["lock_error_lines"] + logs["sidecar_tracebacks"]]
    return lines


def _paste_md(p: dict[str, Any]) -> list[str]:
    verdict = "met" if p["target_met"] else "NOT met"
    rows = [("idle", p["idle"]), ("while another session pastes", p["during_paste"])]
    lines = [f"## A {p['paste_bytes'] // 1024} KB paste beside a normal prompt ({p['memories']} memories)", "",
             f"Normal prompt p50 during the paste / idle p50 = **{p['p50_ratio']}** (target <= "
             f"{PASTE_P50_RATIO_TARGET}, every prompt getting its memory): **{verdict}**.", "",
             "| normal prompt | n | p50 ms | p90 ms | max ms | got its memory | exit codes |",
             "|---|---|---|---|---|---|---|"]
    for name, r in rows:
        w = r["wall_ms"]
        lines.append(f"| {name} | {w['n']} | {w['p50']} | {w['p90']} | {w['max']} | {r['got_memory']}/{r['prompts']} "
                     f"| {r['exit_codes']} |")
    pastes = p["pastes"]
    lines += ["", f"- pastes: {pastes['sent']} sent, {pastes['stored']} stored (waited {pastes['store_wait_s']} s "
                  f"after the phase), hook p50 {pastes['wall_ms']['p50']} ms, exit codes {pastes['exit_codes']}",
              f"- logs: {p['logs']['lock_errors']} lock errors, {p['logs']['spooled_prompts']} prompts spooled by "
              f"the hook", ""]
    return lines


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown."""
    meta = report["meta"]
    lines = ["# Stress: nothing lost under load (issue 13)", "",
             f"- date: {meta['date']}; commit: {meta['git_commit'] or 'n/a'}{' (dirty)' if meta['dirty'] else ''}; "
             f"python {meta['python']}; {meta['cpus']} CPUs; load average at start {meta['loadavg']}; "
             f"took {meta['wall_s']} s",
             f"- command: `{meta['command']}`", ""]
    for name, section in report["stress"].items():
        lines += _stress_md(name, section)
    if report.get("paste"):
        lines += _paste_md(report["paste"])
    lines.append(f"All targets met: **{'yes' if report['targets_met'] else 'no'}**.")
    lines.append("")
    return "\n".join(lines)


# -- main -----------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--sessions", type=int, default=8, help="concurrent sessions (default 8)")
    parser.add_argument("--rounds", type=int, default=50, help="rounds per session (default 50)")
    parser.add_argument("--restarts", type=int, default=5, help="sidecar restarts per store (default 5)")
    parser.add_argument("--stall-sessions", type=int, default=2,
                        help="sessions whose hooks are starved of CPU (default 2; 0 for none)")
    parser.add_argument("--stall-share", type=float, default=0.33,
                        help="share of a starved session's hooks that are suspended (default 0.33)")
    parser.add_argument("--stall-s", type=float, default=1.2,
                        help="how long a starved hook is suspended (s, default 1.2)")
    parser.add_argument("--stores", default="fresh,existing",
                        help="which stores scenario 1 runs on: fresh, existing or both (default fresh,existing)")
    parser.add_argument("--existing-memories", type=int, default=3000,
                        help="memories seeded into the existing store (default 3000)")
    parser.add_argument("--paste-kb", type=int, default=300, help="size of the pasted build log (default 300 KB)")
    parser.add_argument("--normal-prompts", type=int, default=16,
                        help="normal prompts per phase of the paste scenario (default 16)")
    parser.add_argument("--paste-memories", type=int, default=1000,
                        help="memories in the paste scenario's store besides the facts (default 1000)")
    parser.add_argument("--no-paste", action="store_true", help="skip the paste scenario")
    parser.add_argument("--seed", type=int, default=13, help="random seed (default 13)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results folder (default benchmarks/results)")
    parser.add_argument("--name", default="stress", help="results file name, without extension (default stress)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (sidecars stopped)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; write ``<name>.json`` and ``.md`` to ``--out``. Returns 0 (the report says whether
    the targets were met)."""
    args = parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="mc-stress-", dir="/tmp"))
    started = time.time()
    report: dict[str, Any] = {"stress": {}, "paste": None}
    loadavg = os.getloadavg()
    try:
        for name in [s.strip() for s in args.stores.split(",") if s.strip()]:
            say(f"scenario 1 on the {name} store")
            memories = args.existing_memories if name == "existing" else 0
            load = Load(args.sessions, args.rounds, args.restarts, args.stall_sessions, args.stall_share, args.stall_s)
            report["stress"][name] = stress_scenario(make_setup(root, name), load, memories=memories,
                                                     seed_=args.seed)
        if not args.no_paste:
            say("scenario 2: a huge paste beside a normal prompt")
            report["paste"] = paste_scenario(make_setup(root, "paste"), memories=args.paste_memories,
                                             normal=args.normal_prompts, paste_kb=args.paste_kb, seed_=args.seed)
    finally:
        for name in ("fresh", "existing", "paste"):
            if (root / name / "data").exists():
                stop_sidecar({**os.environ, "MEMCUE_HOME": str(root / name / "data")})
        if args.keep:
            say(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    report["meta"] = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "git_commit": git_commit(),
                      "dirty": git_dirty(), "python": sys.version.split()[0], "cpus": os.cpu_count(),
                      "loadavg": [round(x, 2) for x in loadavg], "wall_s": round(time.time() - started, 1),
                      "command": "python benchmarks/stress.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                      "args": {k: str(v) for k, v in vars(args).items()}}
    report["targets_met"] = (all(s["target_met"] for s in report["stress"].values())
                             and (report["paste"] is None or report["paste"]["target_met"]))
    write_results(args.out, args.name, report, markdown(report), ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
