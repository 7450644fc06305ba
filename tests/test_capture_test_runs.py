"""Issue 14, a test or build that failed and then passed: PostToolUse capture through real parts.

The adapters read real-shaped PostToolUse payloads (Claude Code 2.1.x: ``tool_name``, ``tool_input``,
``tool_response``, and PostToolUseFailure's ``error`` for a Bash command that exited non-zero; Codex 0.171:
``post-tool-use.command.input``); the real hook subprocess spools a compact record at once without a sidecar,
cutting a huge output; a real sidecar turns a failing ``pytest`` run, an edit and the passing run into one
promoted memory that a later question recalls, even across a sidecar restart between failure and pass; a pass
without a failure, or a command that is not a test, makes nothing.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from conftest import context_of, prompt_payload, run_hook, start_sidecar, wait_until

from memcue.adapters import claude_code, codex
from memcue.sidecar.capture.test_runs import is_test_command, transition_text

SESSION = "5a1f2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b"
OTHER_SESSION = "8d2b7c1a-0f3e-4a59-b6c7-2e1d0c9b8a7f"
COMMAND = "pytest tests/test_x.py"
KEY = "E       AssertionError: assert parse_total('1,5') == 1.5"
FAILURE = f"Exit code 1\n============ FAILURES ============\n{KEY}\n=== 1 failed in 0.12s ==="


def _base(cwd: str, event: str, session_id: str = SESSION) -> dict[str, Any]:
    return {"session_id": session_id, "transcript_path": f"/home/dev/.claude/projects/x/{session_id}.jsonl",
            "cwd": cwd, "permission_mode": "default", "hook_event_name": event}


def bash_failure(cwd: str, command: str = COMMAND, error: str = FAILURE, call: str = "toolu_01") -> dict[str, Any]:
    """Claude Code's PostToolUseFailure for a Bash command that exited non-zero."""
    return {**_base(cwd, "PostToolUseFailure"), "tool_name": "Bash",
            "tool_input": {"command": command, "description": "Run the tests"}, "tool_use_id": call,
            "error": error, "is_interrupt": False, "duration_ms": 812}


def bash_success(cwd: str, command: str = COMMAND, call: str = "toolu_03") -> dict[str, Any]:
    """Claude Code's PostToolUse for a Bash command that succeeded."""
    return {**_base(cwd, "PostToolUse"), "tool_name": "Bash", "tool_input": {"command": command},
            "tool_response": {"stdout": "..\n2 passed in 0.05s", "stderr": "", "interrupted": False,
                              "isImage": False}, "tool_use_id": call, "duration_ms": 640}


def edit(cwd: str, path: str, call: str = "toolu_02") -> dict[str, Any]:
    """Claude Code's PostToolUse for an Edit."""
    return {**_base(cwd, "PostToolUse"), "tool_name": "Edit",
            "tool_input": {"file_path": path, "old_string": "float(s)", "new_string": "float(s.replace(',', '.'))"},
            "tool_response": {"filePath": path, "oldString": "float(s)", "newString": "float(s.replace(',', '.'))",
                              "structuredPatch": [], "userModified": False}, "tool_use_id": call}




def _spool_lines(home: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for f in sorted((home / "spool").glob("*.jsonl"))
            for line in f.read_text().splitlines() if line.strip()]


def _spooled(home: Path) -> bool:
    """True when the sidecar has read every spool file to its end (its offsets in the store's meta)."""
    files = {f"spool_offset:{f.name}": f.stat().st_size for f in (home / "spool").glob("*.jsonl")}
    with sqlite3.connect(f"file:{home / 'memcue.db'}?mode=ro", uri=True) as conn:
        got = dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE 'spool_offset:%'").fetchall())
    return all(int(got.get(k) or 0) == size for k, size in files.items())


NO_SPAWN = {"MEMCUE_HOOK_SPAWN": "0"}


def _hook(payload: dict[str, Any], harness: str = "claude-code") -> None:
    event = "post-tool-use-failure" if payload["hook_event_name"] == "PostToolUseFailure" else "post-tool-use"
    run = run_hook(payload, event, harness=harness, env={**os.environ, **NO_SPAWN})
    assert run.returncode == 0 and run.stdout == b"" and run.stderr == b"", run


