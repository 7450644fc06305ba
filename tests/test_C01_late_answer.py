"""Case C01 (sidecar stopped with SIGSTOP), what comes after: the prompt hooks fail open while the sidecar is
stopped, and when it runs again it takes up their requests although no hook is waiting any more. Those answers
must not count as shown: the session's next prompt that needs the memory gets it (before, it was "already shown
in this session", and the receipt listed an injection no hook ever delivered).

The hook sends its clock with each request (``sent_at``); the sidecar takes the time a request waited off its
budget, and one taken up past it is answered with nothing, its prompt still captured. Real sidecar, real hook
subprocesses, real SIGSTOP.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from conftest import Sidecar, context_of, prompt_payload, run_hook

from memcue.client import ClientError
from memcue.core.project import resolve_project

SESSION = "7d6c5b4a-3e2f-4a1b-8c9d-0e1f2a3b4c5d"
FACT = "The staging database is pg-stage-2 on port 6432."


def _receipt(sidecar: Sidecar) -> str:
    try:
        return str(sidecar.client.receipt(SESSION))
    except ClientError:  # nothing of the session is stored yet
        return ""


def test_C01_answers_taken_up_after_the_hook_gave_up_are_not_shown(sidecar: Sidecar, tmp_path: Path) -> None:
    project = tmp_path / "billing"
    project.mkdir()
    sidecar.client.remember(FACT, project=resolve_project(str(project)), kind="note")
    sidecar.client.wait_idle(120)
    env = {**os.environ, "MEMCUE_HOOK_DEADLINE_S": "1.5"}
    os.kill(sidecar.proc.pid, signal.SIGSTOP)
    try:
        stopped = [run_hook(prompt_payload(f"where is the staging database? try {n}", str(project),
                                           session_id=SESSION), env=env) for n in range(3)]
    finally:
        os.kill(sidecar.proc.pid, signal.SIGCONT)
    assert [(r.returncode, context_of(r)) for r in stopped] == [(0, "")] * 3
    deadline = time.monotonic() + 30  # the stopped hooks' requests are taken up now, each past its budget
    while "try 2" not in _receipt(sidecar) and time.monotonic() < deadline:
        time.sleep(0.2)
    sidecar.client.wait_idle(120)
    asked = run_hook(prompt_payload("what's the staging database host and port again?", str(project),
                                    session_id=SESSION), env={**os.environ, "MEMCUE_HOOK_DEADLINE_S": "10"})
    assert "pg-stage-2" in context_of(asked), sidecar.log()[-2000:]
