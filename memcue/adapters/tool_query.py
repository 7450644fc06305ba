"""A tool call about to run, as the lookup the PreToolUse hook sends: the files it edits, the command it runs.

Standard library only (runs in the hook process before every matched tool call, so it stays cheap: ``re`` and
``shlex``, no output read). Only file edits and shell commands are looked up; reads, searches, web and MCP tools
give None (the hook then asks nothing). The query (``HookEvent.extra["tool_query"]``) is one of::

    {"type": "edit", "tool": "Edit", "paths": ["src/billing/tax.py"], "terms": []}
    {"type": "shell", "tool": "Bash", "paths": ["tests/test_tax.py"],
     "terms": ["pytest", "--lf", "DATABASE_URL"], "command": "DATABASE_URL=x pytest tests/test_tax.py --lf"}

``paths`` are the files named, relative to the session's directory (else its project) when inside it, with
forward slashes; ``terms`` are the identifiers a memory must carry word for word to be about the command: the
program with its subcommand (``make check``, ``git push``, ``npm run build``), the program alone when it is not
an everyday one (``alembic``, ``terraform``), long flags (``--force``), environment variables set for it.
The sidecar matches them as whole identifiers (``memcue/sidecar/inject/tool_context.py``), never loosely.
"""

from __future__ import annotations

import os
import re

from memcue.adapters.tools import EDIT_TOOLS, PATCH_TOOLS, SHELL_TOOLS, edit_record

#: Characters of a command read (a heredoc or a pasted script is not parsed whole).
COMMAND_MAX_CHARS = 2_000
#: Paths and terms sent at most (each), so one long command cannot make the lookup slow.
MAX_PATHS = 8
MAX_TERMS = 12
#: Words that only wrap the real command (``sudo make install`` is about ``make install``).
_WRAPPERS = frozenset({"sudo", "env", "time", "nice", "nohup", "exec", "command", "timeout", "xargs", "npx", "bunx",
                       "pnpx", "doas", "stdbuf"})
#: Runners whose ``run`` names the real program (``uv run pytest`` is about ``pytest``).
_RUN_PREFIXES = frozenset({"uv", "poetry", "pdm", "hatch", "pipenv", "rye", "pixi"})
#: Package scripts: ``npm run build`` is about ``npm run build``, not ``npm run``.
_SCRIPT_RUNNERS = frozenset({"npm", "pnpm", "yarn", "bun"})
#: Programs too common (or English words) to stand alone as a term; with a subcommand they still count.
_EVERYDAY = frozenset({
    "ls", "cd", "cat", "echo", "printf", "grep", "rg", "egrep", "sed", "awk", "head", "tail", "find", "sort", "uniq",
    "wc", "cut", "tr", "tee", "mkdir", "rm", "rmdir", "cp", "mv", "ln", "touch", "chmod", "chown", "pwd", "which",
    "true", "false", "test", "sleep", "date", "diff", "less", "more", "file", "stat", "du", "df", "ps", "kill",
    "bash", "sh", "zsh", "python", "python3", "node", "git", "make", "export", "source", "set", "unset", "read",
    "wait", "watch", "open", "curl", "wget", "tar", "zip", "unzip", "jq", "xargs", "env", "exit", "for", "while",
    "if", "then", "do", "done", "fi", "else", "case", "esac", "pip", "pip3", "npm", "yarn", "pnpm", "go", "cargo"})
#: Everyday programs whose first word is a subcommand (``git push``); the others' first word is an argument.
_WITH_SUBCOMMANDS = frozenset({"git", "make", "npm", "yarn", "pnpm", "pip", "pip3", "go", "cargo", "bun"})
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9:_-]{0,40}")
_ENV_ASSIGN = re.compile(r"([A-Z][A-Z0-9_]*_[A-Z0-9_]*|[A-Z]{3,})=")
_LONG_FLAG = re.compile(r"--[a-z0-9][a-z0-9-]{1,40}")
#: An argument that names a file: has a slash, or ends in a short extension (``tax.py``, ``Makefile`` does not).
_FILE_LIKE = re.compile(r"^(?!-)(?![a-z][a-z0-9+.-]*://)[\w.@~+-]*(?:/[\w.@~+-]+)+/?$|^[\w@+-][\w.@+-]*\.[A-Za-z]\w{0,7}$")
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "(", ")", "|&"})


def _relative(path: str, cwd: str, project: str) -> str:
    """``path`` with forward slashes, relative to ``cwd`` (else ``project``) when inside it; ``./`` dropped."""
    path = path.strip().replace("\\", "/")
    for root in (cwd, project):
        root = root.replace("\\", "/").rstrip("/")
        if root and path.startswith(root + "/"):
            return path[len(root) + 1:]
    return path[2:] if path.startswith("./") else path


