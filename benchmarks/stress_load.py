"""The workload of the stress benchmark (``stress.py``): Claude Code payloads, the real hook as a
subprocess, sidecar stops and starts, the 300 KB build log, and the seeded facts a normal prompt must
get back.

Imported as ``stress_load`` with the ``benchmarks`` folder on ``sys.path`` (by ``stress.py`` and by
``tests/test_stress_hook.py``). Everything runs on this machine: unix sockets and files only.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memcue.core.paths import Locations
from memcue.hooks import command

#: How long (s) one hook run may take before the benchmark kills it and records exit code -9. The hook's
#: own deadline is 2.5 s; this only bounds a hook that hangs.
HOOK_TIMEOUT_S = 30.0
#: How long (s) a restart waits for a sidecar to answer ``/health`` before it starts one again.
START_RETRY_S = 0.5
#: A restart gives up (and says so in the report) after this long (s) without an answering sidecar.
START_GIVE_UP_S = 90.0
#: Claude Code's SessionEnd ``reason`` values, cycled through the rounds.
END_REASONS = ("prompt_input_exit", "clear", "logout", "other")


# -- payloads -----------------------------------------------------------------------------------------


def _transcript(cwd: str, session_id: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]", "-", cwd)
    return f"{Path.home()}/.claude/projects/{slug}/{session_id}.jsonl"


def prompt_payload(prompt: str, cwd: str, session_id: str) -> dict[str, Any]:
    """Claude Code's UserPromptSubmit payload for ``prompt`` in ``cwd``."""
    return {"session_id": session_id, "transcript_path": _transcript(cwd, session_id), "cwd": cwd,
            "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": prompt}


def stop_payload(answer: str, cwd: str, session_id: str) -> dict[str, Any]:
    """Claude Code's Stop payload with the turn's answer in ``last_assistant_message``."""
    return {"session_id": session_id, "transcript_path": _transcript(cwd, session_id), "cwd": cwd,
            "permission_mode": "default", "hook_event_name": "Stop", "stop_hook_active": False,
            "last_assistant_message": answer}


def session_end_payload(cwd: str, session_id: str, reason: str) -> dict[str, Any]:
    """Claude Code's SessionEnd payload (``reason`` one of ``END_REASONS``)."""
    return {"session_id": session_id, "transcript_path": _transcript(cwd, session_id), "cwd": cwd,
            "permission_mode": "default", "hook_event_name": "SessionEnd", "reason": reason}


# -- the hook -----------------------------------------------------------------------------------------


@dataclass
class HookCall:
    """One hook run: the event, wall time (ms, process start to output complete), exit code, stdout, and
    whether it was suspended on purpose (``run_hook``'s ``stall``)."""

    event: str
    wall_ms: float
    exit_code: int
    stdout: bytes
    stalled: bool = False


