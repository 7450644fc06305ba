"""Loopback model servers for the real-harness tests: each speaks one model API well enough for a harness to
finish a turn, answers every request with a short text, and records every request it received.

- ``anthropic``: Anthropic Messages (``POST /v1/messages``, streaming server-sent events, and
  ``/v1/messages/count_tokens``), as Claude Code calls it with ``ANTHROPIC_BASE_URL``.
- ``responses``: OpenAI Responses (``POST …/responses``, streaming), as Codex calls a custom provider.
- ``chat``: OpenAI Chat Completions (``POST …/chat/completions``, streaming or not), as Hermes calls a
  custom OpenAI-compatible endpoint; ``GET /v1/models`` lists one model, every other GET is a 404 (Hermes
  probes ``/api/v1/models``, ``/api/tags``, ``/props`` … and takes a 200 there for a local server of that kind).

Event names and fields follow the public API references of each (Anthropic "Streaming Messages"; OpenAI
"Responses streaming events"; OpenAI "Chat Completions streaming"). Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = "Noted."


@dataclass
class Recorded:
    """One request the stub received: ``method``, ``path``, the decoded JSON ``body`` (None if not JSON) and its
    ``headers`` (names lower-cased)."""

    method: str
    path: str
    body: Any
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """The body as JSON text (for counting a string across everything the harness sent)."""
        return json.dumps(self.body, ensure_ascii=False)


@dataclass
class ModelStub:
    """A loopback server speaking ``api`` (``anthropic`` | ``responses`` | ``chat``); a context manager.

    ``url`` is ``http://127.0.0.1:<port>``; ``requests`` lists what arrived, in order; every POST is answered
    with ``reply`` after ``delay_s`` seconds. ``tool_use``: ``{"name", "input"}`` of a tool the model calls
    instead, in answer to a request that names that tool and holds no tool result after its last assistant
    message (so the harness runs it once per turn, a resumed session's turn too, and the turn then ends with
    ``reply``); for ``chat``, while the turn (the messages after the last user message) holds fewer than
    ``tool_rounds`` tool results. ``usage`` (``chat``): the token counts a completion reports (default 10
    prompt, 3 completion).
    """

    api: str
    reply: str = REPLY
    delay_s: float = 0.0
    tool_use: dict[str, Any] | None = None
    tool_rounds: int = 1
    usage: dict[str, int] | None = None
    requests: list[Recorded] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.api not in ("anthropic", "responses", "chat"):
            raise ValueError(f"unknown api {self.api!r}")
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                return

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                stub._record("GET", self.path, None, dict(self.headers))
                if self.path.split("?")[0] != "/v1/models":  # Hermes probes for local servers: not one of them
                    self._send(404, "application/json", b'{"error": "not found"}')
                    return
                body = {"object": "list", "data": [{"id": "stub-model", "object": "model", "owned_by": "stub"}]}
                self._send(200, "application/json", json.dumps(body).encode())

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                stub._record("POST", self.path, body, dict(self.headers))
                time.sleep(stub.delay_s)
                content_type, data = stub._answer(self.path, body if isinstance(body, dict) else {})
                self._send(200, content_type, data)

            def _send(self, status: int, content_type: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ModelStub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _record(self, method: str, path: str, body: Any, headers: dict[str, str] | None = None) -> None:
        with self._lock:
            self.requests.append(Recorded(method, path, body, {k.lower(): v for k, v in (headers or {}).items()}))

    def turns(self, marker: str) -> list[Recorded]:
        """The model requests (POSTs) whose body contains ``marker`` (say, the user's prompt)."""
        return [r for r in self.requests if r.method == "POST" and marker in r.text]

    # ------------------------------------------------------------------ answers

    def _answer(self, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
        if self.api == "anthropic":
            if path.split("?")[0].endswith("/count_tokens"):
                return "application/json", b'{"input_tokens": 10}'
            if self.tool_use and self.tool_use["name"] in json.dumps(body) and "tool_result" not in json.dumps(
                    _since_assistant(body.get("messages") or [])):
                return _anthropic_tool_use(body, self.tool_use)
            return _anthropic(body, self.reply)
        if self.api == "responses":
            if self.tool_use and self.tool_use["name"] in json.dumps(body.get("tools")) and "function_call_output" \
                    not in json.dumps((body.get("input") or [])[-1:]):
                return _responses_tool_call(body, self.tool_use)
            return _responses(body, self.reply)
        if self.tool_use and self.tool_use["name"] in json.dumps(body.get("tools")) and \
                _turn_tool_results(body) < self.tool_rounds:
            return _chat_tool_call(body, self.tool_use)
        return _chat(body, self.reply, self.usage)


def _since_assistant(messages: list[Any]) -> list[Any]:
    """The messages after the last assistant message: the tool results of its calls and whatever the harness put
    beside them (Claude Code sends a hook's additionalContext as a ``system`` message after the tool result)."""
    tail: list[Any] = []
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "assistant":
            break
        tail.append(message)
    return tail


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> tuple[str, bytes]:
    out = []
    for name, data in events:
        line = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {line}\n\n")
    return "text/event-stream", "".join(out).encode()


def _anthropic(body: dict[str, Any], reply: str) -> tuple[str, bytes]:
    model = body.get("model", "stub-model")
    message = {"id": "msg_stub", "type": "message", "role": "assistant", "model": model, "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}
    if not body.get("stream"):
        done = {**message, "content": [{"type": "text", "text": reply}], "stop_reason": "end_turn"}
        return "application/json", json.dumps(done).encode()
    return _sse([
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": reply}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 3}}),
        ("message_stop", {"type": "message_stop"}),
    ])


def _anthropic_tool_use(body: dict[str, Any], call: dict[str, Any]) -> tuple[str, bytes]:
    """A streamed assistant message holding one ``tool_use`` block (``call``: ``{"name", "input"}``)."""
    message = {"id": "msg_stub_tool", "type": "message", "role": "assistant", "model": body.get("model", "stub"),
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 10, "output_tokens": 1}}
    block = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": call["name"], "input": {}}
    if not body.get("stream"):
        done = {**message, "content": [{**block, "input": call["input"]}], "stop_reason": "tool_use"}
        return "application/json", json.dumps(done).encode()
    return _sse([
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "input_json_delta", "partial_json": json.dumps(call["input"])}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ])


def _responses(body: dict[str, Any], reply: str) -> tuple[str, bytes]:
    rid, mid = f"resp_{uuid.uuid4().hex[:12]}", f"msg_{uuid.uuid4().hex[:12]}"
    model = body.get("model", "stub-model")
    base = {"id": rid, "object": "response", "model": model, "output": []}
    item = {"type": "message", "id": mid, "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": reply, "annotations": []}]}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 3,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 13}
    return _sse([
        ("response.created", {"type": "response.created", "response": {**base, "status": "in_progress"}}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                        "item": {**item, "status": "in_progress", "content": []}}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": mid, "output_index": 0,
                                        "content_index": 0, "delta": reply}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed",
                                "response": {**base, "status": "completed", "output": [item], "usage": usage}}),
    ])


