"""A Ctrl-C at any point of a ``memcue`` command's start-up ends it quietly: exit 130, no traceback (a fresh-clone
trial saw KeyboardInterrupt tracebacks from ``memcue list`` and ``memcue recall`` interrupted while loading).

The real command as a subprocess, SIGINT sent at several delays."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import memcue

#: memcue's own source folder as a traceback names it (a checkout may itself sit in a folder named memcue).
PACKAGE = str(Path(memcue.__file__).parent) + os.sep


@pytest.mark.parametrize("delay_ms", [20, 60, 120, 250, 400])
def test_ctrl_c_while_a_command_starts_ends_it_without_a_traceback(tmp_path: Path, delay_ms: int) -> None:
    env = os.environ | {"MEMCUE_HOME": str(tmp_path / "home"), "MEMCUE_NO_MODEL": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "memcue", "recall", "why is httpx pinned"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(delay_ms / 1000)
    proc.send_signal(signal.SIGINT)
    try:
        _, raw = proc.communicate(timeout=60)
    finally:
        subprocess.run([sys.executable, "-m", "memcue", "stop"], env=env, capture_output=True, timeout=60)
    err = raw.decode("utf-8", "replace")
    # Before memcue's first line runs (the interpreter's own start-up) Python's default applies: exit 1 with a
    # traceback through site/runpy only. From memcue's first line on: 130 and nothing on stderr but a message.
    if proc.returncode in (1, -signal.SIGINT):
        assert PACKAGE not in err, f"interrupted inside memcue's code at {delay_ms} ms:\n{err}"
    else:
        assert "Traceback" not in err, err
        assert proc.returncode in (0, 130), (proc.returncode, err)