def _words(command: str) -> list[str]:
    """The command's words and separators (``&&``, ``;``, ``|``); plain whitespace words when it does not parse."""
    import shlex  # only for shell commands

    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = ""
        return list(lexer)
    except ValueError:  # an unclosed quote: good enough for finding identifiers
        return command.split()


def _segments(words: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for word in words:
        if word in _SEPARATORS:
            out.append([])
        else:
            out[-1].append(word)
    return [seg for seg in out if seg]


def _segment_terms(seg: list[str]) -> tuple[list[str], list[str]]:
    """``(terms, file arguments)`` of one simple command (see the module docstring)."""
    terms: list[str] = []
    i = 0
    while i < len(seg) and (found := _ENV_ASSIGN.match(seg[i])):
        terms.append(found.group(1))
        i += 1
    while i < len(seg) and (os.path.basename(seg[i]) in _WRAPPERS or seg[i].startswith("-") and i > 0
                            and os.path.basename(seg[i - 1]) in _WRAPPERS):
        i += 1
    rest = seg[i:]
    if not rest:
        return terms, []
    program = os.path.basename(rest[0])
    args = rest[1:]
    if program in _RUN_PREFIXES and args[:1] == ["run"] and len(args) > 1:
        program, args = os.path.basename(args[1]), args[2:]
    if re.fullmatch(r"python[0-9.]*", program) and args[:1] == ["-m"] and len(args) > 1:
        program, args = args[1], args[2:]
    words = [program]
    takes_subcommand = program not in _EVERYDAY or program in _WITH_SUBCOMMANDS
    if takes_subcommand and args and _SUBCOMMAND.fullmatch(args[0]) and not _FILE_LIKE.match(args[0]):
        words.append(args[0])
        if program in _SCRIPT_RUNNERS and args[0] == "run" and len(args) > 1 and _SUBCOMMAND.fullmatch(args[1]):
            words.append(args[1])
    if len(words) > 1:
        terms.append(" ".join(words))
    if program not in _EVERYDAY and len(program) >= 3 and _SUBCOMMAND.fullmatch(program):
        terms.append(program)
    files = [rest[0]] if "/" in rest[0] and _FILE_LIKE.match(rest[0]) else []  # ./scripts/deploy.sh
    for arg in args:
        flag = _LONG_FLAG.match(arg)
        if flag:
            terms.append(flag.group(0))
        elif _FILE_LIKE.match(arg):
            files.append(arg)
    return terms, files


def shell_query(tool: str, tool_input: object, cwd: str, project: str) -> dict[str, object] | None:
    """The query of a shell command (module docstring); None when it names nothing to look up."""
    from memcue.adapters.tools import _command  # the one reader of the harnesses' command shapes

    command = " ".join(_command(tool_input).split())[:COMMAND_MAX_CHARS]
    terms: list[str] = []
    paths: list[str] = []
    for seg in _segments(_words(command)):
        seg_terms, files = _segment_terms(seg)
        terms += seg_terms
        paths += [_relative(f, cwd, project) for f in files]
    terms = list(dict.fromkeys(terms))[:MAX_TERMS]
    paths = list(dict.fromkeys(p for p in paths if p.strip("/.")))[:MAX_PATHS]
    if not terms and not paths:
        return None
    return {"type": "shell", "tool": tool, "paths": paths, "terms": terms, "command": command}


def tool_query(data: dict[str, object], cwd: str, project: str) -> dict[str, object] | None:
    """The lookup for a PreToolUse payload ``data`` (``tool_name``, ``tool_input``) run in ``cwd`` of ``project``:
    a file edit's paths or a shell command's terms and paths (module docstring); None for any other tool or when
    nothing is named. Never raises on payload content."""
    tool = data.get("tool_name")
    tool = tool if isinstance(tool, str) else ""
    name = tool.lower()
    if name in SHELL_TOOLS:
        return shell_query(tool, data.get("tool_input"), cwd, project)
    if name in EDIT_TOOLS or name in PATCH_TOOLS:
        record = edit_record(tool, data.get("tool_input"))
        if record is None:
            return None
        files = record["files"]
        paths = [_relative(str(f), cwd, project) for f in files if isinstance(f, str)] if isinstance(files,
                                                                                                      list) else []
        paths = list(dict.fromkeys(p for p in paths if p.strip("/.")))[:MAX_PATHS]
        return {"type": "edit", "tool": tool, "paths": paths, "terms": []} if paths else None
    return None