def hook_env(home: Path) -> dict[str, str]:
    """The environment a harness gives the hook: this one without MEMCUE_*/CLAUDE_* variables, plus
    ``MEMCUE_HOME=home`` and ``OPENBLAS_NUM_THREADS=1`` (inherited by a sidecar the hook starts)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCUE_", "CLAUDE_"))}
    env.update(MEMCUE_HOME=str(home), OPENBLAS_NUM_THREADS="1")
    return env


def _stall(proc: subprocess.Popen[bytes], after_s: float, stall_s: float) -> None:
    """Suspend ``proc`` (SIGSTOP) ``after_s`` seconds after its start for ``stall_s`` seconds, as a CPU
    that gives the process no time does; nothing if it has exited by then."""
    time.sleep(after_s)
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGSTOP)
    time.sleep(stall_s)
    proc.send_signal(signal.SIGCONT)


def run_hook(event: str, payload: dict[str, Any], env: dict[str, str], *,
             stall: tuple[float, float] | None = None) -> HookCall:
    """Run the installed hook command (``memcue.hooks.command("claude-code", event)``: ``python -I -S
    launch.py``) with ``payload`` as JSON on stdin, as Claude Code does; a hook still running after
    ``HOOK_TIMEOUT_S`` is killed (exit code -9). ``stall`` = (after_s, stall_s): the hook is suspended
    ``after_s`` s after its start for ``stall_s`` s (its payload already in the pipe), as when the machine
    starves it of CPU."""
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    started = time.perf_counter()
    proc = subprocess.Popen(command("claude-code", event), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    staller = None
    if stall is not None:
        staller = threading.Thread(target=_stall, args=(proc, *stall), daemon=True)
        staller.start()
    try:
        out, _ = proc.communicate(data, timeout=HOOK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    if staller is not None:
        staller.join()
    return HookCall(event, (time.perf_counter() - started) * 1000, proc.returncode, out, stall is not None)


# -- the sidecar --------------------------------------------------------------------------------------


def sidecar_pid(loc: Locations) -> int | None:
    """The pid in ``sidecar.pid`` when that process is alive and runs ``memcue.sidecar``, else None."""
    try:
        pid = int(loc.pid_file.read_text())
        if b"memcue.sidecar" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return None
        return pid
    except (OSError, ValueError):
        return None


def _zombie(pid: int) -> bool:
    """True when ``pid`` has exited and waits to be reaped (or is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


class SidecarControl:
    """Starts and stops the real sidecar of one data dir the way a user and the hook do: a detached
    ``python -P -m memcue.sidecar`` (what the hook spawns) and SIGTERM (what ``memcue stop`` sends).
    Keeps the processes it started so they are reaped."""

    def __init__(self, loc: Locations, env: dict[str, str]) -> None:
        self.loc = loc
        self.env = env
        self.started: list[subprocess.Popen[bytes]] = []

    def spawn(self) -> None:
        """Start one sidecar process (it exits at once if another holds the single-instance lock)."""
        self.started.append(subprocess.Popen(
            [sys.executable, "-P", "-m", "memcue.sidecar"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, cwd=str(self.loc.root), env=self.env))
        self.started = [p for p in self.started if p.poll() is None]

    def terminate(self) -> int | None:
        """SIGTERM the running sidecar (as ``memcue stop``, without waiting); returns its pid or None."""
        pid = sidecar_pid(self.loc)
        if pid is not None:
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                return None
        return pid

    def wait_up(self, client: Any, give_up_s: float = START_GIVE_UP_S) -> float | None:
        """Wait until a sidecar answers ``/health``, starting one again every ``START_RETRY_S`` s when none
        answers; returns the seconds waited, None after ``give_up_s``."""
        t0 = time.monotonic()
        last_spawn = t0
        while time.monotonic() - t0 < give_up_s:
            if client.is_up():
                return time.monotonic() - t0
            if time.monotonic() - last_spawn >= START_RETRY_S and sidecar_pid(self.loc) is None:
                self.spawn()
                last_spawn = time.monotonic()
            time.sleep(0.05)
        return None

    def restart(self, client: Any) -> dict[str, Any]:
        """Stop the sidecar and start a new one in the same moment; wait until one answers."""
        t0 = time.monotonic()
        old = self.terminate()
        self.spawn()
        while old is not None and Path(f"/proc/{old}").exists() and time.monotonic() - t0 < START_GIVE_UP_S:
            if _zombie(old):
                break
            time.sleep(0.02)  # the old one still answers while it shuts down
        waited = self.wait_up(client)
        up = None if waited is None else round(time.monotonic() - t0, 2)
        return {"old_pid": old, "new_pid": sidecar_pid(self.loc), "up_after_s": up}

    def reap(self) -> None:
        """Wait briefly for every process this control started (they exit on SIGTERM or at once)."""
        for proc in self.started:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# -- the paste and the seeded facts -------------------------------------------------------------------


def build_log(size_bytes: int, rng: random.Random, tag: str) -> str:
    """A CI build log of about ``size_bytes`` (UTF-8): thousands of host names, job ids, timestamps,
    steps and durations, first line naming ``tag``, as a user pastes one into a prompt."""
    steps = ["checkout", "restore-cache", "pip install", "compile", "unit tests", "lint", "integration tests",
             "docker build", "push image", "deploy canary", "smoke tests", "upload artifacts"]
    statuses = ["ok", "ok", "ok", "ok", "retry", "warn", "FAILED"]
    lines = [f"why did this build fail? paste {tag}:"]
    size = len(lines[0])
    t = 1_764_550_000.0 + rng.randrange(86_400)
    while size < size_bytes:
        t += rng.uniform(0.01, 3.0)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"
        line = (f"{stamp} [job-{rng.randrange(10**7):07d}] host=ci-runner-{rng.randrange(4000):04d}."
                f"{rng.choice(['build', 'test', 'deploy'])}.{rng.choice(['eu-west-1', 'us-east-2', 'ap-south-1'])}"
                f".internal step={rng.choice(steps).replace(' ', '_')} status={rng.choice(statuses)} "
                f"took={rng.uniform(0.001, 120):.3f}s sha={rng.getrandbits(40):010x}")
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


#: Seeded facts for the normal prompts of the paste scenario: (memory, question, a phrase of the memory
#: that the question does not contain: the block holds it only when the memory was injected).
FACTS: tuple[tuple[str, str, str], ...] = (
    ("The nightjar-recon job reconciles the ledger every night at 02:40 UTC on the batch-7 node.",
     "when does the nightjar-recon ledger job run?", "02:40 UTC"),
    ("Invoice PDFs are rendered by the pelican-render service with WeasyPrint; headless Chrome was dropped.",
     "what does pelican-render use to render invoice PDFs?", "WeasyPrint"),
    ("The marmot-cache Redis cluster evicts keys with allkeys-lfu and has a 6 GB memory cap.",
     "which eviction policy does the marmot-cache Redis cluster use?", "allkeys-lfu"),
    ("Partner webhooks from the heron-gateway are signed with Ed25519 keys rotated every 90 days.",
     "how are heron-gateway partner webhooks signed?", "Ed25519"),
    ("The otter-export CSV endpoint streams rows in pages of 5000 and gzips the response.",
     "how many rows per page does the otter-export CSV endpoint stream?", "5000"),
    ("The checkout kill switch in the kestrel-flags service is the flag web.checkout.v2.",
     "which kestrel-flags flag is the checkout kill switch?", "web.checkout.v2"),
    ("The walrus-queue dead-letter queue is drained with make dlq-replay QUEUE=walrus.",
     "how do we drain the walrus-queue dead-letter queue?", "dlq-replay"),
    ("Load tests of the badger-search API run k6 with 400 virtual users for 15 minutes.",
     "how many virtual users do the badger-search load tests use?", "400 virtual users"),
)


def fact_rows(project: str) -> list[dict[str, Any]]:
    """``FACTS`` as ``/remember/batch`` rows in ``project``."""
    return [{"content": fact, "kind": "note", "project": project, "source": "bench", "source_id": f"stress-fact:{i}"}
            for i, (fact, _, _) in enumerate(FACTS)]
