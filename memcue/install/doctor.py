"""``memcue doctor``: is memcue wired into each harness, current, and able to answer?

Checks, per harness (Claude Code, Codex, Hermes): its config file, whether memcue's hooks are there and
current (this interpreter, these timeouts), the harness's version when its program is on PATH, and for Codex
whether Codex trusts the hooks (asked through ``codex app-server`` when ``codex`` is on PATH); then the
sidecar (running, model, tokenizer, sqlite-vec, config errors, a socket path something else occupies) and
the hook log (recent failures, the latest timings when ``MEMCUE_HOOK_DEBUG`` is on). Each finding is
``ok``, ``warn`` or ``problem``; the command exits 1 when any is a problem.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

from memcue.core.paths import Locations, socket_blocked
from memcue.install import claude_code, codex, codex_trust, hermes, hooks_json, present
from memcue.install.files import InstallError, read_bytes

OK, WARN, PROBLEM = "ok", "warn", "problem"
#: Hook-log lines read from the end (the log is small and rotates).
LOG_TAIL = 200
#: The hook's log text when a prompt started the sidecar and went on without waiting (``hooks/run.py``).
COLD_START = "not waiting for it on a prompt"
#: Sidecar time per hook call (ms, p50 of the latest) above which doctor warns.
SLOW_HOOK_MS = 500.0
#: How long a harness's ``--version`` may take (s).
VERSION_TIMEOUT_S = 5.0


def _finding(area: str, status: str, message: str, **detail: Any) -> dict[str, Any]:
    return {"area": area, "status": status, "message": message, **detail}


def _version(program: str) -> str:
    """``<program> --version`` (first line), or "" when it is not on PATH or does not answer in time."""
    path = shutil.which(program)
    if not path:
        return ""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr).strip() else ""


def _hermes_version() -> str:
    """Hermes' version from its package metadata beside the ``hermes`` program ("" when not found). Running
    ``hermes --version`` would make Hermes ask PyPI for updates."""
    path = shutil.which(hermes.PROGRAM)
    if not path:
        return ""
    venv = Path(path).resolve().parent.parent
    found = sorted(venv.glob("lib/python*/site-packages/hermes_agent-*.dist-info"))
    return f"hermes-agent {found[-1].name.removeprefix('hermes_agent-').removesuffix('.dist-info')}" if found else ""


def check_hooks_json(mod: ModuleType) -> dict[str, Any]:
    """A hooks-file harness (``mod``: ``install.claude_code`` or ``install.codex``): its file, memcue's hooks
    present and current (this interpreter, these timeouts), and ``<mod.PROGRAM> --version``."""
    name, path = mod.NAME, mod.settings_path()
    version = _version(mod.PROGRAM)
    try:
        settings, _ = mod.parse(read_bytes(path), path)
    except InstallError as exc:
        return _finding(name, PROBLEM, str(exc), path=str(path), version=version)
    hooks = settings.get("hooks") if isinstance(settings.get("hooks"), dict) else {}
    missing, stale = [], []
    for event, (ours, timeout) in mod.EVENTS.items():
        mine = [h for g in hooks.get(event) or [] if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                for h in g["hooks"] if hooks_json.is_ours(h)]
        want = hooks_json.hook_command(name, ours)
        if not mine:
            missing.append(event)
        elif any(h.get("command") != want or h.get("timeout") != timeout for h in mine):
            stale.append(event)
    if missing == list(mod.EVENTS):
        if not present(name):
            return _finding(name, OK, "not on this machine (no program on PATH, no config folder)", installed=False)
        return _finding(name, WARN, f"not wired ({path}): run `memcue install {name}`", path=str(path),
                        version=version, installed=False)
    if missing or stale:
        what = ", ".join([f"{e} missing" for e in missing] + [f"{e} out of date" for e in stale])
        return _finding(name, PROBLEM, f"{what} in {path}: run `memcue install {name}`", path=str(path),
                        version=version, installed=True)
    note = getattr(mod, "TRUST_NOTE", "")
    finding = (_trust_finding(name, path, version, note) if note else
               _finding(name, OK, f"hooks current in {path}", path=str(path), version=version, installed=True))
    finding["mcp"] = _mcp_server(name)
    if finding["mcp"]:
        finding["message"] += "; MCP server registered"
    return finding


def _mcp_server(harness: str) -> bool:
    """True when the harness has memcue's MCP server registered (read from its config; never started)."""
    from memcue.install import mcp_servers

    try:
        return mcp_servers.is_ours(mcp_servers.registered(harness))
    except InstallError:
        return False


