"""A finished tool call as the compact record memcue spools: shell commands and file edits only.

Standard library only (runs in the hook process on every tool call, so it stays cheap: no output is kept, only
the command, its exit status and its key failure line, found in a bounded slice of the output). The record
(``HookEvent.extra["tool"]``) is one of::

    {"type": "shell", "tool": "Bash", "command": "pytest tests/test_x.py", "exit_code": 1, "failed": true,
     "key_line": "E   AssertionError: assert 1 == 2"}
    {"type": "edit", "tool": "Edit", "files": ["src/x.py"]}

Anything else (reads, searches, web, MCP tools) gives None and is not recorded. The harness names: Claude Code's
``Bash`` and ``Edit``/``Write``/``MultiEdit``/``NotebookEdit`` (``tool_input.file_path``), Codex's shell tool and
``apply_patch`` (the patch text in ``tool_input.command`` or ``input``: its ``*** Update File:`` lines). Codex
0.171 names its shell tool ``Bash`` in hooks (``tool_input: {"command": ...}``) and sends the command's output
alone as ``tool_response`` (a string, no exit status), so there a failure is read from the output.
"""

from __future__ import annotations

import re

#: Tool names of shell commands (Claude Code's ``Bash``; Codex's shell tool under the names it has used).
SHELL_TOOLS = frozenset({"bash", "shell", "local_shell", "shell_command", "exec_command", "container.exec"})
#: Tool names of file edits whose ``tool_input`` names one file (``file_path``, or ``notebook_path``).
EDIT_TOOLS = frozenset({"edit", "write", "multiedit", "notebookedit"})
#: Tool names of patch edits (Codex): the files are read from the patch text.
PATCH_TOOLS = frozenset({"apply_patch"})
#: Characters kept of a command and of the key failure line.
COMMAND_MAX_CHARS = 1_000
KEY_LINE_MAX_CHARS = 300
#: Characters of output searched for the key line: this many from the start and from the end (a log of
#: megabytes is never scanned or kept whole).
SCAN_CHARS = 64_000
#: Files kept of one edit.
MAX_FILES = 20
#: A line that says what failed: the first one matching is the key line.
FAILURE_LINE = re.compile(
    r"(?i)(\berror\b|\berrors?:|\bfailed\b|\bfailures?\b|\bfail:|\bassert(ion)?|traceback|\bpanic(ked)?\b|"
    r"\bexception\b|^E\s{2,}|\bFAIL\b|\bnot ok\b|\bundefined reference\b|\bcannot find\b)")
#: A banner ("=== FAILURES ===") or a line that only reports totals ("1 failed, 2 passed in 0.1s"): the key
#: line only when nothing better matched.
_SUMMARY_LINE = re.compile(r"(?i)^([=_*-]{3,}.*[=_*-]{3,}$|[=\s]*\d+ (failed|passed|errors?)\b)")
#: The line a Python traceback ends with: the exception raised, unindented ("TypeError: File must be opened in
#: binary mode", "AssertionError: ...", "mod.CustomError").
_PY_RAISED = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b(?::.*)?$", re.MULTILINE)
_FAILED_TOTALS = re.compile(r"(?i)\b[1-9]\d* (failed|errors?)\b")
_EXIT_TEXT = re.compile(r"(?i)(?:exit(?:ed)?(?: with)? (?:code|status)|process exited with code)[:\s]+(-?\d+)")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def key_line(output: str) -> str:
    """The first line of ``output`` that says what failed (``FAILURE_LINE``; a totals line only if nothing else
    matched), stripped and cut to ``KEY_LINE_MAX_CHARS``; "" when none. A Python traceback says what failed on
    its last line: its exception is the key line, after the first failure line when one names more than the
    traceback's header ("FAIL: test_cap (tests.test_discounts.T): AssertionError: 25 != 20"). Only the first and
    last ``SCAN_CHARS`` characters are read."""
    if len(output) > 2 * SCAN_CHARS:
        output = output[:SCAN_CHARS] + "\n" + output[-SCAN_CHARS:]
    raised = _PY_RAISED.findall(output) if "Traceback (most recent call last):" in output else []
    summary = first = ""
    for raw in output.splitlines():
        line = raw.strip()
        if not line:
            continue
        if _SUMMARY_LINE.match(line):
            summary = summary or line
            continue
        if FAILURE_LINE.search(line):
            first = line
            break
    if raised:
        last = raised[-1].strip()
        named = first and not first.startswith("Traceback") and first != last
        return (f"{first}: {last}" if named else last)[:KEY_LINE_MAX_CHARS]
    return (first or summary)[:KEY_LINE_MAX_CHARS]


