"""The two ways the distiller asks a model (``capture.distill_config``): an OpenAI-compatible chat-completions
endpoint (``EndpointRunner``) or a harness's own headless CLI (``CommandRunner``). Each makes exactly one
attempt per call (no retry: a retry would spend the budget twice) within the configured timeout and returns a
``Reply``, or raises ``RunFailed`` with a readable reason (tokens spent count then too when known).

The endpoint is called with httpx, ``trust_env=False`` (``HTTP_PROXY`` and friends must not reroute a session's
transcript), ``max_tokens`` (the answer's cap) and the key from the environment as a bearer token. The command
gets the whole prompt on stdin and must print the answer on stdout; it runs without a shell, its stdout read at
most ``STDOUT_MAX_BYTES``.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from memcue.sidecar.capture.distill_config import DistillConfig

#: Most bytes of a command's stdout read (a longer answer is not the asked JSON anyway).
STDOUT_MAX_BYTES = 256 * 1024
#: Characters of an error body or a command's stderr kept in the reason.
ERROR_CHARS = 300


@dataclass(frozen=True)
class Reply:
    """What a model answered: ``text``; ``refused`` (the endpoint said so: a ``refusal`` or a content filter);
    ``prompt_tokens`` and ``completion_tokens`` as the endpoint reported them (``usage``), None when not."""

    text: str
    refused: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class RunFailed(Exception):
    """The call failed (HTTP error, timeout, unreadable answer, the command's exit status); the message says
    why. ``sent``: True when the request left (its tokens count against the budget)."""

    def __init__(self, reason: str, *, sent: bool = True) -> None:
        super().__init__(reason)
        self.sent = sent


class Runner(Protocol):
    """One call to the configured model: ``system`` and ``user`` messages in, a ``Reply`` out."""

    def run(self, system: str, user: str) -> Reply:
        """Ask once. Raises ``RunFailed``."""


class EndpointRunner:
    """``POST <base_url>/chat/completions`` with ``config.model`` (see the module docstring); ``key`` "" = no
    Authorization header."""

    def __init__(self, config: DistillConfig, key: str = "") -> None:
        self._config = config
        self._key = key

    def run(self, system: str, user: str) -> Reply:
        """Ask once. Raises ``RunFailed`` (HTTP status, timeout, connection, a body that is not a completion)."""
        cfg = self._config
        body = {"model": cfg.model, "temperature": 0, "stream": False, "max_tokens": cfg.max_output_tokens,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        try:
            with httpx.Client(timeout=cfg.timeout_s, trust_env=False, follow_redirects=False) as client:
                response = client.post(cfg.base_url.rstrip("/") + "/chat/completions", json=body, headers=headers)
        except httpx.TimeoutException:
            raise RunFailed(f"no answer within {cfg.timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            raise RunFailed(f"{type(exc).__name__}: {exc}"[:ERROR_CHARS], sent=False) from None
        if response.status_code != 200:
            raise RunFailed(f"HTTP {response.status_code}: {response.text[:ERROR_CHARS]}")
        try:
            return _completion(response.json())
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise RunFailed(f"not a chat completion: {type(exc).__name__}: {exc}"[:ERROR_CHARS]) from None


def _completion(data: Any) -> Reply:
    """The ``Reply`` in a chat-completion body. Raises ``KeyError``/``IndexError``/``TypeError`` for another
    shape."""
    choice = data["choices"][0]
    message = choice["message"]
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise TypeError("message.content is not text")
    refused = str(message.get("refusal") or "")
    if not refused and choice.get("finish_reason") == "content_filter":
        refused = "the endpoint's content filter stopped the answer"
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return Reply(content or "", refused, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")))


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class CommandRunner:
    """Runs ``config.command`` (no shell) with the prompt on stdin; the answer is its stdout."""

    def __init__(self, config: DistillConfig) -> None:
        self._config = config

    def run(self, system: str, user: str) -> Reply:
        """Ask once. Raises ``RunFailed`` (not found, timeout, non-zero exit, stdout not UTF-8 or too long)."""
        cfg = self._config
        try:
            proc = subprocess.run(list(cfg.command), input=f"{system}\n\n{user}".encode(), capture_output=True,
                                  timeout=cfg.timeout_s, check=False)
        except FileNotFoundError:
            raise RunFailed(f"command not found: {cfg.command[0]}", sent=False) from None
        except subprocess.TimeoutExpired:
            raise RunFailed(f"{cfg.command[0]} did not answer within {cfg.timeout_s:g} s") from None
        except OSError as exc:
            raise RunFailed(f"{cfg.command[0]} could not run: {exc}"[:ERROR_CHARS], sent=False) from None
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip()[-ERROR_CHARS:]
            raise RunFailed(f"{cfg.command[0]} exited with status {proc.returncode}: {err}")
        if len(proc.stdout) > STDOUT_MAX_BYTES:
            raise RunFailed(f"{cfg.command[0]} printed more than {STDOUT_MAX_BYTES} bytes")
        try:
            return Reply(proc.stdout.decode("utf-8"))
        except UnicodeDecodeError:
            raise RunFailed(f"{cfg.command[0]} printed text that is not UTF-8") from None


def runner_for(config: DistillConfig, key: str = "") -> Runner:
    """The runner ``config.kind`` asks for."""
    return CommandRunner(config) if config.kind == "command" else EndpointRunner(config, key)
