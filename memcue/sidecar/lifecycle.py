"""Sidecar lifecycle: single-instance lock, pid file, the unix socket, serving, clean shutdown.

Module-level imports are stdlib only, so a second instance started by a hook exits before paying for
FastAPI, numpy or the model. The socket is bound (mode 0600) before the heavy imports, so clients
that connect early queue instead of starting yet another sidecar. A stale socket is reclaimed only
while holding the lock; a non-socket file at the socket path is never deleted (case C09).
"""

from __future__ import annotations

import fcntl
import logging
import logging.handlers
import os
import signal
import socket
import stat
import sys
from pathlib import Path

from memcue.core.paths import Locations, locations
from memcue.sidecar.runtime.heap import limit_arenas

log = logging.getLogger("memcue.sidecar")

#: Rotating log: bytes per file and files kept.
LOG_MAX_BYTES, LOG_BACKUPS = 1_000_000, 3


class SidecarError(RuntimeError):
    """The sidecar cannot start (clear message for the user)."""


def acquire_lock(loc: Locations) -> int | None:
    """Take the single-instance lock; return its fd, or None when another live sidecar holds it."""
    loc.root.mkdir(parents=True, exist_ok=True)
    fd = os.open(loc.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def read_pid(loc: Locations) -> int | None:
    """The pid in the pid file, or None when absent or unreadable."""
    try:
        return int(loc.pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def bind_socket(path: Path) -> socket.socket:
    """Bind and listen on ``path`` with mode 0600, reclaiming a stale socket file.

    Call only while holding the lock. Raises ``SidecarError`` when a non-socket file is in the way.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None:
        if not stat.S_ISSOCK(st.st_mode):
            raise SidecarError(
                f"{path} exists and is not a socket; memcue will not delete it. Move it away, or set "
                "MEMCUE_HOME to another folder."
            )
        os.unlink(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    return sock


def _setup_logging(loc: Locations, foreground: bool) -> None:
    loc.sidecar_log.parent.mkdir(parents=True, exist_ok=True)
    handler: logging.Handler = logging.handlers.RotatingFileHandler(
        loc.sidecar_log, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8"
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    if foreground:
        root.addHandler(logging.StreamHandler(sys.stderr))
    root.setLevel(logging.INFO)


def serve(*, foreground: bool = False, load_model: bool = True) -> int:
    """Run the sidecar until SIGTERM/SIGINT. Returns the exit code (0 also when another instance runs)."""
    loc = locations()
    limit_arenas()
    lock_fd = acquire_lock(loc)
    if lock_fd is None:
        if foreground:
            print(f"memcue sidecar is already running (pid {read_pid(loc)}); socket {loc.socket}", file=sys.stderr)
        return 0
    _setup_logging(loc, foreground)
    try:
        sock = bind_socket(loc.socket)
    except (SidecarError, OSError) as exc:
        log.error("cannot start: %s", exc)
        print(f"memcue: cannot start the sidecar: {exc}", file=sys.stderr)
        return 1
    loc.pid_file.write_text(str(os.getpid()))
    service = None
    try:
        import uvicorn

        from memcue.sidecar.app import create_app
        from memcue.sidecar.service import MemoryService
        from memcue.sidecar.settings import load_settings

        settings = load_settings(loc.config_file)
        try:
            service = MemoryService(loc, settings, load_model=load_model and not settings.no_model)
        except Exception as exc:  # noqa: BLE001 - report the store problem in one clear line
            message = (f"cannot open the memory store {loc.database}: {type(exc).__name__}: {exc}. "
                       "Nothing was changed; move the file away to start a new store, or restore a backup.")
            log.error(message)
            print(f"memcue: {message}", file=sys.stderr)
            return 1
        service.start()
        log.info("memcue sidecar %s serving on %s (pid %d)", _version(), loc.socket, os.getpid())
        config = uvicorn.Config(create_app(service), log_level="warning", lifespan="off", access_log=False,
                                timeout_graceful_shutdown=5)
        # uvicorn handles SIGTERM itself, then re-raises it once it has shut down; a Python handler turns
        # that re-raise into SystemExit so the cleanup below (WAL checkpoint, socket, pid file) still runs.
        signal.signal(signal.SIGTERM, _exit_on_signal)
        uvicorn.Server(config).run(sockets=[sock])
        return 0
    except Exception as exc:
        log.exception("sidecar failed")
        print(f"memcue: the sidecar failed: {exc}", file=sys.stderr)
        return 1
    finally:
        if service is not None:
            service.stop()
        for path in (loc.socket, loc.pid_file):
            try:
                if path == loc.socket and not stat.S_ISSOCK(os.lstat(path).st_mode):
                    continue
                os.unlink(path)
            except OSError:
                pass
        log.info("memcue sidecar stopped")
        os.close(lock_fd)


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _version() -> str:
    from memcue import __version__

    return __version__
