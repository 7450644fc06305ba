"""Driving a scripted week through the real Claude Code and Codex binaries (``benchmarks/capture_week.py`` runs
it and scores it; ``tests/test_capture_week_smoke.py`` runs a two-session script through it).

``run_week(script, root)`` sets up, under ``root``: a private ``HOME`` (so ``~/.claude`` and ``~/.codex`` are
fresh), one ``MEMCUE_HOME``, and the user's project: a git repository holding the script's ``files`` in its first
commit, ``user.email`` set. memcue is wired by the default install (``memcue install claude-code``: hooks, the
MCP server registered with ``claude mcp add``, ``mcp__memcue__*`` allowed; ``memcue install codex --trust``:
hooks, the MCP server in ``config.toml``, and the hooks trusted, as a user does once with ``/hooks``). One
loopback model (``tests/script_stub.ScriptedModel``) plays every turn: Claude Code reaches it through
``ANTHROPIC_BASE_URL``, Codex through a custom provider in its ``config.toml``.

Each session runs its turns as ``claude -p`` (``--session-id`` then ``--resume``; ``--allowedTools Bash``, the
user's own permission for the shell) or ``codex exec`` (then ``codex exec resume --last``; ``-s
danger-full-access``). After each session the runner waits until the sidecar has read every spool file to its
end and its counts have settled, so the next session sees what this one left. Nothing here scores: the result
holds every turn's recorded model requests and the store's final rows.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from real_harness import CODEX_STUB_PROVIDER  # noqa: E402
from script_stub import ScriptedModel, load_turns  # noqa: E402

from memcue.client import Client  # noqa: E402
from memcue.core.paths import Locations  # noqa: E402
from memcue.core.project import resolve_project  # noqa: E402
from memcue.sidecar.inject.policy import injectable  # noqa: E402
from memcue.sidecar.settings import PROMPT_LIMIT  # noqa: E402

HARNESS_DIR = Path(os.environ.get("MEMCUE_HARNESS_DIR") or REPO / ".harnesses")
BIN = HARNESS_DIR / "npm" / "node_modules" / ".bin"
#: The repository's committer; the script's ``git commit`` commands use this address.
USER_EMAIL = "dev@example.com"
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1"}
#: Longest one harness run may take (s), and the longest wait for the sidecar to settle after a session.
TURN_TIMEOUT_S = 180.0
SETTLE_TIMEOUT_S = 60.0
CODEX_CONFIG = """model = "stub-model"
model_provider = "stub"
check_for_update_on_startup = false

""" + CODEX_STUB_PROVIDER + """
[features]
plugins = false

