"""``memcue doctor``: the wiring, the sidecar and recent hooks, through the real CLI (issue 5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import prompt_payload, run_hook, start_sidecar

from memcue.core.paths import Locations


def _doctor(tmp_path: Path, home: Path) -> tuple[int, dict]:
    env = {**os.environ, "HOME": str(tmp_path),  # never the real home
           "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "CODEX_HOME": str(tmp_path / "codex"),
           "MEMCUE_HOME": str(home), "PATH": "/usr/bin:/bin"}  # no harness program on PATH: only folders count
    run = subprocess.run([sys.executable, "-m", "memcue", "doctor", "--json"], env=env, capture_output=True,
                         text=True, timeout=60)
    return run.returncode, {f["area"]: f for f in json.loads(run.stdout)["data"]["findings"]}


def _install(tmp_path: Path, home: Path, *flags: str) -> None:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "MEMCUE_HOME": str(home)}
    assert subprocess.run([sys.executable, "-m", "memcue", "install", "claude-code", *flags], env=env,
                          capture_output=True, timeout=60).returncode == 0


def test_doctor_says_what_is_missing_then_all_good(tmp_path: Path, home: Path) -> None:
    code, found = _doctor(tmp_path, home)
    assert found["claude-code"]["status"] == "ok" and "not on this machine" in found["claude-code"]["message"]
    # fresh-clone trial: on a machine with no harness, `memcue install all` fails; install one first
    assert "install Claude Code, Codex or Hermes first" in found["harnesses"]["message"]
    (tmp_path / "claude").mkdir()  # Claude Code is here now, memcue not wired into it
    code, found = _doctor(tmp_path, home)
    assert code == 1 and found["harnesses"]["status"] == "problem"
    assert "run `memcue install all` (claude-code found here)" in found["harnesses"]["message"]
    assert found["claude-code"]["status"] == "warn" and "memcue install claude-code" in found["claude-code"]["message"]
    _install(tmp_path, home)  # `claude` is not on PATH here: the hooks are wired, the MCP server is not
    code, found = _doctor(tmp_path, home)
    assert code == 0 and found["claude-code"]["status"] == "warn" and "harnesses" not in found
    assert "MCP server not registered: the agent cannot save" in found["claude-code"]["message"]
    assert found["codex"]["status"] == found["hermes"]["status"] == "ok", "harnesses not on this machine are fine"
    _install(tmp_path, home, "--no-mcp")  # declined: nothing to warn about
    code, found = _doctor(tmp_path, home)
    assert code == 0 and found["claude-code"]["status"] == "ok", found["claude-code"]
    assert "installed with --no-mcp" in found["claude-code"]["message"]


def test_doctor_flags_hooks_from_another_interpreter(tmp_path: Path, home: Path) -> None:
    _install(tmp_path, home)
    path = tmp_path / "claude" / "settings.json"
    settings = json.loads(path.read_text())
    hook = settings["hooks"]["UserPromptSubmit"][-1]["hooks"][0]
    hook["command"] = hook["command"].replace(sys.executable, "/old/venv/bin/python")
    path.write_text(json.dumps(settings, indent=2))
    code, found = _doctor(tmp_path, home)
    assert code == 1 and "UserPromptSubmit out of date" in found["claude-code"]["message"]


def test_doctor_sees_the_running_sidecar_and_a_blocked_socket(tmp_path: Path, home: Path) -> None:
    _install(tmp_path, home)
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        _, before = _doctor(tmp_path, home)
        for i in range(2):
            run = run_hook(prompt_payload(f"what about the deploy freeze {i}?", str(tmp_path), f"s{i}"),
                           env={**os.environ, "MEMCUE_HOME": str(home)})
            assert run.returncode == 0
        code, found = _doctor(tmp_path, home)
    finally:
        sc.stop()
    assert found["sidecar"]["status"] == "ok" and "running (pid" in found["sidecar"]["message"]
    assert "hook timings" not in before  # no hook served yet: nothing to report
    timings = found["hook timings"]
    assert timings["status"] == "ok" and [h["event"] for h in timings["recent"]] == ["user-prompt-submit"] * 2
    assert "last 2 hook calls" in timings["message"] and timings["max_ms"] >= timings["p50_ms"] > 0
    Locations(home).socket.write_text("not a socket")
    code, found = _doctor(tmp_path, home)
    assert code == 1 and found["sidecar"]["status"] == "problem" and "not a socket" in found["sidecar"]["message"]


def test_a_prompt_that_started_the_sidecar_is_not_a_failure(tmp_path: Path, home: Path) -> None:
    _install(tmp_path, home)
    log = Locations(home).hook_log
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("t pid=1 claude-code user-prompt-submit: sidecar call failed: started the sidecar; not waiting "
                   "for it on a prompt (it answers the next one)\n")
    _, found = _doctor(tmp_path, home)
    assert found["hooks"]["status"] == "ok"
    log.write_text(log.read_text() + "t pid=2 claude-code user-prompt-submit: sidecar call failed: timed out\n")
    _, found = _doctor(tmp_path, home)
    assert found["hooks"]["status"] == "warn" and found["hooks"]["recent_failures"] == 1


def test_a_hook_failure_from_days_ago_is_history_not_a_warning(tmp_path: Path, home: Path) -> None:
    """Fresh-user finding: doctor still warned about failures of a test session hours after uninstall."""
    _install(tmp_path, home)
    log = Locations(home).hook_log
    log.parent.mkdir(parents=True, exist_ok=True)

    def stamp(ago_s: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - ago_s))

    log.write_text(f"{stamp(2 * 86400)} pid=1 claude-code user-prompt-submit: sidecar call failed: timed out\n")
    _, found = _doctor(tmp_path, home)
    assert found["hooks"]["status"] == "ok" and found["hooks"]["recent_failures"] == 0
    log.write_text(log.read_text() + f"{stamp(60)} pid=2 codex stop: hook error: boom\n")
    _, found = _doctor(tmp_path, home)
    assert found["hooks"]["status"] == "warn" and found["hooks"]["recent_failures"] == 1
    assert "in the last 24 h" in found["hooks"]["message"]


def test_the_last_line_counts_warnings_instead_of_saying_all_good() -> None:
    """Fresh-user finding: "[warn] codex: … trust not checked" above "memcue doctor: all good"."""
    from memcue.install.doctor import render

    ok = {"area": "claude-code", "status": "ok", "message": "hooks installed"}
    warn = {"area": "codex", "status": "warn", "message": "trust not checked"}
    fail = {"area": "sidecar", "status": "problem", "message": "down"}
    assert render({"ok": True, "findings": [ok]}).endswith("memcue doctor: all good")
    assert render({"ok": True, "findings": [ok, warn]}).endswith("working, with 1 warning (see warn)")
    assert render({"ok": False, "findings": [warn, fail]}).endswith("problems found (see FAIL)")


def test_a_broken_config_is_reported_with_no_sidecar_running(tmp_path: Path, home: Path) -> None:
    """A corrupt config.toml was named only by a running sidecar's /health: with none running, `doctor` and
    `status` said all was well while the next sidecar would ignore the file."""
    home.mkdir(parents=True, exist_ok=True)
    Locations(home).config_file.write_text("this is [not toml\n")
    code, found = _doctor(tmp_path, home)
    assert found["sidecar"]["message"].startswith("not running")
    assert found["config"]["status"] == "warn" and "config.toml: cannot read it" in found["config"]["message"]
    assert found["config"]["message"].endswith("using defaults"), "the whole file is ignored, not some entries"
    env = {**os.environ, "HOME": str(tmp_path), "MEMCUE_HOME": str(home)}
    status = subprocess.run([sys.executable, "-m", "memcue", "status", "--json"], env=env, capture_output=True,
                            text=True, timeout=60)
    data = json.loads(status.stdout)["data"]
    assert data["running"] is False and "cannot read it" in data["config_error"] and status.stderr == ""
    Locations(home).config_file.write_text("[recall]\nsupport_gate = true\n")
    assert "config" not in _doctor(tmp_path, home)[1]


def test_a_config_changed_under_a_running_sidecar_is_named_as_it_is_now(tmp_path: Path, home: Path) -> None:
    """Fresh-clone trial: with a sidecar running, doctor and status reported the file as that sidecar read it at its
    start: a file broken since was not named, one fixed since was still called broken."""
    home.mkdir(parents=True, exist_ok=True)
    config = Locations(home).config_file
    config.write_text('[recall]\nsupport_gate = "yes"\n')
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    env = {**os.environ, "HOME": str(tmp_path), "MEMCUE_HOME": str(home)}
    try:
        config.write_text("this is [not toml\n")
        broken = _doctor(tmp_path, home)[1]["config"]["message"]
        config.write_text("[recall]\nsupport_gate = true\n")
        fixed = _doctor(tmp_path, home)[1]["config"]["message"]
        status = subprocess.run([sys.executable, "-m", "memcue", "status"], env=env, capture_output=True, text=True,
                                timeout=60)
    finally:
        sc.stop()
    assert "cannot read it" in broken and "memcue stop" in broken
    assert "support_gate = 'yes'" in fixed and "memcue stop" in fixed and "cannot read it" not in fixed
    assert "config.toml changed since the sidecar started (no problems now)" in status.stdout, status.stdout
