"""Issue 13, failure kind 5: stop during start-up. SIGTERM or SIGINT (what ``memcue stop`` and Ctrl-C send) at
any moment of the real sidecar's start-up (imports, store, model loading, serving) ends it cleanly: exit 0, no
traceback or abort, the database intact and checkpointed, socket, pid and lock files gone, the next start fine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
from conftest import start_sidecar

import memcue
from memcue.core.paths import Locations
from memcue.sidecar import lifecycle

#: Delays (ms after the process starts) at which the signal comes: before Python runs memcue, during the
#: imports, while the store opens, while the model loads, while serving.
DELAYS_MS = (0, 50, 200, 500, 1000, 2000)
#: memcue's own source folder as a traceback names it (a checkout may itself sit in a folder named memcue).
PACKAGE = str(Path(memcue.__file__).parent) + os.sep


def _check_database(loc: Locations) -> None:
    wal = Path(f"{loc.database}-wal")
    assert not wal.exists() or wal.stat().st_size == 0, "the WAL was checkpointed"
    conn = apsw.Connection(str(loc.database), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("SELECT count(*) FROM memories").fetchall()[0][0] == 30
    finally:
        conn.close()


def _stop_at(home: Path, delay_ms: int, sig: signal.Signals) -> tuple[int, str]:
    # PYTHONFAULTHANDLER: a sidecar that hangs is ended with SIGABRT, which makes Python print every thread's
    # stack to stderr: the failure message then says where it was stuck.
    env = os.environ | {"MEMCUE_HOME": str(home), "OPENBLAS_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1"}
    # SIGINT's default action in the child, whatever this test runs under: a background job of a
    # non-interactive shell inherits SIGINT ignored, and a SIGINT sent before the sidecar installs its handler
    # would then be dropped (a Ctrl-C that cannot reach the process).
    proc = subprocess.Popen([sys.executable, "-m", "memcue.sidecar"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(delay_ms / 1000)
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        stuck = err.decode("utf-8", "replace")[-6000:]
        raise AssertionError(f"the sidecar did not stop within 30 s of {sig.name} at {delay_ms} ms; its stderr "
                             f"(thread stacks at the end):\n{stuck}") from None
    return proc.returncode, err.decode("utf-8", "replace")


def test_issue13_stop_during_start_up_at_any_point_is_clean(home: Path) -> None:
    loc = Locations(home)
    sc = start_sidecar(home)
    try:
        sc.client.remember_batch([{"content": f"decision {i}: stop cleanly", "project": "p"} for i in range(30)])
    finally:
        sc.stop()
    for delay_ms in DELAYS_MS:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loc.sidecar_log.unlink(missing_ok=True)
            code, err = _stop_at(home, delay_ms, sig)
            where = f"{sig.name} at {delay_ms} ms"
            # A signal that comes while the interpreter itself starts (site, runpy: before any memcue code
            # runs, about 20 ms here, longer on a busy machine) gets Python's default: SIGTERM ends the process,
            # SIGINT raises KeyboardInterrupt in the interpreter's own start-up (exit 1). Nothing exists yet then
            # (no log, no pid file, so ``memcue stop`` cannot send it; a spawned sidecar has its own session, so
            # no terminal's Ctrl-C reaches it). From the sidecar's first line on it exits 0, without a traceback.
            if not loc.sidecar_log.exists() and (code == -sig or (sig == signal.SIGINT and code == 1)):
                assert PACKAGE not in err, f"{where}: interrupted inside memcue's code\n{err}"
                err = ""
            else:
                assert code == 0, f"{where}: exit {code}\n{err}"
            assert "Traceback" not in err and "Aborted" not in err and "terminate" not in err, f"{where}:\n{err}"
            log = loc.sidecar_log.read_text() if loc.sidecar_log.exists() else ""
            assert "Traceback" not in log and " ERROR " not in log, f"{where}:\n{log}"
            for path in (loc.socket, loc.pid_file, loc.lock_file):
                assert not path.exists(), f"{where}: {path.name} left behind"
            _check_database(loc)
    sc = start_sidecar(home)
    try:
        assert sc.client.health()["counts"]["memories"] == 30
    finally:
        sc.stop()
    _check_database(loc)


def test_issue13_memcue_stop_as_soon_as_the_pid_file_appears(home: Path) -> None:
    loc = Locations(home)
    env = os.environ | {"MEMCUE_HOME": str(home), "OPENBLAS_NUM_THREADS": "1"}
    # SIGINT's default action in the child, whatever this test runs under: a background job of a
    # non-interactive shell inherits SIGINT ignored, and a SIGINT sent before the sidecar installs its handler
    # would then be dropped (a Ctrl-C that cannot reach the process).
    proc = subprocess.Popen([sys.executable, "-m", "memcue.sidecar"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 30
        while not loc.pid_file.exists():
            assert time.monotonic() < deadline and proc.poll() is None, "the sidecar never wrote its pid file"
            time.sleep(0.005)
        stop = subprocess.run([sys.executable, "-m", "memcue", "stop", "--json"], env=env, capture_output=True,
                              timeout=60)
        assert stop.returncode == 0 and json.loads(stop.stdout)["data"]["stopped"] is True, stop
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert b"Traceback" not in proc.stderr.read() if proc.stderr else True
    for path in (loc.socket, loc.pid_file, loc.lock_file):
        assert not path.exists()


def test_issue13_a_lock_on_a_removed_lock_file_is_taken_again(tmp_path: Path, monkeypatch) -> None:
    """The holder removes the lock file on stop: a starter that opened the old file just before must not
    count its lock on that orphaned file (two sidecars would run); it locks the file now at the path."""
    loc = Locations(tmp_path)
    real_flock, calls = lifecycle.fcntl.flock, []

    def flock_after_the_holder_left(fd: int, op: int) -> None:
        if not calls:  # the first attempt: the old holder removes the file between our open and our flock
            loc.lock_file.unlink()
        calls.append(fd)
        real_flock(fd, op)

    loc.root.mkdir(exist_ok=True)
    loc.lock_file.touch()
    monkeypatch.setattr(lifecycle.fcntl, "flock", flock_after_the_holder_left)
    fd = lifecycle.acquire_lock(loc)
    assert fd is not None and len(calls) == 2
    assert os.fstat(fd).st_ino == os.stat(loc.lock_file).st_ino
    monkeypatch.setattr(lifecycle.fcntl, "flock", real_flock)
    assert lifecycle.acquire_lock(loc) is None, "a second starter finds it held"
    lifecycle.release_lock(loc, fd)
    assert not loc.lock_file.exists()
    again = lifecycle.acquire_lock(loc)
    assert again is not None
    lifecycle.release_lock(loc, again)