[analytics]
enabled = false
"""


class WeekError(RuntimeError):
    """A harness run, an install or the sidecar did not do what the week needs; the message says which."""


@dataclass
class TurnRun:
    """One turn as it ran: its ``session`` id and ``harness``, its index ``turn`` in the session, the model
    ``requests`` it caused (``{"path", "user_agent", "body"}``), the harness's exit ``code`` and output tail,
    and ``seconds`` of wall time."""

    session: str
    harness: str
    turn: int
    prompt: str
    requests: list[dict[str, Any]]
    code: int
    output: str
    seconds: float


@dataclass
class WeekRun:
    """A whole week: every ``turns`` run, the final ``rows`` (every memory of the project, bookkeeping and
    captured prompts too), ``candidates`` (every state), ``installs`` (the install reports), ``other_requests``
    (model requests outside every turn), ``problems`` (the stub's), ``ledger`` (``memcue ledger --json``'s data,
    None when the command does not exist), ``recalls`` (per turn ``"S2 t0"``: what a recall of its prompt gives
    at the week's end, one line), ``tool_records`` (PostToolUse records the hooks spooled, per harness),
    ``refused`` (shell calls the harness itself refused to run, so no hook could see them, per harness),
    ``prompt_alone`` (per turn, what the prompt hook alone would inject: ``replay_prompt_hook``) and ``seconds``
    of wall time."""

    turns: list[TurnRun] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    installs: list[dict[str, Any]] = field(default_factory=list)
    other_requests: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    ledger: Any = None
    recalls: dict[str, str] = field(default_factory=dict)
    tool_records: dict[str, int] = field(default_factory=dict)
    tool_lines: set[str] = field(default_factory=set)
    refused: dict[str, int] = field(default_factory=dict)
    prompt_alone: dict[str, list[str]] = field(default_factory=dict)
    project: str = ""
    seconds: float = 0.0


def harness_program(name: str) -> Path:
    """The installed ``claude`` or ``codex`` program; raises ``WeekError`` when ``make harnesses`` has not run."""
    path = BIN / name
    if not path.exists():
        raise WeekError(f"{name} is not installed under {HARNESS_DIR}: run `make harnesses`")
    return path


def week_env(root: Path) -> dict[str, str]:
    """The environment every harness and memcue command of the week runs in: ``HOME`` and ``MEMCUE_HOME`` under
    ``root``, the harness programs first on ``PATH`` (``claude mcp add`` and Codex's trust step run them), no
    ``ANTHROPIC_*``/``OPENAI_*`` or harness-home variables of the caller's."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "HERMES_HOME", "MEMCUE_HOME")
           and not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    (root / "home").mkdir(parents=True, exist_ok=True)
    env.update(HOME=str(root / "home"), MEMCUE_HOME=str(root / "memcue"), OPENBLAS_NUM_THREADS="1",
               NO_COLOR="1", STUB_API_KEY="loopback", PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", **QUIET)
    return env


def model_env(url: str) -> dict[str, str]:
    """The variables that point every model client at the loopback stub ``url``: Claude Code's, and the OpenAI
    SDK's (so a model call memcue made by any route, its own endpoint or a harness's headless CLI, would reach the
    stub and be counted; its sidecar and hooks run in this environment too)."""
    return {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "sk-ant-loopback", "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_KEY": "loopback"}


def memcue(*args: str, env: dict[str, str], cwd: Path) -> Any:
    """``python -m memcue <args> --json`` as the user runs it; its ``data``. Raises ``WeekError`` on failure."""
    proc = subprocess.run([sys.executable, "-m", "memcue", *args, "--json"], capture_output=True, env=env,
                          cwd=cwd, timeout=180)
    if proc.returncode != 0:
        raise WeekError(f"memcue {' '.join(args)} failed: {proc.stderr.decode()[-2000:]}")
    return json.loads(proc.stdout).get("data")


def make_project(root: Path, files: dict[str, str], env: dict[str, str]) -> Path:
    """The user's project: a git repository named ``shop`` under ``root`` whose first commit holds ``files``."""
    project = root / "shop"
    project.mkdir(parents=True)
    for rel, text in files.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    for argv in (["init", "-q", "-b", "main"], ["config", "user.email", USER_EMAIL],
                 ["config", "user.name", "Dev"], ["add", "-A"], ["commit", "-q", "-m", "Initial commit"]):
        subprocess.run(["git", *argv], cwd=project, env=env, check=True, capture_output=True)
    return project


def install(env: dict[str, str], project: Path, stub_url: str) -> list[dict[str, Any]]:
    """Write Codex's provider config (the user's own settings: the loopback model) and run memcue's default
    install for both harnesses; returns the install reports. Raises ``WeekError`` when the MCP server was not
    registered (the week's ``remember`` turns need it)."""
    codex_home = Path(env["HOME"]) / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(CODEX_CONFIG.format(url=stub_url))
    reports = [*memcue("install", "claude-code", env=env, cwd=project),
               *memcue("install", "codex", "--trust", env=env, cwd=project)]
    if not all(r.get("mcp_registered") for r in reports):
        raise WeekError(f"memcue's MCP server was not registered: {reports}")
    return reports


def harness_argv(harness: str, prompt: str, session: str, first: bool) -> list[str]:
    """The command line of one turn: ``claude -p`` in session ``session`` (new when ``first``, else resumed) or
    ``codex exec`` (the first turn of a session) / ``codex exec resume --last``."""
    if harness == "claude-code":
        return [str(harness_program("claude")), "-p", prompt, "--output-format", "json", "--allowedTools", "Bash",
                *(["--session-id", session] if first else ["--resume", session])]
    if harness == "codex":
        base = [str(harness_program("codex")), "exec", "--skip-git-repo-check", "-s", "danger-full-access"]
        return [*base, prompt] if first else [*base, "resume", "--last", prompt]
    raise WeekError(f"unknown harness {harness!r}: claude-code or codex")


def _requests(stub: ScriptedModel, start: int) -> list[dict[str, Any]]:
    return [{"path": r.path, "user_agent": r.headers.get("user-agent", ""), "body": r.body}
            for r in stub.requests[start:] if r.method == "POST"]


def run_session(session: dict[str, Any], stub: ScriptedModel, env: dict[str, str],
                project: Path) -> list[TurnRun]:
    """Run every turn of ``session`` (script shape) through its harness; the turns as run. Raises ``WeekError``
    when a harness exits non-zero."""
    harness, sid, runs = session["harness"], str(uuid.uuid4()), []
    for index, turn in enumerate(session["turns"]):
        stub.active = turn["prompt"]
        start, began = len(stub.requests), time.monotonic()
        proc = subprocess.run(harness_argv(harness, turn["prompt"], sid, index == 0), capture_output=True,
                              env=env, cwd=project, timeout=TURN_TIMEOUT_S)
        output = (proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace"))[-3000:]
        runs.append(TurnRun(session.get("id", sid), harness, index, turn["prompt"], _requests(stub, start),
                            proc.returncode, output, round(time.monotonic() - began, 2)))
        if proc.returncode != 0:
            raise WeekError(f"{harness} turn {index} of {session.get('id')} exited {proc.returncode}: {output}")
    stub.active = None
    return runs


def _spool_behind(loc: Locations) -> int:
    """Bytes of spool files the sidecar has not read yet (offsets in the store's ``meta``), read-only."""
    files = sorted(loc.spool_dir.glob("*.jsonl")) if loc.spool_dir.is_dir() else []
    if not files:
        return 0
    try:
        con = sqlite3.connect(f"file:{loc.database}?mode=ro", uri=True, timeout=5)
        try:
            offsets = dict(con.execute("SELECT key, value FROM meta WHERE key LIKE 'spool_offset:%'").fetchall())
        finally:
            con.close()
    except sqlite3.Error:
        return sum(f.stat().st_size for f in files)
    return sum(max(0, f.stat().st_size - int(offsets.get(f"spool_offset:{f.name}", 0))) for f in files)


def hooks_running(loc: Locations) -> int:
    """memcue hook processes still running for the data dir of ``loc`` (``hooks/launch.py`` in their command line,
    its ``MEMCUE_HOME`` in their environment), from ``/proc``: Claude Code runs PostToolUse ``async``, so a
    harness may exit before its last capture hook has spooled. 0 where ``/proc`` is missing."""
    home = f"MEMCUE_HOME={loc.root}".encode()
    count = 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            ours = b"hooks/launch.py" in (proc / "cmdline").read_bytes()
            count += ours and home in (proc / "environ").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return count


def settle(client: Client, loc: Locations, timeout_s: float = SETTLE_TIMEOUT_S) -> None:
    """Wait until no hook of this data dir is still running (``hooks_running``), every spool file is read to its
    end and the store's counts (memories, candidates, rows) have not moved for 2 s, then until the sidecar's
    background work (embeddings) is done. Raises ``WeekError`` past ``timeout_s``."""
    deadline, last, since = time.monotonic() + timeout_s, None, time.monotonic()
    while True:
        now = time.monotonic()
        counts = (hooks_running(loc) + _spool_behind(loc), json.dumps(client.health().get("counts"), sort_keys=True),
                  len(client.candidates(limit=500)["results"]))
        if counts != last:
            last, since = counts, now
        elif counts[0] == 0 and now - since >= 2.0:
            break
        if now > deadline:
            raise WeekError(f"the sidecar did not settle in {timeout_s} s "
                            f"(hooks running + spool bytes behind: {counts[0]})")
        time.sleep(0.25)
    client.wait_idle(timeout_s=max(5.0, deadline - time.monotonic()))


def codex_refused(codex_home: Path) -> int:
    """Shell calls Codex refused to start, from its session rollouts under ``codex_home``: Codex 0.171 answers
    a call it will not run (``rm -rf`` inside, "rm -f style commands are not permitted") with an
    ``exec_command failed: CreateProcess … Rejected(…)`` output and runs no PostToolUse hook for it."""
    count = 0
    for path in (codex_home / "sessions").rglob("*.jsonl"):
        for line in path.read_text(errors="replace").splitlines():
            if '"function_call_output"' not in line:
                continue
            output = str((json.loads(line).get("payload") or {}).get("output", ""))
            count += output.startswith("exec_command failed: CreateProcess") and "Rejected(" in output
    return count


def note_tool_records(run: WeekRun, env: dict[str, str]) -> None:
    """Add the PostToolUse records now in the spool to ``run.tool_lines`` (each line once). Called after every
    session: the sidecar deletes a spool file it has read once it has been idle for
    ``capture.spool.IDLE_REMOVE_S``, so the files at the week's end no longer hold a long week's early records."""
    spool = Locations(Path(env["MEMCUE_HOME"])).spool_dir
    for path in spool.glob("*.jsonl") if spool.is_dir() else []:
        try:
            text = path.read_text(errors="replace")
        except FileNotFoundError:  # removed as idle meanwhile
            continue
        run.tool_lines.update(line for line in text.splitlines() if '"op":"tool"' in line.replace(" ", ""))


def final_state(run: WeekRun, client: Client, env: dict[str, str], project: Path) -> None:
    """Fill ``run.rows`` (every memory of the project, bookkeeping included), ``run.candidates`` (every state),
    ``run.recalls``, ``run.tool_records`` and ``run.ledger``."""
    run.rows = client.list_recent(project=run.project, limit=500, include_bookkeeping=True)["results"]
    run.candidates = [c for state in ("pending", "promoted", "rejected", "expired")
                      for c in client.candidates(state=state, project=run.project, limit=500)["results"]]
    note_tool_records(run, env)
    for line in run.tool_lines:
        harness = str(json.loads(line).get("source", "")).removeprefix("hook:")
        run.tool_records[harness] = run.tool_records.get(harness, 0) + 1
    run.refused["codex"] = codex_refused(Path(env["HOME"]) / ".codex")
    replay_prompt_hook(run, client)
    for turn in run.turns:
        answer = client.recall(turn.prompt, project=run.project)
        top = "; ".join(f"#{r.get('memory_id')} {r.get('memory_kind')} {r.get('tier')} cos "
                        f"{(r.get('channel_scores') or {}).get('semantic') or 0:.3f}"
                        for r in answer.get("results", [])[:4])
        run.recalls[f"{turn.session} t{turn.turn}"] = (
            f"a recall of the prompt at the week's end: {answer.get('query_type')}, tier {answer.get('tier')}, "
            f"top {top or 'nothing'}")
    try:
        run.ledger = memcue("ledger", env=env, cwd=project)
    except WeekError:
        run.ledger = None  # no `memcue ledger` in this version


def replay_prompt_hook(run: WeekRun, client: Client) -> None:
    """Fill ``run.prompt_alone``: per turn ("S2 t0"), the texts the prompt hook's recall would inject for its
    prompt on the week's final store as of the moment the prompt was captured (``as_of``), with nothing shown
    before in the session: what the prompt hook alone brings once the session-start block can no longer hold a
    fact (a long-lived store). Same recall limit and injection rule as the hook (``inject.policy``)."""
    captured = {r["content"]: r["created_at"] for r in run.rows if r.get("memory_kind") == "request"}
    for turn in run.turns:
        at = captured.get(turn.prompt)
        if at is None:
            continue
        moment = at - 0.05  # created_at: Unix seconds
        answer = client.recall(turn.prompt, project=run.project, limit=PROMPT_LIMIT, as_of=moment, now=moment)
        run.prompt_alone[f"{turn.session} t{turn.turn}"] = [r["content"] for r in injectable(answer, PROMPT_LIMIT)]


def run_week(script: dict[str, Any], root: Path, say: Any = print) -> WeekRun:
    """Run every session of ``script`` (the week format, benchmarks/README.md) under ``root`` (an empty
    folder); returns the ``WeekRun``. Raises ``WeekError`` (a harness failed, the install did not register the
    MCP server, the sidecar did not settle)."""
    began, run = time.monotonic(), WeekRun()
    env = week_env(root)
    project = make_project(root, script.get("files") or {}, env)
    run.project = resolve_project(str(project))
    loc = Locations(Path(env["MEMCUE_HOME"]))
    with ScriptedModel("anthropic", turns=load_turns(script)) as stub:
        env.update(model_env(stub.url))
        run.installs = install(env, project, stub.url)
        memcue("list", env=env, cwd=project)  # starts the sidecar as any memcue command does
        client = Client(loc, timeout_s=60)
        client.health()
        try:
            for session in script["sessions"]:
                say(f"session {session.get('id')} ({session['harness']}): {len(session['turns'])} turns")
                run.turns.extend(run_session(session, stub, env, project))
                settle(client, loc)
                note_tool_records(run, env)
            final_state(run, client, env, project)
        finally:
            client.close()
            subprocess.run([sys.executable, "-m", "memcue", "stop"], env=env, capture_output=True, timeout=60)
        in_turns = {id(r.body) for r in stub.requests for t in run.turns for q in t.requests if q["body"] is r.body}
        run.other_requests = [{"path": r.path, "user_agent": r.headers.get("user-agent", ""), "body": r.body}
                              for r in stub.requests if r.method == "POST" and id(r.body) not in in_turns]
        run.problems = [*stub.problems, *(f"{t.session} t{t.turn} ({t.harness}) output: {t.output[-600:]}"
                                           for t in run.turns if any(repr(t.prompt) in p for p in stub.problems))]
    run.seconds = round(time.monotonic() - began, 1)
    return run
