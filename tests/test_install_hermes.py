"""``memcue install hermes``: ``memory.provider: memcue`` in a round-trip edited config.yaml (C13), the plugin file
memcue owns, the provider it replaced put back, and files it must refuse to touch (C12 spirit). Real files in a
temp HOME/HERMES_HOME, through the real CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from memcue.hooks import command
from memcue.install import InstallError, hermes
from memcue.install.edits import yaml_file

#: C13: a header comment, inline comments, a ``|`` block scalar, an anchor and alias (and a merge key), the
#: strings off / yes / 0755 unquoted and quoted, PyYAML's list layout.
C13 = """# Hermes config for my laptop
# (edited by hand; keep the comments)
model:
  provider: custom   # local llama.cpp
  base_url: http://127.0.0.1:8080/v1
  default: &model qwen3-coder
defaults: &defaults
  timeout: 30
  retries: 2
agent:
  <<: *defaults
  personality: |
    Be terse.
    Prefer small diffs.
  fallback_model: *model
terminal:
  mode: off        # unquoted off
  confirm: yes
  umask: 0755
  quoted_mode: "off"
  quoted_confirm: 'yes'
  quoted_umask: "0755"
toolsets:
- web
- terminal
# trailing comment
"""
#: The same with a ``memory`` section of the user's own (the provider goes into it), followed by the next
#: section's comment (which ruamel.yaml attaches to the last key before it).
C13_WITH_MEMORY = C13.replace("terminal:\n", "memory:\n  memory_enabled: true   # built-in notes\n"
                                             "  user_char_limit: 1375\n\n# the terminal tool\nterminal:\n")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "MEMCUE_"))}
    env.update(HOME=str(tmp_path / "home"), HERMES_HOME=str(tmp_path / "hermes"),  # never the real ~/.hermes
               MEMCUE_HOME=str(tmp_path / "memcue"))
    return env


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memcue", *args], env=_env(tmp_path), capture_output=True,
                          text=True, timeout=60)


def _config(tmp_path: Path) -> Path:
    return tmp_path / "hermes" / "config.yaml"


def _plugin(tmp_path: Path) -> Path:
    return tmp_path / "hermes" / "plugins" / "memcue" / "__init__.py"


def _write(tmp_path: Path, text: str | bytes) -> Path:
    path = _config(tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _strict(data: bytes) -> dict:
    """The file through ruamel.yaml's strict safe loader (raises on anything that is not clean YAML)."""
    return YAML(typ="safe", pure=True).load(data.decode("utf-8"))


def _backups(tmp_path: Path) -> list[Path]:
    return list((tmp_path / "hermes").glob("config.yaml.memcue-backup-*"))


@pytest.mark.parametrize("original", [C13, C13_WITH_MEMORY], ids=["no-memory-section", "memory-section"])
def test_C13_yaml_install_three_times_then_uninstall_byte_identical(tmp_path: Path, original: str) -> None:
    path = _write(tmp_path, original)
    before = _strict(path.read_bytes())
    written = None
    for _ in range(3):
        run = _cli(tmp_path, "install", "hermes", "--json")
        assert run.returncode == 0, run.stderr
        data = path.read_bytes()
        after = _strict(data)  # strict parse after every run
        text = data.decode()
        assert text.count("provider: memcue") == 1 and after["memory"]["provider"] == "memcue"
        assert {k: v for k, v in after["memory"].items() if k != "provider"} == before.get("memory", {})
        assert {k: v for k, v in after.items() if k != "memory"} == {k: v for k, v in before.items() if k != "memory"}
        kept = [line for line in original.splitlines() if "#" in line or "'" in line or '"' in line or "&" in line
                or "*" in line or "|" in line]
        assert all(line in text.splitlines() for line in kept), "comments, quoting, anchors, block scalar kept"
        # memcue added exactly its lines, right under ``memory:``, and changed nothing else
        lines = text.splitlines()
        added = [line for line in lines if line not in original.splitlines()]
        assert added == (["  provider: memcue"] if "memory:" in original else ["memory:", "  provider: memcue"])
        assert [line for line in lines if line not in added] == original.splitlines()
        assert lines.index("  provider: memcue") == lines.index("memory:") + 1
        written = written or data
        assert data == written, "a second and third install change nothing, byte for byte"
    assert len(_backups(tmp_path)) == 1 and _backups(tmp_path)[0].read_text() == original
    removed = _cli(tmp_path, "uninstall", "hermes", "--json")
    assert removed.returncode == 0, removed.stderr
    assert json.loads(removed.stdout)["data"][0]["restored"]
    _strict(path.read_bytes())
    assert path.read_text() == original
    assert not _plugin(tmp_path).parent.exists()


