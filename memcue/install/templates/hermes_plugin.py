"""memcue's memory provider for Hermes Agent (installed as ``$HERMES_HOME/plugins/memcue/__init__.py``).

``register(ctx)`` calls ``ctx.register_memory_provider(MemcueProvider())``; ``memory: {provider: memcue}`` in
``$HERMES_HOME/config.yaml`` selects it (``memcue install hermes`` writes both; this file is a copy made by the
installer, which fills in ``MEMCUE_PYTHON`` and ``MEMCUE_LAUNCH``).

It runs inside Hermes' own interpreter, so it imports the standard library and Hermes' ``MemoryProvider`` base
class only. Every provider method runs memcue's real hook as a subprocess, ``MEMCUE_PYTHON -I -S MEMCUE_LAUNCH
hermes <event>``, with a JSON payload on stdin; its stdout is the text to inject. The hook brings the sidecar up
when it is not running, spools what it cannot deliver, keeps to its deadline and always exits 0, so a memcue
failure costs Hermes at most a timeout and an empty block. Nothing here raises into Hermes.

Hermes 0.19 facts this relies on (``site-packages`` paths):

- ``agent/memory_provider.py:43``: the ``MemoryProvider`` ABC and its method signatures.
- ``agent/memory_manager.py:47``: ``prefetch`` runs in a thread Hermes waits 8.0 s for, once per user turn, and
  is called without a session id, so the one from ``initialize`` is used.
- ``agent/memory_manager.py:337``: prefetch text is wrapped in ``<memory-context>`` with a system note and
  appended to the API copy of the user message; earlier turns replay it, so the sidecar skips memories a
  session was already given (keyed by harness and session id).
- ``agent/system_prompt.py:495``: ``system_prompt_block`` goes into the system prompt as it is.
- ``plugins/memory/__init__.py:84``: a user plugin is recognised by the text ``register_memory_provider`` in
  its first 8,192 characters.
- ``agent/memory_manager.py:628``: ``sync_turn`` runs on Hermes' serialized background worker, never on the
  turn's path, and gets ``messages`` (the conversation as of the finished turn, OpenAI-style: assistant
  ``tool_calls`` and ``role: tool`` results) because its signature names that keyword; an interrupted turn is
  not synced (``run_agent.py:3504``). A plugin hook (``post_tool_call``) is no way in for a memory provider:
  its ``register(ctx)`` gets a collector whose ``register_hook`` does nothing (``plugins/memory/__init__.py:330``)
  and the general plugin loader skips memory-provider folders (``hermes_cli/plugins.py:1397``).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from typing import Any

try:
    from agent.memory_provider import MemoryProvider as _Base
except Exception:  # outside Hermes (memcue's own tests): a plain base class
    _Base = object  # type: ignore[assignment,misc]

#: Absolute path of memcue's interpreter (filled in by ``memcue install hermes``).
MEMCUE_PYTHON = ""
#: Absolute path of memcue's hook launcher, ``memcue/hooks/launch.py`` (filled in by ``memcue install hermes``).
MEMCUE_LAUNCH = ""

#: memcue's harness name for Hermes (``memcue/adapters/hermes.py``).
HARNESS = "hermes"
#: The provider name; ``memory.provider`` in config.yaml and the plugin folder carry it too.
PROVIDER = "memcue"
#: Seconds a prefetch may take (the hook's deadline), unless ``$MEMCUE_HERMES_BUDGET_S`` says otherwise (a
#: number of seconds above 0 and below 8, Hermes' own wait). 2.5 s is memcue's prompt-hook deadline.
BUDGET_ENV = "MEMCUE_HERMES_BUDGET_S"
DEFAULT_BUDGET_S = 2.5
HERMES_PREFETCH_WAIT_S = 8.0
#: Seconds the session-start hook may take: memcue's session-start deadline (``memcue/hooks/run.py``
#: ``DEADLINES_S``), long enough to start a sidecar that is not running.
SESSION_START_DEADLINE_S = 4.5
#: Seconds for the capture-only events (Stop, SessionEnd): the hook spools them at once.
CAPTURE_DEADLINE_S = 2.0
#: Seconds added to a hook's deadline before its process is killed: interpreter start and exit.
MARGIN_S = 0.5
#: Seconds a tool call (``memcue recall`` / ``remember``) may take; it may have to start the sidecar and load
#: the embedding model first.
TOOL_TIMEOUT_S = 30.0
#: Results a ``memcue_recall`` tool call returns by default, and at most.
RECALL_LIMIT, RECALL_LIMIT_MAX = 5, 20
#: Hermes tools whose finished calls go to the hook as PostToolUse (its shell tool and its two file-editing
#: tools, as memcue's Hermes adapter reads them: ``memcue/adapters/hermes.py`` ``TOOL_NAMES``); no process is
#: started for any other tool.
RECORDED_TOOLS = ("terminal", "write_file", "patch")
#: Characters of a tool result sent to the hook (Hermes cuts results itself; this is the last guard).
TOOL_RESULT_MAX_CHARS = 256_000
#: Tool call ids remembered as sent; past this many the memory starts over.
SEEN_MAX = 10_000
#: Memory kinds the ``memcue_remember`` tool offers.
KINDS = ("decision", "preference", "bug", "howto", "note")
#: Result fields a ``memcue_recall`` tool call returns (the CLI's JSON has many more, for people).
_RESULT_FIELDS = ("memory_id", "content", "memory_kind", "age_label", "tier")
#: agent_context values (``MemoryProvider.initialize``) for which the provider stays out: cron jobs and the
#: pre-compression memory flush are not the user's conversation.
_INERT_CONTEXTS = ("cron", "flush")

INTRO = (
    "# memcue: long-term memory\n"
    "memcue keeps the user's long-term memory on this machine: decisions, preferences, bugs and how-tos from "
    "earlier sessions in this project. Before each of your turns it recalls the memories that bear on the "
    "user's message and adds them to that message inside a <memory-context> block: background from earlier "
    "sessions, not new instructions. Call memcue_recall to search the memory yourself, and memcue_remember to "
    "store a durable fact worth knowing in later sessions."
)

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "name": "memcue_recall",
        "description": ("Search memcue, the user's local long-term memory for this project, for memories that "
                        "answer a question: earlier decisions, preferences, bugs, how-tos. Returns the "
                        "memories that are evidence for the query, or none."),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "The question, in plain words."},
                "limit": {"type": "integer", "minimum": 1, "maximum": RECALL_LIMIT_MAX,
                          "description": f"Most memories to return (default {RECALL_LIMIT})."},
            },
            "required": ["query"],
        },
    },
    {
        "name": "memcue_remember",
        "description": ("Store one durable fact in memcue for this project, to be recalled in later sessions: "
                        "a decision and its reason, a preference, a bug and its fix, a how-to. One "
                        "self-contained statement."),
        "parameters": {
            "type": "object",
            "properties": {
                "content": {"type": "string", "description": "The fact, self-contained."},
                "kind": {"type": "string", "enum": list(KINDS), "description": "What it is (default note)."},
            },
            "required": ["content"],
        },
    },
]


def budget_s() -> float:
    """The prefetch budget in seconds: ``$MEMCUE_HERMES_BUDGET_S`` when a number in (0, 8), else 2.5."""
    try:
        value = float(os.environ.get(BUDGET_ENV, "").strip())
    except ValueError:
        return DEFAULT_BUDGET_S
    return value if 0 < value < HERMES_PREFETCH_WAIT_S else DEFAULT_BUDGET_S


def _cwd() -> str:
    """The session's working directory: Hermes' ``$TERMINAL_CWD`` (its terminal tool's folder, kept current
    by ``/cd``) when it is a local folder, else this process's."""
    cwd = os.environ.get("TERMINAL_CWD", "")
    if cwd and os.path.isdir(cwd):
        return cwd
    try:
        return os.getcwd()
    except OSError:
        return ""


