"""Claude Code's native memory (checked against Claude Code 2.1.332 by running it against a loopback model):

- user: ``$CLAUDE_CONFIG_DIR/CLAUDE.md`` (default ``~/.claude/CLAUDE.md``) and ``rules/**/*.md`` beside it;
- project: ``CLAUDE.md``, ``.claude/CLAUDE.md``, ``CLAUDE.local.md`` and ``.claude/rules/**/*.md`` at the
  project's root, and ``CLAUDE.md``/``CLAUDE.local.md`` in each folder above it but ``/`` (read for each project
  below; not watched: re-read every minute);
- what those files import (``@path`` at a line's start or after a space, relative to the importing file, up to
  five hops): Claude Code loads the imported file as if it were one of them (``@AGENTS.md`` is common);
- auto memory: ``<config dir>/projects/<key>/memory/``, where ``<key>`` is the project's path (a linked worktree:
  its main repository's) with every character other than ``[A-Za-z0-9]`` made ``-`` (over 200 characters: the
  first 200, ``-`` and a base-36 hash). ``MEMORY.md`` is the index Claude Code loads into every session (lines
  ``- [Title](file.md) — hook``); each other ``*.md`` holds one fact under a frontmatter block (``name``,
  ``description``, ``metadata.type``: user | feedback | project | reference) that Claude reads when relevant.
  With ``autoMemoryEnabled: false`` in its settings Claude Code reads none of it (memcue serves it there then).

Claude Code loads all of these itself. Hermes loads a project's ``CLAUDE.md`` too when the project has neither
``.hermes.md``/``HERMES.md`` nor ``AGENTS.md`` (Hermes 0.19 ``agent/prompt_builder.py``: the first of those wins).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from memcue.sidecar.capture.native.base import SourceFile, env_dir, existing, markdown_files, read_text
from memcue.sidecar.capture.native.markdown import Entry, kind_for, parse, split_frontmatter

NAME = "claude-code"
#: Longest project key Claude Code keeps whole (its ``jae``).
KEY_MAX = 200
#: Claude Code's auto-memory ``metadata.type`` -> memcue kind (``note``: by the wording, ``kind_for``).
TYPE_KINDS = {"user": "preference", "feedback": "correction", "project": "note", "reference": "note"}
#: An import in a CLAUDE.md file: ``@path`` at a line's start or after a space (``a@b.com`` is none).
_IMPORT = re.compile(r"(?:^|(?<=\s))@((?:~/|\.{0,2}/)?[\w.\-/~]+)")
#: How many hops of imports Claude Code follows (its documented maximum depth).
IMPORT_DEPTH = 5
#: Imported files another source reads (``agents_md``): not read twice.
READ_ELSEWHERE = ("AGENTS.md", "AGENTS.override.md")
#: A ``MEMORY.md`` index line: a link to a memory file and its one-line hook; the file itself is read instead.
_INDEX_LINE = re.compile(r"^\[[^\]]*\]\(([^)\s]+\.md)\)")


def config_dir(home: Path, env: Mapping[str, str]) -> Path:
    """Claude Code's config folder: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    return env_dir(env, "CLAUDE_CONFIG_DIR", home / ".claude")


def project_key(path: str) -> str:
    """Claude Code's folder name for the project at ``path`` under ``projects/`` (see the module docstring;
    computed over UTF-16 code units, as Claude Code's JavaScript does)."""
    units = path.encode("utf-16-le")
    codes = [int.from_bytes(units[i:i + 2], "little") for i in range(0, len(units), 2)]
    key = "".join(chr(c) if chr(c).isascii() and chr(c).isalnum() else "-" for c in codes)
    if len(key) <= KEY_MAX:
        return key
    h = 0
    for c in codes:
        h = (h * 31 + c) & 0xFFFFFFFF
    h = abs(h - (1 << 32) if h >= 1 << 31 else h)
    return f"{key[:KEY_MAX]}-{_base36(h)}"


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if not n:
            return out


def auto_memory_dir(project: str, home: Path, env: Mapping[str, str]) -> Path:
    """The auto-memory folder of ``project`` (an absolute directory)."""
    return config_dir(home, env) / "projects" / project_key(project) / "memory"


def hermes_loads_claude_md(project: Path) -> bool:
    """Whether Hermes 0.19 would load ``project``'s ``CLAUDE.md`` (no ``.hermes.md``/``HERMES.md``, no
    ``AGENTS.md``/``agents.md`` there)."""
    return not any((project / n).is_file() for n in (".hermes.md", "HERMES.md", "AGENTS.md", "agents.md"))


def imports(files: list[Path], home: Path) -> list[Path]:
    """The files ``files`` import (``@path``, relative to the importing file's folder, or ``~/``), and theirs, up
    to ``IMPORT_DEPTH`` hops, that exist; not those in ``files``; fenced code is skipped. Unreadable files import
    nothing."""
    seen = {f.resolve() for f in files}
    out: list[Path] = []
    layer = list(files)
    for _ in range(IMPORT_DEPTH):
        found = []
        for path in layer:
            for target in _imports_of(path, home):
                if target not in seen:
                    seen.add(target)
                    found.append(target)
        out += found
        layer = found
    return out


