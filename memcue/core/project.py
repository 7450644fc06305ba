"""Project identity: which project a working directory, or a name a person gives, belongs to.

Standard library only (the hook path imports it). One resolver for writes and reads (case C16): the hook
resolves a payload's ``cwd``; the CLI's ``--project`` and MCP's ``project`` go through ``project_key``.
"""

from __future__ import annotations

import os


def resolve_project(cwd: str) -> str:
    """Project identity for a working directory: the git top-level (realpath), else realpath(cwd).

    The top-level is the nearest directory, from ``cwd`` upwards, holding a ``.git`` entry (a folder, or
    the file a worktree or submodule has), which is what ``git rev-parse --show-toplevel`` answers,
    without starting git. A linked worktree (``git worktree add``) belongs to its main repository's
    project: the same code on another branch. Returns "" for an empty ``cwd``. One resolver for writes and
    reads (case C16).
    """
    if not cwd:
        return ""
    real = os.path.realpath(cwd)
    path = real
    while True:
        dot_git = os.path.join(path, ".git")
        if os.path.lexists(dot_git):
            return _main_worktree(dot_git) or path
        parent = os.path.dirname(path)
        if parent == path:
            return real
        path = parent


def project_key(value: str | None, *, global_: bool = False) -> str:
    """The project a person or agent names (CLI ``--project``, MCP ``project``): "" for a global memory; a
    path (absolute, ``~``, ``.``, or containing a separator) resolved like a hook's cwd (``resolve_project``,
    case C16); a bare name taken as a project key as stored; none given: the current directory's project."""
    if global_:
        return ""
    if value:
        is_path = os.sep in value or value in (".", "..") or value.startswith("~")
        return resolve_project(os.path.abspath(os.path.expanduser(value))) if is_path else value
    return resolve_project(os.getcwd())


def _main_worktree(dot_git: str) -> str:
    """For a linked worktree's ``.git`` file (``gitdir: <repo>/.git/worktrees/<name>``, whose folder holds a
    ``commondir`` file naming ``<repo>/.git``), the main worktree ``<repo>``; "" for anything else (a
    repository's own ``.git`` folder, a submodule, a bare or unreadable repository)."""
    if not os.path.isfile(dot_git):
        return ""
    try:
        with open(dot_git, encoding="utf-8") as f:
            line = f.readline().strip()
        if not line.startswith("gitdir:"):
            return ""
        gitdir = os.path.join(os.path.dirname(dot_git), line[len("gitdir:"):].strip())
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as f:
            common = os.path.realpath(os.path.join(gitdir, f.readline().strip()))
    except (OSError, UnicodeDecodeError):
        return ""
    return os.path.dirname(common) if os.path.basename(common) == ".git" else ""