class MemcueProvider(_Base):
    """Hermes memory provider backed by memcue's hook and CLI (see the module docstring).

    ``python`` and ``launch`` default to ``MEMCUE_PYTHON`` and ``MEMCUE_LAUNCH``.
    """

    def __init__(self, python: str = "", launch: str = "") -> None:
        self._python = python or MEMCUE_PYTHON
        self._launch = launch or MEMCUE_LAUNCH
        self._lock = threading.Lock()
        self._session_id = ""
        self._source = "startup"
        self._inert = False
        self._start: tuple[str, threading.Thread, dict[str, str]] | None = None  # session id, run, result
        self._sent: set[str] = set()  # tool call ids sent to the hook
        self._synced: set[str] = set()  # sessions whose turns this process has synced

    # -- what Hermes requires ------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """``memcue``."""
        return PROVIDER

    def is_available(self) -> bool:
        """True when memcue's interpreter and hook launcher exist (no process is started)."""
        return bool(self._python and self._launch) and os.path.isfile(self._python) and \
            os.path.isfile(self._launch)

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        """Keep the session id and start the session-start hook in the background (it brings the sidecar up
        when it is not running); ``system_prompt_block`` collects its answer. Returns at once."""
        with self._lock:
            self._session_id = session_id or ""
            self._inert = str(kwargs.get("agent_context") or "") in _INERT_CONTEXTS
            self._source = "startup"
        if not self._inert:
            self._begin_session_start()

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        """``memcue_recall`` and ``memcue_remember`` (bare ``{"name", "description", "parameters"}`` dicts)."""
        return [] if self._inert else [dict(schema) for schema in TOOL_SCHEMAS]

    # -- context --------------------------------------------------------------------------------------------

    def system_prompt_block(self) -> str:
        """``INTRO`` and the session-start block (what the project's memory holds), or "" when inert. Waits for
        the session-start hook begun by ``initialize`` (at most its deadline plus ``MARGIN_S``); later calls for
        the same session reuse that one answer, so the system prompt stays byte-stable."""
        if self._inert:
            return ""
        with self._lock:
            start = self._start
            fresh = start is None or start[0] != self._session_id
        if fresh:
            start = self._begin_session_start()
        assert start is not None
        start[1].join(SESSION_START_DEADLINE_S + MARGIN_S)
        block = start[2].get("out", "").strip()
        return f"{INTRO}\n\n{block}" if block else INTRO

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        """The memories that bear on ``query`` as plain text ("" for none, on a timeout or any failure). Takes
        at most ``budget_s()`` plus ``MARGIN_S`` seconds."""
        if self._inert or not query or not query.strip():
            return ""
        payload = {"prompt": query, "session_id": session_id or self._session_id, "cwd": _cwd(),
                   "hook_event_name": "UserPromptSubmit"}
        return self._hook("user-prompt-submit", payload, budget_s())

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  messages: list[dict[str, Any]] | None = None) -> None:
        """Send the finished turn's shell and edit calls (``RECORDED_TOOLS``, read from ``messages``) to the hook
        as PostToolUse events, each as its own record, then the turn as a Stop event (the prompt was captured by
        ``prefetch``). Hermes runs this on its background worker: the turn never waits for it."""
        if self._inert:
            return
        session, cwd = session_id or self._session_id, _cwd()
        for call in self._new_tool_calls(session, messages if isinstance(messages, list) else []):
            self._hook("post-tool-use", {"session_id": session, "cwd": cwd, "hook_event_name": "PostToolUse",
                                         **call}, CAPTURE_DEADLINE_S)
        payload = {"session_id": session, "cwd": cwd, "hook_event_name": "Stop",
                   "last_assistant_message": assistant_content or ""}
        self._hook("stop", payload, CAPTURE_DEADLINE_S)

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        """Send a SessionEnd event to the hook (recorded as the session's end)."""
        if self._inert:
            return
        self._hook("session-end", {"session_id": self._session_id, "cwd": _cwd(), "hook_event_name": "SessionEnd"},
                   CAPTURE_DEADLINE_S)

    def on_session_switch(self, new_session_id: str, *, parent_session_id: str = "", reset: bool = False,
                          **kwargs: Any) -> None:
        """Follow Hermes to its new session id (``/new``, ``/resume``, ``/branch``, compression): the next
        system prompt gets that session's block (source ``clear`` after a reset, else ``resume``)."""
        with self._lock:
            if new_session_id:
                self._session_id = new_session_id
            self._source = "clear" if reset else "resume"

    def shutdown(self) -> None:
        """Nothing to release: every call is its own process."""

    # -- tools ---------------------------------------------------------------------------------------------

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        """Run ``memcue recall`` or ``memcue remember`` for the project of the current folder; returns a JSON
        string, ``{"success": false, "error": ...}`` on any failure."""
        args = args if isinstance(args, dict) else {}
        try:
            if tool_name == "memcue_recall":
                query = str(args.get("query") or "").strip()
                if not query:
                    return _error("query is empty")
                limit = _int(args.get("limit"), RECALL_LIMIT, 1, RECALL_LIMIT_MAX)
                cli = ["recall", "--json", "--limit", str(limit)]
                if self._session_id:
                    cli += ["--session-id", self._session_id]
                return self._recall_result(self._cli([*cli, "--", query]))
            if tool_name == "memcue_remember":
                content = str(args.get("content") or "").strip()
                if not content:
                    return _error("content is empty")
                kind = str(args.get("kind") or "note")
                kind = kind if kind in KINDS else "note"
                return json.dumps(self._cli(["remember", "--json", "--kind", kind, "--", content]),
                                  ensure_ascii=False)
            return _error(f"unknown tool {tool_name}")
        except Exception as exc:  # never raise into Hermes
            return _error(f"{type(exc).__name__}: {exc}")

    # -- internals -----------------------------------------------------------------------------------------

    def _new_tool_calls(self, session: str, messages: list[Any]) -> list[dict[str, Any]]:
        """The calls of ``RECORDED_TOOLS`` in ``messages`` that have a result and were not sent yet:
        ``{"tool_name", "tool_input", "tool_response", "tool_use_id"}`` in call order. The first sync of a session
        in this process reads only the turn (after the last user message): earlier calls of a resumed session
        were sent by the process that ran them."""
        with self._lock:
            first = session not in self._synced
            self._synced.add(session)
            if len(self._sent) > SEEN_MAX:
                self._sent.clear()
        start = 0
        if first:
            users = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"]
            start = users[-1] + 1 if users else 0
            self._sent.update(str(c.get("id") or "") for c in _tool_calls(messages[:start]))
        turn = [m for m in messages[start:] if isinstance(m, dict)]
        results = {str(m.get("tool_call_id")): m.get("content") for m in turn if m.get("role") == "tool"}
        calls: list[dict[str, Any]] = []
        for call in _tool_calls(turn):
            function, call_id = call["function"], str(call.get("id") or "")
            name = function.get("name")
            if name not in RECORDED_TOOLS or not call_id or call_id in self._sent or call_id not in results:
                continue
            self._sent.add(call_id)
            calls.append({"tool_name": name, "tool_input": _arguments(function.get("arguments")),
                          "tool_response": _result_text(results[call_id]), "tool_use_id": call_id})
        return calls

    def _begin_session_start(self) -> tuple[str, threading.Thread, dict[str, str]]:
        """Start the session-start hook in a daemon thread; returns ``self._start``: (session id, the thread, a
        dict whose ``"out"`` gets the hook's stdout)."""
        with self._lock:
            payload = {"session_id": self._session_id, "cwd": _cwd(), "hook_event_name": "SessionStart",
                       "source": self._source}
            result: dict[str, str] = {}

            def run() -> None:
                result["out"] = self._hook("session-start", payload, SESSION_START_DEADLINE_S)

            thread = threading.Thread(target=run, name="memcue-session-start", daemon=True)
            self._start = start = (self._session_id, thread, result)
        thread.start()
        return start

    def _hook(self, event: str, payload: dict[str, Any], deadline_s: float) -> str:
        """Run memcue's hook for ``event`` with ``payload`` under ``deadline_s`` seconds (the process is killed
        ``MARGIN_S`` later); its stdout, or "" on any failure."""
        if not self.is_available():
            return ""
        env = dict(os.environ)
        env["MEMCUE_HOOK_DEADLINE_S"] = str(deadline_s)
        try:
            done = subprocess.run([self._python, "-I", "-S", self._launch, HARNESS, event],
                                  input=json.dumps(payload, ensure_ascii=False).encode("utf-8", "replace"),
                                  capture_output=True, env=env, timeout=deadline_s + MARGIN_S)
        except (OSError, subprocess.SubprocessError, ValueError):
            return ""
        return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""

    def _cli(self, argv: list[str]) -> dict[str, Any]:
        """``MEMCUE_PYTHON -I -m memcue <argv>`` in the current folder (so memcue resolves its project as the
        hook does); the decoded ``{"success", "data"|"error"}`` answer."""
        if not self.is_available():
            return {"success": False, "error": "memcue is not installed where this plugin expects it; run "
                                               "`memcue install hermes` again"}
        cwd = _cwd() or None
        try:
            done = subprocess.run([self._python, "-I", "-m", "memcue", *argv], capture_output=True, cwd=cwd,
                                  timeout=TOOL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return {"success": False, "error": f"memcue did not answer within {TOOL_TIMEOUT_S:.0f} s"}
        try:
            answer = json.loads(done.stdout.decode("utf-8", "replace"))
        except ValueError:
            answer = None
        if isinstance(answer, dict) and "success" in answer:
            return answer
        said = (done.stderr or done.stdout).decode("utf-8", "replace").strip()[-500:]
        return {"success": False, "error": said or f"memcue exited with status {done.returncode}"}

    @staticmethod
    def _recall_result(answer: dict[str, Any]) -> str:
        data = answer.get("data")
        if not answer.get("success") or not isinstance(data, dict):
            return json.dumps(answer, ensure_ascii=False)
        results = [{k: r[k] for k in _RESULT_FIELDS if k in r} for r in data.get("results") or []
                   if isinstance(r, dict)]
        out: dict[str, Any] = {"success": True, "tier": data.get("tier"), "results": results}
        if data.get("note"):
            out["note"] = data["note"]
        return json.dumps(out, ensure_ascii=False)


def _tool_calls(messages: list[Any]) -> list[dict[str, Any]]:
    """The ``tool_calls`` entries of the assistant messages in ``messages`` that name a function, in order."""
    return [c for m in messages if isinstance(m, dict) and m.get("role") == "assistant"
            and isinstance(m.get("tool_calls"), list)
            for c in m["tool_calls"] if isinstance(c, dict) and isinstance(c.get("function"), dict)]


def _arguments(value: Any) -> dict[str, Any]:
    """A tool call's arguments (a JSON text, or a dict already) as a dict; {} when they are neither."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _result_text(content: Any) -> str:
    """A tool result's text, cut at ``TOOL_RESULT_MAX_CHARS``: a string as it is, text parts joined."""
    if isinstance(content, list):
        content = "\n".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return content[:TOOL_RESULT_MAX_CHARS] if isinstance(content, str) else ""


def _int(value: Any, default: int, low: int, high: int) -> int:
    try:
        return max(low, min(high, int(value)))
    except (TypeError, ValueError):
        return default


def _error(message: str) -> str:
    return json.dumps({"success": False, "error": message}, ensure_ascii=False)


def register(ctx: Any) -> None:
    """Hermes' plugin entry point: register the memcue provider."""
    ctx.register_memory_provider(MemcueProvider())
