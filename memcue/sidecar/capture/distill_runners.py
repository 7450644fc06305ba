"""The two ways the distiller asks a model (``capture.distill_config``): an OpenAI-compatible chat-completions
endpoint (``EndpointRunner``) or a harness's own headless CLI (``CommandRunner``). Each makes exactly one
attempt per call (no retry: a retry would spend the budget twice) within the configured timeout and returns a
``Reply``, or raises ``RunFailed`` with a readable reason (tokens spent count then too when known).

The endpoint is called with httpx, ``trust_env=False`` (``HTTP_PROXY`` and friends must not reroute a session's
transcript), ``max_tokens`` (the answer's cap) and the key from the environment as a bearer token. The command
gets the whole prompt on stdin and must print the answer on stdout; it runs without a shell, in the sidecar's
environment plus ``MEMCUE_HOOKS_OFF=1`` (``core.hooks_off``: memcue's hooks in that CLI's own session do nothing,
so the distiller never captures or distills its own call). What a CLI spends around the prompt (its own system
prompt, tools) is not visible to memcue: the ledger counts what memcue sent and what came back.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from memcue.core.hooks_off import HOOKS_OFF_ENV
from memcue.sidecar.capture.distill_config import DistillConfig

#: Bytes of a command's stdout read per token of ``max_output_tokens`` (o200k averages about 4 bytes a token in
#: English; a longer answer is not the asked JSON anyway).
STDOUT_BYTES_PER_TOKEN = 8
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
    why. ``sent``: True when the request left (its tokens count against the budget); ``timed_out``: no answer
    came in time (the model may have written one all the same: its cap counts too)."""

    def __init__(self, reason: str, *, sent: bool = True, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.sent = sent
        self.timed_out = timed_out


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
            raise RunFailed(f"no answer within {cfg.timeout_s:g} s", timed_out=True) from None
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
        """Ask once. Raises ``RunFailed`` (not found, timeout, non-zero exit, stdout not UTF-8 or longer than
        ``STDOUT_BYTES_PER_TOKEN`` bytes per ``max_output_tokens``). Its output goes to temporary files, so a
        command that prints without end costs disk until the timeout, never the sidecar's memory."""
        cfg = self._config
        limit = cfg.max_output_tokens * STDOUT_BYTES_PER_TOKEN
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                proc = subprocess.run(list(cfg.command), input=f"{system}\n\n{user}".encode(), stdout=out,
                                      stderr=err, timeout=cfg.timeout_s, check=False,
                                      env={**os.environ, HOOKS_OFF_ENV: "1"})
            except FileNotFoundError:
                raise RunFailed(f"command not found: {cfg.command[0]}", sent=False) from None
            except subprocess.TimeoutExpired:
                raise RunFailed(f"{cfg.command[0]} did not answer within {cfg.timeout_s:g} s", timed_out=True) from None
            except OSError as exc:
                raise RunFailed(f"{cfg.command[0]} could not run: {exc}"[:ERROR_CHARS], sent=False) from None
            out.seek(0)
            err.seek(max(0, err.seek(0, 2) - ERROR_CHARS))
            stdout, stderr = out.read(limit + 1), err.read().decode("utf-8", "replace").strip()
        if proc.returncode != 0:
            raise RunFailed(f"{cfg.command[0]} exited with status {proc.returncode}: {stderr}")
        if len(stdout) > limit:
            raise RunFailed(f"{cfg.command[0]} printed more than {limit} bytes (max_output_tokens "
                            f"{cfg.max_output_tokens})")
        try:
            return Reply(stdout.decode("utf-8"))
        except UnicodeDecodeError:
            raise RunFailed(f"{cfg.command[0]} printed text that is not UTF-8") from None


def runner_for(config: DistillConfig, key: str = "") -> Runner:
    """The runner ``config.kind`` asks for."""
    return CommandRunner(config) if config.kind == "command" else EndpointRunner(config, key)
