"""Recall at the point of action (issue 15): the real PreToolUse hook, as a subprocess with the payloads Claude Code
2.1.x and Codex 0.171 send, against a real sidecar. A memory about ``src/billing/tax.py`` reaches an Edit of that
file, once per session, and no other file's edit; a shell command gets the memories naming its program and
subcommand; captured, bookkeeping and superseded rows never come; a down sidecar or a broken payload costs
nothing (exit 0, empty stdout)."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from conftest import Sidecar, wait_until
from hookutil import run_hook, socket_path

from memcue.core.blocks import BLOCK_CLOSE, BLOCK_OPEN, TOOL_HEADER
from memcue.core.project import resolve_project
from memcue.sidecar.runtime.tokenizer import TokenCounter

SESSION = "7d3e9a10-2b4c-4f5e-8a6b-1c2d3e4f5a6b"
BUG = "src/billing/tax.py rounds VAT per line instead of per invoice, so totals drift by a cent"
DECISION = "Money is integer cents everywhere, never floats: billing.tax and the invoice models follow it"
OTHER_TAX = "tests/tax.py holds the fixture rates for the EU countries"
CHECK = "Run `make check` before pushing: it runs mypy and the contract tests"
PYTEST_COV = "pytest-cov is pinned to 4.1 because 5.0 breaks the xdist workers"
CAPTURED = "please fix the rounding in src/billing/tax.py"
OLD = "src/billing/tax.py uses banker's rounding for the VAT lines"
NEW = "Rounding lives in money.py now and is half-up"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "shop"
    (path / ".git").mkdir(parents=True)
    return path


def _seed(sc: Sidecar, project: Path) -> dict[str, int]:
    scope = resolve_project(str(project))
    ids = {}
    for name, text, kind in (("bug", BUG, "bug"), ("decision", DECISION, "decision"), ("other", OTHER_TAX, "fact"),
                             ("check", CHECK, "convention"), ("cov", PYTEST_COV, "fact"),
                             ("captured", CAPTURED, "request"), ("answer", "Changed src/billing/tax.py.", "response"),
                             ("old", OLD, "decision")):
        ids[name] = sc.client.remember(text, project=scope, kind=kind)["id"]
    sc.client.update({"memory_id": ids["old"], "content": NEW})
    return ids


def claude_payload(project: Path, tool: str, tool_input: dict, session: str = SESSION) -> dict:
    """Claude Code 2.1.x's PreToolUse stdin."""
    return {"session_id": session, "transcript_path": f"/home/dev/.claude/projects/shop/{session}.jsonl",
            "cwd": str(project), "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool,
            "tool_input": tool_input, "tool_use_id": f"toolu_{int(time.monotonic() * 1e6)}"}


def codex_payload(project: Path, tool: str, tool_input: dict, session: str = SESSION) -> dict:
    """Codex 0.171's PreToolUse stdin (its ``pre-tool-use.command.input`` schema: every required field)."""
    return {"session_id": session, "turn_id": "turn-1", "transcript_path": None, "cwd": str(project),
            "hook_event_name": "PreToolUse", "model": "gpt-5", "permission_mode": "default", "tool_name": tool,
            "tool_input": tool_input, "tool_use_id": f"call_{int(time.monotonic() * 1e6)}"}


def _edit(project: Path, name: str) -> dict:
    return {"file_path": str(project / name), "old_string": "a = 1", "new_string": "a = 2"}


def _context(home: Path, payload: dict, harness: str = "claude-code", **env: str) -> str:
    run = run_hook(payload, home, event="pre-tool-use", harness=harness, **env)
    assert run.returncode == 0 and run.stderr == b""
    out = run.output()
    if out is None:
        return ""
    # Exactly the object both harnesses accept; never a permission decision (the tool call is never blocked).
    assert out == {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                          "additionalContext": out["hookSpecificOutput"]["additionalContext"]}}
    return out["hookSpecificOutput"]["additionalContext"]


