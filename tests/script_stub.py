"""A loopback model that plays a script: for each user turn (found by the turn's prompt text in the request) it
calls tools, one per request, then gives the turn's final answer. One server speaks both APIs the real
harnesses use: Anthropic Messages (``POST /v1/messages``, Claude Code) and OpenAI Responses (``POST
/v1/responses``, Codex), chosen by the request's path. Used by the scripted-week benchmark
(``benchmarks/capture_week.py``) and its smoke test.

A turn's ``actions`` are harness-neutral: ``{"tool": "shell", "command": "..."}`` becomes Claude Code's ``Bash``
(``{"command", "description"}``) or Codex's ``exec_command`` (``{"cmd"}``); ``{"tool": "remember", "content":
"...", "kind": "..."}`` becomes the memcue MCP ``remember`` tool under the name the harness offers it by (the
tool in the request's ``tools`` whose name holds ``memcue`` and ends with ``remember``: ``mcp__memcue__remember``
in Claude Code; Codex 0.171 names MCP tools the same way).

The step within a turn is read from the request itself (stateless, so a retried request gets the same answer):
the number of tool calls the assistant made after the last user message holding the prompt. A request that holds
no scripted prompt, or offers no tools (a title or a quota probe), is answered with ``REPLY``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from model_stubs import ModelStub, _anthropic, _anthropic_tool_use, _responses, _responses_tool_call

#: Claude Code's tool that loads a deferred tool's schema, and the names memcue's remember tool goes by.
TOOL_SEARCH = "ToolSearch"
CLAUDE_REMEMBER = "mcp__memcue__remember"
REMEMBER = "remember"


@dataclass(frozen=True)
class ScriptTurn:
    """One user turn: the ``prompt`` the harness is given, the ``actions`` the model takes (one tool call per
    request, in order) and the ``answer`` it ends the turn with."""

    prompt: str
    actions: tuple[dict[str, Any], ...]
    answer: str


@dataclass
class ScriptedModel(ModelStub):
    """``ModelStub`` (a context manager; ``url``, ``requests``) answering from ``turns``. ``active``: the prompt
    of the turn the runner is driving now (preferred when a request holds several scripted prompts, e.g. an
    earlier one quoted in a memcue block). ``problems``: what the stub could not do (a tool the harness did not
    offer), one line each."""

    turns: list[ScriptTurn] = field(default_factory=list)
    active: str | None = None
    problems: list[str] = field(default_factory=list)

    def _answer(self, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
        route = path.split("?")[0]
        if route.endswith("/count_tokens"):
            return "application/json", b'{"input_tokens": 10}'
        api = "responses" if route.endswith("/responses") else "anthropic"
        reply = _anthropic if api == "anthropic" else _responses
        turn, step, searched = self._locate(api, body)
        if turn is None:
            return reply(body, self.reply)
        if step >= len(turn.actions):
            return reply(body, turn.answer)
        call = self._call(api, turn.actions[step], body, searched)
        if call is None:
            return reply(body, turn.answer)
        if api == "anthropic":
            return _anthropic_tool_use(body, call)
        return _namespaced(_responses_tool_call(body, call), call.get("namespace"))

    def _locate(self, api: str, body: dict[str, Any]) -> tuple[ScriptTurn | None, int, bool]:
        """The scripted turn this request belongs to, how many tool calls it made so far (``ToolSearch`` not
        counted) and whether the last one was a ``ToolSearch``; (None, 0, False) for a request outside every
        turn."""
        if not body.get("tools"):
            return None, 0, False
        items = body.get("messages") if api == "anthropic" else body.get("input")
        if not isinstance(items, list):
            return None, 0, False
        for index in range(len(items) - 1, -1, -1):
            turn = self._turn_in(items[index])
            if turn is not None:
                after = items[index + 1:]
                return turn, sum(_tool_calls(item) for item in after), _last_call_name(after) == TOOL_SEARCH
        return None, 0, False

    def _turn_in(self, item: Any) -> ScriptTurn | None:
        """The scripted turn whose prompt this user message holds (the active one first, else the longest)."""
        if not isinstance(item, dict) or item.get("role") != "user":
            return None
        text = _user_text(item.get("content"))
        held = [t for t in self.turns if t.prompt in text]
        if not held:
            return None
        active = [t for t in held if t.prompt == self.active]
        return active[0] if active else max(held, key=lambda t: len(t.prompt))

    def _call(self, api: str, action: dict[str, Any], body: dict[str, Any],
              searched: bool) -> dict[str, Any] | None:
        """The tool call ``{"name", "input"}`` (and ``namespace`` for a Codex MCP tool) for ``action`` in this
        harness's naming. Claude Code defers MCP tools: the first request gets a ``ToolSearch`` loading
        ``mcp__memcue__remember`` (``searched`` then), the next the call. None (and a problem noted) when the
        harness does not offer the tool."""
        if action["tool"] == "shell":
            if api == "anthropic":
                return {"name": "Bash", "input": {"command": action["command"], "description": "Run a command"}}
            return {"name": "exec_command", "input": {"cmd": action["command"]}}
        args = {"content": action["content"], "kind": action.get("kind", "note")}
        tools = [t for t in body.get("tools") or [] if isinstance(t, dict)]
        if api == "responses":  # Codex offers an MCP server's tools inside one namespace tool: mcp__<server>
            for ns in tools:
                inner = [t.get("name") for t in ns.get("tools") or [] if isinstance(t, dict)]
                if ns.get("type") == "namespace" and "memcue" in str(ns.get("name")) and REMEMBER in inner:
                    return {"name": REMEMBER, "namespace": ns["name"], "input": args}
        names = [str(t.get("name", "")) for t in tools]
        if CLAUDE_REMEMBER in names or (api == "anthropic" and searched):
            return {"name": CLAUDE_REMEMBER, "input": args}
        if api == "anthropic" and TOOL_SEARCH in names and CLAUDE_REMEMBER in json.dumps(body):
            return {"name": TOOL_SEARCH, "input": {"query": f"select:{CLAUDE_REMEMBER}"}}  # a deferred MCP tool
        self.problems.append(f"{api}: no memcue remember tool offered in the turn {self.active!r} (tools: {names})")
        return None


def _user_text(content: Any) -> str:
    """The text of a user message's content (a string, or text blocks; tool results left out)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(str(b.get("text", "")) for b in content
                     if isinstance(b, dict) and b.get("type") in ("text", "input_text"))


