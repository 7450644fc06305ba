"""The sidecar's config file (``config.toml`` in the data dir), read with ``tomllib``.

Known keys (all optional)::

    [recall]
    support_gate = true          # false: every candidate that passed the floor is "supported"
    [recall.weights.meaning]     # per query type, overrides recall.classify.CHANNEL_WEIGHTS
    semantic = 0.6
    [rerank]
    model = "Xenova/ms-marco-MiniLM-L-6-v2"   # a fastembed cross-encoder; off when absent

A file that cannot be read or parsed is reported once in the log and ignored (defaults apply): a broken
config must not take recall down.
"""

from __future__ import annotations

import logging
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("memcue.config")


@dataclass(frozen=True)
class RecallConfig:
    """``support_gate`` on/off, per-type channel ``weights`` overrides, ``rerank_model`` ("" = off), and
    ``error`` (why the file was ignored, "" when fine)."""

    support_gate: bool = True
    weights: dict[str, dict[str, float]] = field(default_factory=dict)
    rerank_model: str = ""
    error: str = ""


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def load_config(path: Path, env: dict[str, str] | None = None) -> RecallConfig:
    """Read ``path`` (missing = defaults). ``MEMCUE_NO_SUPPORT_GATE=1`` in ``env`` turns the gate off
    whatever the file says; ``MEMCUE_RERANK_MODEL`` overrides the file's rerank model."""
    env = dict(os.environ if env is None else env)
    data: dict = {}
    error = ""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        error = f"{path}: {exc}; using defaults"
        log.error("config file ignored: %s", error)
    recall = data.get("recall") if isinstance(data.get("recall"), dict) else {}
    weights: dict[str, dict[str, float]] = {}
    for qtype, table in (recall.get("weights") or {}).items():
        if isinstance(table, dict):
            weights[str(qtype)] = {str(k): float(v) for k, v in table.items() if isinstance(v, int | float)}
    gate = bool(recall.get("support_gate", True)) and not _truthy(env.get("MEMCUE_NO_SUPPORT_GATE"))
    rerank = data.get("rerank") if isinstance(data.get("rerank"), dict) else {}
    model = env.get("MEMCUE_RERANK_MODEL") or str(rerank.get("model") or "")
    return RecallConfig(support_gate=gate, weights=weights, rerank_model=model, error=error)
