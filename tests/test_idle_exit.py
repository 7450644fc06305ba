"""The sidecar exits after an idle period and says so in its log; the next hook starts it again (issue 17, part
4). Real sidecar processes, the real hook as a subprocess."""

from __future__ import annotations

import time
from pathlib import Path

from conftest import prompt_payload, start_sidecar
from hookutil import kill_spawned_sidecars, run_hook

from memcue.client import Client
from memcue.core.paths import Locations
from memcue.sidecar.settings import load_settings


def test_an_idle_sidecar_exits_and_the_next_hook_starts_it_again(home: Path, tmp_path: Path) -> None:
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1", MEMCUE_IDLE_EXIT_S="1.5")
    try:
        sc.client.remember("the nightly export runs at 02:00 UTC", project=str(tmp_path))
        started = time.monotonic()
        assert sc.proc.wait(timeout=30) == 0, "a clean exit"
        idle = time.monotonic() - started
        assert 1.4 <= idle < 30, idle
        assert "idle exit" in sc.log()
    finally:
        sc.stop()
    run = run_hook(prompt_payload("when does the nightly export run?", str(tmp_path)), home,
                   MEMCUE_NO_MODEL="1", MEMCUE_IDLE_EXIT_S="0", MEMCUE_HOOK_DEADLINE_S="2.0")
    assert run.returncode == 0
    try:
        client = Client(Locations(home), timeout_s=10)
        deadline = time.monotonic() + 30
        while not client.is_up():
            assert time.monotonic() < deadline, "the hook started the sidecar again"
            time.sleep(0.1)
        client.close()
    finally:
        kill_spawned_sidecars(home)


def test_the_idle_period_comes_from_the_config_or_the_environment(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    assert load_settings(config, {}).idle_exit_s == 7200.0, "two hours by default"
    config.write_text("[sidecar]\nidle_exit_minutes = 30\n")
    assert load_settings(config, {}).idle_exit_s == 1800.0
    assert load_settings(config, {"MEMCUE_IDLE_EXIT_S": "0"}).idle_exit_s == 0.0, "the environment wins; 0 never"
    config.write_text("[sidecar]\nidle_exit_minutes = -5\n")
    wrong = load_settings(config, {})
    assert wrong.idle_exit_s == 7200.0 and "idle_exit_minutes" in wrong.error
