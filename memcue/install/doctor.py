"""``memcue doctor``: is memcue wired into each harness, current, and able to answer?

Checks, per registered harness (``memcue.harnesses``; each installer's ``check``): its config file, whether
memcue is wired in and current (this interpreter, these timeouts), the harness's version when its program is
on PATH, and for Codex whether Codex trusts the hooks (asked through ``codex app-server``) and whether
memcue's MCP server starts within the time Codex gives it (``install.mcp_startup``); then the sidecar
(running, model, tokenizer, sqlite-vec, config errors, a socket path something else occupies) and the hook log
(recent failures, the latest timings when ``MEMCUE_HOOK_DEBUG`` is on), and for each wired harness when
something was last captured from it (a warning past ``STALE_CAPTURE_DAYS``). Each finding is
``ok``, ``warn`` or ``problem``; the command exits 1 when any is a problem.
"""

from __future__ import annotations

import calendar
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memcue.core.paths import Locations, locations, socket_blocked
from memcue.harnesses import HARNESSES, NAMES
from memcue.install import mcp_servers, mcp_startup, placement
from memcue.install.edits import hooks_json, toml_file
from memcue.install.edits.files import InstallError, read_bytes
from memcue.install.engine import installer, present

OK, WARN, PROBLEM = "ok", "warn", "problem"
#: A check that could not run (the sidecar is not running to answer it): neither fine nor wrong.
SKIP = "skip"
#: Hook-log lines read from the end (the log is small and rotates).
LOG_TAIL = 200
#: A logged hook failure older than this (s) is history, not a warning: a day.
RECENT_FAILURE_S = 86400.0
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)")
#: The hook's log text when a prompt started the sidecar and went on without waiting (``hooks/run.py``).
COLD_START = "not waiting for it on a prompt"
#: Sidecar time per hook call (ms, p50 of the latest) above which doctor warns.
SLOW_HOOK_MS = 500.0
#: How long a harness's ``--version`` may take (s).
VERSION_TIMEOUT_S = 5.0
#: A wired harness with nothing captured for this many days gets a warning.
STALE_CAPTURE_DAYS = 7


def finding(area: str, status: str, message: str, **detail: Any) -> dict[str, Any]:
    """One finding: ``{"area", "status" (OK | WARN | PROBLEM | SKIP), "message", **detail}``."""
    return {"area": area, "status": status, "message": message, **detail}


def version(program: str) -> str:
    """``<program> --version`` (first line), or "" when it is not on PATH or does not answer in time."""
    path = shutil.which(program)
    if not path:
        return ""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr).strip() else ""


def _ours(settings: Any, event: str) -> list[dict[str, Any]]:
    """memcue's hook entries for the harness ``event`` in a parsed hooks file (``hooks_json`` shape)."""
    hooks = settings.get("hooks") if isinstance(settings, dict) and isinstance(settings.get("hooks"), dict) else {}
    groups = hooks.get(event) if isinstance(hooks.get(event), list) else []
    return [h for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
            for h in g["hooks"] if hooks_json.is_ours(h)]


def duplicate_hooks(name: str, files: list[tuple[Path, Any]]) -> dict[str, Any] | None:
    """The ``PROBLEM`` finding when memcue's hook is registered more than once for one event of ``name`` across
    ``files`` (``(path, parsed settings)``, the files the harness merges), else None. Every registration runs
    (two interpreter paths, user and project settings), so every event would be handled twice (case C23)."""
    twice = {}
    for event in installer(name).EVENTS:
        where = [str(path) for path, settings in files for _ in _ours(settings, event)]
        if len(where) > 1:
            twice[event] = where
    if not twice:
        return None
    paths = list(dict.fromkeys(p for where in twice.values() for p in where))
    if len(paths) == 1:
        fix = (f"`memcue uninstall {name}` then `memcue install {name}` leaves one" if paths[0] == str(files[0][0])
               else f"delete all but one of memcue's entries per event in {paths[0]}")
    else:
        others = ", ".join(p for p in paths if p != str(files[0][0]))
        fix = (f"keep one file's: remove memcue's hooks from {others} (`memcue uninstall {name} --project DIR` "
               f"for a project's settings.local.json), or from {files[0][0]} with `memcue uninstall {name}`")
    events = "; ".join(f"{event} {len(where)} times" for event, where in twice.items())
    return finding(name, PROBLEM, f"memcue's hook is registered more than once ({events}, in {', '.join(paths)}): "
                                  f"each runs, so every event is handled twice. Fix: {fix}", path=str(files[0][0]),
                   duplicates=twice, installed=True)


