"""Codex's memories (Codex 0.171, feature ``memories``, stable but off by default: ``[features] memories = true``).
Codex keeps them in ``$CODEX_HOME/memories/``: ``memory_summary.md`` is injected into every new session (between
``MEMORY_SUMMARY BEGINS`` / ``ENDS`` markers, checked by running ``codex exec`` against a loopback model), and
``MEMORY.md`` (the consolidated handbook) is read by the agent on demand; ``raw_memories.md`` and
``rollout_summaries/`` are Codex's own working material and are not read here. They are the user's, across
projects: memcue keeps them global.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from memcue.sidecar.capture.native.agents_md import codex_home
from memcue.sidecar.capture.native.base import SourceFile, existing, read_text
from memcue.sidecar.capture.native.markdown import Entry, parse, split_frontmatter

NAME = "codex-memories"
FILES = ("memory_summary.md", "MEMORY.md")


class CodexMemoriesSource:
    """``$CODEX_HOME/memories/memory_summary.md`` and ``MEMORY.md`` (see the module docstring)."""

    name = NAME
    harness = "codex"

    def places(self, project: str | None, home: Path, env: Mapping[str, str]) -> list[Path]:
        """See ``NativeSource.places``."""
        return [codex_home(home, env) / "memories"] if project is None else []

    def discover(self, project: str | None, home: Path, env: Mapping[str, str]) -> list[SourceFile]:
        """See ``NativeSource.discover``."""
        if project is not None:
            return []
        folder = codex_home(home, env) / "memories"
        return [SourceFile(p, "", frozenset({"codex"}), agent_written=True)
                for p in existing([folder / n for n in FILES])]

    def read(self, file: SourceFile) -> list[Entry]:
        """See ``NativeSource.read``."""
        _, body, skipped = split_frontmatter(read_text(file.path))
        return parse(body, first_line=skipped + 1)
