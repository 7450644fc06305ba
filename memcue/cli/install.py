"""``memcue install|uninstall|doctor``: the CLI side of ``memcue.install``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from memcue.cli.arguments import AddCommand
from memcue.cli.output import emit, fail


def _harnesses(name: str, action: str) -> tuple[list[str], list[str]]:
    """``(harnesses to act on, harnesses skipped)``. ``all`` installs into the harnesses this machine has (the
    program on PATH, or its config folder present) and uninstalls from every one."""
    from memcue.harnesses import NAMES
    from memcue.install import present

    if name != "all":
        return [name], []
    if action == "uninstall":
        return list(NAMES), []
    found, skipped = [], []
    for harness in NAMES:
        (found if present(harness) else skipped).append(harness)
    return found, skipped


def _project(value: str | None) -> Path | None:
    """The project root for ``--project [DIR]``: the git top-level of DIR (default: here), as the hooks
    resolve it; None without the flag."""
    if value is None:
        return None
    from memcue.core.project import resolve_project

    return Path(resolve_project(os.path.abspath(value)))


def _codex_trust(report: dict[str, Any], action: str, args: argparse.Namespace, state_dir: Path) -> None:
    """After a Codex install with ``--trust``: trust memcue's hooks through ``codex app-server`` (the note
    says so only when Codex confirms it; memcue's MCP table, when registered, is taken off first and put back
    by ``_mcp``). After an uninstall: take back the trust memcue wrote. Raises
    ``InstallError`` when asked to trust and Codex cannot be asked or refuses."""
    from memcue.install import codex_trust
    from memcue.install.edits.files import load_record

    if report["harness"] != "codex":
        return
    wanted = getattr(args, "trust", False)
    if action == "uninstall":
        report["trust"] = codex_trust.untrust(codex_trust.codex_program(), state_dir)
        return
    if not wanted:
        if not report.get("changed") and load_record(state_dir, codex_trust.RECORD):
            report["note"] = ("Codex was asked to trust these hooks by an earlier `memcue install codex --trust`; "
                              "`memcue doctor` says whether it still does.")
        return
    program = codex_trust.codex_program()
    if program is None:
        raise codex_trust.InstallError("--trust needs the `codex` program on PATH; the hooks are written but "
                                       "not active: run /hooks in Codex to trust them")
    def table_off() -> None:
        # An earlier install appended memcue's MCP table to config.toml. Off it comes, and back (``_mcp``, next)
        # after Codex writes the trust: the table stays the file's end, so an uninstall takes both off exactly.
        # Only when Codex has trust to write: a re-run with every hook trusted leaves the file (and makes no
        # backup) as it is.
        from memcue.install import mcp_servers

        report["mcp_put_back"] = bool(mcp_servers.unregister("codex", state_dir))

    hooks = codex_trust.trust(program, Path(report["path"]), state_dir,
                              before_write=table_off if _mcp_wanted("codex", args) else lambda: None)
    report["trusted"] = sorted(h["key"] for h in hooks)
    report["note"] = f"Codex trusts memcue's {len(hooks)} hooks: they run from the next Codex session on."


def _mcp_wanted(harness: str, args: argparse.Namespace) -> bool:
    """Whether an install registers memcue's MCP server with ``harness``: not with ``--no-mcp``; with
    ``--mcp``; else for a user-level install when the harness's installer does by default (``MCP_BY_DEFAULT``;
    a ``--project`` install leaves the user-wide server to the user-level one)."""
    from memcue.install import installer

    if getattr(args, "no_mcp", False):
        return False
    if getattr(args, "mcp", False):
        return True
    return args.project is None and bool(installer(harness).MCP_BY_DEFAULT)


def _uninstall_takes_mcp(harness: str, args: argparse.Namespace, state_dir: Path) -> bool:
    """Whether an uninstall of ``harness`` takes memcue's MCP server off: a user-level one always; a ``--project``
    one only when no user-level install (``state_dir``'s record of ``harness``) still uses the server."""
    from memcue.install.edits.files import load_record

    return args.project is None or not load_record(state_dir, harness)


def _mcp(report: dict[str, Any], action: str, args: argparse.Namespace, state_dir: Path) -> None:
    """Register memcue's MCP server through the harness (``_mcp_wanted``; ``report["mcp_registered"]`` says
    whether it is); an uninstall removes the one memcue registered (``install.mcp_servers``), but a
    ``--project`` uninstall not while the user-level install is there. Raises ``InstallError`` when the
    harness refuses, or when ``--mcp`` was given and the harness's program is not on PATH (without it, the
    report says why the server was not registered and the install stands)."""
    from memcue.install import mcp_servers, mcp_startup

    harness = report["harness"]
    if action == "install" and args.project is None and not getattr(args, "dry_run", False):
        mcp_servers.note_declined(harness, state_dir, bool(getattr(args, "no_mcp", False)))
    elif action == "uninstall" and args.project is None:
        mcp_servers.note_declined(harness, state_dir, False)
    if action == "install" and _mcp_wanted(harness, args):
        try:
            report["mcp"] = mcp_servers.register(harness, state_dir, state_dir)
            entry = mcp_servers.registered(harness)
            report["mcp_registered"] = mcp_servers.is_ours(entry)
            if report["mcp_registered"] and harness == "codex" and entry is not None:
                mcp_startup.teach_handshake(entry)  # Codex's first turn then finds memcue's tools
            if report.pop("mcp_put_back", False) and report["mcp_registered"]:
                report["mcp"] = (f"MCP server '{mcp_servers.SERVER}' already registered (put back at the end of "
                                 "config.toml after Codex wrote its trust, so an uninstall takes both off exactly)")
        except mcp_servers.ProgramMissing as exc:
            if getattr(args, "mcp", False):
                raise
            report["mcp_registered"] = False
            report["mcp"] = (f"MCP server not registered: {exc}; the hooks are installed. Run `memcue install "
                             f"{harness}` again once it is (or --no-mcp to skip this)")
    elif action == "install":
        report["mcp_registered"] = False
    elif _uninstall_takes_mcp(harness, args, state_dir):
        report["mcp"] = mcp_servers.unregister(harness, state_dir) or mcp_servers.left_elsewhere(harness, state_dir)


def _run(args: argparse.Namespace, action: str) -> int:
    from memcue import install as inst
    from memcue.core.paths import locations
    from memcue.harnesses import HARNESSES, NAMES

    reports: list[dict[str, Any]] = []
    errors: list[str] = []
    project = _project(args.project)
    state_dir = locations().root
    harnesses, skipped = _harnesses(args.harness, action)
    if not harnesses:
        *others, last = [row.program for row in HARNESSES.values()]
        errors.append(f"no harness found on this machine (no {', '.join(others)} or {last} on PATH, no config "
                      f"folder): install one first, or name it (memcue install {NAMES[0]})")
    for harness in harnesses:
        try:
            if action == "install":
                report = inst.install(harness, state_dir, dry_run=args.dry_run, project=project,
                                      mcp=_mcp_wanted(harness, args))
            else:
                report = inst.uninstall(harness, state_dir, dry_run=args.dry_run, project=project)
            reports.append(report)
            # Last in, first out: an uninstall takes the MCP table off before it gives config.toml back.
            steps = [_codex_trust, _mcp] if action == "install" else [_mcp, _codex_trust]
            for step in steps if not args.dry_run else []:
                step(report, action, args, state_dir)
        except inst.InstallError as exc:
            errors.append(f"{harness}: {exc}")
    text = "".join(_said(r, action, args) for r in reports) + "".join(
        f"{h}: not found on this machine (no program on PATH, no config folder); skipped\n" for h in skipped)
    warnings = [w for w in [_placement_warning()] if w and action == "install" and reports]
    code = emit(reports, args.json, text, ok=not errors, indent=None,
                extra={"errors": errors, "skipped": skipped, "warnings": warnings}, end="")
    if not args.json:
        for e in errors:
            fail(e)
        for w in warnings:
            print(f"memcue: warning: {w}", file=sys.stderr)
    return code


def _mcp_preview(harness: str) -> str:
    """What registering memcue's MCP server with ``harness`` would do (``mcp_servers.preview``), nothing run."""
    from memcue.core.paths import locations
    from memcue.install import mcp_servers

    root = locations().root
    return mcp_servers.preview(harness, root, root)


def _placement_warning() -> str:
    """The warning when the hooks this memcue writes point into a source checkout (``install.placement``)."""
    from memcue.install import placement

    return placement.install_warning()


def _unregister_preview(harness: str, args: argparse.Namespace) -> str:
    """What an uninstall would do beyond the config file's diff (nothing run): memcue's MCP server and, for Codex,
    the trust an earlier ``--trust`` wrote into ``config.toml``; lines joined with "; ", "" for nothing."""
    from memcue.core.paths import locations
    from memcue.install import codex_trust, mcp_servers
    from memcue.install.edits.files import load_record

    root = locations().root
    said = []
    if _uninstall_takes_mcp(harness, args, root):
        said.append(mcp_servers.unregister_preview(harness, root))
    if harness == "codex" and load_record(root, codex_trust.RECORD):
        said.append("would take back the trust of memcue's hooks that `memcue install codex --trust` wrote into "
                    "Codex's config.toml")
    return "; ".join(s for s in said if s)


def _said(r: dict[str, Any], action: str, args: argparse.Namespace) -> str:
    """What ``memcue install|uninstall`` tells people about one harness's report (lines ending in newlines,
    but a dry run's diff as it is)."""
    files = r.get("files") or []
    if args.dry_run:
        out = r["diff"] or f"{r['path']}: no change\n"
        if action == "install" and _mcp_wanted(r["harness"], args) and (preview := _mcp_preview(r["harness"])):
            out += f"{r['harness']}: MCP server: {preview}\n"
        if action == "uninstall" and (preview := _unregister_preview(r["harness"], args)):
            out += f"{r['harness']}: {preview}\n"
        if getattr(args, "trust", False):
            out += f"{r['harness']}: --trust is not part of this preview (it is applied when you run the install)\n"
    elif not r["changed"] and action == "uninstall" and not Path(r["path"]).exists():
        out = f"{r['harness']}: not installed ({r['path']} does not exist); nothing changed\n"
    elif not r["changed"]:
        out = (f"{r['harness']}: {r['path']} already {'has' if action == 'install' else 'lacks'} memcue; "
               "nothing changed\n")
    elif action == "install":
        where = " (new file)" if r.get("created") else f" (backup: {r['backup']})" if r.get("backup") else ""
        out = f"{r['harness']}: wired into {r['path']}{where}" + "".join(f"; wrote {f}" for f in files) + "\n"
    else:
        done = ("removed (memcue had created it)" if r.get("deleted") else
                "original restored" + (f" (its copy {r['backup_removed']}, the same bytes, removed)"
                                       if r.get("backup_removed") else "") if r.get("restored") else
                "memcue's entries removed")
        out = f"{r['harness']}: {r['path']}: {done}" + "".join(f"; removed {f}" for f in files) + "\n"
    if action == "install" and r.get("note") and not args.dry_run:
        out += f"{r['harness']}: {r['note']}\n"
    for key in ("trust", "mcp"):
        if r.get(key):
            out += f"{r['harness']}: {r[key]}\n"
    return out


def _doctor(args: argparse.Namespace) -> int:
    from memcue.core.paths import locations
    from memcue.install import doctor

    report = doctor.run_checks(locations())
    return emit(report, args.json, doctor.render(report), ok=report["ok"], indent=None)


def register(add: AddCommand) -> None:
    """Register ``install``, ``uninstall`` and ``doctor``."""
    from memcue.install import HARNESS_CHOICES

    for action, text in (("install", "Wire memcue into a harness (Claude Code, Codex: hooks and MCP server; Hermes: "
                                     "memory provider): merged, backed up, atomic; `all` = every harness found."),
                         ("uninstall", "Take memcue out again (the original files back when untouched).")):
        p = add(action, text)
        p.add_argument("harness", choices=HARNESS_CHOICES, help=f"{', '.join(HARNESS_CHOICES[:-1])}, or all")
        p.add_argument("--dry-run", action="store_true", help="print the change as a unified diff; write nothing")
        p.add_argument("--project", nargs="?", const=".", metavar="DIR",
                       help="the project's own settings instead of your user settings (Claude Code: "
                            "<git top-level of DIR, default here>/.claude/settings.local.json, which install "
                            "lists in the repository's .git/info/exclude)")
        if action == "install":
            mcp = p.add_mutually_exclusive_group()
            mcp.add_argument("--no-mcp", action="store_true",
                             help="do not register memcue's MCP server (`memcue mcp`: recall, remember, fetch, "
                                  "forget ... as tools). By default Claude Code and Codex get it (user-level "
                                  "installs; Claude Code through `claude mcp add`, with a permission rule allowing "
                                  "memcue's own tools, mcp__memcue__*, in the settings file; Codex in config.toml)")
            mcp.add_argument("--mcp", action="store_true",
                             help="kept for compatibility: the MCP server is registered by default now. Given "
                                  "explicitly, a missing harness program is an error, and Hermes and --project "
                                  "installs register it too")
            p.add_argument("--trust", action="store_true",
                           help="Codex: also trust memcue's hooks through `codex app-server` (Codex skips untrusted "
                                "hooks without a word); without it, run /hooks in Codex")
        p.set_defaults(fn=lambda args, action=action: _run(args, action))
    p = add("doctor", "Check the wiring (each harness's config, our entries current, Codex trust), the sidecar "
                      "and recent hooks; exit 1 when something is wrong.")
    p.set_defaults(fn=_doctor)