def _merged_files(mod: Any, path: Path, settings: Any, also: list[Path]) -> list[tuple[Path, Any]]:
    """``(path, settings)`` then each readable, parsable file of ``also`` (the same file once)."""
    out, seen = [(path, settings)], {path.resolve()}
    for extra in also:
        if extra.resolve() in seen:
            continue
        seen.add(extra.resolve())
        try:
            data = read_bytes(extra)
            if data is not None:
                out.append((extra, mod.parse(data, extra)[0]))
        except InstallError:
            continue  # a file the harness cannot read either registers nothing
    return out


def check_hooks_file(name: str, trusted: Callable[[str, Path, str], dict[str, Any]] | None = None,
                     also: list[Path] | None = None) -> dict[str, Any]:
    """A hooks-file harness's finding (``name``: Claude Code, Codex): its file, memcue's hooks present and
    current (this interpreter, these timeouts), registered once per event in it and the files in ``also``
    (the project settings the harness merges with it: ``duplicate_hooks``), and ``<program> --version``; once
    they are current, ``trusted(name, path, version)`` gives the finding when the harness must also trust
    them (Codex)."""
    mod = installer(name)
    path = mod.settings_path()
    program_version = version(HARNESSES[name].program)
    try:
        settings, _ = mod.parse(read_bytes(path), path)
    except InstallError as exc:
        return finding(name, PROBLEM, str(exc), path=str(path), version=program_version)
    twice = duplicate_hooks(name, _merged_files(mod, path, settings, also or []))
    if twice is not None:
        return {**twice, "version": program_version}
    missing, stale = [], []
    for event, (ours, timeout) in mod.EVENTS.items():
        mine = _ours(settings, event)
        want = hooks_json.hook_command(name, ours)
        if not mine:
            missing.append(event)
        elif any(h.get("command") != want or h.get("timeout") != timeout for h in mine):
            stale.append(event)
    if missing == list(mod.EVENTS):
        return not_wired(name, path, version=program_version)
    if missing or stale:
        what = ", ".join([f"{e} missing" for e in missing] + [f"{e} out of date" for e in stale])
        status, fix = _stale_fix(name, _runs(name, settings)) if not missing else (PROBLEM, "")
        return finding(name, status, f"{what} in {path}: {fix or f'run `memcue install {name}`'}", path=str(path),
                       version=program_version, installed=True, runs=_runs(name, settings))
    found = (trusted(name, path, program_version) if trusted is not None else
             finding(name, OK, f"hooks current in {path}", path=str(path), version=program_version, installed=True))
    found["mcp"], mcp_home = _mcp_server(name)
    found["runs"] = _runs(name, settings)
    here = str(locations().root)
    if found["mcp"] and os.path.realpath(mcp_home or "/") != os.path.realpath(here):
        found["message"] = found["message"].rstrip(".") + (
            f"; MCP server registered (for another data dir, {mcp_home or 'none given'}, not {here}: what the agent "
            f"saves through it goes there; `memcue install {name}` registers it for this one, with the harness's "
            f"program on PATH)")
        found["status"] = WARN if found["status"] == OK else found["status"]
    elif found["mcp"]:
        found["message"] = found["message"].rstrip(".") + "; MCP server registered"
    elif mcp_servers.declined(name, Path(here)):
        found["message"] = found["message"].rstrip(".") + "; MCP server not registered (installed with --no-mcp)"
    else:
        found["message"] = found["message"].rstrip(".") + (
            f"; MCP server not registered: the agent cannot save or recall through memcue's tools (`memcue install "
            f"{name}` registers it, with the harness's program on PATH)")
        found["status"] = WARN if found["status"] == OK else found["status"]
    return found


def _runs(name: str, settings: Any) -> list[str]:
    """The paths memcue's entries in a hooks file (and the harness's MCP server entry of memcue's) run: each
    interpreter and hook launcher once (``placement.command_paths``)."""
    commands = [h["command"] for event in installer(name).EVENTS for h in _ours(settings, event)]
    try:
        entry = mcp_servers.registered(name)
    except InstallError:
        entry = None
    paths = [p for c in commands for p in placement.command_paths(c)]
    if mcp_servers.is_ours(entry) and isinstance(entry.get("command"), str):
        paths.append(entry["command"])
    return list(dict.fromkeys(paths))


