"""Safe edits of a user's config file: read without guessing, back up once, write atomically, remember
what was written so an uninstall can restore the original byte for byte, and show a diff.

Rules (issue 5, cases C11 and C12): a file that cannot be read or parsed is never written (``InstallError``
says why and that nothing changed); the first change gets a timestamped backup next to the file; writes go
to a temporary file in the same folder, fsynced, then renamed over the original (keeping its mode).
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from memcue.core.paths import Locations


class InstallError(RuntimeError):
    """A config file memcue will not touch; the message says why and that nothing was changed."""


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None when it does not exist. Raises ``InstallError`` when it cannot be read."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc.strerror or exc}; memcue changed nothing") from None


def sha256(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def backup(path: Path) -> Path:
    """Copy ``path`` to ``<name>.memcue-backup-<UTC time>`` beside it (metadata kept); returns the copy."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = path.with_name(f"{path.name}.memcue-backup-{stamp}")
    shutil.copy2(path, target)
    return target


def drop_spent_backup(copy: str | Path | None, now: bytes | None) -> str:
    """Remove ``copy`` (a ``backup`` memcue made of a file) when the file holds its bytes again, ``now``: the copy
    only repeats the file. Returns the path removed, "" when kept (no copy, or it differs: the user's own bytes)."""
    if not copy or now is None:
        return ""
    path = Path(copy)
    if read_bytes(path) != now:
        return ""
    try:
        path.unlink()
    except OSError:
        return ""
    return str(path)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (temporary file in the same folder, fsync, rename); a new
    file gets mode 0600, an existing one keeps its mode. A symlink (a dotfiles checkout's settings) stays a
    symlink: its target is what is replaced. Raises ``InstallError`` on failure (the original stays as it was)."""
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o600
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".memcue-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InstallError(f"cannot write {path}: {exc.strerror or exc}; the file was left as it was") from None


def diff(path: Path, old: bytes | None, new: bytes | None) -> str:
    """A unified diff of ``old`` -> ``new`` (None: no file), labelled with ``path``."""
    a = (old or b"").decode("utf-8", "replace").splitlines(keepends=True)
    b = (new or b"").decode("utf-8", "replace").splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, fromfile=f"{path} (now)", tofile=f"{path} (after)"))


def record_path(state_dir: Path, harness: str) -> Path:
    """Where the install record of ``harness`` lives (``core.paths.Locations.install_record``)."""
    return Locations(state_dir).install_record(harness)


def load_record(state_dir: Path, harness: str) -> dict[str, Any]:
    """The install record (``path``, ``written_sha256``, ``backup``, ``existed``), or {} when there is none
    or it is unreadable (then uninstall edits surgically instead of restoring)."""
    try:
        data = json.loads(record_path(state_dir, harness).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_record(state_dir: Path, harness: str, record: dict[str, Any]) -> None:
    """Write the install record of ``harness`` (atomically). A data dir or ``install/`` folder made here is
    private (0700), as the sidecar keeps the data dir (DESIGN.md section 8)."""
    path = record_path(state_dir, harness)
    for folder in (state_dir, path.parent):
        if not folder.exists():
            folder.mkdir(mode=0o700, parents=True)  # the mode applies to the last folder of the path
    write_atomic(path, (json.dumps(record, indent=2) + "\n").encode())


def drop_record(state_dir: Path, harness: str) -> None:
    """Forget the install record of ``harness``."""
    record_path(state_dir, harness).unlink(missing_ok=True)