def _responses_tool_call(body: dict[str, Any], call: dict[str, Any]) -> tuple[str, bytes]:
    """A streamed Responses answer holding one ``function_call`` item (``call``: ``{"name", "input"}``)."""
    rid, fid = f"resp_{uuid.uuid4().hex[:12]}", f"fc_{uuid.uuid4().hex[:12]}"
    base = {"id": rid, "object": "response", "model": body.get("model", "stub-model"), "output": []}
    item = {"type": "function_call", "id": fid, "call_id": f"call_{uuid.uuid4().hex[:12]}", "name": call["name"],
            "arguments": json.dumps(call["input"]), "status": "completed"}
    usage = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 3,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 13}
    return _sse([
        ("response.created", {"type": "response.created", "response": {**base, "status": "in_progress"}}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                        "item": {**item, "arguments": "", "status": "in_progress"}}),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed",
                                "response": {**base, "status": "completed", "output": [item], "usage": usage}}),
    ])


def _chat(body: dict[str, Any], reply: str, usage: dict[str, int] | None = None) -> tuple[str, bytes]:
    cid, model = f"chatcmpl-{uuid.uuid4().hex[:12]}", body.get("model", "stub-model")
    usage = usage or {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
    if not body.get("stream"):
        done = {"id": cid, "object": "chat.completion", "created": 0, "model": model, "usage": usage,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply},
                             "finish_reason": "stop"}]}
        return "application/json", json.dumps(done).encode()

    def chunk(delta: dict[str, Any], finish: str | None, **extra: Any) -> tuple[None, dict[str, Any]]:
        return None, {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": model,
                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}

    return _sse([chunk({"role": "assistant", "content": ""}, None), chunk({"content": reply}, None),
                 chunk({}, "stop", usage=usage), (None, "[DONE]")])


def _turn_tool_results(body: dict[str, Any]) -> int:
    """Tool results (``role: tool`` messages) after the last user message of a Chat Completions request."""
    count = 0
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            break
        count += message.get("role") == "tool"
    return count


def _chat_tool_call(body: dict[str, Any], call: dict[str, Any]) -> tuple[str, bytes]:
    """A Chat Completions answer (streamed or not) holding one ``tool_calls`` entry (``call``: ``{"name",
    "input"}``)."""
    cid, model = f"chatcmpl-{uuid.uuid4().hex[:12]}", body.get("model", "stub-model")
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    tool = {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
            "function": {"name": call["name"], "arguments": json.dumps(call["input"])}}
    if not body.get("stream"):
        done = {"id": cid, "object": "chat.completion", "created": 0, "model": model, "usage": usage,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [tool]},
                             "finish_reason": "tool_calls"}]}
        return "application/json", json.dumps(done).encode()

    def chunk(delta: dict[str, Any], finish: str | None, **extra: Any) -> tuple[None, dict[str, Any]]:
        return None, {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": model,
                      "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}

    return _sse([chunk({"role": "assistant", "content": None, "tool_calls": [{"index": 0, **tool}]}, None),
                 chunk({}, "tool_calls", usage=usage), (None, "[DONE]")])