def _stale_fix(name: str, runs: list[str]) -> tuple[str, str]:
    """``(status, fix)`` for hooks that differ from what this memcue would write: when this memcue runs from a
    source checkout and the hooks run another install that exists outside any checkout (``runs``), they are that
    install's and fine (``WARN``, and the fix is that install's own doctor: installing from here would point them
    back into the checkout); otherwise ``(PROBLEM, "")`` (the usual fix: install again)."""
    if (placement.install_warning() and runs and all(os.path.exists(p) for p in runs)
            and not any(placement.source_checkout(p) for p in runs)):
        return WARN, (f"they run another memcue, {runs[0]}: check them with that install's `memcue doctor` "
                      f"(`memcue install {name}` from this checkout would point them back into it)")
    return PROBLEM, ""


def check_placement(wired: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Where the wired harnesses' hooks run memcue from (``runs`` of their findings), as one finding: a
    ``PROBLEM`` naming the paths that no longer exist (``gone``: those hooks do nothing, memory is off), else a
    ``WARN`` naming the source checkouts (``checkouts``, ``placement.source_checkout``: moving or deleting one
    breaks memory), else ``OK`` naming the interpreters. [] when nothing is wired."""
    gone: dict[str, list[str]] = {}  # path -> the harnesses whose hooks run it
    checkouts: dict[str, list[str]] = {}  # checkout -> the harnesses whose hooks run from it
    interpreters: list[str] = []
    for found in wired:
        for i, path in enumerate(found.get("runs") or []):
            root = placement.source_checkout(path)
            if not os.path.exists(path):
                gone.setdefault(path, []).append(found["area"])
            elif root is not None:
                checkouts.setdefault(str(root), []).append(found["area"])
            if i == 0 and path not in interpreters:
                interpreters.append(path)
    if not (gone or checkouts or interpreters):
        return []
    said = [f"{_who(names)} run {path}, which no longer exists" for path, names in gone.items()]
    if gone:
        said[-1] += ": those hooks do nothing, so memory is off"
    said += [f"{_who(names)} run memcue from the source checkout {root}: moving or deleting it, or switching its "
             "branch, changes or turns off memory" for root, names in checkouts.items()]
    status = PROBLEM if gone else WARN if checkouts else OK
    message = (f"{'; '.join(said)}. Fix: {placement.FIX}" if said else f"the hooks run {', '.join(interpreters)}")
    return [finding("memcue install", status, message, gone=list(gone), checkouts=list(checkouts),
                    interpreters=interpreters)]


def _who(harnesses: list[str]) -> str:
    """``"claude-code's hooks"``, ``"claude-code and codex's hooks"``: whose hooks a placement finding is about."""
    names = list(dict.fromkeys(harnesses))
    return (" and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]) + "'s hooks"


def not_wired(name: str, path: Path, **detail: Any) -> dict[str, Any]:
    """The finding for a harness memcue is not wired into: fine when the machine lacks it (``present``), else
    a warning naming the install command. ``detail`` goes into the warning."""
    if not present(name):
        return finding(name, OK, "not on this machine (no program on PATH, no config folder)", installed=False)
    return finding(name, WARN, f"not wired ({path}): run `memcue install {name}`", **{"path": str(path), **detail},
                   installed=False)


def _mcp_server(harness: str) -> tuple[bool, str]:
    """``(registered, data dir)``: whether the harness has memcue's MCP server registered (read from its config;
    never started), and the ``MEMCUE_HOME`` its entry passes ("" when none)."""
    try:
        entry = mcp_servers.registered(harness)
    except InstallError:
        return False, ""
    if not mcp_servers.is_ours(entry) or entry is None:
        return False, ""
    return True, str((entry.get("env") or {}).get("MEMCUE_HOME") or "")


def check_mcp_startup() -> list[dict[str, Any]]:
    """Codex only, when memcue's MCP server is registered there: one timed start of it against Codex's grace
    for optional servers (``install.mcp_startup``; adds about a second to doctor)."""
    try:
        entry = mcp_servers.registered("codex")
        config = toml_file.read(installer("codex").settings_path().with_name("config.toml"))
    except InstallError:
        return []  # an unreadable config.toml is the codex finding's to report
    if not mcp_servers.is_ours(entry):
        return []
    assert entry is not None
    status, message, detail = mcp_startup.startup_finding(entry, mcp_startup.codex_grace_ms(config))
    return [finding("codex mcp", status, message, **detail)]


def check_sidecar(loc: Locations) -> list[dict[str, Any]]:
    """The sidecar's state, or why it cannot start; not running is fine (hooks start it)."""
    from memcue.client import Client, ClientError, SidecarDown

    sock = loc.socket
    if socket_blocked(sock):
        return [finding("sidecar", PROBLEM, f"{sock} exists and is not a socket: the sidecar cannot start. "
                                             "Move it away, or set MEMCUE_HOME to another folder.")]
    with Client(loc, timeout_s=5) as client:
        try:
            health = client.health()
        except SidecarDown:
            return [finding("sidecar", OK, "not running; the next hook or command starts it"), *config_problems(loc)]
        except ClientError as exc:
            return [finding("sidecar", PROBLEM, f"running but not answering: {exc}")]
    out = [finding("sidecar", OK, f"running (pid {health['pid']}, version {health['version']})")]
    model = health.get("model") or {}
    if model.get("state") == "error":
        out.append(finding("model", PROBLEM, f"the embedding model failed: {model.get('error')}; recall is "
                                              "keyword-only"))
    if not (health.get("sqlite_vec") or {}).get("available"):
        out.append(finding("sqlite-vec", WARN, f"not loaded ({health['sqlite_vec'].get('error')}): keyword-only"))
    if health.get("vector_note"):
        out.append(finding("vectors", WARN, health["vector_note"]))
    reindex = health.get("reindex") or {}
    if reindex.get("state") in ("running", "paused"):
        out.append(finding("reindex", WARN, reindex["note"], done=reindex["done"], total=reindex["total"]))
    if health.get("tokenizer") != "tiktoken":
        out.append(finding("tokenizer", WARN, "token counts are estimated (tiktoken's file is missing)"))
    out += config_problems(loc, health.get("config_error") or "")
    recent = (health.get("hooks") or {}).get("recent") or []
    if recent:
        out.append(_hook_times(recent))
    return out


