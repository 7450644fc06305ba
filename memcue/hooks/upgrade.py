"""The version handshake (case C08): a hook of one memcue version talking to a sidecar of another.

After the hook has printed its output, it compares the sidecar's ``version`` (in every hook answer) with
its own. On a mismatch it asks the running sidecar to stop gracefully (SIGTERM: it finishes writes and
checkpoints the WAL), and the next hook starts the installed version. It does so **once per pair of
versions**: ``restart.json`` in the data dir records the pair, so a build that misreports its version
can never cause a restart loop. Standard library only.
"""

from __future__ import annotations

import json
import os
import signal
import time

from memcue import __version__
from memcue.core.paths import RESTART_RECORD, locations
from memcue.hooks.logging_ import log


def _is_memcue_sidecar(pid: int) -> bool:
    """True when ``pid`` runs memcue's sidecar (checked through /proc). Without /proc: False, so a pid the
    system reused for another program is never signalled."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"memcue.sidecar" in f.read()
    except OSError:
        return False


def restart_if_other_version(sidecar_version: str) -> bool:
    """Ask a sidecar of another version to stop, once per (sidecar version, hook version) pair. Returns
    True when a stop was requested. Never raises (a failure is logged)."""
    if not sidecar_version or sidecar_version == __version__:
        return False
    loc = locations()
    record_path = loc.root / RESTART_RECORD
    pair = {"from": sidecar_version, "to": __version__}
    try:
        try:
            seen = json.loads(record_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            seen = {}
        if isinstance(seen, dict) and seen.get("from") == pair["from"] and seen.get("to") == pair["to"]:
            log(f"sidecar {sidecar_version} still differs from hook {__version__} after one restart; not again")
            return False
        pid = int(loc.pid_file.read_text(encoding="utf-8").split()[0])
        if not _is_memcue_sidecar(pid):
            log(f"sidecar {sidecar_version} differs from hook {__version__}, but pid {pid} is not a memcue sidecar")
            return False
        tmp = record_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({**pair, "pid": pid, "at": time.time()}), encoding="utf-8")
        os.replace(tmp, record_path)
        os.kill(pid, signal.SIGTERM)
        log(f"sidecar {sidecar_version} differs from hook {__version__}: asked pid {pid} to stop; the next hook "
            "starts the installed version")
        return True
    except (OSError, ValueError) as exc:
        log(f"version handshake failed: {exc}")
        return False