def _trust_finding(name: str, path: Path, version: str, note: str) -> dict[str, Any]:
    """Codex: memcue's hooks are current; does Codex trust them (asked through ``codex app-server``)?"""
    detail = {"path": str(path), "version": version, "installed": True}
    program = codex_trust.codex_program()
    if program is None:
        return _finding(name, WARN, f"hooks current in {path}; trust not checked (codex is not on PATH): {note}",
                        trust=None, **detail)
    try:
        trust = codex_trust.status(program, path)
    except InstallError as exc:
        return _finding(name, WARN, f"hooks current in {path}; trust not checked: {exc}", trust=None, **detail)
    waiting = sorted(event for event, state in trust.items() if state not in ("trusted", "managed"))
    if waiting or not trust:
        return _finding(name, PROBLEM, f"Codex will not run memcue's hooks ({', '.join(waiting) or 'none listed'} "
                                       f"not trusted): run `memcue install codex --trust`, or /hooks in Codex",
                        trust=trust, **detail)
    return _finding(name, OK, f"hooks current in {path} and trusted by Codex", trust=trust, **detail)


def check_hermes() -> dict[str, Any]:
    """Hermes: ``memory.provider`` in its config.yaml names memcue, and memcue's plugin is there and current
    (this interpreter), plus ``hermes --version``."""
    path, plugin = hermes.settings_path(), hermes.plugin_path()
    detail = {"path": str(path), "plugin": str(plugin), "version": _hermes_version()}
    try:
        settings, _ = hermes.parse(read_bytes(path), path)
        current = read_bytes(plugin)
    except InstallError as exc:
        return _finding(hermes.NAME, PROBLEM, str(exc), **detail)
    memory = settings.get("memory") if isinstance(settings.get("memory"), dict) else {}
    selected = memory.get("provider") == hermes.PROVIDER
    if not selected and current is None:
        if not present(hermes.NAME):
            return _finding(hermes.NAME, OK, "not on this machine (no program on PATH, no config folder)",
                            installed=False)
        return _finding(hermes.NAME, WARN, f"not wired ({path}): run `memcue install hermes`", installed=False,
                        **detail)
    if not selected:
        return _finding(hermes.NAME, PROBLEM, f"memory.provider in {path} is {memory.get('provider')!r}, not "
                                              "memcue: run `memcue install hermes`", installed=True, **detail)
    if current != hermes.files()[plugin]:
        what = "missing" if current is None else "out of date"
        return _finding(hermes.NAME, PROBLEM, f"the plugin {plugin} is {what}: run `memcue install hermes`",
                        installed=True, **detail)
    return _finding(hermes.NAME, OK, f"memcue is Hermes' memory provider ({path}, plugin current)", installed=True,
                    **detail)


def check_sidecar(loc: Locations) -> list[dict[str, Any]]:
    """The sidecar's state, or why it cannot start; not running is fine (hooks start it)."""
    from memcue.client import Client, ClientError, SidecarDown

    sock = loc.socket
    if socket_blocked(sock):
        return [_finding("sidecar", PROBLEM, f"{sock} exists and is not a socket: the sidecar cannot start. "
                                             "Move it away, or set MEMCUE_HOME to another folder.")]
    with Client(loc, timeout_s=5) as client:
        try:
            health = client.health()
        except SidecarDown:
            return [_finding("sidecar", OK, "not running; the next hook or command starts it")]
        except ClientError as exc:
            return [_finding("sidecar", PROBLEM, f"running but not answering: {exc}")]
    out = [_finding("sidecar", OK, f"running (pid {health['pid']}, version {health['version']})")]
    model = health.get("model") or {}
    if model.get("state") == "error":
        out.append(_finding("model", PROBLEM, f"the embedding model failed: {model.get('error')}; recall is "
                                              "keyword-only"))
    if not (health.get("sqlite_vec") or {}).get("available"):
        out.append(_finding("sqlite-vec", WARN, f"not loaded ({health['sqlite_vec'].get('error')}): keyword-only"))
    if health.get("vector_note"):
        out.append(_finding("vectors", WARN, health["vector_note"]))
    if health.get("tokenizer") != "tiktoken":
        out.append(_finding("tokenizer", WARN, "token counts are estimated (tiktoken's file is missing)"))
    if health.get("config_error"):
        out.append(_finding("config", WARN, f"config.toml: {health['config_error']}"))
    recent = (health.get("hooks") or {}).get("recent") or []
    if recent:
        out.append(_hook_times(recent))
    return out


