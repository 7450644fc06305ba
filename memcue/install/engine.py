"""Install and uninstall orchestration: put memcue into a harness's config, or take it out again.

The harness's own module (``install.protocol.Installer``, found through ``memcue.harnesses``) parses, edits and
dumps its config; this engine does the rest the same way for every harness, with the safe file handling of
``install.edits.files``. An install writes only when something changes (a second install leaves the file byte for
byte as it was), backs the file up before its first change, and records what it wrote; an uninstall of a file
nobody touched since restores the original byte for byte, and otherwise removes memcue's entries only.

Whole files a harness module owns (``files(python)``: Hermes' plugin) are written atomically when their bytes
differ, listed in the report's ``files`` and in the diff, recorded, and removed on uninstall (with their
``__pycache__`` entry and then their folder, when left empty). A file already at such a path is replaced only
when its first line is the new content's first line (an older copy of ours). ``install_state`` (what the
install replaced: Hermes' previous memory provider) is kept in the record and passed back to ``uninstall``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

from memcue.harnesses import HARNESSES
from memcue.install.edits.files import (
    InstallError,
    backup,
    diff,
    drop_record,
    drop_spent_backup,
    load_record,
    read_bytes,
    save_record,
    sha256,
    write_atomic,
)

__all__ = ["install", "installer", "present", "uninstall"]


def installer(harness: str) -> ModuleType:
    """The installer module of ``harness`` (its row in ``memcue.harnesses``; ``install.protocol.Installer``).
    Raises ``InstallError`` for one memcue cannot install yet."""
    if harness not in HARNESSES:
        raise InstallError(f"memcue cannot install into {harness} yet ({', '.join(HARNESSES)} so far); nothing "
                           "changed")
    return importlib.import_module(HARNESSES[harness].installer)


def present(harness: str) -> bool:
    """True when this machine has ``harness``: its program on PATH, or its config folder."""
    return bool(shutil.which(HARNESSES[harness].program)) or installer(harness).settings_path().parent.is_dir()


def _target(harness: str, project: Path | None) -> tuple[ModuleType, Path, str]:
    """``(installer module, config file, record name)``: the user's config, or with ``project`` (a project
    root) the harness's per-project file, recorded under its own name so both can be installed at once."""
    mod = installer(harness)
    if project is None:
        return mod, mod.settings_path(), harness
    path = mod.project_settings_path(project)
    if path is None:
        raise InstallError(f"{harness} has no per-project hooks file memcue can write; install without --project")
    return mod, path, f"{harness}-project-{hashlib.sha1(str(path).encode()).hexdigest()[:12]}"


def _recorded_elsewhere(mod: ModuleType, path: Path, name: str, record: dict[str, Any], state_dir: Path) -> None:
    """Raise ``InstallError`` when ``record`` (this data dir's install of ``name``) is for another config file than
    ``path`` that still holds memcue's entries: two config folders of one harness (another ``CODEX_HOME`` or
    ``CLAUDE_CONFIG_DIR``) sharing one data dir would share one record, and each install or uninstall would work
    on the other's entries (MCP table, trust). A recorded file that is gone or holds none of memcue's any more
    was moved or cleaned: the new one is the install."""
    other = record.get("path")
    if not other or other == str(path):
        return
    data = read_bytes(Path(other))
    try:
        ours = data is not None and _holds_ours(mod, Path(other), data, record)
    except InstallError:  # a file memcue cannot read holds nothing it could work on
        return
    if ours:
        raise InstallError(f"the data dir {state_dir} holds memcue's {name} install for {other}, which still has "
                           f"memcue's entries; one data dir serves one {name} config folder: run `memcue uninstall "
                           f"{name}` with that folder's environment first, or give this one its own MEMCUE_HOME")


def _first_line(data: bytes) -> bytes:
    return data.split(b"\n", 1)[0]


def _owned_files(mod: ModuleType, python: str | None) -> list[tuple[Path, bytes | None, bytes]]:
    """``(path, bytes there now or None, bytes memcue wants)`` for each whole file ``mod`` owns. Raises
    ``InstallError`` when a file at one of those paths is not an older copy of ours (nothing written)."""
    wanted: dict[Path, bytes] = mod.files(python)
    out = []
    for path, data in wanted.items():
        now = read_bytes(path)
        if now is not None and now != data and _first_line(now) != _first_line(data):
            raise InstallError(f"{path} exists and is not memcue's; memcue changed nothing (move it away, then run "
                               "the install again)")
        out.append((path, now, data))
    return out