def test_C13_unchanged_round_trip_for_hermes_own_layout(tmp_path: Path) -> None:
    """Hermes' own writers indent list items (mapping 2, sequence 4, offset 2) and may leave no final
    newline: both kept."""
    original = "toolsets:\n  - web\n  - terminal\nmemory:\n  provider: honcho\n  nested:\n    - a: 1\n      b: 2"
    path = _write(tmp_path, original)
    assert _cli(tmp_path, "install", "hermes").returncode == 0
    assert path.read_text() == original.replace("provider: honcho", "provider: memcue")
    assert _cli(tmp_path, "uninstall", "hermes").returncode == 0
    assert path.read_text() == original


def test_previous_provider_noted_and_put_back(tmp_path: Path) -> None:
    original = "memory:\n  provider: 'honcho'   # cloud memory\n  memory_enabled: true\n"
    path = _write(tmp_path, original)
    run = _cli(tmp_path, "install", "hermes", "--json")
    report = json.loads(run.stdout)["data"][0]
    assert "replaced" in report["note"] and "'honcho'" in report["note"]
    assert path.read_text() == "memory:\n  provider: 'memcue'   # cloud memory\n  memory_enabled: true\n"
    assert _cli(tmp_path, "uninstall", "hermes").returncode == 0
    assert path.read_text() == original


def test_uninstall_after_another_edit_puts_the_previous_provider_back_and_keeps_the_edit(tmp_path: Path) -> None:
    path = _write(tmp_path, "# mine\nmemory:\n  provider: honcho  # cloud\nagent:\n  max_turns: 60\n")
    assert _cli(tmp_path, "install", "hermes").returncode == 0
    path.write_text(path.read_text().replace("max_turns: 60", "max_turns: 90"))  # the user edits after install
    run = _cli(tmp_path, "uninstall", "hermes", "--json")
    assert run.returncode == 0, run.stderr
    assert not json.loads(run.stdout)["data"][0]["restored"]
    assert path.read_text() == "# mine\nmemory:\n  provider: honcho  # cloud\nagent:\n  max_turns: 90\n"
    assert not _plugin(tmp_path).exists()


def test_uninstall_leaves_a_provider_the_user_chose_since(tmp_path: Path) -> None:
    path = _write(tmp_path, "agent:\n  max_turns: 60\n")
    assert _cli(tmp_path, "install", "hermes").returncode == 0
    path.write_text(path.read_text().replace("provider: memcue", "provider: mem0"))
    assert _cli(tmp_path, "uninstall", "hermes").returncode == 0
    assert "provider: mem0" in path.read_text() and not _plugin(tmp_path).exists()


def test_an_empty_memory_section_comes_back_empty(tmp_path: Path) -> None:
    path = _write(tmp_path, "memory:\nagent:\n  max_turns: 60\n")
    assert _cli(tmp_path, "install", "hermes").returncode == 0
    assert _strict(path.read_bytes())["memory"] == {"provider": "memcue"}
    path.write_text(path.read_text().replace("60", "61"))  # not untouched: the surgical uninstall runs
    assert _cli(tmp_path, "uninstall", "hermes").returncode == 0
    assert path.read_text() == "memory:\nagent:\n  max_turns: 61\n"


@pytest.mark.parametrize("name,content", [
    ("not yaml", "model: [unclosed\n"),
    ("duplicate key", "model: a\nmodel: b\n"),
    ("tab indentation", "model:\n\tprovider: x\n"),
    ("two documents", "a: 1\n---\nb: 2\n"),
    ("top-level list", "- memory\n"),
    ("memory is a list", "memory:\n- provider\n"),
    ("memory is a scalar", "memory: on\n"),
])
def test_C12_unparsable_or_odd_files_get_a_clear_error_and_no_write(tmp_path: Path, name: str, content: str) -> None:
    path = _write(tmp_path, content)
    run = _cli(tmp_path, "install", "hermes")
    assert run.returncode == 1 and "changed nothing" in run.stderr, (name, run.stderr)
    assert path.read_text() == content and not _backups(tmp_path) and not _plugin(tmp_path).exists()


def test_C12_not_utf8_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, b"model: caf\xe9\n")
    run = _cli(tmp_path, "install", "hermes")
    assert run.returncode == 1 and "not UTF-8" in run.stderr and path.read_bytes() == b"model: caf\xe9\n"


