"""Sidecar lifecycle (issue 4): SIGTERM finishes the writes and checkpoints the WAL; the log rotates."""

from __future__ import annotations

import logging
import signal
from pathlib import Path

import apsw
from conftest import start_sidecar

from memcue.core.paths import Locations
from memcue.sidecar import lifecycle


def test_sigterm_keeps_every_write_and_checkpoints_the_wal(home: Path) -> None:
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        sc.client.remember_batch([{"content": f"decision {i}: keep the WAL small", "project": "p"}
                                  for i in range(200)])
        sc.client.remember("the last write before the signal", project="p")
        wal = Path(f"{sc.loc.database}-wal")
        assert wal.exists() and wal.stat().st_size > 0, "writes sit in the WAL while running"
        sc.proc.send_signal(signal.SIGTERM)
        assert sc.proc.wait(15) == 0
    finally:
        sc.stop()
    assert not wal.exists() or wal.stat().st_size == 0, "the WAL was checkpointed into the database"
    assert not sc.loc.socket.exists() and not sc.loc.pid_file.exists()
    conn = apsw.Connection(str(sc.loc.database), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert conn.execute("SELECT count(*) FROM memories").fetchall()[0][0] == 201
    finally:
        conn.close()
    assert "memcue sidecar stopped" in sc.log()


def test_the_log_rotates_under_the_state_dir(tmp_path: Path, monkeypatch) -> None:
    loc = Locations(tmp_path / "state")
    monkeypatch.setattr(lifecycle, "LOG_MAX_BYTES", 2_000)
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        lifecycle._setup_logging(loc, foreground=False)
        for i in range(400):
            logging.getLogger("memcue.test").info("line %d of a log that must not grow without bound", i)
        for handler in root.handlers:
            handler.flush()
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
    logs = sorted(p.name for p in loc.sidecar_log.parent.iterdir())
    assert logs == ["sidecar.log", "sidecar.log.1", "sidecar.log.2", "sidecar.log.3"][: len(logs)]
    assert len(logs) == 1 + lifecycle.LOG_BACKUPS, "old logs beyond the backups are deleted"
    assert all(p.stat().st_size <= 2_000 for p in loc.sidecar_log.parent.iterdir())
    assert loc.sidecar_log.parent.parent == loc.root
