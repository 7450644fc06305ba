"""``memcue demo`` end to end: the packaged store, the real sidecar, real payloads through the real hook."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def test_demo_injects_the_expected_memory_for_every_scenario(tmp_path) -> None:
    env = {**os.environ, "TMPDIR": "/tmp"}
    env.pop("MEMCUE_HOME", None)
    proc = subprocess.run([sys.executable, "-m", "memcue", "demo", "--json"], capture_output=True, env=env,
                          timeout=600)
    report = json.loads(proc.stdout)
    failed = [o["title"] for o in report["data"]["outcomes"] if not o["ok"]]
    assert failed == [] and proc.returncode == 0
    summary = report["data"]["summary"]
    assert summary["scenarios"] == summary["passed"] >= 10
    assert all(o["exit_code"] == 0 for o in report["data"]["outcomes"])
    haiku = [o for o in report["data"]["outcomes"] if "haiku" in o["prompt"]]
    assert haiku and haiku[0]["context"] == ""
    assert not os.path.exists(summary["memcue_home"])  # the temp store is removed afterwards
