"""The optional answer check: a chat model the user configures judges whether the top results of a recall
answer the question (issue 6). Off by default.

The endpoint is OpenAI-compatible (``POST <url>/chat/completions``), a local server, or a hosted one only
with explicit consent (``allow_remote = true``) and the user's key (read from the environment variable that
``api_key_env`` names, never from the file). Config (``config.toml`` in the data dir)::

    [answer_check]
    url = "http://127.0.0.1:8080/v1"   # or MEMCUE_ANSWER_CHECK_URL
    model = "qwen2.5-3b-instruct"      # or MEMCUE_ANSWER_CHECK_MODEL
    api_key_env = "MEMCUE_ANSWER_CHECK_KEY"
    allow_remote = false               # a non-loopback url is refused without it
    timeout_s = 3.0

The sidecar reads this at start: restart it (``memcue stop``; the next call starts it) after a change.
Rules: the check never waits past the caller's budget (or ``timeout_s``), never runs two at once (a second
question meanwhile gets ``busy``, it does not queue), never hides or reorders a result, and only questions
are judged (``POST /recall``), never a hook's block or session-start context. Every answer carries
``answer_check_status`` (judged | off | skipped | busy | warming | unavailable), ``answerability``
(supported | unsupported | unjudged) with ``answerability_reason``, ``answer_confidence`` (0–1 from the
judge, or None) and ``calibration_status`` ("uncalibrated": the judge's confidence is not calibrated).
"""

from __future__ import annotations

import json
import logging
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

from memcue.core.urls import is_loopback

log = logging.getLogger("memcue.answer_check")

#: Results shown to the judge (the top of the ranking).
TOP_RESULTS = 3
#: Characters of each result shown to the judge.
RESULT_CHARS = 600
#: Characters of the judge's reason kept.
REASON_CHARS = 300
DEFAULT_KEY_ENV = "MEMCUE_ANSWER_CHECK_KEY"
#: Verdicts kept for answers served again from the answer cache (same query_id).
VERDICTS_KEPT = 256

SYSTEM = ("You check a memory search. Given a question and numbered memories, decide whether the memories "
          "contain the answer to the question (not merely the topic). Reply with JSON only: "
          '{"answerable": true or false, "confidence": a number from 0 to 1, "reason": "one short sentence"}.')


@dataclass(frozen=True)
class AnswerCheckConfig:
    """Where the judge is: ``url`` (base URL ending before ``/chat/completions``; "" = off), ``model``, the
    name of the environment variable holding the key (``api_key_env``), ``allow_remote`` (consent to send
    questions and memories off this machine) and ``timeout_s`` (s, when the caller gives no budget)."""

    url: str = ""
    model: str = ""
    api_key_env: str = DEFAULT_KEY_ENV
    allow_remote: bool = False
    timeout_s: float = 3.0


def parse_config(table: object, env: dict[str, str]) -> tuple[AnswerCheckConfig, list[str]]:
    """``(config, problems)`` from the ``[answer_check]`` table (any value) and the environment
    (``MEMCUE_ANSWER_CHECK_URL`` and ``MEMCUE_ANSWER_CHECK_MODEL`` override the file). Never raises."""
    problems: list[str] = []
    data = table if isinstance(table, dict) else {}
    if table is not None and not isinstance(table, dict):
        problems.append("[answer_check] must be a table")
    values: dict[str, Any] = {}
    for key, kind in (("url", str), ("model", str), ("api_key_env", str), ("allow_remote", bool),
                      ("timeout_s", float)):
        if key not in data:
            continue
        value = data[key]
        if kind is float and isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 60:
            values[key] = float(value)
        elif kind is not float and isinstance(value, kind):
            values[key] = value
        else:
            problems.append(f"answer_check.{key} = {value!r} is not valid; ignored")
    values["url"] = env.get("MEMCUE_ANSWER_CHECK_URL") or values.get("url", "")
    values["model"] = env.get("MEMCUE_ANSWER_CHECK_MODEL") or values.get("model", "")
    return AnswerCheckConfig(**values), problems


def _fields(status: str, reason: str, answerability: str = "unjudged", confidence: float | None = None) -> dict:
    return {"answer_check_status": status, "answerability": answerability, "answerability_reason": reason,
            "answer_confidence": confidence, "calibration_status": "uncalibrated"}