def _imports_of(path: Path, home: Path) -> list[Path]:
    try:
        text = read_text(path)
    except OSError:
        return []
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    out = []
    for match in _IMPORT.finditer(text):
        ref = match.group(1).rstrip(".,;:)")
        target = home / ref[2:] if ref.startswith("~/") else path.parent / ref
        if target.is_file():
            out.append(target.resolve())
    return out


def project_imports(project: str, home: Path) -> list[Path]:
    """What the project's CLAUDE.md files (``CLAUDE.md``, ``.claude/CLAUDE.md``, ``CLAUDE.local.md``) import."""
    root = Path(project)
    return imports(existing([root / "CLAUDE.md", root / ".claude" / "CLAUDE.md", root / "CLAUDE.local.md"]), home)


def auto_memory_enabled(project: Path, config: Path) -> bool:
    """Claude Code's ``autoMemoryEnabled`` for ``project``: ``.claude/settings.local.json``, else
    ``.claude/settings.json``, else the user's ``settings.json`` in ``config``; on when none says (a file that
    cannot be read counts as saying nothing)."""
    for path in (project / ".claude" / "settings.local.json", project / ".claude" / "settings.json",
                 config / "settings.json"):
        try:
            value = json.loads(path.read_text(encoding="utf-8")).get("autoMemoryEnabled")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, bool):
            return value
    return True


class ClaudeCodeSource:
    """Claude Code's CLAUDE.md files, rules and auto memory (see the module docstring)."""

    name = NAME
    harness = "claude-code"

    def places(self, project: str | None, home: Path, env: Mapping[str, str]) -> list[Path]:
        """See ``NativeSource.places``."""
        if project is None:
            cfg = config_dir(home, env)
            return [cfg, cfg / "rules"]
        root = Path(project)
        return [root, root / ".claude", root / ".claude" / "rules", auto_memory_dir(project, home, env)]

    def discover(self, project: str | None, home: Path, env: Mapping[str, str]) -> list[SourceFile]:
        """See ``NativeSource.discover``."""
        own = frozenset({self.harness})
        if project is None:
            cfg = config_dir(home, env)
            files = existing([cfg / "CLAUDE.md", *markdown_files(cfg / "rules")])
            return [SourceFile(p, "", own) for p in [*files, *self._imported(files, home, None)]]
        root = Path(project)
        above = [p / n for p in root.parents if p != p.parent for n in ("CLAUDE.md", "CLAUDE.local.md")]
        files = existing([root / "CLAUDE.md", root / ".claude" / "CLAUDE.md", root / "CLAUDE.local.md",
                          *markdown_files(root / ".claude" / "rules"), *above])
        files += self._imported(files, home, root)
        memory = markdown_files(auto_memory_dir(project, home, env))
        both = own | {"hermes"} if hermes_loads_claude_md(root) else own
        auto = own if auto_memory_enabled(root, config_dir(home, env)) else frozenset()
        return [*(SourceFile(p, project, both if p == root / "CLAUDE.md" else own) for p in files),
                *(SourceFile(p, project, auto, agent_written=True) for p in memory)]

    @staticmethod
    def _imported(files: list[Path], home: Path, root: Path | None) -> list[Path]:
        """The files ``files`` import (``imports``), but a project's ``AGENTS.md`` (``agents_md`` reads it)."""
        skip = {(root / n).resolve() for n in READ_ELSEWHERE} if root is not None else set()
        return [p for p in imports(files, home) if p not in skip]

    def read(self, file: SourceFile) -> list[Entry]:
        """See ``NativeSource.read``: an auto-memory file with a ``description`` is one fact (its body); an
        index's link lines are left to the files they point at; anything else is markdown (``parse``)."""
        fields, body, skipped = split_frontmatter(read_text(file.path))
        in_memory = any(p.name == "memory" and p.parent.parent.name == "projects" for p in file.path.parents)
        default = TYPE_KINDS.get(fields.get("type", ""), "note")
        if in_memory and fields.get("description") and body.strip():
            heading = fields.get("name") or file.path.stem
            first = skipped + 1 + body[:len(body) - len(body.lstrip())].count("\n")
            # Claude Code's own type says what a user or feedback memory is; a project or reference one may still
            # read as a decision.
            kind = default if default != "note" else kind_for("", body.strip())
            return [Entry(body.strip(), heading, first, kind)]
        entries = parse(body, first_line=skipped + 1, default_kind=default)
        if in_memory and file.path.name == "MEMORY.md":
            entries = [e for e in entries if not _points_at_file(e.text, file.path.parent)]
        return entries


def _points_at_file(text: str, folder: Path) -> bool:
    """Whether an index line links to a memory file in ``folder`` that exists (that file is read instead)."""
    match = _INDEX_LINE.match(text)
    return bool(match and (folder / match.group(1)).is_file())
