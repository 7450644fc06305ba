"""The sidecar's settings: ``config.toml`` in the data dir (read with ``tomllib``) and the ``MEMCUE_*``
environment variables, read once at start into one ``Settings`` object that is handed to the parts that
need it.

Known config keys (all optional)::

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
    [model]                       # the embedding model (default: the packaged all-MiniLM-L6-v2 int8)
    name = "BAAI/bge-small-en-v1.5"           # a fastembed TextEmbedding model name (env MEMCUE_MODEL wins)
    path = "/models/bge-small"    # optional: a local folder with its files (env MEMCUE_MODEL_PATH); without it
                                  # the model must already be in fastembed's cache under <data>/models
    [sidecar]
    idle_exit_minutes = 120      # exit after this long without a request (0: never; env MEMCUE_IDLE_EXIT_S, s)
    [sources]
    off = ["hermes"]             # native memory sources not read (``memcue sources --off NAME`` writes this)
    [distill]                     # optional model distillation of session transcripts, off without this
    base_url = "http://127.0.0.1:8080/v1"     # or kind = "command" with command = ["claude", "-p"]
    model = "qwen2.5-7b-instruct"
    daily_tokens = 20000          # the hard daily budget (capture/distill_config.py has every key)

Environment variables (``ENV_*`` below name each): the embedding model and its folder, the support gate off,
the rerank model and its folder, the answer check's url, model and key, the distiller's key (the variable
``[distill] api_key_env`` names), the prompt block, the hook recall limit, the question slots, their wait and
the answer cache's lifetime,
the embedding cache size, keyword-only service (no model), sqlite-vec off, ranking mode, and three test-only
delays.

A file that cannot be read or parsed is ignored (defaults apply), and so is each entry of the wrong name
or type; the problems are logged and reported by ``/health`` (``config_error``): a broken config must not
take recall down. An environment value that is not a number where one is expected falls back to the
default silently.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcue.sidecar.answer_check import DEFAULT_KEY_ENV, AnswerCheckConfig, parse_config
from memcue.sidecar.capture.distill_config import DistillConfig, parse_distill
from memcue.sidecar.idle import IDLE_EXIT_S
from memcue.sidecar.inject import PROMPT_LIMIT
from memcue.sidecar.recall import ALL_CHANNELS, QUERY_TYPES, RecallOptions
from memcue.sidecar.runtime.embedding import EMBEDDING_CACHE_SIZE, cache_size_from_env
from memcue.sidecar.scheduler import ANSWER_TTL_S, RECALL_SLOTS, RECALL_WAIT_S

log = logging.getLogger("memcue.config")
#: How a prompt hook renders its block: "full" (each memory's text, the default) or "compact" (one line per
#: memory: score, ``memcue://`` address, matched terms; the agent fetches what it needs). Compact is not the
#: default yet: it only helps an agent that can fetch, and the installers do not register the MCP server in
#: every harness yet; the real-harness tests (issue 5) check that a fact's text reaches the model.
PROMPT_BLOCKS = ("full", "compact")
#: Largest hook recall limit accepted from ``MEMCUE_HOOK_RECALL_LIMIT``.
HOOK_RECALL_LIMIT_MAX = 100

ENV_NO_SUPPORT_GATE = "MEMCUE_NO_SUPPORT_GATE"
#: The embedding model (a fastembed name) and its local folder; override ``[model] name`` and ``path``.
ENV_MODEL, ENV_MODEL_PATH = "MEMCUE_MODEL", "MEMCUE_MODEL_PATH"
#: Test only: a pause after each re-index batch (s), so a test can interrupt a re-index half way.
ENV_REINDEX_DELAY_S = "MEMCUE_REINDEX_DELAY_S"
ENV_RERANK_MODEL = "MEMCUE_RERANK_MODEL"
#: Same name as ``recall/rerank.py``'s ``ENV_MODEL_PATH``.
ENV_RERANK_MODEL_PATH = "MEMCUE_RERANK_MODEL_PATH"
ENV_PROMPT_BLOCK = "MEMCUE_PROMPT_BLOCK"
#: ``MEMCUE_EMBEDDING_CACHE_SIZE`` is parsed by ``runtime.embedding.cache_size_from_env``.
ENV_HOOK_RECALL_LIMIT = "MEMCUE_HOOK_RECALL_LIMIT"
ENV_RECALL_SLOTS = "MEMCUE_RECALL_SLOTS"
ENV_RECALL_WAIT_S = "MEMCUE_RECALL_WAIT_S"
ENV_ANSWER_CACHE_TTL_S = "MEMCUE_ANSWER_CACHE_TTL_S"
#: Test and benchmark only: a pause inside each question's run (s), to make the sidecar busy.
ENV_RECALL_DELAY_S = "MEMCUE_RECALL_DELAY_S"
#: Test only: a pause before the model loads (s), to observe the warming state.
ENV_MODEL_LOAD_DELAY_S = "MEMCUE_MODEL_LOAD_DELAY_S"
ENV_NO_MODEL = "MEMCUE_NO_MODEL"
#: Same name as ``store/db.py`` reads.
ENV_DISABLE_VEC = "MEMCUE_DISABLE_VEC"
#: Same name as ``recall/ranking.py`` reads.
ENV_RANKING = "MEMCUE_RANKING"
#: Seconds without a request after which the sidecar exits (0: never); overrides ``[sidecar] idle_exit_minutes``.
ENV_IDLE_EXIT_S = "MEMCUE_IDLE_EXIT_S"
#: The home folder native memory sources look in (``~/.claude``, ``~/.codex``, ``~/.hermes``); default: the user's.
ENV_NATIVE_HOME = "MEMCUE_NATIVE_HOME"


@dataclass(frozen=True)
class Settings:
    """Everything the sidecar reads from ``config.toml`` and the environment, read once at start.

    Recall: ``support_gate`` on/off, per-type channel ``weights`` overrides, ``rerank_model`` ("" = off) and
    ``rerank_model_path`` (a local folder, "" = fastembed's cache), ``ranking`` (ranking mode). Answer check:
    ``answer_check`` (off by default) and ``answer_check_key`` (the key from the variable it names). Distillation:
    ``distill`` (off by default; an invalid ``[distill]`` table leaves it off and is named in ``error``) and
    ``distill_key`` (the endpoint's key, from the variable ``distill.api_key_env`` names). Hooks:
    ``prompt_block`` (``PROMPT_BLOCKS``) and ``hook_recall_limit`` (results a prompt hook asks for, 1..100).
    Questions: ``recall_slots`` (>= 1), ``recall_wait_s`` (s), ``answer_cache_ttl_s`` (s), ``recall_delay_s``
    (s, tests only). Runtime: ``embedding_cache_size`` (queries, >= 0), ``model_load_delay_s`` (s, tests
    only), ``no_model`` (keyword-only service), ``model_name`` / ``model_path`` (the embedding model: a fastembed
    name and an optional local folder; "" = the packaged default), ``reindex_delay_s`` (s, tests only),
    ``disable_vec`` (sqlite-vec off). Lifecycle: ``idle_exit_s`` (s without a request before the sidecar exits;
    0 never). Native memory sources: ``sources_off`` (names not read, ``[sources] off``) and ``native_home``
    (``MEMCUE_NATIVE_HOME``, "" = the user's home). ``error``: why the file or some of its entries were ignored
    ("" when fine). ``ranking`` reaches recall through ``recall_options``; ``disable_vec`` is read here so that
    every ``MEMCUE_*`` value is in one place, while ``store/sqlite/db.py`` still reads the variable itself (same
    name, same value) for every connection it opens, the service's and a benchmark's alike."""

    support_gate: bool = True
    weights: dict[str, dict[str, float]] = field(default_factory=dict)
    rerank_model: str = ""
    rerank_model_path: str = ""
    ranking: bool = False
    answer_check: AnswerCheckConfig = field(default_factory=AnswerCheckConfig)
    answer_check_key: str = field(default="", repr=False)
    distill: DistillConfig = field(default_factory=DistillConfig)
    distill_key: str = field(default="", repr=False)
    prompt_block: str = "full"
    hook_recall_limit: int = PROMPT_LIMIT
    recall_slots: int = RECALL_SLOTS
    recall_wait_s: float = RECALL_WAIT_S
    answer_cache_ttl_s: float = ANSWER_TTL_S
    recall_delay_s: float = 0.0
    embedding_cache_size: int = EMBEDDING_CACHE_SIZE
    model_load_delay_s: float = 0.0
    no_model: bool = False
    model_name: str = ""
    model_path: str = ""
    reindex_delay_s: float = 0.0
    disable_vec: bool = False
    idle_exit_s: float = IDLE_EXIT_S
    sources_off: tuple[str, ...] = ()
    native_home: str = ""
    error: str = ""

    def recall_options(self) -> RecallOptions:
        """What recall takes from these settings (support gate, weights, ranking mode)."""
        return RecallOptions(support_gate=self.support_gate, weights=self.weights, ranking=self.ranking)


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    """``env[name]`` as a number; ``default`` when unset, empty or not a number."""
    try:
        return float(env.get(name, "") or default)
    except ValueError:
        return default


def _integer(env: Mapping[str, str], name: str, default: int) -> int:
    """``env[name]`` as an integer; ``default`` when unset, empty or not an integer."""
    try:
        return int(env.get(name, "") or default)
    except ValueError:
        return default


#: The keys ``load_settings`` reads in each top-level table of ``config.toml`` (``[distill]``'s are checked by
#: ``capture.distill_config``); any other key (a typo such as ``idle_exit_minute``) is named in the settings'
#: ``error``, as every other entry it ignores.
TABLE_KEYS: dict[str, tuple[str, ...]] = {
    "recall": ("weights", "support_gate"), "rerank": ("model",),
    "answer_check": ("url", "model", "api_key_env", "allow_remote", "timeout_s"), "hooks": ("prompt_block",),
    "sidecar": ("idle_exit_minutes",), "model": ("name", "path"), "sources": ("off",)}
#: The top-level tables of ``config.toml`` memcue reads; any other (a typo such as ``[recal]``) is named too.
TABLES = frozenset({*TABLE_KEYS, "distill"})


def load_settings(path: Path, env: Mapping[str, str] | None = None, *, quiet: bool = False) -> Settings:
    """Read ``path`` (missing = defaults) and ``env`` (default ``os.environ``); ``quiet``: do not log the problems
    (a CLI command that reports them itself). ``MEMCUE_NO_SUPPORT_GATE=1``
    turns the gate off whatever the file says; ``MEMCUE_RERANK_MODEL`` overrides the file's rerank model;
    ``MEMCUE_PROMPT_BLOCK`` the file's prompt block; ``MEMCUE_ANSWER_CHECK_URL`` / ``_MODEL`` its judge.

    Never raises: a file that cannot be parsed is ignored as a whole, and each entry of the wrong type or
    name (an unknown query type or channel, a negative or non-numeric weight, a non-boolean gate) is left
    out; every problem is named in ``error`` (and logged), so ``memcue status`` can show it.
    """
    env = dict(os.environ if env is None else env)
    problems: list[str] = []
    data = _read_file(path, problems)
    recall = data.get("recall", {})
    if not isinstance(recall, dict):
        problems.append("[recall] must be a table")
        recall = {}
    weights = _weights(recall.get("weights", {}), problems)
    gate = _support_gate(recall, problems) and not _truthy(env.get(ENV_NO_SUPPORT_GATE))
    model = _rerank_model(data.get("rerank", {}), problems)
    model = env.get(ENV_RERANK_MODEL) or model
    answer_check, check_problems = parse_config(data.get("answer_check"), env)
    problems.extend(check_problems)
    distill, distill_problems = parse_distill(data.get("distill"))
    problems.extend(distill_problems)
    prompt_block, block_problems = _prompt_block(data.get("hooks", {}), env)
    problems.extend(block_problems)
    idle_exit_s = _idle_exit(data.get("sidecar", {}), env, problems)
    model_name, model_path = _embedding_model(data.get("model", {}), env, problems)
    sources_off = _sources_off(data.get("sources", {}), problems)
    problems += _unknown_entries(data)
    error = f"{path}: " + "; ".join(problems) if problems else ""
    if error and not quiet:
        log.error("config problems, ignored: %s", error)
    return Settings(
        support_gate=gate, weights=weights, rerank_model=model, rerank_model_path=env.get(ENV_RERANK_MODEL_PATH, ""),
        ranking=_truthy(env.get(ENV_RANKING)), answer_check=answer_check,
        answer_check_key=env.get(answer_check.api_key_env or DEFAULT_KEY_ENV, ""), distill=distill,
        distill_key=env.get(distill.api_key_env, "") if distill.enabled else "", prompt_block=prompt_block,
        hook_recall_limit=max(1, min(HOOK_RECALL_LIMIT_MAX, _integer(env, ENV_HOOK_RECALL_LIMIT, PROMPT_LIMIT))),
        recall_slots=max(1, int(_number(env, ENV_RECALL_SLOTS, RECALL_SLOTS))),
        recall_wait_s=max(0.0, _number(env, ENV_RECALL_WAIT_S, RECALL_WAIT_S)),
        answer_cache_ttl_s=max(0.0, _number(env, ENV_ANSWER_CACHE_TTL_S, ANSWER_TTL_S)),
        recall_delay_s=max(0.0, _number(env, ENV_RECALL_DELAY_S, 0.0)),
        embedding_cache_size=cache_size_from_env(env),
        model_load_delay_s=_number(env, ENV_MODEL_LOAD_DELAY_S, 0.0), no_model=env.get(ENV_NO_MODEL) == "1",
        disable_vec=env.get(ENV_DISABLE_VEC) == "1", idle_exit_s=idle_exit_s, sources_off=sources_off,
        native_home=env.get(ENV_NATIVE_HOME, "").strip(), model_name=model_name, model_path=model_path,
        reindex_delay_s=max(0.0, _number(env, ENV_REINDEX_DELAY_S, 0.0)), error=error)


def _unknown_entries(data: dict[str, Any]) -> list[str]:
    """A problem for each top-level table of ``data`` memcue does not read and each key it does not read in a
    table it reads (``TABLE_KEYS``)."""
    problems = [f"[{name}] is no table memcue reads (ignored; its tables: {', '.join(sorted(TABLES))})"
                for name in data if name not in TABLES]
    for name, keys in TABLE_KEYS.items():
        table = data.get(name)
        if isinstance(table, dict):
            problems += [f"{name}.{key}: unknown key, ignored (known: {', '.join(keys)})"
                         for key in table if key not in keys]
    return problems


def _embedding_model(table: object, env: Mapping[str, str], problems: list[str]) -> tuple[str, str]:
    """``(name, path)`` of the embedding model: ``MEMCUE_MODEL`` / ``MEMCUE_MODEL_PATH``, else ``[model] name`` /
    ``path``; ("", "") is the packaged default. A wrong entry is named and ignored; a path without a name is
    ignored too (the folder alone does not say which fastembed model it holds)."""
    name: object = ""
    path: object = ""
    if not isinstance(table, dict):
        problems.append("[model] must be a table")
    else:
        name, path = table.get("name", ""), table.get("path", "")
    if not isinstance(name, str):
        problems.append(f"model.name = {name!r}: must be a fastembed model name")
        name = ""
    if not isinstance(path, str):
        problems.append(f"model.path = {path!r}: must be a folder")
        path = ""
    name = (env.get(ENV_MODEL) or name).strip()
    path = (env.get(ENV_MODEL_PATH) or path).strip()
    if path and not name:
        problems.append("model.path is set without model.name (the fastembed model its files are); ignored")
        path = ""
    return name, str(Path(path).expanduser()) if path else ""


def _sources_off(table: object, problems: list[str]) -> tuple[str, ...]:
    """``[sources] off``: the native sources not read (a list of names); a wrong entry is named and ignored."""
    off = table.get("off", []) if isinstance(table, dict) else None
    if not isinstance(off, list) or not all(isinstance(n, str) for n in off):
        problems.append("[sources] off must be a list of source names")
        return ()
    return tuple(dict.fromkeys(off))


def write_sources_off(path: Path, names: list[str]) -> None:
    """Set ``[sources] off = names`` in the config file ``path`` (made when missing), every other line kept as
    it was: the ``off`` line is replaced in place, or added under ``[sources]``, or a ``[sources]`` table is
    appended. Raises ``ValueError`` when the file does not parse before or after, ``OSError`` when it cannot be
    read or written."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    tomllib.loads(text)  # a file that does not parse is not touched
    value = "off = [" + ", ".join(json.dumps(n) for n in names) + "]"
    lines = text.splitlines()
    header = next((i for i, ln in enumerate(lines) if ln.strip() == "[sources]"), None)
    if header is None:
        lines += ["", "[sources]", value] if lines else ["[sources]", value]
    else:
        end = next((i for i in range(header + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
        at = next((i for i in range(header + 1, end) if re.match(r"\s*off\s*=", lines[i])), None)
        if at is None:
            lines.insert(header + 1, value)
        else:
            last = at
            while "]" not in lines[last].split("#")[0] and last + 1 < end:
                last += 1
            lines[at:last + 1] = [value]
    out = "\n".join(lines) + "\n"
    if tomllib.loads(out).get("sources", {}).get("off") != names:
        raise ValueError(f"{path}: could not set [sources] off")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(out, encoding="utf-8")


def _idle_exit(table: object, env: Mapping[str, str], problems: list[str]) -> float:
    """Seconds without a request before the sidecar exits: ``MEMCUE_IDLE_EXIT_S``, else ``[sidecar]
    idle_exit_minutes`` (a number >= 0; 0 never), else ``IDLE_EXIT_S``; a wrong entry is named and ignored."""
    if env.get(ENV_IDLE_EXIT_S, "").strip():
        return max(0.0, _number(env, ENV_IDLE_EXIT_S, IDLE_EXIT_S))
    if not isinstance(table, dict):
        problems.append("[sidecar] must be a table")
        return IDLE_EXIT_S
    minutes = table.get("idle_exit_minutes")
    if minutes is None:
        return IDLE_EXIT_S
    if isinstance(minutes, bool) or not isinstance(minutes, int | float) or minutes < 0:
        problems.append("[sidecar] idle_exit_minutes must be a number of minutes >= 0 (0: never)")
        return IDLE_EXIT_S
    return float(minutes) * 60.0


#: How a problem ends when the whole file was ignored (it cannot be read or parsed): ``memcue doctor`` says no more.
UNREADABLE = "; using defaults"


def _read_file(path: Path, problems: list[str]) -> dict:
    """The parsed file, {} when it is missing or cannot be read (a problem is added then)."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        problems.append(f"cannot read it ({exc}){UNREADABLE}")
        return {}


def _weights(table: object, problems: list[str]) -> dict[str, dict[str, float]]:
    """``[recall.weights]``: query type -> channel -> weight, wrong entries left out (and named)."""
    weights: dict[str, dict[str, float]] = {}
    if not isinstance(table, dict):
        problems.append("recall.weights must be a table of query types")
        return weights
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
    return weights


def _support_gate(recall: dict, problems: list[str]) -> bool:
    """``recall.support_gate`` (default on; a non-boolean keeps it on)."""
    gate = recall.get("support_gate", True)
    if not isinstance(gate, bool):
        problems.append(f"recall.support_gate = {gate!r}: must be true or false; the gate stays on")
        return True
    return gate


def _rerank_model(rerank: object, problems: list[str]) -> str:
    """``[rerank] model`` ("" when absent or not a string)."""
    if not isinstance(rerank, dict):
        problems.append("[rerank] must be a table")
        return ""
    model = rerank.get("model", "")
    if not isinstance(model, str):
        problems.append(f"rerank.model = {model!r}: must be a model name")
        return ""
    return model


def _prompt_block(hooks: object, env: Mapping[str, str]) -> tuple[str, list[str]]:
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
    from_env = (env.get(ENV_PROMPT_BLOCK) or "").strip().lower()
    if from_env and from_env not in PROMPT_BLOCKS:
        problems.append(f"{ENV_PROMPT_BLOCK}={from_env!r}: must be one of {', '.join(PROMPT_BLOCKS)}; ignored")
    elif from_env:
        value = from_env
    return str(value), problems