def test_a_file_ruamel_would_reformat_is_refused_with_the_lines_to_add(tmp_path: Path) -> None:
    original = "model:\n    provider: custom\n    default: qwen3\n"  # four-space indentation: no layout of ours
    path = _write(tmp_path, original)
    run = _cli(tmp_path, "install", "hermes")
    assert run.returncode == 1 and "Nothing was changed" in run.stderr
    assert "memory:\n  provider: memcue\n" in run.stderr, run.stderr
    assert path.read_text() == original and not _backups(tmp_path) and not _plugin(tmp_path).exists()

    path.write_text(original + "memory:\n    provider: memcue\n")  # the user adds the lines as told
    run = _cli(tmp_path, "install", "hermes", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["data"][0]["changed"] and _plugin(tmp_path).exists()  # the plugin only
    assert path.read_text() == original + "memory:\n    provider: memcue\n"

    run = _cli(tmp_path, "uninstall", "hermes")  # memcue will not rewrite it either way: says what to remove
    assert run.returncode == 1 and "Remove `provider: memcue`" in run.stderr and _plugin(tmp_path).exists()


def test_plugin_written_filled_in_identical_on_reinstall_and_removed_on_uninstall(tmp_path: Path) -> None:
    assert _cli(tmp_path, "install", "hermes").returncode == 0  # no config.yaml yet: one is made
    plugin, config = _plugin(tmp_path), _config(tmp_path)
    assert _strict(config.read_bytes()) == {"memory": {"provider": "memcue"}}
    data = plugin.read_bytes()
    python, launch = command("hermes", "x")[0], command("hermes", "x")[3]
    assert f"MEMCUE_PYTHON = {python!r}\n".encode() in data and f"MEMCUE_LAUNCH = {launch!r}\n".encode() in data
    template = hermes.PLUGIN_SOURCE.read_bytes()
    changed = [(a, b) for a, b in zip(template.splitlines(), data.splitlines(), strict=True) if a != b]
    assert [a for a, _ in changed] == [b'MEMCUE_PYTHON = ""', b'MEMCUE_LAUNCH = ""']
    assert b"register_memory_provider" in data[:8192], "Hermes' loader scans the first 8 KiB for it"
    mtime = plugin.stat().st_mtime_ns
    second = _cli(tmp_path, "install", "hermes", "--json")
    assert not json.loads(second.stdout)["data"][0]["changed"]
    assert plugin.read_bytes() == data and plugin.stat().st_mtime_ns == mtime, "not rewritten"

    cache = plugin.parent / "__pycache__"  # what Hermes leaves after importing the plugin
    cache.mkdir()
    (cache / "__init__.cpython-311.pyc").write_bytes(b"\0")
    run = _cli(tmp_path, "uninstall", "hermes", "--json")
    report = json.loads(run.stdout)["data"][0]
    assert report["files"] == [str(plugin)] and report["restored"]
    assert not plugin.parent.exists() and not config.exists()
    assert not plugin.parent.parent.exists(), "plugins/ was made by memcue's install: it goes too"


def test_uninstall_keeps_a_plugins_folder_the_user_had(tmp_path: Path) -> None:
    plugins = _plugin(tmp_path).parent.parent
    (plugins / "theirs").mkdir(parents=True)
    assert _cli(tmp_path, "install", "hermes").returncode == 0
    (plugins / "theirs").rmdir()  # now empty, but it was there before memcue
    assert _cli(tmp_path, "uninstall", "hermes").returncode == 0
    assert plugins.is_dir() and not _plugin(tmp_path).exists()


def test_an_older_plugin_is_replaced_and_a_foreign_file_refused(tmp_path: Path) -> None:
    assert _cli(tmp_path, "install", "hermes").returncode == 0
    plugin = _plugin(tmp_path)
    current = plugin.read_bytes()
    plugin.write_bytes(current.split(b"\n", 1)[0] + b"\n# an older memcue\n")
    assert _cli(tmp_path, "install", "hermes").returncode == 0 and plugin.read_bytes() == current
    plugin.write_bytes(b"# someone else's plugin\n")
    run = _cli(tmp_path, "install", "hermes")
    assert run.returncode == 1 and "not memcue's" in run.stderr
    assert plugin.read_bytes() == b"# someone else's plugin\n"
    assert _cli(tmp_path, "uninstall", "hermes").returncode == 0
    assert plugin.read_bytes() == b"# someone else's plugin\n", "uninstall removes only our own file"


def test_dry_run_prints_the_config_diff_and_the_plugin_in_a_line_and_writes_nothing(tmp_path: Path) -> None:
    path = _write(tmp_path, C13)
    run = _cli(tmp_path, "install", "hermes", "--dry-run")
    assert run.returncode == 0, run.stderr
    assert "+memory:\n+  provider: memcue\n" in run.stdout
    assert f"+++ {_plugin(tmp_path)} (new file: " in run.stdout and "MEMCUE_LAUNCH" not in run.stdout
    assert path.read_text() == C13 and not _backups(tmp_path) and not (tmp_path / "hermes" / "plugins").exists()
    assert not (tmp_path / "memcue" / "install").exists(), "no install record either"


def test_C12_bom_and_empty_file_are_read_tolerantly_and_kept(tmp_path: Path) -> None:
    original = b"\xef\xbb\xbf# mine\nagent:\n  max_turns: 60\n"
    path = _write(tmp_path, original)
    assert _cli(tmp_path, "install", "hermes").returncode == 0
    assert path.read_bytes().startswith(b"\xef\xbb\xbf# mine\n") and b"provider: memcue" in path.read_bytes()
    assert _cli(tmp_path, "uninstall", "hermes").returncode == 0
    assert path.read_bytes() == original
    path.write_text("")
    assert _cli(tmp_path, "install", "hermes").returncode == 0
    assert _strict(path.read_bytes()) == {"memory": {"provider": "memcue"}}


def test_hermes_home_defaults_to_dot_hermes_under_home(tmp_path: Path) -> None:
    env = _env(tmp_path)
    del env["HERMES_HOME"]
    run = subprocess.run([sys.executable, "-m", "memcue", "install", "hermes", "--json"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["data"][0]["path"] == str(tmp_path / "home" / ".hermes" / "config.yaml")
    assert (tmp_path / "home" / ".hermes" / "plugins" / "memcue" / "__init__.py").is_file()


def test_a_layout_ruamel_cannot_reproduce_is_found_before_any_edit(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    settings, style = yaml_file.parse(b"model:\n    provider: custom\n", path)
    assert style["layout"] is None and settings["model"]["provider"] == "custom"  # parsed, but not writable
    with pytest.raises(yaml_file.RoundTripError):
        yaml_file.dump(settings, style)
    settings, style = yaml_file.parse(b"toolsets:\n  - web\n", path)
    assert style["layout"] == (2, 4, 2) and yaml_file.dump(settings, style) == b"toolsets:\n  - web\n"


def test_a_change_outside_the_memory_lines_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    settings, style = hermes.parse(C13.encode(), path)
    settings = hermes.install(settings, path)
    assert b"provider: memcue" in hermes.dump(settings, style)
    settings["terminal"]["confirm"] = "no"  # ruamel writing anything else would be a reformat
    with pytest.raises(InstallError, match="change other lines too"):
        hermes.dump(settings, style)


def test_doctor_checks_the_provider_key_and_the_plugin(tmp_path: Path) -> None:
    def hermes_finding() -> dict:
        out = json.loads(_cli(tmp_path, "doctor", "--json").stdout)
        return next(f for f in out["data"]["findings"] if f["area"] == "hermes")

    _write(tmp_path, C13)
    assert hermes_finding()["status"] == "warn"  # not wired yet: a hint, not a failure
    assert _cli(tmp_path, "install", "hermes").returncode == 0
    assert hermes_finding()["status"] == "ok"
    current = _plugin(tmp_path).read_text()  # an older copy: another interpreter's path
    _plugin(tmp_path).write_text(re.sub(r"(?m)^MEMCUE_PYTHON = .*$", 'MEMCUE_PYTHON = "/old/python"', current))
    assert hermes_finding()["status"] == "problem" and "out of date" in hermes_finding()["message"]
    assert _cli(tmp_path, "install", "hermes").returncode == 0
    text = _config(tmp_path).read_text().replace("provider: memcue", "provider: honcho")
    _config(tmp_path).write_text(text)
    assert hermes_finding()["status"] == "problem" and "'honcho'" in hermes_finding()["message"]


def test_uninstall_where_nothing_was_installed_names_no_file_as_if_it_existed(tmp_path: Path) -> None:
    """Fresh-user finding: "config.yaml already lacks memcue" for a config.yaml that never existed."""
    run = _cli(tmp_path, "uninstall", "hermes")
    assert run.returncode == 0 and "not installed (" in run.stdout and "does not exist" in run.stdout, run.stdout
    assert not _config(tmp_path).exists()