def _tool_calls(item: Any) -> int:
    """How many tool calls one message (Anthropic: ``tool_use`` blocks) or input item (Responses: a
    ``function_call``) holds."""
    if not isinstance(item, dict):
        return 0
    if item.get("type") in ("function_call", "custom_tool_call", "local_shell_call"):
        return 1
    content = item.get("content")
    if item.get("role") == "assistant" and isinstance(content, list):
        return sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_use"
                   and b.get("name") != TOOL_SEARCH)
    return 0


def _last_call_name(items: list[Any]) -> str:
    """The name of the last tool call in ``items`` ("" when none)."""
    for item in reversed(items):
        if isinstance(item, dict) and item.get("type") == "function_call":
            return str(item.get("name", ""))
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(item, dict) and item.get("role") == "assistant" and isinstance(content, list):
            uses = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
            if uses:
                return str(uses[-1].get("name", ""))
    return ""


def _namespaced(answer: tuple[str, bytes], namespace: str | None) -> tuple[str, bytes]:
    """A streamed Responses tool call with ``"namespace"`` added to its ``function_call`` item (how a model
    calls a tool offered inside a namespace tool); unchanged when ``namespace`` is None."""
    if not namespace:
        return answer
    content_type, data = answer
    item = '"type": "function_call", '
    return content_type, data.replace(item.encode(), (item + f'"namespace": {json.dumps(namespace)}, ').encode())


def load_turns(script: dict[str, Any]) -> list[ScriptTurn]:
    """Every turn of a week script (``benchmarks/data/week/*.json``: ``sessions[].turns[]`` with ``prompt``,
    ``actions``, ``answer``) as ``ScriptTurn``s, in order. Raises ``KeyError`` for a turn without a prompt."""
    return [ScriptTurn(t["prompt"], tuple(t.get("actions") or ()), t.get("answer") or "Done.")
            for s in script["sessions"] for t in s["turns"]]


def request_text(body: Any) -> str:
    """A request body as JSON text (to count a string across what a harness sent)."""
    return json.dumps(body, ensure_ascii=False)