def _removable_files(mod: ModuleType, record: dict[str, Any]) -> list[tuple[Path, bytes]]:
    """``(path, bytes now)`` for each file ``mod`` owns that is there and is ours: what memcue wrote (per the
    record) or a copy starting with our first line."""
    written: dict[str, str] = record.get("files") or {}
    out = []
    for path, data in mod.files(None).items():
        now = read_bytes(path)
        if now is not None and (written.get(str(path)) == sha256(now) or _first_line(now) == _first_line(data)):
            out.append((path, now))
    return out


def _file_diff(path: Path, old: bytes | None, new: bytes) -> str:
    """The diff of a whole file memcue owns: a one-line summary for a new one (its text is memcue's own, not
    the user's), else a unified diff."""
    if old is None:
        lines = new.count(b"\n")
        return f"--- /dev/null\n+++ {path} (new file: {lines} lines of memcue's)\n"
    return diff(path, old, new)


def _missing_folders(paths: list[Path]) -> list[str]:
    """The folders above ``paths`` that do not exist yet (writing the files will create them), deepest first:
    what uninstall may remove again once they are empty (``$HERMES_HOME/plugins`` when memcue made it)."""
    missing: list[str] = []
    for path in paths:
        folder = path.parent
        while not folder.exists() and str(folder) not in missing and folder != folder.parent:
            missing.append(str(folder))
            folder = folder.parent
    return sorted(missing, key=lambda f: f.count("/"), reverse=True)


def _remove_file(path: Path) -> None:
    """Delete ``path``, the bytecode Python cached for it, and the folders that leaves empty (up to the
    file's own folder)."""
    path.unlink(missing_ok=True)
    cache = path.parent / "__pycache__"
    for compiled in cache.glob(f"{path.stem}.*.pyc") if path.suffix == ".py" else []:
        compiled.unlink(missing_ok=True)
    for folder in (cache, path.parent):
        try:
            folder.rmdir()
        except OSError:  # not there, or not empty: keep it
            pass


def install(harness: str, state_dir: Path, *, dry_run: bool = False, python: str | None = None,
            project: Path | None = None, mcp: bool = False) -> dict[str, Any]:
    """Install memcue's hooks for ``harness`` (into ``project``'s own settings when given; ``mcp``: with what
    the harness's config needs for memcue's MCP server, ``Installer.install``); returns
    ``{"harness", "path", "changed", "backup", "diff", "dry_run", "note", "files", "created"}`` (``files``: the
    whole files memcue owns for this harness, paths as strings; ``created``: the config file did not exist).
    ``state_dir`` holds the install record (the data dir). Raises ``InstallError`` (nothing written)."""
    mod, path, name = _target(harness, project)
    old = read_bytes(path)
    settings, style = mod.parse(old, path)
    wanted, _ = mod.parse(old, path)  # a second parse, not a deepcopy: ruamel's merge keys do not survive one
    wanted = mod.install(wanted, path, python, mcp=mcp)
    config_changed = old is None or wanted != settings
    new = mod.dump(wanted, style) if config_changed else old
    owned = _owned_files(mod, python)
    files_changed = [(p, now, data) for p, now, data in owned if now != data]
    changed = config_changed or bool(files_changed)
    note = mod.install_note(settings)
    report: dict[str, Any] = {
        "harness": harness, "path": str(path), "changed": changed, "backup": None,
        "diff": (diff(path, old, new) if config_changed else "")
        + "".join(_file_diff(p, n, d) for p, n, d in files_changed),
        "dry_run": dry_run, "note": note, "files": [str(p) for p, _, _ in owned], "created": old is None}
    record = load_record(state_dir, name)
    _recorded_elsewhere(mod, path, name, record, state_dir)
    if not changed or dry_run:
        return report
    first = _baseline(mod, path, old, record)
    kept = first.get("backup")
    if config_changed and old is not None and not (kept and Path(kept).exists()):
        kept = str(backup(path))
    made = first.get("created_dirs") or _missing_folders([p for p, _, _ in files_changed])
    for file_path, _, data in files_changed:  # the plugin before the config that names it
        write_atomic(file_path, data)
    if config_changed:
        write_atomic(path, new)
    entry: dict[str, Any] = {
        "path": str(path), "written_sha256": sha256(new) if new is not None else None, "backup": kept,
        "existed": first.get("existed", old is not None),
        "original_sha256": first.get("original_sha256", sha256(old) if old is not None else None)}
    if owned:
        entry["files"] = {str(p): sha256(d) for p, _, d in owned}
    if made:
        entry["created_dirs"] = made
    state = mod.install_state(settings, first.get("state") or {})
    if state:
        entry["state"] = state
    save_record(state_dir, name, entry)
    report["backup"] = kept
    if project is not None:
        report["note"] = mod.keep_out_of_git(project) or report["note"]
    return report