class AnswerChecker:
    """Judges recall answers with the configured endpoint (see module doc). One per sidecar. ``key``: the
    endpoint's API key ("" = none), read at start from the variable ``config.api_key_env`` names."""

    def __init__(self, config: AnswerCheckConfig, key: str = "") -> None:
        self.config = config
        self._key = key
        self._running = False
        #: Verdicts by query_id: an answer served again from the answer cache is not judged twice.
        self._verdicts: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self.off_reason = ""
        if not config.url:
            self.off_reason = "no answer check is configured"
        elif not config.model:
            self.off_reason = "answer_check.model is not set"
        elif not is_loopback(config.url) and not config.allow_remote:
            self.off_reason = (f"{config.url} is not on this machine: set answer_check.allow_remote = true to send "
                               "questions and memories there")

    @property
    def enabled(self) -> bool:
        return not self.off_reason

    async def judge(self, answer: dict[str, Any], budget_s: float, warming: bool = False) -> dict[str, Any]:
        """The answer-check fields for a recall ``answer`` (dict with ``query``, ``results``, ``tier``), within
        ``budget_s`` seconds. Never raises; never changes ``answer``."""
        if not self.enabled:
            return _fields("off", self.off_reason)
        if warming:
            return _fields("warming", "the embedding model is still loading: results are keyword-only for now")
        results = [r for r in answer.get("results", []) if r.get("tier") in ("supported", "weak", "related")]
        if not results:
            return _fields("skipped", "no results to judge")
        query_id = str(answer.get("query_id") or "")
        if query_id in self._verdicts:
            return self._verdicts[query_id]
        if self._running:
            return _fields("busy", "another answer check is running; this one was not queued")
        if budget_s <= 0.05:
            return _fields("skipped", "no time left in the budget")
        self._running = True
        try:
            with anyio.move_on_after(min(budget_s, self.config.timeout_s)) as scope:
                verdict = await self._ask(str(answer.get("query", "")), results[:TOP_RESULTS])
            if scope.cancelled_caught:
                return _fields("unavailable", "the judge did not answer within the budget")
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
            log.warning("answer check failed: %s", exc)
            return _fields("unavailable", f"the judge could not be used: {exc}"[:REASON_CHARS])
        finally:
            self._running = False
        answerable, confidence, reason = verdict
        out = _fields("judged", reason, "supported" if answerable else "unsupported", confidence)
        if query_id:
            self._verdicts[query_id] = out
            while len(self._verdicts) > VERDICTS_KEPT:
                self._verdicts.popitem(last=False)
        return out

    async def _ask(self, question: str, results: list[dict[str, Any]]) -> tuple[bool, float | None, str]:
        memories = "\n".join(f"{i}. {str(r.get('content', ''))[:RESULT_CHARS]}" for i, r in enumerate(results, 1))
        body = {"model": self.config.model, "temperature": 0, "stream": False,
                "messages": [{"role": "system", "content": SYSTEM},
                             {"role": "user", "content": f"Question: {question}\n\nMemories:\n{memories}"}]}
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        # A loopback judge is reached directly: HTTP_PROXY and the like must not route it off the machine. A remote
        # one the user allowed may need their proxy.
        trust_env = not is_loopback(self.config.url)
        async with httpx.AsyncClient(timeout=self.config.timeout_s, trust_env=trust_env) as client:
            response = await client.post(self.config.url.rstrip("/") + "/chat/completions", json=body,
                                         headers=headers)
            response.raise_for_status()
        text = response.json()["choices"][0]["message"]["content"]
        return parse_verdict(text)


def parse_verdict(text: str) -> tuple[bool, float | None, str]:
    """``(answerable, confidence or None, reason)`` from the judge's reply: the first JSON object in it.
    Raises ``ValueError`` when there is none or ``answerable`` is not a boolean."""
    found = re.search(r"\{.*\}", text or "", re.DOTALL)
    if not found:
        raise ValueError("the judge's reply holds no JSON object")
    data = json.loads(found.group(0))
    if not isinstance(data.get("answerable"), bool):
        raise ValueError("the judge's reply has no true/false 'answerable'")
    confidence = data.get("confidence")
    if isinstance(confidence, int | float) and not isinstance(confidence, bool):
        confidence = min(1.0, max(0.0, float(confidence)))
    else:
        confidence = None
    return data["answerable"], confidence, str(data.get("reason") or "")[:REASON_CHARS]