def config_problems(loc: Locations, running: str | None = None) -> list[dict[str, Any]]:
    """A ``config`` warning naming what a sidecar started now would ignore in ``loc.config_file`` (a file that does
    not parse, an entry of the wrong name or type: ``sidecar.settings.load_settings``), read without starting one;
    ``running``: what the running sidecar ignored when it read the file at its start (None: none runs), named too
    when it differs (the file changed since: ``memcue stop`` makes the next sidecar read it). [] when all is fine."""
    from memcue.sidecar.settings import UNREADABLE, load_settings

    error = load_settings(loc.config_file, quiet=True).error
    # a file that does not parse already says it is ignored whole ("cannot read it (…); using defaults")
    said = (error if error.endswith(UNREADABLE) else f"{error}: a sidecar ignores those entries") if error else ""
    if running is not None and running != error:
        said = "; ".join(filter(None, [said, (
            f"the running sidecar read config.toml when it started{' and ignored: ' + running if running else ''}; "
            "`memcue stop` so the next one reads it as it is now")]))
    return [finding("config", WARN, said)] if said else []


def _hook_times(recent: list[dict[str, Any]]) -> dict[str, Any]:
    """The sidecar's time for its latest hook calls (``/health`` ``hooks.recent``): p50 and max in ms, and how
    many injected something. A p50 over ``SLOW_HOOK_MS`` is a warning: prompts wait on it."""
    times = sorted(float(h.get("ms") or 0) for h in recent)
    p50, worst = times[len(times) // 2], times[-1]
    injected = sum(1 for h in recent if h.get("included"))
    message = (f"last {len(recent)} hook calls: {p50:.0f} ms p50, {worst:.0f} ms max in the sidecar; "
               f"{injected} injected memories")
    status = WARN if p50 > SLOW_HOOK_MS else OK
    return finding("hook timings", status, message + (" (slow: see `memcue status`)" if status == WARN else ""),
                    p50_ms=p50, max_ms=worst, recent=recent)


def check_captures(loc: Locations, wired: list[dict[str, Any]], now: float | None = None) -> list[dict[str, Any]]:
    """Per wired harness (``wired``: its installed findings), the newest row captured from it (source
    ``hook:<harness>``, read through a running sidecar; it is not started for this): a warning when that is over
    ``STALE_CAPTURE_DAYS`` old, or when nothing was ever captured and its config file (``path``) was last written
    that long ago. A sidecar not running or not answering gives one ``SKIP`` finding saying it could not check."""
    from memcue.client import Client, ClientError, SidecarDown

    if not wired:
        return []
    now = time.time() if now is None else now
    names = [f["area"] for f in wired]
    try:
        with Client(loc, timeout_s=5) as client:
            newest = client.last_captures([f"hook:{n}" for n in names])["sources"]
    except SidecarDown:
        return [finding("captures", SKIP, "could not check when each harness last captured: the sidecar is not "
                                        "running")]
    except ClientError as exc:
        return [finding("captures", SKIP, f"could not check when each harness last captured: {exc}")]
    return [_capture_finding(f, newest.get(f"hook:{f['area']}"), now) for f in wired]


def _capture_finding(wired: dict[str, Any], last: float | None, now: float) -> dict[str, Any]:
    """The capture finding of one wired harness whose newest captured row is from ``last`` (Unix s, None)."""
    name, limit = wired["area"], STALE_CAPTURE_DAYS * 86400.0
    area = f"{name} captures"
    if last is not None:
        days = (now - last) / 86400.0
        if now - last > limit:
            return finding(area, WARN, f"wired, but nothing captured from it for {days:.0f} days (last "
                                       f"{time.strftime('%Y-%m-%d', time.localtime(last))}): are its hooks running? "
                                       f"`memcue receipt --list` shows recent sessions", last_capture=last)
        return finding(area, OK, f"last capture {days * 24:.0f} h ago", last_capture=last)
    try:
        wired_at = Path(str(wired.get("path") or "")).stat().st_mtime if wired.get("path") else None
    except OSError:
        wired_at = None
    if wired_at is not None and now - wired_at > limit:
        return finding(area, WARN, f"wired for over {STALE_CAPTURE_DAYS} days and nothing ever captured from it: "
                                   "are its hooks running?", last_capture=None)
    return finding(area, OK, "nothing captured from it yet", last_capture=None)


def check_hook_log(loc: Locations) -> dict[str, Any]:
    """Recent hook failures and timings from ``logs/hook.log``."""
    try:
        lines = loc.hook_log.read_text(encoding="utf-8", errors="replace").splitlines()[-LOG_TAIL:]
    except OSError:
        return finding("hooks", OK, "no hook failures logged (hook.log gets failures; MEMCUE_HOOK_DEBUG=1 logs "
                                     "every run)")
    failed = [line for line in lines if ("sidecar call failed" in line or "hook error" in line)
              and COLD_START not in line and _recent(line)]  # a prompt that started the sidecar is normal
    times = [float(m.group(1)) for line in lines if (m := re.search(r"done in ([\d.]+) ms", line))]
    detail: dict[str, Any] = {"recent_failures": len(failed), "recent_ms": times[-10:]}
    if failed:
        return finding("hooks", WARN, f"{len(failed)} hook failures logged in the last 24 h; last: "
                                       f"{failed[-1][-200:]}", **detail)
    return finding("hooks", OK, f"{len(lines)} recent log lines, no failures", **detail)


def _recent(line: str) -> bool:
    """The hook-log ``line`` was written within ``RECENT_FAILURE_S`` (a line without its UTC time stamp counts)."""
    m = _STAMP.match(line)
    if not m:
        return True
    try:
        written = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return True
    return time.time() - written <= RECENT_FAILURE_S


def run_checks(loc: Locations) -> dict[str, Any]:
    """Every check: ``{"ok": bool, "findings": [{"area", "status", "message", ...}]}``."""
    harnesses = [installer(name).check() for name in NAMES]
    wired = [f for f in harnesses if f.get("installed")]
    findings = [*harnesses, *check_placement(wired), *check_mcp_startup(), *check_sidecar(loc),
                check_hook_log(loc), *check_captures(loc, wired)]
    if not any(f.get("installed") for f in harnesses):
        findings.append(finding("harnesses", PROBLEM, _unwired_hint([n for n in NAMES if present(n)])))
    return {"ok": not any(f["status"] == PROBLEM for f in findings), "findings": findings}


def _unwired_hint(found: list[str]) -> str:
    """What to do when memcue is wired into no harness; ``found``: the harnesses this machine has (``present``)."""
    if found:
        return f"memcue is wired into no harness: run `memcue install all` ({', '.join(found)} found here)"
    programs = ", ".join(HARNESSES[n].program for n in NAMES)
    return (f"memcue is wired into no harness, and this machine has none ({programs}: none on PATH, no config "
            "folder): install Claude Code, Codex or Hermes first, then run `memcue install all`")


def render(report: dict[str, Any]) -> str:
    """The report as lines for a terminal."""
    mark = {OK: "ok  ", WARN: "warn", PROBLEM: "FAIL", SKIP: "skip"}
    lines = [f"[{mark[f['status']]}] {f['area']}: {f['message']}"
             + (f" ({f['version']})" if f.get("version") else "") for f in report["findings"]]
    warnings = sum(1 for f in report["findings"] if f["status"] == WARN)
    if not report["ok"]:
        lines.append("memcue doctor: problems found (see FAIL)")
    elif warnings:
        lines.append(f"memcue doctor: working, with {warnings} warning{'s' if warnings != 1 else ''} (see warn)")
    else:
        lines.append("memcue doctor: all good")
    return "\n".join(lines)

