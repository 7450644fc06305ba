"""The optional model distiller's configuration: the ``[distill]`` table of ``config.toml`` (read once by
``sidecar.settings``). Off unless the table is there and valid: with no table nothing is ever sent anywhere.

Two kinds of model, each opted into explicitly::

    [distill]                              # an OpenAI-compatible chat-completions endpoint
    base_url = "http://127.0.0.1:8080/v1"  # POST <base_url>/chat/completions
    model = "qwen2.5-7b-instruct"
    api_key_env = "MEMCUE_DISTILL_KEY"     # the variable holding the key (never the key itself)
    allow_remote = false                   # a non-loopback base_url is refused without it

    [distill]                              # a harness's own headless CLI
    kind = "command"
    command = ["claude", "-p"]             # the prompt and transcript on stdin, the JSON answer on stdout

Both take ``daily_tokens`` (the hard daily budget, default ``DAILY_TOKENS``; 0 spends nothing),
``timeout_s`` (one call, default ``TIMEOUT_S``), ``max_transcript_tokens`` (the most transcript one call sends)
and ``max_output_tokens`` (the answer's cap asked of an endpoint, and counted against the budget before a
call). Any problem in the table (an unknown key, a value of the wrong type or range, a missing ``base_url``,
``model`` or ``command``, a remote endpoint without consent) is reported and leaves distillation off.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from memcue.core.urls import is_loopback

#: The hard daily budget when the table does not set one (tokens, prompt plus completion).
DAILY_TOKENS = 20_000
TIMEOUT_S = 60.0
MAX_TRANSCRIPT_TOKENS = 6_000
MAX_OUTPUT_TOKENS = 1_000
DEFAULT_KEY_ENV = "MEMCUE_DISTILL_KEY"
KINDS = ("endpoint", "command")
#: Why distillation is off in the default configuration.
OFF_BY_DEFAULT = "no [distill] table in config.toml: nothing is sent anywhere"

#: key -> (type, lowest, highest) for the numbers; strings, booleans and the command are checked apart.
_NUMBERS: dict[str, tuple[type, int, int]] = {
    "daily_tokens": (int, 0, 10_000_000), "timeout_s": (float, 1, 600),
    "max_transcript_tokens": (int, 200, 200_000), "max_output_tokens": (int, 50, 32_000)}
_STRINGS = ("kind", "base_url", "model", "api_key_env")
_KEYS = (*_STRINGS, *_NUMBERS, "allow_remote", "command")


@dataclass(frozen=True)
class DistillConfig:
    """The distiller's model and limits (see the module docstring). ``off_reason`` says why distillation is
    off ("" when on); ``daily_tokens`` holds even then (``memcue ledger`` shows it)."""

    kind: str = "endpoint"
    base_url: str = ""
    model: str = ""
    api_key_env: str = DEFAULT_KEY_ENV
    allow_remote: bool = False
    command: tuple[str, ...] = ()
    timeout_s: float = TIMEOUT_S
    daily_tokens: int = DAILY_TOKENS
    max_transcript_tokens: int = MAX_TRANSCRIPT_TOKENS
    max_output_tokens: int = MAX_OUTPUT_TOKENS
    off_reason: str = OFF_BY_DEFAULT

    @property
    def enabled(self) -> bool:
        """True when a model is configured and the table is valid."""
        return not self.off_reason

    @property
    def target(self) -> str:
        """Where requests go: the endpoint's base URL, or the command's program."""
        return self.base_url if self.kind == "endpoint" else (self.command[0] if self.command else "")


def parse_distill(table: object) -> tuple[DistillConfig, list[str]]:
    """``(config, problems)`` from the ``[distill]`` table (any value; None = absent: off, no problem). Never
    raises; any problem leaves the config off with ``off_reason`` naming the problems."""
    if table is None:
        return DistillConfig(), []
    if not isinstance(table, dict):
        return _off(["[distill] must be a table"])
    problems = [f"distill.{key}: unknown key (known: {', '.join(_KEYS)})" for key in table if key not in _KEYS]
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key in _STRINGS and not isinstance(value, str):
            problems.append(f"distill.{key} = {value!r}: must be a string")
        elif key in _NUMBERS:
            number = _number(key, value)
            if number is None:
                kind, low, high = _NUMBERS[key]
                problems.append(f"distill.{key} = {value!r}: must be {'an integer' if kind is int else 'a number'}"
                                f" from {low} to {high}")
            values[key] = number
        elif key == "allow_remote" and not isinstance(value, bool):
            problems.append(f"distill.allow_remote = {value!r}: must be true or false")
        elif key == "command" and not (isinstance(value, list) and value
                                       and all(isinstance(v, str) and v for v in value)):
            problems.append(f"distill.command = {value!r}: must be a list of strings, the program first")
        elif key in _KEYS:
            values[key] = tuple(value) if key == "command" else value
    problems += _required(values)
    if problems:
        return _off(problems)
    return DistillConfig(**{k: v for k, v in values.items() if v is not None}, off_reason=""), []


def _number(key: str, value: object) -> int | float | None:
    """``value`` as ``key``'s number when of its type and range, else None."""
    kind, low, high = _NUMBERS[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or (kind is int and not isinstance(value, int)):
        return None
    return kind(value) if low <= value <= high else None


def _required(values: Mapping[str, Any]) -> list[str]:
    """What the chosen kind needs and lacks (problems), including consent for a remote endpoint."""
    kind = values.get("kind", "endpoint")
    if kind not in KINDS:
        return [f"distill.kind = {kind!r}: must be one of {', '.join(KINDS)}"]
    if kind == "command":
        return [] if values.get("command") else ['distill.command is required with kind = "command"']
    url, problems = str(values.get("base_url") or ""), []
    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
        problems.append(f"distill.base_url = {url!r}: an http(s) URL is required (such as http://127.0.0.1:8080/v1)")
    elif not is_loopback(url) and not values.get("allow_remote"):
        problems.append(f"distill.base_url {url} is not on this machine: set distill.allow_remote = true to send "
                        "session transcripts there")
    if not values.get("model"):
        problems.append("distill.model is required with an endpoint")
    return problems


def _off(problems: list[str]) -> tuple[DistillConfig, list[str]]:
    return DistillConfig(off_reason="invalid [distill] config, distillation is off: " + "; ".join(problems)), problems
