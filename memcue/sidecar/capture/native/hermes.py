"""Hermes' memory files (Hermes 0.19 ``tools/memory_tool.py``): ``$HERMES_HOME/memories/MEMORY.md`` (the agent's
notes) and ``USER.md`` (what it knows about the user), default ``~/.hermes/memories/``. Entries are separated by a
line holding ``§`` alone (``ENTRY_DELIMITER = "\\n§\\n"``) and may span lines; both files are injected into the
system prompt as a snapshot at session start, unless ``memory.memory_enabled`` / ``memory.user_profile_enabled``
in ``$HERMES_HOME/config.yaml`` turn that off (then memcue injects them into Hermes too). Not per project: memcue
keeps them global. A project's ``.hermes.md`` (else ``HERMES.md``) is Hermes' own instruction file, loaded before
``AGENTS.md`` or ``CLAUDE.md`` (the first found wins); it belongs to the project.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from memcue.sidecar.capture.native.base import SourceFile, env_dir, existing, read_text
from memcue.sidecar.capture.native.markdown import Entry, kind_for, parse, split_frontmatter

NAME = "hermes"
DELIMITER = "\n§\n"
#: Hermes' project instruction files, the first found wins (``agent/prompt_builder.py``'s ``_HERMES_MD_NAMES``).
PROJECT_FILES = (".hermes.md", "HERMES.md")


def memories_dir(home: Path, env: Mapping[str, str]) -> Path:
    """``$HERMES_HOME/memories`` (default ``~/.hermes/memories``)."""
    return env_dir(env, "HERMES_HOME", home / ".hermes") / "memories"


def split_entries(text: str) -> list[tuple[str, int]]:
    """Hermes' entries of ``text`` with the line each starts on (1-based), empty ones left out."""
    out = []
    line = 1
    for chunk in text.split(DELIMITER):
        stripped = chunk.strip()
        if stripped:
            out.append((stripped, line + chunk[:len(chunk) - len(chunk.lstrip())].count("\n")))
        line += chunk.count("\n") + 2  # the delimiter's own two line breaks
    return out


def memory_switches(config: Path) -> dict[str, bool]:
    """Whether Hermes loads each file: ``memory.memory_enabled`` (``MEMORY.md``) and ``memory.user_profile_enabled``
    (``USER.md``) in its ``config.yaml``, both on by default (Hermes' ``DEFAULT_CONFIG``); a file that cannot be
    read or parsed leaves the defaults."""
    out = {"MEMORY.md": True, "USER.md": True}
    try:
        from ruamel.yaml import YAML

        data = YAML(typ="safe").load(config.read_text(encoding="utf-8")) if config.is_file() else None
    except Exception:  # noqa: BLE001 - Hermes' own file: any parse problem leaves the defaults
        return out
    memory = data.get("memory") if isinstance(data, dict) else None
    if isinstance(memory, dict):
        for name, key in (("MEMORY.md", "memory_enabled"), ("USER.md", "user_profile_enabled")):
            if isinstance(memory.get(key), bool):
                out[name] = memory[key]
    return out


class HermesSource:
    """Hermes' ``MEMORY.md`` and ``USER.md`` (see the module docstring)."""

    name = NAME
    harness = "hermes"

    def places(self, project: str | None, home: Path, env: Mapping[str, str]) -> list[Path]:
        """See ``NativeSource.places``."""
        return [memories_dir(home, env)] if project is None else [Path(project)]

    def discover(self, project: str | None, home: Path, env: Mapping[str, str]) -> list[SourceFile]:
        """See ``NativeSource.discover``: the memory files, or a project's ``.hermes.md`` (else ``HERMES.md``)."""
        if project is not None:
            found = existing([Path(project) / n for n in PROJECT_FILES])[:1]
            return [SourceFile(p, project, frozenset({"hermes"})) for p in found]
        folder = memories_dir(home, env)
        switches = memory_switches(folder.parent / "config.yaml")
        return [SourceFile(p, "", frozenset({"hermes"}) if switches[p.name] else frozenset(), agent_written=True)
                for p in existing([folder / "MEMORY.md", folder / "USER.md"])]

    def read(self, file: SourceFile) -> list[Entry]:
        """See ``NativeSource.read``: one entry per ``§``-separated entry (``USER.md``'s are preferences); a
        project file is markdown."""
        if file.path.name in PROJECT_FILES:
            _, body, skipped = split_frontmatter(read_text(file.path))
            return parse(body, first_line=skipped + 1)
        default = "preference" if file.path.name == "USER.md" else "note"
        heading = file.path.stem
        return [Entry(text, heading, line, kind_for("", text, default))
                for text, line in split_entries(read_text(file.path))]
