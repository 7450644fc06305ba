"""Local access (issue 16, finding 3): under a permissive umask the data dir is 0700 and memcue's files 0600,
looser ones are tightened at start with a warning, and a socket that cannot sit in the data dir goes into a
private folder of the user's; one that is not private is neither served on nor connected to.

Real sidecar processes, the real hook as a subprocess.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import start_sidecar, wait_until
from hookutil import run_hook

from memcue.client import Client, SidecarDown
from memcue.core.paths import Locations
from memcue.sidecar.store import Store


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_data_dir_and_files_are_private_and_loose_ones_are_tightened(tmp_path: Path, loose_umask: None) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    store = Store(home / "memcue.db", want_vec=False)  # an older install's database, world-readable
    store.close()
    os.chmod(home / "memcue.db", 0o644)
    os.chmod(home, 0o755)
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        sc.client.remember("the staging database password rotates monthly", project=str(tmp_path))
        wal = home / "memcue.db-wal"
        wait_until(wal.exists)
        assert _mode(home) == 0o700
        for path in (home / "memcue.db", wal, home / "memcue.db-shm", sc.loc.sidecar_log):
            assert _mode(path) == 0o600, path
        assert _mode(sc.loc.sidecar_log.parent) == 0o700
        assert "was mode 644, readable by others: now 600" in sc.log()
    finally:
        sc.stop()


def test_the_users_own_files_in_the_data_dir_keep_their_modes(tmp_path: Path, loose_umask: None) -> None:
    """MEMCUE_HOME pointed at a folder that also holds the user's files: the sidecar makes the folder and its own
    files private and leaves a script's execute bit, a public file and a folder of the user's as they were."""
    home = tmp_path / "shared"
    (home / "site").mkdir(parents=True, mode=0o755)
    script, public = home / "run.sh", home / "public.txt"
    script.write_text("#!/bin/sh\necho ok\n")
    public.write_text("hello\n")
    os.chmod(script, 0o755)
    os.chmod(public, 0o644)
    os.chmod(home / "site", 0o755)
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        assert _mode(home) == 0o700 and _mode(home / "memcue.db") == 0o600
        assert (_mode(script), _mode(public), _mode(home / "site")) == (0o755, 0o644, 0o755)
        assert "run.sh" not in sc.log() and "public.txt" not in sc.log()
        assert subprocess.run([str(script)], capture_output=True, text=True).stdout == "ok\n"
    finally:
        sc.stop()


def test_every_name_memcue_writes_in_its_data_dir_is_listed_as_its_own() -> None:
    from memcue.core.paths import DATA_DIR_ENTRIES
    from memcue.hooks.run import STALL_MARK
    from memcue.hooks.upgrade import RESTART_RECORD
    from memcue.mcp.early import CACHE_NAME

    loc = Locations(Path("/d"))
    named = [loc.database, loc.pid_file, loc.lock_file, loc.sidecar_log.parent, loc.spool_dir, loc.models_dir,
             loc.tiktoken_cache, loc.config_file, loc.install_record("x").parent]
    assert {p.relative_to(loc.root).parts[0] for p in named} | {STALL_MARK, RESTART_RECORD, CACHE_NAME} \
        <= DATA_DIR_ENTRIES


def test_the_hook_spools_and_logs_privately_under_a_loose_umask(tmp_path: Path, loose_umask: None) -> None:
    home = tmp_path / "home"
    run = run_hook({"session_id": "s1", "cwd": str(tmp_path), "prompt": "keep this one"}, home,
                   MEMCUE_HOOK_SPAWN="0", MEMCUE_HOOK_DEADLINE_S="1.0")
    assert run.returncode == 0
    files = [p for p in (home / "spool").iterdir()] + [home / "logs" / "hook.log"]
    assert files and all(_mode(p) == 0o600 for p in files), {str(p): oct(_mode(p)) for p in files}
    assert _mode(home) == 0o700 and _mode(home / "spool") == 0o700


def _deep_home(tmp_path: Path) -> Path:
    home = tmp_path / ("d" * 60) / ("e" * 60) / "home"
    home.mkdir(parents=True)
    return home


def test_a_deep_data_dir_puts_its_socket_in_a_private_folder(tmp_path: Path) -> None:
    home = _deep_home(tmp_path)
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        sock = Locations(home).socket
        assert sock.parent.name == f"memcue-{os.getuid()}" and sock.parent != home
        assert stat.S_ISSOCK(os.lstat(sock).st_mode) and _mode(sock.parent) == 0o700
        assert sc.client.is_up()
    finally:
        sc.stop()


def test_a_socket_folder_that_is_not_private_is_neither_served_on_nor_used(tmp_path: Path) -> None:
    home = _deep_home(tmp_path)
    tmp = tmp_path / "tmp"
    shared = tmp / f"memcue-{os.getuid()}"
    shared.mkdir(parents=True, mode=0o755)
    os.chmod(shared, 0o755)  # another user could have made it, or put a socket of theirs in it
    env = {**os.environ, "MEMCUE_HOME": str(home), "TMPDIR": str(tmp), "MEMCUE_NO_MODEL": "1"}
    out = subprocess.run([sys.executable, "-m", "memcue.sidecar", "--foreground"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 1 and "is not a private folder of yours" in out.stderr, out.stderr
    assert not list(shared.iterdir()), "no socket was bound there"

    run = run_hook({"session_id": "s1", "cwd": str(tmp_path), "prompt": "who listens?"}, home, TMPDIR=str(tmp),
                   MEMCUE_HOOK_SPAWN="0", MEMCUE_HOOK_DEADLINE_S="1.0")
    assert run.returncode == 0 and run.stdout == b""
    assert "not a private folder" in (home / "logs" / "hook.log").read_text()
    os.environ["TMPDIR"], old = str(tmp), os.environ.get("TMPDIR")
    try:
        import tempfile
        tempfile.tempdir = None
        with pytest.raises(SidecarDown, match="not a private folder"):
            Client(Locations(home)).health()
    finally:
        tempfile.tempdir = None
        if old is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = old