def test_an_edit_gets_the_memories_naming_its_file_once_per_session(home: Path, keyword_sidecar: Sidecar,
                                                                   project: Path) -> None:
    _seed(keyword_sidecar, project)
    first = _context(home, claude_payload(project, "Edit", _edit(project, "src/billing/tax.py")))
    assert first.startswith(TOOL_HEADER + "\n" + BLOCK_OPEN) and first.endswith(BLOCK_CLOSE)
    assert DECISION in first and BUG in first
    assert first.index(DECISION) < first.index(BUG), "decisions before bugs"
    for never in (OTHER_TAX, CHECK, PYTEST_COV, CAPTURED, "Changed src/billing/tax.py", OLD, NEW):
        assert never not in first
    assert 'kind="decision" source="api"' in first or 'kind="decision"' in first

    # Another file of the same folder: nothing names it.
    assert _context(home, claude_payload(project, "Edit", _edit(project, "src/billing/refunds.py"))) == ""
    # The same file again in the session: already in the conversation.
    assert _context(home, claude_payload(project, "Write", _edit(project, "src/billing/tax.py"))) == ""
    # Another session gets them again.
    again = _context(home, claude_payload(project, "MultiEdit", _edit(project, "src/billing/tax.py"), "other"))
    assert DECISION in again and BUG in again
    # The session's receipt counts the block: two memories, its tokens, served by the tool hook.
    injected = wait_until(lambda: keyword_sidecar.client.receipt(session_id=SESSION)["injected"]["tokens_by_block"])
    assert list(injected) == ["tool/full"] and 0 < injected["tool/full"] <= 300


def test_a_shell_command_gets_memories_naming_its_command(home: Path, keyword_sidecar: Sidecar,
                                                          project: Path) -> None:
    _seed(keyword_sidecar, project)
    got = _context(home, claude_payload(project, "Bash", {"command": "make check", "description": "checks"}))
    assert CHECK in got and BUG not in got
    # ``pytest`` is not ``pytest-cov``; ``make lint`` is not ``make check``.
    assert _context(home, claude_payload(project, "Bash", {"command": "pytest -q"}, "s2")) == ""
    assert _context(home, claude_payload(project, "Bash", {"command": "make lint"}, "s3")) == ""
    # A command naming the file brings the file's memories.
    named = _context(home, claude_payload(project, "Bash", {"command": "python src/billing/tax.py --dry-run"}, "s4"))
    assert BUG in named


def test_codex_payloads_shell_and_patch(home: Path, keyword_sidecar: Sidecar, project: Path) -> None:
    _seed(keyword_sidecar, project)
    got = _context(home, codex_payload(project, "Bash", {"command": "make check"}), harness="codex")
    assert CHECK in got
    patch = ("*** Begin Patch\n*** Update File: src/billing/tax.py\n@@\n-a = 1\n+a = 2\n*** End Patch\n")
    edited = _context(home, codex_payload(project, "apply_patch", {"command": patch}), harness="codex")
    assert BUG in edited and DECISION in edited and CHECK not in edited


def test_a_prompt_block_is_not_repeated_at_a_tool_call_but_a_tool_block_is_at_a_prompt(
        home: Path, keyword_sidecar: Sidecar, project: Path) -> None:
    _seed(keyword_sidecar, project)
    prompt = {"session_id": SESSION, "transcript_path": "/tmp/t.jsonl", "cwd": str(project),
              "permission_mode": "default", "hook_event_name": "UserPromptSubmit",
              "prompt": "why do the VAT totals drift by a cent per invoice line?"}
    block = run_hook(prompt, home).output()["hookSpecificOutput"]["additionalContext"]
    assert BUG in block and DECISION not in block
    got = _context(home, claude_payload(project, "Edit", _edit(project, "src/billing/tax.py")))
    assert DECISION in got and BUG not in got, "the shared session ledger: the bug is already in the conversation"
    # The other way: shown beside an edit, a memory is easy to miss when the user later asks the question it
    # answers, so the prompt hook gives it again, once; another tool call does not.
    assert BUG in _context(home, claude_payload(project, "Edit", _edit(project, "src/billing/tax.py"), "rev"))
    assert _context(home, claude_payload(project, "Bash", {"command": "python src/billing/tax.py"}, "rev")) == ""
    later = run_hook({**prompt, "session_id": "rev"}, home).output()
    assert BUG in later["hookSpecificOutput"]["additionalContext"], "the prompt asks for it: given again"
    again = run_hook({**prompt, "session_id": "rev"}, home).output()
    assert again is None or BUG not in again["hookSpecificOutput"]["additionalContext"], "in a prompt block now"


