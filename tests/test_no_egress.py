"""Nothing leaves the machine (issue 16, finding 5; DESIGN.md section 8): the sidecar's start (with the real
embedding model through ONNX Runtime), a remember, a recall and the real hook run under ``strace`` make no
connect() to any address but loopback, and no DNS lookup.

``strace`` is a Debian package that ``make harnesses`` installs when it is missing; without it the test is
skipped, unless ``MEMCUE_REQUIRE_HARNESSES=1`` (``make test``, CI), which makes it fail instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import prompt_payload

from memcue.client import Client
from memcue.core.paths import Locations

#: A connect() to an internet address: AF_INET not to 127.0.0.0/8, AF_INET6 not to ::1 (strace's notation).
_CONNECT = re.compile(r"connect\(\d+, \{sa_family=(AF_INET6?)[^}]*?(?:inet_addr\(\"([^\"]+)\"\)|"
                      r"inet_pton\(AF_INET6, \"([^\"]+)\")")


def _strace() -> str:
    path = shutil.which("strace")
    if path is None:
        if os.environ.get("MEMCUE_REQUIRE_HARNESSES") == "1":
            pytest.fail("strace is missing: `make harnesses` installs it (Debian package strace)")
        pytest.skip("strace is not installed")
    return path


def off_machine(trace: str) -> list[str]:
    """The connect() lines of an ``strace -f -e trace=connect`` log that go to an address off this machine."""
    out = []
    for line in trace.splitlines():
        m = _CONNECT.search(line)
        if m is None:
            continue
        address = m.group(2) or m.group(3) or ""
        if not (address.startswith("127.") or address in ("::1", "::ffff:127.0.0.1")):
            out.append(line.strip())
    return out


def test_the_detector_sees_a_connection_off_the_machine(tmp_path: Path) -> None:
    """The check below can fail: a process that tries an internet address is caught."""
    trace = tmp_path / "probe.txt"
    probe = "import socket; s = socket.socket(); s.settimeout(0.2); s.connect_ex(('192.0.2.1', 80))"
    subprocess.run([_strace(), "-f", "-qq", "-e", "trace=connect", "-o", str(trace), sys.executable, "-c", probe],
                   capture_output=True, timeout=60)
    assert [line for line in off_machine(trace.read_text()) if "192.0.2.1" in line]


def test_sidecar_remember_recall_and_hook_connect_to_nothing_off_the_machine(tmp_path: Path) -> None:
    strace, home, project = _strace(), tmp_path / "home", tmp_path / "proj"
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCUE_", "ORT_"))}
    env.update(MEMCUE_HOME=str(home), OPENBLAS_NUM_THREADS="1")
    sidecar_trace, hook_trace = tmp_path / "sidecar.txt", tmp_path / "hook.txt"
    proc = subprocess.Popen([strace, "-f", "-qq", "-e", "trace=connect", "-o", str(sidecar_trace), sys.executable,
                             "-m", "memcue.sidecar", "--foreground"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    client = Client(Locations(home), timeout_s=60)
    try:
        deadline = time.monotonic() + 60
        while not client.is_up():
            assert proc.poll() is None and time.monotonic() < deadline, "the sidecar did not start under strace"
            time.sleep(0.1)
        client.remember("the nightly export runs at 02:00 UTC from the reports worker", project=str(project))
        client.wait_idle(timeout_s=120)  # the model loaded and embedded: ONNX Runtime ran
        assert client.health()["model"]["state"] == "ready"
        assert client.recall("when does the nightly export run?", project=str(project))["results"]
        payload = json.dumps(prompt_payload("when does the nightly export run?", str(project))).encode()
        hook = subprocess.run([strace, "-f", "-qq", "-e", "trace=connect", "-o", str(hook_trace), sys.executable,
                               "-m", "memcue.hooks", "claude-code", "user-prompt-submit"],
                              input=payload, env=env, capture_output=True, timeout=60)
        assert hook.returncode == 0
    finally:
        client.close()
        subprocess.run([sys.executable, "-m", "memcue", "stop"], env=env, capture_output=True, timeout=60)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    traces = sidecar_trace.read_text() + hook_trace.read_text()
    assert "connect(" in traces, "strace saw the processes' connections (the unix socket at least)"
    assert off_machine(traces) == []