def _holds_ours(mod: ModuleType, path: Path, data: bytes, record: dict[str, Any]) -> bool:
    """Whether config ``data`` (of ``path``) still holds memcue's entries: taking them out (with ``record``'s
    state) changes it. Parsed twice, not deep-copied: ruamel's merge keys do not survive a copy. Raises
    ``InstallError`` when it does not parse."""
    settings, _ = mod.parse(data, path)
    cleaned, _ = mod.parse(data, path)
    return mod.uninstall(cleaned, path, record.get("state") or {}) != settings


def _baseline(mod: ModuleType, path: Path, old: bytes | None, record: dict[str, Any]) -> dict[str, Any]:
    """The earlier install's record an install builds on. Its original (backup and hash) stands only while the
    file is byte for byte what memcue last wrote there. A file changed since that still holds memcue's entries
    (the user edited it): no original describes it any more, so the uninstall will remove memcue's entries
    only, keeping the edit. A file without them (deleted and written anew, or cleaned by hand) is the new
    original. The folders memcue made are kept either way."""
    if record.get("path") != str(path):
        return {}
    if old is not None and record.get("written_sha256") == sha256(old):
        return record
    dirs = {"created_dirs": record["created_dirs"]} if record.get("created_dirs") else {}
    if old is None or not _holds_ours(mod, path, old, record):
        return dirs
    return {**record, "backup": None, "original_sha256": None}


def uninstall(harness: str, state_dir: Path, *, dry_run: bool = False, project: Path | None = None) -> dict[str, Any]:
    """Take memcue's hooks out for ``harness`` (out of ``project``'s own settings when given): restore the
    original byte for byte when the file is as memcue left it, else remove only memcue's entries; remove the
    whole files memcue owns. Returns ``{"harness", "path", "changed", "restored", "deleted", "diff", "dry_run",
    "files"}`` (``deleted``: the config file went, memcue had created it; ``files``: the files removed).
    Raises ``InstallError`` (nothing written or removed)."""
    mod, path, name = _target(harness, project)
    old = read_bytes(path)
    record = load_record(state_dir, name)
    _recorded_elsewhere(mod, path, name, record, state_dir)
    gone = _removable_files(mod, record)
    report: dict[str, Any] = {"harness": harness, "path": str(path), "changed": bool(gone), "restored": False,
                              "diff": "", "dry_run": dry_run, "files": [str(p) for p, _ in gone]}
    files_diff = "".join(diff(p, data, None) for p, data in gone)
    new: bytes | None = old  # what the config file becomes (None: deleted)
    untouched = old is not None and record.get("path") == str(path) and record.get("written_sha256") == sha256(old)
    original: bytes | None = None
    if untouched and record.get("existed") and record.get("backup"):
        saved = read_bytes(Path(record["backup"]))
        original = saved if saved is not None and sha256(saved) == record.get("original_sha256") else None
    if old is None:
        pass
    elif untouched and (original is not None or not record.get("existed")):
        new = original
        report["restored"] = True
    else:
        settings, style = mod.parse(old, path)
        kept, _ = mod.parse(old, path)
        kept = mod.uninstall(kept, path, record.get("state") or {})
        created = record.get("path") == str(path) and record.get("existed") is False
        if not kept and created:
            new = None  # memcue created the file and nothing else was ever put in it: it goes, as it came
        elif kept != settings:
            new = mod.dump(kept, style)
    config_changed = new != old
    report.update(changed=config_changed or bool(gone), deleted=config_changed and new is None,
                  diff=(diff(path, old, new) if config_changed else "") + files_diff)
    if dry_run or not report["changed"]:
        if old is None and not dry_run:
            drop_record(state_dir, name)  # the file is gone: nothing left to restore
        return report
    if config_changed:  # the config stops naming the plugin before the plugin goes
        if new is None:
            path.unlink()
        elif report["restored"]:
            write_atomic(path, new)
            if removed := drop_spent_backup(record.get("backup"), new):  # the install's copy only repeats it now
                report["backup_removed"] = removed
        else:
            report["backup"] = str(backup(path))
            write_atomic(path, new)
    for file_path, _ in gone:
        _remove_file(file_path)
    for folder in record.get("created_dirs") or []:  # deepest first, and only when left empty
        with contextlib.suppress(OSError):
            Path(folder).rmdir()
    drop_record(state_dir, name)
    return report
