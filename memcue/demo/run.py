"""``memcue demo``: a seeded store, the real sidecar, real Claude Code payloads through the real hook.

Steps: make a temp ``MEMCUE_HOME`` and two project folders (git repos when git is installed); start
the sidecar; import ``seed.jsonl`` (a few hundred memories of an imagined team, with bookkeeping rows
and captured prompts); wait for every vector; pipe each payload of ``payloads.json`` through the hook
command the installer writes (``memcue.hooks.command``) as a subprocess; print each injected block, the
time the hook took, and whether the expected memory was injected. The command (``memcue.cli.demo``)
prints the report; its exit code is 1 when an expectation failed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from memcue.client import Client
from memcue.core.paths import Locations
from memcue.harnesses import HARNESSES
from memcue.hooks import command as hook_command

#: Claude Code's event name -> memcue's, from the harness registry (the payloads name Claude Code's events).
EVENTS = {event.name: ours for ours, event in HARNESSES["claude-code"].events.items()}


def load_seed() -> list[dict[str, Any]]:
    """The packaged seed memories (``seed.jsonl``), one dict per line."""
    text = resources.files("memcue.demo").joinpath("seed.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def load_payloads() -> list[dict[str, Any]]:
    """The packaged demo scenarios (``payloads.json``)."""
    return json.loads(resources.files("memcue.demo").joinpath("payloads.json").read_text(encoding="utf-8"))


def _make_projects(root: Path) -> dict[str, Path]:
    projects = {}
    for name in ("billing-api", "web-ui"):
        path = root / "work" / name
        path.mkdir(parents=True, exist_ok=True)
        if shutil.which("git"):
            subprocess.run(["git", "init", "-q", str(path)], check=False, capture_output=True)
        projects[name] = Path(os.path.realpath(path))
    return projects


def run_hook(event: str, payload: dict[str, Any], env: dict[str, str]) -> tuple[str, float, int]:
    """Run the real hook as a subprocess; return (stdout, wall time in ms, exit code)."""
    started = time.perf_counter()
    proc = subprocess.run(hook_command("claude-code", event),
                          input=json.dumps(payload).encode(), capture_output=True, env=env, timeout=30)
    return proc.stdout.decode("utf-8", "replace"), (time.perf_counter() - started) * 1000, proc.returncode


def _substitute(value: Any, cwd: str) -> Any:
    if isinstance(value, str):
        return value.replace("{cwd}", cwd)
    if isinstance(value, dict):
        return {k: _substitute(v, cwd) for k, v in value.items()}
    return value


#: Where the demo narrates its steps: ``print``'s signature (the command passes ``print``, or silence for --json).
Say = Callable[..., None]


def run_demo(*, keep: bool = False, say: Say = print) -> dict[str, Any]:
    """Run the demo (see module docstring), telling each step through ``say``. Returns the report:
    ``{"summary": {"scenarios", "passed", "hook_ms_median", "memcue_home"}, "outcomes": [{"title", "event",
    "prompt", "hook_ms", "exit_code", "ok", "context"}, ...]}``. The temp store is removed afterwards and its
    sidecar stopped, unless ``keep``."""
    root = Path(tempfile.mkdtemp(prefix="memcue-demo-"))
    env = {**os.environ, "MEMCUE_HOME": str(root / "data"), "OPENBLAS_NUM_THREADS": "1"}
    os.environ["MEMCUE_HOME"] = env["MEMCUE_HOME"]
    projects = _make_projects(root)
    say(f"memcue demo in {root}")
    client = Client(Locations(Path(env["MEMCUE_HOME"])))
    try:
        t0 = time.perf_counter()
        health = client.ensure_running()
        say(f"sidecar {health['version']} up (pid {health['pid']}) in {time.perf_counter() - t0:.1f} s")
        _seed(client, projects, say)
        outcomes = _run_scenarios(projects, env, say)
    finally:
        client.close()
        if not keep:
            subprocess.run([sys.executable, "-m", "memcue", "stop"], env=env, capture_output=True, check=False)
            shutil.rmtree(root, ignore_errors=True)
    times = sorted(o["hook_ms"] for o in outcomes)
    summary = {"scenarios": len(outcomes), "passed": sum(o["ok"] for o in outcomes),
               "hook_ms_median": times[len(times) // 2] if times else None, "memcue_home": env["MEMCUE_HOME"]}
    return {"summary": summary, "outcomes": outcomes}


def summary_text(report: dict[str, Any], keep: bool) -> str:
    """The closing lines of the demo for people: how many scenarios passed, the median hook time, and with
    ``keep`` where the sidecar left running keeps its data."""
    summary = report["summary"]
    text = ("\n" + "=" * 100 + "\n"
            f"{summary['passed']}/{summary['scenarios']} scenarios injected what they should; "
            f"median hook time {summary['hook_ms_median']} ms (process start to output, incl. Python start-up)")
    if keep:
        text += f"\nsidecar left running: export MEMCUE_HOME={summary['memcue_home']}"
    return text


def _seed(client: Client, projects: dict[str, Path], say: Say) -> None:
    """Store ``seed.jsonl`` (a later decision replacing an earlier one, as ``memcue update`` would) and wait
    until every memory has its vector (at most 600 s)."""
    now = time.time()
    seed = load_seed()
    rows = [{
        "content": m["content"], "kind": m["kind"], "pinned": bool(m.get("pinned")),
        "project": str(projects[m["project"]]) if m.get("project") else "",
        "created_at": now - float(m.get("age_days", 0)) * 86400, "source": "demo",
        "source_id": f"demo:{i}", "metadata": {"tags": m.get("tags", [])},
    } for i, m in enumerate(seed) if not m.get("replaces")]
    ids = {row["content"]: r["id"] for row, r in zip(rows, client.remember_batch(rows), strict=True)}
    for m in seed:
        if m.get("replaces"):
            old = next(mid for text, mid in ids.items() if text.startswith(m["replaces"]))
            client.update({"memory_id": old, "content": m["content"], "metadata": {"tags": m.get("tags", [])}})
    t0 = time.perf_counter()

    def progress(h: dict[str, Any]) -> None:
        if sys.stdout.isatty():
            say(f"\rembedding: model {h['model']['state']}, {h['counts']['pending_embeddings']} waiting ",
                end="", flush=True)

    health = client.wait_idle(timeout_s=600, on_progress=progress)
    say(f"\rseeded {len(rows)} memories ({health['counts']['bookkeeping']} bookkeeping rows flagged), "
        f"embedded in {time.perf_counter() - t0:.1f} s" + " " * 10)


def _run_scenarios(projects: dict[str, Path], env: dict[str, str], say: Say) -> list[dict[str, Any]]:
    """Pipe each scenario of ``payloads.json`` through the real hook and check what it injected."""
    outcomes = []
    # What each session was already given: a memory injected once stays in that conversation, and the
    # sidecar does not inject it again (memcue/sidecar/inject/ledger.py).
    given: dict[str, list[tuple[str, str]]] = {}
    for sc in load_payloads():
        payload = _substitute(sc["payload"], str(projects[sc["project"]]))
        out, ms, code = run_hook(EVENTS[sc["event"]], payload, env)
        context = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out.strip() else ""
        earlier = given.setdefault(str(payload.get("session_id", "")), [])
        ok, already = _expected(sc, context, earlier)
        ok = ok and code == 0
        earlier.append((sc["title"], context))
        outcomes.append({"title": sc["title"], "event": sc["event"], "prompt": payload.get("prompt", ""),
                         "hook_ms": round(ms, 1), "exit_code": code, "ok": ok, "context": context})
        say("\n" + "=" * 100)
        say(f"{sc['event']} · {sc['title']} · hook {ms:.0f} ms · exit {code} · {'PASS' if ok else 'FAIL'}")
        if payload.get("prompt"):
            say(f"prompt: {payload['prompt']}")
        say("-" * 100)
        say(context if context else "(nothing injected)")
        if already:
            say(f"(the expected memory is already in this conversation: injected at '{already}')")
    return outcomes


def _expected(sc: dict[str, Any], context: str, earlier: list[tuple[str, str]]) -> tuple[bool, str]:
    """Whether the injected ``context`` is what scenario ``sc`` expects, and the title of the earlier
    scenario of the same session that already injected the expected memory ("" if none)."""
    if sc.get("expect_nothing"):
        return context == "", ""
    if sc.get("expect_substring"):
        want = sc["expect_substring"]
        already = next((title for title, text in earlier if want not in context and want in text), "")
        absent = sc.get("expect_absent")
        return (want in context or bool(already)) and not (absent and absent in context), already
    return bool(context), ""
