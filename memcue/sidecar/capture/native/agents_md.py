"""``AGENTS.md``, the instructions file Codex loads (checked against Codex 0.171 by running ``codex exec`` against a
loopback model): the project's ``AGENTS.md`` at its root and the user's ``$CODEX_HOME/AGENTS.md`` (default
``~/.codex/AGENTS.md``) both reach the model in every session; an ``AGENTS.override.md`` beside one is read
instead of it. Hermes 0.19 loads a project's ``AGENTS.md`` too
unless the project has a ``.hermes.md``/``HERMES.md`` (``agent/prompt_builder.py``). Claude Code does not read it,
unless a ``CLAUDE.md`` imports it (``@AGENTS.md``, checked on Claude Code 2.1.332).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from memcue.sidecar.capture.native.base import SourceFile, env_dir, existing, read_text
from memcue.sidecar.capture.native.claude_code import project_imports
from memcue.sidecar.capture.native.markdown import Entry, parse, split_frontmatter

NAME = "agents-md"


def codex_home(home: Path, env: Mapping[str, str]) -> Path:
    """Codex's home: ``$CODEX_HOME``, else ``~/.codex``."""
    return env_dir(env, "CODEX_HOME", home / ".codex")


class AgentsMdSource:
    """``AGENTS.md`` of a project and of the user (see the module docstring)."""

    name = NAME
    harness = "codex"

    def places(self, project: str | None, home: Path, env: Mapping[str, str]) -> list[Path]:
        """See ``NativeSource.places``."""
        return [codex_home(home, env)] if project is None else [Path(project)]

    def discover(self, project: str | None, home: Path, env: Mapping[str, str]) -> list[SourceFile]:
        """See ``NativeSource.discover``. Codex reads ``AGENTS.override.md`` instead of ``AGENTS.md`` in a folder
        that has both (its project-document precedence); Hermes reads ``AGENTS.md`` only."""
        folder = codex_home(home, env) if project is None else Path(project)
        override = folder / "AGENTS.override.md"
        hermes = project is not None and not any((folder / n).is_file() for n in (".hermes.md", "HERMES.md"))
        claude = set(project_imports(project, home)) if project is not None else set()
        out = []
        for path in existing([override, folder / "AGENTS.md"]):
            loaded = {"codex"} if path == override or not override.is_file() else set()
            if hermes and path != override:
                loaded.add("hermes")
            if path.resolve() in claude:  # a CLAUDE.md imports it (``@AGENTS.md``): Claude Code loads it too
                loaded.add("claude-code")
            out.append(SourceFile(path, project or "", frozenset(loaded)))
        return out

    def read(self, file: SourceFile) -> list[Entry]:
        """See ``NativeSource.read``."""
        _, body, skipped = split_frontmatter(read_text(file.path))
        return parse(body, first_line=skipped + 1)