def _hook_times(recent: list[dict[str, Any]]) -> dict[str, Any]:
    """The sidecar's time for its latest hook calls (``/health`` ``hooks.recent``): p50 and max in ms, and how
    many injected something. A p50 over ``SLOW_HOOK_MS`` is a warning: prompts wait on it."""
    times = sorted(float(h.get("ms") or 0) for h in recent)
    p50, worst = times[len(times) // 2], times[-1]
    injected = sum(1 for h in recent if h.get("included"))
    message = (f"last {len(recent)} hook calls: {p50:.0f} ms p50, {worst:.0f} ms max in the sidecar; "
               f"{injected} injected memories")
    status = WARN if p50 > SLOW_HOOK_MS else OK
    return _finding("hook timings", status, message + (" (slow: see `memcue status`)" if status == WARN else ""),
                    p50_ms=p50, max_ms=worst, recent=recent)


def check_hook_log(loc: Locations) -> dict[str, Any]:
    """Recent hook failures and timings from ``logs/hook.log``."""
    try:
        lines = loc.hook_log.read_text(encoding="utf-8", errors="replace").splitlines()[-LOG_TAIL:]
    except OSError:
        return _finding("hooks", OK, "no hook failures logged (hook.log gets failures; MEMCUE_HOOK_DEBUG=1 logs "
                                     "every run)")
    failed = [line for line in lines if ("sidecar call failed" in line or "hook error" in line)
              and COLD_START not in line]  # a prompt that started the sidecar is normal, not a failure
    times = [float(m.group(1)) for line in lines if (m := re.search(r"done in ([\d.]+) ms", line))]
    detail: dict[str, Any] = {"recent_failures": len(failed), "recent_ms": times[-10:]}
    if failed:
        return _finding("hooks", WARN, f"{len(failed)} of the last {len(lines)} log lines are failures; last: "
                                       f"{failed[-1][-200:]}", **detail)
    return _finding("hooks", OK, f"{len(lines)} recent log lines, no failures", **detail)


def run_checks(loc: Locations) -> dict[str, Any]:
    """Every check: ``{"ok": bool, "findings": [{"area", "status", "message", ...}]}``."""
    harnesses = [check_hooks_json(claude_code), check_hooks_json(codex), check_hermes()]
    findings = [*harnesses, *check_sidecar(loc), check_hook_log(loc)]
    if not any(f.get("installed") for f in harnesses):
        findings.append(_finding("harnesses", PROBLEM, "memcue is wired into no harness: run `memcue install "
                                                       "all` (or claude-code, codex, hermes)"))
    return {"ok": not any(f["status"] == PROBLEM for f in findings), "findings": findings}


def render(report: dict[str, Any]) -> str:
    """The report as lines for a terminal."""
    mark = {OK: "ok  ", WARN: "warn", PROBLEM: "FAIL"}
    lines = [f"[{mark[f['status']]}] {f['area']}: {f['message']}"
             + (f" ({f['version']})" if f.get("version") else "") for f in report["findings"]]
    lines.append("memcue doctor: all good" if report["ok"] else "memcue doctor: problems found (see FAIL)")
    return "\n".join(lines)


def to_json(report: dict[str, Any]) -> str:
    """The report as the CLI's JSON envelope."""
    return json.dumps({"success": report["ok"], "data": report}, ensure_ascii=False)