def test_reads_and_searches_ask_nothing(home: Path, keyword_sidecar: Sidecar, project: Path) -> None:
    _seed(keyword_sidecar, project)
    for tool, tool_input in (("Read", {"file_path": str(project / "src/billing/tax.py")}),
                             ("Grep", {"pattern": "tax.py"}), ("Bash", {"command": "ls -la"})):
        assert _context(home, claude_payload(project, tool, tool_input)) == ""
    calls = [c for c in keyword_sidecar.client.health()["hooks"]["recent"] if c["event"] == "pre-tool-use"]
    assert calls == [], "the hook answered those itself"
    assert BUG in _context(home, claude_payload(project, "Edit", _edit(project, "src/billing/tax.py")))


def test_the_block_stays_under_its_budget(home: Path, keyword_sidecar: Sidecar, project: Path) -> None:
    scope = resolve_project(str(project))
    for i in range(12):
        keyword_sidecar.client.remember(f"Gotcha {i}: src/billing/tax.py must call round_cents() before "
                                        f"summing line {i}; the regression suite in tests/test_tax_{i}.py checks it",
                                        project=scope, kind="bug")
    got = _context(home, claude_payload(project, "Edit", _edit(project, "src/billing/tax.py")))
    counter = TokenCounter(keyword_sidecar.loc.tiktoken_cache)  # the sidecar seeded o200k_base there
    assert counter.mode == "tiktoken" and 0 < counter.count(got) <= 300
    assert 1 <= got.count("<memory ") <= 3


def test_nothing_when_the_sidecar_is_down_or_the_payload_is_broken(home: Path, project: Path) -> None:
    payload = claude_payload(project, "Edit", _edit(project, "src/billing/tax.py"))
    started = time.monotonic()
    assert _context(home, payload, MEMCUE_HOOK_SPAWN="0") == ""
    assert time.monotonic() - started < 5
    for raw in (b"{not json", b"", b"\xff\xfe", json.dumps(["a"]).encode(), b'{"tool_name": 3}'):
        run = run_hook(raw, home, event="pre-tool-use", MEMCUE_HOOK_SPAWN="0")
        assert (run.returncode, run.stdout, run.stderr) == (0, b"", b"")
        run = run_hook(raw, home, event="pre-tool-use", harness="codex", MEMCUE_HOOK_SPAWN="0")
        assert (run.returncode, run.stdout, run.stderr) == (0, b"", b"")


def test_a_sidecar_that_never_answers_costs_the_tool_call_at_most_its_deadline(home: Path, project: Path) -> None:
    """The default 1 s deadline (no override): the hook gives up, prints nothing and exits 0 inside the 2 s
    timeout memcue installs for PreToolUse, so the harness never kills it and the tool call goes ahead."""
    path = socket_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(8)  # never accept(): the request sits in the backlog, nothing answers
    try:
        run = run_hook(claude_payload(project, "Edit", _edit(project, "src/billing/tax.py")), home,
                       event="pre-tool-use", MEMCUE_HOOK_SPAWN="0")
    finally:
        listener.close()
        path.unlink(missing_ok=True)
    assert (run.returncode, run.stdout, run.stderr) == (0, b"", b"")
    assert 0.5 <= run.elapsed_s < 2.0, run.elapsed_s