# -- adapters ------------------------------------------------------------------------------------------------

def test_claude_code_adapter_reads_bash_failure_success_and_edit(tmp_path: Path) -> None:
    failed = claude_code.parse("post-tool-use-failure", bash_failure(str(tmp_path)))
    assert failed.extra["tool"] == {"type": "shell", "tool": "Bash", "command": COMMAND, "exit_code": 1,
                                    "failed": True, "key_line": KEY}
    assert failed.extra["tool_use_id"] == "toolu_01"
    passed = claude_code.parse("post-tool-use", bash_success(str(tmp_path)))
    assert passed.extra["tool"] == {"type": "shell", "tool": "Bash", "command": COMMAND, "exit_code": None,
                                    "failed": False, "key_line": ""}
    edited = claude_code.parse("post-tool-use", edit(str(tmp_path), "/src/shop/totals.py"))
    assert edited.extra["tool"] == {"type": "edit", "tool": "Edit", "files": ["/src/shop/totals.py"]}
    read = claude_code.parse("post-tool-use", {**_base(str(tmp_path), "PostToolUse"), "tool_name": "Read",
                                               "tool_input": {"file_path": "/x"}, "tool_response": {}})
    assert "tool" not in read.extra


def test_codex_adapter_reads_shell_exit_code_and_apply_patch(tmp_path: Path) -> None:
    base = {**_base(str(tmp_path), "PostToolUse"), "model": "gpt-5", "turn_id": "t-7", "tool_use_id": "call_1"}
    shell = codex.parse("post-tool-use", {**base, "tool_name": "Bash", "tool_input": {"command": "cargo test  -q"},
                                          "tool_response": "Exit code: 101\nthread 'main' panicked at src/lib.rs:4"})
    assert shell.extra["tool"] == {"type": "shell", "tool": "Bash", "command": "cargo test -q", "exit_code": 101,
                                   "failed": True, "key_line": "thread 'main' panicked at src/lib.rs:4"}
    assert shell.extra["turn_id"] == "t-7"
    unified = codex.parse("post-tool-use", {**base, "tool_name": "Bash", "tool_input": {"command": "go test ./..."},
                                            "tool_response": "Chunk ID: 1\nWall time: 0.4 seconds\nProcess exited "
                                                             "with code 1\nOutput:\n--- FAIL: TestTotal (0.00s)"})
    assert (unified.extra["tool"]["exit_code"], unified.extra["tool"]["key_line"]) == (1, "--- FAIL: TestTotal (0.00s)")
    # Codex 0.171's exec_command: tool_response is the output alone (seen from the real binary), no exit status.
    for output, failed in (("error: invoice total 10.0 != 10.5\nmake: *** [Makefile:2: check] Error 1\n", True),
                           ("", False), ("..\n=== 2 passed in 0.1s ===\n", False)):
        plain = codex.parse("post-tool-use", {**base, "tool_name": "Bash", "tool_input": {"command": "make check"},
                                              "tool_response": output})
        assert (plain.extra["tool"]["exit_code"], plain.extra["tool"]["failed"]) == (None, failed), output
    patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-a\n+b\n*** Add File: src/new.rs\n+x\n*** End Patch"
    edited = codex.parse("post-tool-use", {**base, "tool_name": "apply_patch", "tool_input": {"command": patch},
                                           "tool_response": "Success."})
    assert edited.extra["tool"] == {"type": "edit", "tool": "apply_patch", "files": ["src/lib.rs", "src/new.rs"]}


def test_test_commands_are_named_and_others_are_not() -> None:
    for command in ("pytest -q", "uv run pytest tests/test_x.py", "cd web && npm test", "npm run build",
                    "cargo test", "go test ./...", "make check", "tox -e py311", "npx jest src",
                    "python -m pytest -x", "CI=1 yarn test", ".venv/bin/python -m pytest -q", ".venv/bin/pytest",
                    "./gradlew test", "python3 tests/check_retention.py", "node test/api.test.js", "./scripts/test.sh",
                    "sh test.sh", "python check_config.py --strict",
                    "ruby spec/models/user_spec.rb", "python3 payments_test.py"):
        assert is_test_command(command), command
    for command in ("ls -la", "git status", "cat pytest.ini", "echo make", "rm -rf build", "cat tests/check_a.py",
                    "python3 scripts/deploy.py", "vim tests/test_x.py", "python3 -c 'print(1)'",
                    "git add tests/check_a.py", "sed -i s/a/b/ tests/check_a.py"):
        assert not is_test_command(command), command
    assert transition_text("pytest", "E x", []) == "`pytest` failed with `E x`; it passed on a later run."
    assert transition_text("pytest", "", ["a.py"], ["sed -i s/a/b/ b.py"]) == (
        "`pytest` failed; it passed after editing a.py and running `sed -i s/a/b/ b.py`.")


