"""Safe edits of a user's TOML file (Codex's ``config.toml``): append a table, take exactly that table off again.

memcue never rewrites a TOML file it does not own: an append keeps every byte of the user's (comments, order,
formatting), is checked by a strict parse before it is written, and can be taken off again byte for byte while
it is still the file's end, or cut out whole when the user wrote more after it. Anything else is left to the
harness's own CLI.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from memcue.install.edits.files import InstallError, read_bytes, write_atomic

__all__ = ["append", "read", "remove_appended"]


def read(path: Path) -> dict[str, Any]:
    """The file's tables ({} when it does not exist). Raises ``InstallError`` when it cannot be read or is not
    valid UTF-8 TOML."""
    try:
        return tomllib.loads((read_bytes(path) or b"").decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InstallError(f"{path} is not valid TOML ({exc}); memcue changed nothing") from None


def append(path: Path, block: bytes, what: str) -> tuple[bytes, bytes, bool]:
    """Append ``block`` (TOML text starting with a newline) to ``path``, after a newline when the file lacks a
    final one; to an empty or missing file without its leading newline (the file does not open blank). Returns
    ``(bytes appended, the file's new bytes, whether the file existed with content)``. Raises ``InstallError``
    (nothing written) when the result would not parse; ``what`` names the block in that message."""
    old = read_bytes(path) or b""
    added = block.lstrip(b"\n") if not old else (b"" if old.endswith(b"\n") else b"\n") + block
    new = old + added
    try:
        tomllib.loads(new.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InstallError(f"adding {what} would break {path} ({exc}); memcue changed nothing") from None
    write_atomic(path, new)
    return added, new, bool(old)


def remove_appended(path: Path, block: bytes, existed: bool) -> bool:
    """Take ``block`` off ``path``: off the end when it is still the file's end (the file goes when nothing is
    left and it did not exist before, ``existed`` False), or cut out of the middle when the user wrote more after
    it and it is there exactly once, as long as the file's other tables read the same without it (the file with
    ``block`` moved to its end parses as before: nothing the user wrote belonged to it). Every other byte stays.
    Returns False, changing nothing, otherwise."""
    now = read_bytes(path) or b""
    if not block or block not in now:
        return False
    rest = now[: len(now) - len(block)] if now.endswith(block) else now.replace(block, b"", 1)
    if not now.endswith(block) and (now.count(block) != 1 or not _same_tables(rest + block, now)):
        return False
    if rest or existed:
        write_atomic(path, rest)
    else:
        path.unlink()
    return True


def _same_tables(a: bytes, b: bytes) -> bool:
    """``a`` and ``b`` both parse as TOML, to the same tables."""
    try:
        return tomllib.loads(a.decode("utf-8")) == tomllib.loads(b.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False
