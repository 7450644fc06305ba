"""``memcue install`` / ``uninstall``: put memcue's hooks into a harness's config, or take them out.

One module per harness (``install/<harness>.py``: ``settings_path``, ``parse``, ``dump``, ``install``,
``uninstall``), the registry below, and the safe file handling of ``install.files``. An install writes only
when something changes (a second install leaves the file byte for byte as it was), backs the file up before
its first change, and records what it wrote; an uninstall of a file nobody touched since restores the
original byte for byte, and otherwise removes memcue's entries only.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
from pathlib import Path
from types import ModuleType
from typing import Any

from memcue.install.files import (
    InstallError,
    backup,
    diff,
    drop_record,
    load_record,
    read_bytes,
    save_record,
    sha256,
    write_atomic,
)

#: Harness -> installer module. Hermes comes with its plugin (issue 5).
INSTALLERS: dict[str, str] = {"claude-code": "memcue.install.claude_code", "codex": "memcue.install.codex"}
HARNESS_CHOICES = ("claude-code", "codex", "hermes", "all")

__all__ = ["HARNESS_CHOICES", "InstallError", "install", "installer", "uninstall"]


def installer(harness: str) -> ModuleType:
    """The installer module of ``harness``. Raises ``InstallError`` for one memcue cannot install yet."""
    if harness not in INSTALLERS:
        raise InstallError(f"memcue cannot install into {harness} yet (claude-code and codex so far); nothing "
                           "changed")
    return importlib.import_module(INSTALLERS[harness])


def _target(harness: str, project: Path | None) -> tuple[ModuleType, Path, str]:
    """``(installer module, config file, record name)``: the user's config, or with ``project`` (a project
    root) the harness's per-project file, recorded under its own name so both can be installed at once."""
    mod = installer(harness)
    if project is None:
        return mod, mod.settings_path(), harness
    if not hasattr(mod, "project_settings_path"):
        raise InstallError(f"{harness} has no per-project hooks file memcue can write; install without --project")
    path = mod.project_settings_path(project)
    return mod, path, f"{harness}-project-{hashlib.sha1(str(path).encode()).hexdigest()[:12]}"


def install(harness: str, state_dir: Path, *, dry_run: bool = False, python: str | None = None,
            project: Path | None = None) -> dict[str, Any]:
    """Install memcue's hooks for ``harness`` (into ``project``'s own settings when given); returns
    ``{"harness", "path", "changed", "backup", "diff", "dry_run", "note"}``. ``state_dir`` holds the install
    record (the data dir). Raises ``InstallError`` (nothing written)."""
    mod, path, name = _target(harness, project)
    old = read_bytes(path)
    settings, style = mod.parse(old, path)
    wanted = mod.install(copy.deepcopy(settings), path, python)
    new = mod.dump(wanted, style)
    changed = old is None or wanted != settings
    report: dict[str, Any] = {"harness": harness, "path": str(path), "changed": changed, "backup": None,
                              "diff": diff(path, old, new) if changed else "", "dry_run": dry_run,
                              "note": getattr(mod, "TRUST_NOTE", "")}
    if not changed or dry_run:
        return report
    record = load_record(state_dir, name)
    kept = record.get("backup") if record.get("path") == str(path) else None
    if old is not None and not (kept and Path(kept).exists()):
        kept = str(backup(path))
    write_atomic(path, new)
    first = record if record.get("path") == str(path) else {}
    save_record(state_dir, name, {
        "path": str(path), "written_sha256": sha256(new), "backup": kept,
        "existed": first.get("existed", old is not None),
        "original_sha256": first.get("original_sha256", sha256(old) if old is not None else None)})
    report["backup"] = kept
    return report


def uninstall(harness: str, state_dir: Path, *, dry_run: bool = False, project: Path | None = None) -> dict[str, Any]:
    """Take memcue's hooks out for ``harness`` (out of ``project``'s own settings when given): restore the
    original byte for byte when the file is as memcue left it, else remove only memcue's entries. Returns
    ``{"harness", "path", "changed", "restored", "diff", "dry_run"}``. Raises ``InstallError`` (nothing
    written)."""
    mod, path, name = _target(harness, project)
    old = read_bytes(path)
    record = load_record(state_dir, name)
    report: dict[str, Any] = {"harness": harness, "path": str(path), "changed": False, "restored": False,
                              "diff": "", "dry_run": dry_run}
    if old is None:
        if not dry_run:
            drop_record(state_dir, name)
        return report
    original: bytes | None = None
    untouched = record.get("path") == str(path) and record.get("written_sha256") == sha256(old)
    if untouched and record.get("existed") and record.get("backup"):
        saved = read_bytes(Path(record["backup"]))
        original = saved if saved is not None and sha256(saved) == record.get("original_sha256") else None
    if untouched and (original is not None or not record.get("existed")):
        report.update(changed=True, restored=True, diff=diff(path, old, original))
        if not dry_run:
            if original is None:
                path.unlink()
            else:
                write_atomic(path, original)
            drop_record(state_dir, name)
        return report
    settings, style = mod.parse(old, path)
    kept = mod.uninstall(copy.deepcopy(settings), path)
    if kept == settings:
        return report
    new = mod.dump(kept, style)
    report.update(changed=True, diff=diff(path, old, new))
    if not dry_run:
        report["backup"] = str(backup(path))
        write_atomic(path, new)
        drop_record(state_dir, name)
    return report
