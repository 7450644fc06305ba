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
import threading
from pathlib import Path

from memcue.core.paths import DATA_DIR_ENTRIES, Locations, locations, private_dir
from memcue.sidecar.idle import Activity, watch_idle
from memcue.sidecar.runtime.heap import limit_arenas

log = logging.getLogger("memcue.sidecar")

#: Rotating log: bytes per file and files kept.
LOG_MAX_BYTES, LOG_BACKUPS = 1_000_000, 3


class SidecarError(RuntimeError):
    """The sidecar cannot start (clear message for the user)."""


def acquire_lock(loc: Locations) -> int | None:
    """Take the single-instance lock; return its fd, or None when another live sidecar holds it.

    The lock file is deleted on a clean stop (``release_lock``), so a lock taken on a file that has since
    been unlinked or replaced is worthless: after ``flock`` the fd must still be the file at the path, else
    it is taken again on the current file."""
    loc.root.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(loc.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
        try:
            held, current = os.fstat(fd), os.stat(loc.lock_file)
        except FileNotFoundError:
            current = None
        if current is not None and (held.st_dev, held.st_ino) == (current.st_dev, current.st_ino):
            return fd
        os.close(fd)  # the file was removed by the sidecar that held it: lock the new one


def release_lock(loc: Locations, fd: int) -> None:
    """Delete the lock file, then release the lock ``fd`` (in that order: see ``acquire_lock``)."""
    try:
        os.unlink(loc.lock_file)
    except OSError:
        pass
    os.close(fd)


def read_pid(loc: Locations) -> int | None:
    """The pid in the pid file, or None when absent or unreadable."""
    try:
        return int(loc.pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def bind_socket(path: Path) -> socket.socket:
    """Bind ``path`` with mode 0600, reclaiming a stale socket file; the socket is not listening yet.

    It listens once the server serves (asyncio's ``Server`` calls ``listen`` when uvicorn starts it): until then a
    connect is refused at once, so a hook that comes while the sidecar starts (imports, the store, the model:
    seconds) goes on and spools its prompt instead of waiting in the listen backlog until its deadline, and a
    CLI command sees a starting sidecar, not a stuck one. Call only while holding the lock. Raises
    ``SidecarError`` when a non-socket file is in the way.
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
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not private_dir(path.parent):
        raise SidecarError(f"{path.parent} is not a private folder of yours (it must be a folder you own, mode "
                           "0700): memcue will not put its socket there. Remove it, or set MEMCUE_HOME to a "
                           "shorter path")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    return sock


def tighten_permissions(loc: Locations) -> list[str]:
    """Make the data dir 0700 and memcue's files in it 0600 (folders 0700) where they are looser, each change
    logged as a warning (DESIGN.md section 8: another local user must not read memories, prompts or logs).
    Symlinks are left alone, and so is anything at the socket's path that is not a socket: the user's file, which
    memcue neither deletes nor touches (case C09). Returns the paths changed."""
    changed = []
    for path in _own_paths(loc):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid():
            continue
        if path == loc.socket and not stat.S_ISSOCK(st.st_mode):
            continue
        want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
        if stat.S_IMODE(st.st_mode) & ~want:
            try:
                os.chmod(path, stat.S_IMODE(st.st_mode) & want)
            except OSError as exc:
                log.warning("could not tighten %s (mode %o): %s", path, stat.S_IMODE(st.st_mode), exc)
                continue
            log.warning("%s was mode %o, readable by others: now %o", path, stat.S_IMODE(st.st_mode),
                        stat.S_IMODE(st.st_mode) & want)
            changed.append(str(path))
    return changed


def _own_paths(loc: Locations) -> list[Path]:
    """The data dir, memcue's entries in it (``DATA_DIR_ENTRIES``: a user who points ``MEMCUE_HOME`` at a folder
    of theirs keeps their own files' modes), and the entries of its logs and spool folders."""
    paths = [loc.root, *(loc.root / name for name in sorted(DATA_DIR_ENTRIES))]
    for folder in (loc.sidecar_log.parent, loc.spool_dir):
        try:
            paths.extend(sorted(folder.iterdir()))
        except OSError:
            continue
    return list(dict.fromkeys(paths))


class RedactingFormatter(logging.Formatter):
    """A ``logging.Formatter`` whose every line (message, arguments and traceback) has its secrets replaced by
    markers (``memcue.core.redaction``): what a request carried never reaches the log as it was."""

    def format(self, record: logging.LogRecord) -> str:
        from memcue.core.redaction import redact

        return redact(super().format(record)).text


def _setup_logging(loc: Locations, foreground: bool) -> None:
    loc.sidecar_log.parent.mkdir(parents=True, exist_ok=True)
    handler: logging.Handler = logging.handlers.RotatingFileHandler(
        loc.sidecar_log, maxBytes=LOG_MAX_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8"
    )
    formatter = RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    if foreground:
        stderr = logging.StreamHandler(sys.stderr)
        stderr.setFormatter(formatter)
        root.addHandler(stderr)
    root.setLevel(logging.INFO)


#: The signals that stop the sidecar: ``memcue stop`` sends SIGTERM, a terminal's Ctrl-C SIGINT.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopRequest:
    """Records a stop signal at any point of start-up or serving, without interrupting what runs.

    Start-up (imports, opening the store, starting the model) is never cut in the middle: the signal is noted
    and start-up stops at its next step (``requested``). Once uvicorn runs, ``server`` is set and a signal
    asks it to shut down gracefully (a second SIGINT forces it, as uvicorn's own handler does)."""

    def __init__(self) -> None:
        self.signum = 0
        self.server: object | None = None

    @property
    def requested(self) -> bool:
        """True once a stop signal came."""
        return self.signum != 0

    def handle(self, signum: int, frame: object) -> None:
        """The signal handler (main thread, between bytecodes)."""
        again, self.signum = self.requested, signum
        if self.server is not None:
            if again and signum == signal.SIGINT:
                self.server.force_exit = True  # type: ignore[attr-defined]
            self.server.should_exit = True  # type: ignore[attr-defined]


def serve(*, foreground: bool = False, load_model: bool = True) -> int:
    """Run the sidecar until SIGTERM/SIGINT. Returns the exit code: 0 after a stop signal at any point (start-up
    included) and when another instance runs; 1 when it cannot start (a clear line on stderr and in the log).
    The signal handlers are installed first (main thread only; a signal ``python -m memcue.sidecar`` held
    blocked during its imports is delivered then) and restored on return. Only a signal that comes while the
    interpreter itself starts, before ``__main__`` runs, gets Python's default (SIGTERM ends the process,
    SIGINT a KeyboardInterrupt in ``site``, exit 1): nothing exists yet then, not even the pid file ``memcue
    stop`` reads, and a sidecar a hook started runs in its own session, out of a terminal's Ctrl-C."""
    stop = StopRequest()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {sig: signal.signal(sig, stop.handle) for sig in STOP_SIGNALS}
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # blocked by ``__main__`` during its imports
    try:
        return _serve(stop, foreground, load_model)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serve(stop: StopRequest, foreground: bool, load_model: bool) -> int:
    """``serve`` once the signal handlers are in place: lock, log, socket and pid file, then ``_run``; the
    socket, pid and lock files go whatever happens after the lock is taken."""
    try:
        loc = locations()
    except OSError as exc:  # MEMCUE_HOME is relative (core/paths.py)
        print(f"memcue: cannot start the sidecar: {exc}", file=sys.stderr)
        return 1
    limit_arenas()
    os.umask(0o077)  # everything the sidecar writes is the user's alone: data dir 0700, files 0600 (section 8)
    lock_fd = acquire_lock(loc)
    if lock_fd is None:
        if foreground:
            print(f"memcue sidecar is already running (pid {read_pid(loc)}); socket {loc.socket}", file=sys.stderr)
        return 0
    try:
        _setup_logging(loc, foreground)
        tighten_permissions(loc)
        try:
            sock = bind_socket(loc.socket)
        except (SidecarError, OSError) as exc:
            log.error("cannot start: %s", exc)
            print(f"memcue: cannot start the sidecar: {exc}", file=sys.stderr)
            return 1
        loc.pid_file.write_text(str(os.getpid()))
        try:
            return _run(loc, sock, stop, load_model)
        finally:
            sock.close()
            _remove_files(loc)
            log.info("memcue sidecar stopped%s", f" (signal {stop.signum})" if stop.requested else "")
    finally:
        release_lock(loc, lock_fd)


def _run(loc: Locations, sock: socket.socket, stop: StopRequest, load_model: bool) -> int:
    """Import the server, open the service, serve on ``sock`` until stopped; checks ``stop`` between the
    steps of start-up so a signal during it ends the run there. The service is stopped (worker joined, model
    loading ended, WAL checkpointed) whatever happens."""
    service = None
    try:
        import uvicorn

        from memcue.sidecar.app import create_app
        from memcue.sidecar.service import MemoryService
        from memcue.sidecar.settings import load_settings

        if stop.requested:
            return _stopped_early(stop)
        settings = load_settings(loc.config_file)
        try:
            service = MemoryService(loc, settings, load_model=load_model and not settings.no_model)
        except Exception as exc:  # noqa: BLE001 - report the store problem in one clear line
            message = (f"cannot open the memory store {loc.database}: {type(exc).__name__}: {exc}. "
                       "Nothing was changed; move the file away to start a new store, or restore a backup.")
            log.error(message)
            print(f"memcue: {message}", file=sys.stderr)
            return 1
        if stop.requested:
            return _stopped_early(stop)
        service.start()
        log.info("memcue sidecar %s serving on %s (pid %d)", _version(), loc.socket, os.getpid())
        # log_config None: uvicorn's own loggers (a malformed request, an exception after an answer started)
        # reach the sidecar's log instead of a stderr nobody reads.
        activity = Activity(create_app(service))
        config = uvicorn.Config(activity, log_level="warning", log_config=None, lifespan="off",
                                access_log=False, timeout_graceful_shutdown=5)
        server = uvicorn.Server(config)
        # uvicorn installs its own handlers while it runs and re-raises a captured signal after shutting
        # down; that re-raise reaches ``stop.handle`` (restored by then), which only records it.
        stop.server = server
        served = threading.Event()
        watch_idle(activity, settings.idle_exit_s, service.busy, server, served)
        try:
            if not stop.requested:
                server.run(sockets=[sock])
        finally:
            served.set()
        return 0
    except Exception as exc:
        log.exception("sidecar failed")
        print(f"memcue: the sidecar failed: {exc}", file=sys.stderr)
        return 1
    finally:
        if service is not None:
            service.stop()


def _stopped_early(stop: StopRequest) -> int:
    log.info("stop signal %d during start-up: stopping", stop.signum)
    return 0


def _remove_files(loc: Locations) -> None:
    """Remove the socket (only if it is one: case C09) and the pid file."""
    for path in (loc.socket, loc.pid_file):
        try:
            if path == loc.socket and not stat.S_ISSOCK(os.lstat(path).st_mode):
                continue
            os.unlink(path)
        except OSError:
            pass


def _version() -> str:
    from memcue import __version__

    return __version__
