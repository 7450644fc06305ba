"""The sidecar's config file (``config.toml`` in the data dir), read with ``tomllib``.

Known keys (all optional)::

    [recall]
    support_gate = true          # false: every candidate that passed the floor is "supported"
    [recall.weights.meaning]     # per query type, overrides recall.classify.CHANNEL_WEIGHTS
    semantic = 0.6
    [rerank]
    model = "Xenova/ms-marco-MiniLM-L-6-v2"   # a fastembed cross-encoder; off when absent
    [answer_check]                # optional judge of question answers (sidecar/answer_check.py)
    url = "http://127.0.0.1:8080/v1"
    [hooks]
    prompt_block = "full"        # or "compact" (env MEMCUE_PROMPT_BLOCK wins): see PROMPT_BLOCKS

A file that cannot be read or parsed is ignored (defaults apply), and so is each entry of the wrong name
or type; the problems are logged and reported by ``/health`` (``config_error``): a broken config must not
take recall down.
"""

from __future__ import annotations

import logging
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from memcue.sidecar.answer_check import AnswerCheckConfig, parse_config

log = logging.getLogger("memcue.config")
#: How a prompt hook renders its block: "full" (each memory's text, the default) or "compact" (one line per
#: memory: score, ``memcue://`` address, matched terms; the agent fetches what it needs). Compact is not the
#: default yet: it only helps an agent that can fetch, and the installers do not register the MCP server in
#: every harness yet; the real-harness tests (issue 5) check that a fact's text reaches the model.
PROMPT_BLOCKS = ("full", "compact")


@dataclass(frozen=True)
class RecallConfig:
    """``support_gate`` on/off, per-type channel ``weights`` overrides, ``rerank_model`` ("" = off), the
    ``answer_check`` endpoint (off by default), the prompt hook's ``prompt_block`` (``PROMPT_BLOCKS``), and
    ``error`` (why the file was ignored, "" when fine)."""

    support_gate: bool = True
    weights: dict[str, dict[str, float]] = field(default_factory=dict)
    rerank_model: str = ""
    answer_check: AnswerCheckConfig = field(default_factory=AnswerCheckConfig)
    prompt_block: str = "full"
    error: str = ""


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def load_config(path: Path, env: dict[str, str] | None = None) -> RecallConfig:
    """Read ``path`` (missing = defaults). ``MEMCUE_NO_SUPPORT_GATE=1`` in ``env`` turns the gate off
    whatever the file says; ``MEMCUE_RERANK_MODEL`` overrides the file's rerank model.

    Never raises: a file that cannot be parsed is ignored as a whole, and each entry of the wrong type or
    name (an unknown query type or channel, a negative or non-numeric weight, a non-boolean gate) is left
    out; every problem is named in ``error`` (and logged), so ``memcue status`` can show it.
    """
    from memcue.sidecar.recall import ALL_CHANNELS, QUERY_TYPES

    env = dict(os.environ if env is None else env)
    data: dict = {}
    problems: list[str] = []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        problems.append(f"cannot read it ({exc}); using defaults")
    recall = data.get("recall", {})
    if not isinstance(recall, dict):
        problems.append("[recall] must be a table")
        recall = {}
    weights: dict[str, dict[str, float]] = {}
    table = recall.get("weights", {})
    if not isinstance(table, dict):
        problems.append("recall.weights must be a table of query types")
        table = {}
    for qtype, channels in table.items():
        if qtype not in QUERY_TYPES:
            problems.append(f"recall.weights.{qtype}: unknown query type (known: {', '.join(QUERY_TYPES)})")
            continue
        if not isinstance(channels, dict):
            problems.append(f"recall.weights.{qtype} must be a table of channel = weight")
            continue
        for name, value in channels.items():
            if name not in ALL_CHANNELS:
                problems.append(f"recall.weights.{qtype}.{name}: unknown channel (known: {', '.join(ALL_CHANNELS)})")
            elif isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                problems.append(f"recall.weights.{qtype}.{name} = {value!r}: a weight must be a number >= 0")
            else:
                weights.setdefault(qtype, {})[name] = float(value)
    gate = recall.get("support_gate", True)
    if not isinstance(gate, bool):
        problems.append(f"recall.support_gate = {gate!r}: must be true or false; the gate stays on")
        gate = True
    gate = gate and not _truthy(env.get("MEMCUE_NO_SUPPORT_GATE"))
    rerank = data.get("rerank", {})
    if not isinstance(rerank, dict):
        problems.append("[rerank] must be a table")
        rerank = {}
    model = rerank.get("model", "")
    if not isinstance(model, str):
        problems.append(f"rerank.model = {model!r}: must be a model name")
        model = ""
    model = env.get("MEMCUE_RERANK_MODEL") or model
    answer_check, check_problems = parse_config(data.get("answer_check"), env)
    problems.extend(check_problems)
    prompt_block, block_problems = _prompt_block(data.get("hooks", {}), env)
    problems.extend(block_problems)
    error = f"{path}: " + "; ".join(problems) if problems else ""
    if error:
        log.error("config problems, ignored: %s", error)
    return RecallConfig(support_gate=gate, weights=weights, rerank_model=model, answer_check=answer_check,
                        prompt_block=prompt_block, error=error)


def _prompt_block(hooks: object, env: dict[str, str]) -> tuple[str, list[str]]:
    """The prompt hook's block shape: ``MEMCUE_PROMPT_BLOCK``, else ``[hooks] prompt_block``, else "full"."""
    problems: list[str] = []
    value: object = "full"
    if not isinstance(hooks, dict):
        problems.append("[hooks] must be a table")
    else:
        value = hooks.get("prompt_block", "full")
    if value not in PROMPT_BLOCKS:
        problems.append(f"hooks.prompt_block = {value!r}: must be one of {', '.join(PROMPT_BLOCKS)}; using full")
        value = "full"
    from_env = (env.get("MEMCUE_PROMPT_BLOCK") or "").strip().lower()
    if from_env and from_env not in PROMPT_BLOCKS:
        problems.append(f"MEMCUE_PROMPT_BLOCK={from_env!r}: must be one of {', '.join(PROMPT_BLOCKS)}; ignored")
    elif from_env:
        value = from_env
    return str(value), problems
