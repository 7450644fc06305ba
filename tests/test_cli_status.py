"""``memcue status`` with no sidecar running: exit 0 (it starts on demand), and the text names the data folder,
whether it holds memories yet, and how to get the counts (found by a trial: it named only the socket and log)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from memcue.core.paths import Locations


def _status(home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memcue", "status"], env={**os.environ, "MEMCUE_HOME": str(home)},
                          capture_output=True, text=True, timeout=60)


def test_status_without_a_sidecar_names_the_data_folder_and_whether_it_holds_memories(home: Path) -> None:
    fresh = _status(home)
    assert fresh.returncode == 0 and "is not running" in fresh.stdout, fresh.stderr
    assert f"Data in {home} (no memories yet)" in fresh.stdout and "(`memcue list`), starts it" in fresh.stdout
    loc = Locations(home)
    loc.database.parent.mkdir(parents=True, exist_ok=True)
    loc.database.write_bytes(b"")  # a store is there: no "no memories yet"
    kept = _status(home)
    assert f"Data in {home} (memories stored)" in kept.stdout and "no memories yet" not in kept.stdout, kept.stdout
