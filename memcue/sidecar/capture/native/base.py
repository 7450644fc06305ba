"""The one small interface every native memory source implements (``NativeSource``), the file it finds
(``SourceFile``) and the helpers the sources share. A source is a harness's own memory: files a person (or the
harness's agent) writes and the harness loads into its model's context by itself. memcue reads them, never
writes them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from memcue.sidecar.capture.native.markdown import Entry

#: Largest source file read (bytes); a bigger one is skipped (and named in ``memcue sources``).
MAX_FILE_BYTES = 1_000_000


@dataclass(frozen=True)
class SourceFile:
    """One file a source reads: its absolute ``path``, the memcue ``project`` its memories belong to ("" for a
    user-level file: global scope), the harnesses that load it into their model's context themselves
    (``loaded_by``: memcue never injects its memories there), and whether a harness's agent writes it
    (``agent_written``: an entry that reads like instructions to a model is then not imported, DESIGN.md
    section 8)."""

    path: Path
    project: str
    loaded_by: frozenset[str]
    agent_written: bool = False


class NativeSource(Protocol):
    """A harness's native memory (one module per source). ``name`` is what ``memcue sources`` shows and
    ``--off`` takes; ``harness`` the harness that owns it (a ``memcue.harnesses`` name)."""

    name: str
    harness: str

    def discover(self, project: str | None, home: Path, env: Mapping[str, str]) -> list[SourceFile]:
        """The source's files that exist: the user-level ones when ``project`` is None, else the project's
        (``project`` is a memcue project key, an absolute directory). ``home``: the user's home; ``env``: the
        environment (``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``, ``HERMES_HOME``)."""
        ...

    def places(self, project: str | None, home: Path, env: Mapping[str, str]) -> list[Path]:
        """The directories where ``discover`` looks (existing or not): watched for files appearing, changing
        and going."""
        ...

    def read(self, file: SourceFile) -> list[Entry]:
        """The memories ``file`` holds now, in file order. Raises ``OSError`` when it cannot be read."""
        ...


def read_text(path: Path) -> str:
    """``path`` as text (UTF-8, undecodable bytes replaced). Raises ``OSError`` when it cannot be read or is over
    ``MAX_FILE_BYTES``."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise OSError(f"{path} is {size:,} bytes, over the {MAX_FILE_BYTES:,} bytes memcue reads")
    return path.read_bytes().decode("utf-8", errors="replace").replace("\r\n", "\n")


def existing(paths: list[Path]) -> list[Path]:
    """The regular files among ``paths`` (symlinks to one included), each once, in order."""
    seen: dict[Path, None] = {}
    for path in paths:
        if path.is_file():
            seen.setdefault(path, None)
    return list(seen)


def markdown_files(folder: Path) -> list[Path]:
    """Every ``*.md`` under ``folder`` (sub-folders too), sorted; [] when it does not exist."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*.md") if p.is_file())


def env_dir(env: Mapping[str, str], name: str, default: Path) -> Path:
    """The directory the variable ``name`` names (``~`` expanded), ``default`` when unset or empty."""
    value = (env.get(name) or "").strip()
    return Path(os.path.expanduser(value)) if value else default