# -- the hook, no sidecar ------------------------------------------------------------------------------------

def test_the_hook_spools_a_compact_record_without_a_sidecar(home: Path, tmp_path: Path) -> None:
    started = time.perf_counter()
    _hook(bash_failure(str(tmp_path)))
    elapsed = time.perf_counter() - started
    assert elapsed < 5, "never waits for a sidecar"
    assert not (home / "memcue.sock").exists()
    [record] = _spool_lines(home)
    assert record["op"] == "tool" and record["session_id"] == SESSION and record["source"] == "hook:claude-code"
    assert record["tool"] == {"type": "shell", "tool": "Bash", "command": COMMAND, "exit_code": 1, "failed": True,
                              "key_line": KEY}


def test_a_huge_output_is_cut_before_spooling(home: Path, tmp_path: Path) -> None:
    log = "collected 1 item\n" + "x" * 5_000_000 + "\nFAILED tests/test_x.py::test_total - " + "y" * 2_000
    _hook(bash_failure(str(tmp_path), error=f"Exit code 1\n{log}"))
    [record] = _spool_lines(home)
    assert record["tool"]["key_line"].startswith("FAILED tests/test_x.py::test_total - yyy")
    assert len(record["tool"]["key_line"]) == 300
    assert sum(f.stat().st_size for f in (home / "spool").glob("*.jsonl")) < 2_000


def test_binary_output_and_invalid_utf8_are_cleaned_before_spooling(home: Path, tmp_path: Path) -> None:
    """Issue 14, bad input: a failing command's output with NUL bytes, terminal colour codes, a lone surrogate
    and bytes that are not UTF-8 (raw on the hook's stdin, as a harness may pass a binary's output) is spooled as
    clean text that names the failure."""
    error = "Exit code 1\n\x00\x00\x1b[31mFAILED tests/test_x.py::test_total\x1b[0m - \ud800 AssertionError \x07"
    payload = json.dumps(bash_failure(str(tmp_path), error=error)).encode()
    raw = payload.replace(b"AssertionError", b"Assertion\xff\xfeError")
    run = run_hook(None, "post-tool-use-failure", raw=raw, env={**os.environ, **NO_SPAWN})
    assert run.returncode == 0 and run.stdout == b"" and run.stderr == b"", run
    [record] = _spool_lines(home)
    line = record["tool"]["key_line"]
    assert line.startswith("FAILED tests/test_x.py::test_total") and "Assertion" in line and "Error" in line, line
    assert not any(c in line for c in ("\x00", "\x1b", "\x07", "\ud800")), repr(line)
    assert "[31m" not in line and record["tool"]["failed"] is True


# -- a real sidecar ------------------------------------------------------------------------------------------