def looks_failed(output: str) -> bool:
    """True when ``output`` says something failed: a line matching ``FAILURE_LINE`` (not a banner) or a totals
    line counting failures or errors. For a harness that reports no exit status (Codex's shell output)."""
    line = key_line(output)
    return bool(line) and (not _SUMMARY_LINE.match(line) or bool(_FAILED_TOTALS.search(line)))


def _command(tool_input: object) -> str:
    if not isinstance(tool_input, dict):
        return _text(tool_input)
    command = tool_input.get("command", tool_input.get("cmd"))
    if isinstance(command, list):  # Codex's exec form: ["bash", "-lc", "pytest -q"]
        parts = [str(p) for p in command]
        command = parts[-1] if len(parts) >= 3 and parts[-2] in ("-c", "-lc") else " ".join(parts)
    return _text(command)


def _exit_code(response: object, output: str) -> int | None:
    if isinstance(response, dict):
        for key in ("exit_code", "exitCode", "returncode", "return_code", "code"):
            value = response.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    found = _EXIT_TEXT.search(output[:SCAN_CHARS])
    return int(found.group(1)) if found else None


def _output(response: object) -> str:
    """The text of a tool response: a string, or a dict's stdout/stderr/output/error/content strings."""
    if isinstance(response, str):
        return response
    if not isinstance(response, dict):
        return ""
    parts = [response.get(k) for k in ("stdout", "stderr", "output", "aggregated_output", "formatted_output",
                                       "error", "content")]
    return "\n".join(p[: 2 * SCAN_CHARS] for p in parts if isinstance(p, str) and p)


def shell_record(tool: str, tool_input: object, response: object, *, failed: bool = False) -> dict[str, object] | None:
    """The record of a shell command (module docstring); None without a command. ``failed``: the harness
    reported the call as failed (Claude Code's PostToolUseFailure, whose ``error`` is ``response``); otherwise
    a non-zero exit code, or a response flagged ``interrupted`` or ``is_error``, fails it. A response that is only
    the command's output, with no exit status in it (Codex 0.171's ``exec_command``), fails when the output
    ``looks_failed``."""
    command = " ".join(_command(tool_input).split())
    if not command:
        return None
    output = _output(response)
    code = _exit_code(response, output)
    if isinstance(response, dict) and (response.get("interrupted") is True or response.get("is_error") is True):
        failed = True
    failed = failed or (code is not None and code != 0)
    if not failed and code is None and isinstance(response, str):
        failed = looks_failed(output)
    return {"type": "shell", "tool": tool, "command": command[:COMMAND_MAX_CHARS], "exit_code": code,
            "failed": failed, "key_line": key_line(output) if failed else ""}


def edit_record(tool: str, tool_input: object) -> dict[str, object] | None:
    """The record of a file edit (module docstring): the file paths only; None when none is named."""
    files: list[str] = []
    if isinstance(tool_input, dict):
        for key in ("file_path", "notebook_path", "path"):
            if _text(tool_input.get(key)):
                files.append(_text(tool_input[key]))
        patch = _text(tool_input.get("command")) or _text(tool_input.get("input")) or _text(tool_input.get("patch"))
    else:
        patch = _text(tool_input)
    if tool.lower() in PATCH_TOOLS and patch:
        files += [(m.group(1) or m.group(2)).strip() for m in _PATCH_FILE.finditer(patch[: 4 * SCAN_CHARS])]
    files = list(dict.fromkeys(f for f in files if f))[:MAX_FILES]
    return {"type": "edit", "tool": tool, "files": files} if files else None


def tool_record(data: dict[str, object], *, failed: bool = False) -> dict[str, object] | None:
    """The compact record of a PostToolUse (or PostToolUseFailure, ``failed``) payload ``data``
    (``tool_name``, ``tool_input``, ``tool_response`` or ``error``); None for a tool memcue does not record.
    Never raises on payload content."""
    tool = _text(data.get("tool_name"))
    name = tool.lower()
    response = data.get("error") if failed and "tool_response" not in data else data.get("tool_response")
    if name in SHELL_TOOLS:
        return shell_record(tool, data.get("tool_input"), response, failed=failed)
    if (name in EDIT_TOOLS or name in PATCH_TOOLS) and not failed:  # a failed edit changed nothing
        return edit_record(tool, data.get("tool_input"))
    return None
