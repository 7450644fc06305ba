"""Text helpers of the ``memcue`` command: reading arguments and stdin safely, and formatting answers."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from memcue.core.text import scrub_surrogates


def emit(data: Any, as_json: bool, text: str, ok: bool = True) -> int:
    """Print a command's result: ``text`` for people, or with ``as_json`` the envelope ``{"success": ok,
    "data": data}``. Returns the exit code (0, or 1 when not ``ok``)."""
    if as_json:
        print(json.dumps({"success": ok, "data": data}, ensure_ascii=False, indent=2))
    elif text:
        print(text)
    return 0 if ok else 1


def usage_error(args: argparse.Namespace, message: str) -> int:
    """A usage error (exit 2): the message on stderr, or ``{"success": false, "error": ...}`` with ``--json``."""
    if getattr(args, "json", False):
        print(json.dumps({"success": False, "error": message}, ensure_ascii=False))
    else:
        print(f"memcue: {message}", file=sys.stderr)
    return 2


def format_recall(answer: dict[str, Any], show_weak: bool = False) -> str:
    """A recall answer as the text ``memcue recall`` prints: one entry per memory with its score and, for
    anything but a supported match, its label after the score (``[related]``, ``[weak]``). Weak matches are
    left out unless ``show_weak``; a line says how many."""
    lines = []
    shown = [r for r in answer["results"] if show_weak or r["tier"] != "weak"]
    for rank, r in enumerate(shown, 1):
        label = "" if r["tier"] == "supported" else f" [{r['tier']}]"
        cos = (r.get("channel_scores") or {}).get("semantic")
        evidence = [f"sim {cos:.2f}" if cos is not None else "", "keywords" if r.get("cue_terms") else ""]
        why = ", ".join(e for e in evidence if e)
        lines.append(f"{rank}. #{r['memory_id']} {float(r.get('score') or 0):.2f}{label} "
                     f"({r['memory_kind']}, {r['age_label']}{'; ' + why if why else ''})\n"
                     f"   {r.get('content', r.get('preview', ''))}")
        context = r.get("context") or {}
        for key in ("session", "entities"):
            for item in context.get(key, []):
                lines.append(f"     {key}: #{item['memory_id']} {item['content'][:100]}")
        if context.get("replaced_by"):
            lines.append(f"     replaced by #{context['replaced_by']['memory_id']}")
    hidden = len(answer["results"]) - len(shown)
    if hidden:
        lines.append(f"({hidden} weak {'match' if hidden == 1 else 'matches'} not shown: --show-weak lists them)")
    if answer.get("note"):
        lines.append(answer["note"])
    layers = answer.get("layers") or {}
    if layers.get("left_out") or layers.get("shortened") or layers.get("context_dropped"):
        lines.append(f"(to fit {layers['max_tokens']} tokens: {layers['left_out']} left out, "
                     f"{len(layers['shortened'])} shortened, context dropped from {layers['context_dropped']})")
    statuses = ", ".join(f"{k}={v}" for k, v in answer.get("channel_status", {}).items())
    tier = answer["tier"]
    if tier == "supported" and answer["results"] and all(r["tier"] == "weak" for r in answer["results"]):
        tier = "supported, weak matches only"
    legend = (" (score: fused rank score, for ordering only; sim = cosine similarity, keywords = BM25 matched)"
              if shown else "")
    if answer.get("answer_check_status") == "judged":
        confidence = answer.get("answer_confidence")
        lines.append(f"answer check: {answer['answerability']}"
                     + (f" ({confidence:.2f})" if isinstance(confidence, int | float) else "")
                     + (f": {answer['answerability_reason']}" if answer.get("answerability_reason") else ""))
    lines.append(f"[{tier} · {answer.get('retrieval_time_ms', 0):.0f} ms · {statuses}]{legend}")
    return "\n".join(lines)


def progress(done: int, total: int, label: str) -> None:
    """A progress bar on stderr (only on a terminal)."""
    if not sys.stderr.isatty():
        return
    width = 30
    filled = int(width * done / total) if total else width
    sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def clean(text: str) -> str:
    """A command-line argument as valid text: bytes that were not UTF-8 (kept by Python as lone
    surrogates) become U+FFFD instead of failing later (``memcue.core.text.scrub_surrogates``)."""
    return scrub_surrogates(text, escaped_bytes=True)


def stdin_text() -> str:
    """All of stdin as text, undecodable bytes as U+FFFD."""
    return sys.stdin.buffer.read().decode("utf-8", "replace")


def iso_time(text: str) -> str:
    """An ISO 8601 date or date-time ("2026-10-01", "2026-10-01T09:30:00Z"), checked here so a typo is a
    usage error (exit 2) with a clear message."""
    import datetime as dt

    try:
        dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 date or date-time (e.g. 2026-10-01 or 2026-10-01T09:30:00Z)") from None
    return text


def limit(text: str) -> int:
    """An argparse type: an integer from 1 to 100."""
    value = int(text)
    if not 1 <= value <= 100:
        raise argparse.ArgumentTypeError("must be between 1 and 100")
    return value