def test_fail_edit_pass_becomes_one_promoted_memory_across_a_restart(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    _hook(bash_failure(str(project)))
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        assert wait_until(lambda: _spooled(home)), "the failure was read"
        assert sc.client.candidates()["results"] == []
    finally:
        sc.stop()  # a restart between the failure and the pass
    _hook(edit(str(project), str(project / "shop" / "totals.py")))
    _hook(bash_success(str(project)))
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        promoted = wait_until(lambda: sc.client.candidates(state="promoted")["results"])
        assert [(c["signal"], c["reason"], c["harness"], c["session_id"]) for c in promoted] == [
            ("test-passed", "test-passed", "claude-code", SESSION)]
        content = promoted[0]["content"]
        assert content == (f"`{COMMAND}` failed with `{KEY}`; it passed after editing "
                           f"{project / 'shop' / 'totals.py'}."), content
        assert sc.client.candidates(state="pending")["results"] == []
        with sqlite3.connect(f"file:{home / 'memcue.db'}?mode=ro", uri=True) as conn:
            meta = json.loads(conn.execute("SELECT metadata FROM memories WHERE id = ?",
                                           (promoted[0]["memory_id"],)).fetchone()[0])
        # Embedded for its meaning: the failure in words, not the command line and the file path.
        assert meta["embed_text"] == "A test failed and then passed: E AssertionError: assert parse total('1,5') == 1.5"
        context = context_of(run_hook(prompt_payload("why did test_x fail?", str(project),
                                                     session_id=OTHER_SESSION)))
        assert "failed with" in context and "test_x" in context, context
    finally:
        sc.stop()


def _pre_tool(cwd: str, tool: str, tool_input: dict[str, Any], session_id: str) -> str:
    """The additionalContext the real PreToolUse hook gives a Claude Code call ("" for none)."""
    payload = {**_base(cwd, "PreToolUse", session_id), "tool_name": tool, "tool_input": tool_input,
               "tool_use_id": f"toolu_{session_id[:6]}"}
    run = run_hook(payload, "pre-tool-use")
    assert run.returncode == 0, run
    return json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"] if run.stdout.strip() else ""


def test_a_transition_is_given_beside_an_edit_of_its_file_not_beside_every_test_run(home: Path, tmp_path: Path
                                                                                    ) -> None:
    """``pytest -q`` names the program every transition names: running the tests again is not a reason to show
    how they once failed. Editing the file the fix touched is."""
    project = tmp_path / "shop"
    project.mkdir()
    totals = str(project / "shop" / "totals.py")
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        _hook(bash_failure(str(project), command="pytest -q"))
        _hook(edit(str(project), totals))
        _hook(bash_success(str(project), command="pytest -q"))
        assert wait_until(lambda: sc.client.candidates(state="promoted")["results"])
        assert _pre_tool(str(project), "Bash", {"command": "pytest -q"}, "b1c2d3e4-0000-4000-8000-000000000001") == ""
        beside = _pre_tool(str(project), "Edit", {"file_path": totals, "old_string": "a", "new_string": "b"},
                           "b1c2d3e4-0000-4000-8000-000000000002")
        assert "failed with" in beside and "parse_total" in beside, beside
    finally:
        sc.stop()


def test_a_pass_without_a_failure_and_a_non_test_command_make_nothing(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    _hook(bash_success(str(project)))
    _hook(bash_failure(str(project), command="grep -r parse_total src", error="Exit code 1\nerror: nothing"))
    _hook(edit(str(project), "src/x.py"))
    _hook(bash_success(str(project), command="grep -r parse_total src", call="toolu_09"))
    sc = start_sidecar(home, MEMCUE_NO_MODEL="1")
    try:
        assert wait_until(lambda: _spooled(home))
        time.sleep(0.5)
        assert sc.client.candidates()["results"] == []
        assert sc.client.list_recent(all_projects=True)["results"] == []
        with sqlite3.connect(f"file:{home / 'memcue.db'}?mode=ro", uri=True) as conn:
            broken = conn.execute("SELECT key FROM meta WHERE key LIKE 'spool_broken:%'").fetchall()
        assert broken == [], "tool records are read, not counted as unreadable spool lines"
    finally:
        sc.stop()


def test_secrets_in_a_command_are_never_kept(tmp_path: Path) -> None:
    """The per-session state (the store's meta table) and the memory hold the command with its secret redacted."""
    from memcue.sidecar.capture import Gate, TestRuns
    from memcue.sidecar.store import Store

    store = Store(tmp_path / "memcue.db")
    runs = TestRuns(store, Gate(store, store.remember))
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    command = f"GITHUB_TOKEN={secret} pytest tests/test_x.py"
    rec = {"project": "/p", "session_id": SESSION, "source": "hook:claude-code", "turn": "t1", "ts": 1.0}
    shell = {"type": "shell", "tool": "Bash", "command": command, "exit_code": 1}
    assert runs.record({**rec, "spool_id": "a", "tool": {**shell, "failed": True, "key_line": f"E bad {secret}"}}) == 0
    state = [store.get_meta(f"test_runs:claude-code\x00/p\x00{SESSION}")]
    assert state[0] and secret not in state[0] and "pytest tests/test_x.py" in state[0]
    assert runs.record({**rec, "spool_id": "b", "tool": {**shell, "failed": False, "key_line": ""}}) == 1
    [cand] = store.list_candidates(state="promoted")
    assert secret not in cand["content"] and "pytest tests/test_x.py" in cand["content"]
    assert store.get_meta(f"test_runs:claude-code\x00/p\x00{SESSION}") is None, "nothing waits: the state goes"
    store.close()


def test_an_edit_made_through_the_shell_is_named_not_denied(tmp_path: Path) -> None:
    """A fix made with a shell command (``sed -i``, a ``python - <<EOF`` script) between the failure and the pass
    is named in the memory; inspection commands (``cat``, ``git diff``) and commands before the failure are not;
    the memory never says no file was edited."""
    from memcue.sidecar.capture import Gate, TestRuns
    from memcue.sidecar.store import Store

    store = Store(tmp_path / "memcue.db")
    runs = TestRuns(store, Gate(store, store.remember))
    rec = {"project": "/p", "session_id": SESSION, "source": "hook:codex", "turn": "t1", "ts": 1.0}
    test = {"type": "shell", "tool": "Bash", "command": "python3 -m unittest -q test_invoice", "exit_code": None}
    steps = [({"type": "shell", "tool": "Bash", "command": "sed -i 's/1/2/' before.py"}, 0),
             ({**test, "failed": True, "key_line": "FAIL: test_discount_cap (test_invoice.DiscountTest)"}, 0),
             ({"type": "shell", "tool": "Bash", "command": "cat invoice.py && git diff"}, 0),
             ({"type": "shell", "tool": "Bash", "command": "sed -i 's/^DISCOUNT_CAP = 1.0$/DISCOUNT_CAP = 0.2/' "
                                                           "invoice.py"}, 0),
             ({**test, "failed": False, "key_line": ""}, 1)]
    for i, (tool, added) in enumerate(steps):
        assert runs.record({**rec, "spool_id": f"s{i}", "tool": tool}) == added, tool
    [cand] = store.list_candidates(state="promoted")
    assert cand["content"] == ("`python3 -m unittest -q test_invoice` failed with `FAIL: test_discount_cap "
                               "(test_invoice.DiscountTest)`; it passed after running "
                               "`sed -i 's/^DISCOUNT_CAP = 1.0$/DISCOUNT_CAP = 0.2/' invoice.py`.")
    assert cand["evidence"]["commands"] == ["sed -i 's/^DISCOUNT_CAP = 1.0$/DISCOUNT_CAP = 0.2/' invoice.py"]
    store.close()


def test_a_python_traceback_is_keyed_by_the_exception_it_ends_with() -> None:
    """A script run with python (no pytest) fails with a traceback whose first line says nothing: the key line
    is the exception at its end."""
    from memcue.adapters.tools import key_line

    traceback = ("Traceback (most recent call last):\n  File \"tests/check_config.py\", line 8, in <module>\n"
                 "    cfg = tomllib.load(fh)\n  File \"/usr/lib/python3.11/tomllib/_parser.py\", line 64, in load\n"
                 "    raise TypeError(\nTypeError: File must be opened in binary mode, e.g. use `open('a', 'rb')`\n")
    assert key_line(traceback).startswith("TypeError: File must be opened in binary mode")
    assert key_line("Traceback (most recent call last):\n  File \"t.py\", line 2\n    assert ok\nAssertionError\n") \
        == "AssertionError"
    assert key_line("FAILED tests/test_a.py::test_x - assert 1 == 2\n1 failed in 0.1s").startswith("FAILED")


def test_a_unittest_failure_keeps_the_test_name_and_the_exception() -> None:
    from memcue.adapters.tools import key_line

    output = ("F\n======\nFAIL: test_cap (tests.test_discounts.T)\n------\nTraceback (most recent call last):\n"
              "  File \"tests/test_discounts.py\", line 5, in test_cap\n    self.assertEqual(cap(30), 20)\n"
              "AssertionError: 25 != 20\n\n------\nRan 1 test in 0.000s\n\nFAILED (failures=1)\n")
    assert key_line(output) == "FAIL: test_cap (tests.test_discounts.T): AssertionError: 25 != 20"
