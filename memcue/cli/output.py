"""The one output path of the ``memcue`` command, and its text helpers.

Every command prints its result through ``emit`` (text for people, or with ``--json`` the
``{"success": ..., "data": ...}`` envelope), a usage error through ``usage_error`` and a failure through
``fail``; each returns the exit code. Also here: reading arguments and stdin safely, and formatting answers.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from memcue.core.text import scrub_surrogates

#: The exit codes of every command: 0 ok, 1 error, 2 usage, 75 busy (try again; ``EX_TEMPFAIL`` of sysexits.h).
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_BUSY = 0, 1, 2, 75


class ReaderGone(Exception):
    """Stdout's reader left before the output ended (``memcue list | head``): nothing more to say; the
    command exits 0. Raised by the functions here instead of the ``BrokenPipeError`` of writing to stdout
    (a broken pipe elsewhere, e.g. to a harness's program, stays an error)."""


def _out(*values: Any, **kwargs: Any) -> None:
    """``print`` to stdout; a reader that left raises ``ReaderGone``."""
    try:
        print(*values, **kwargs)
    except BrokenPipeError:
        raise ReaderGone from None


def flush_stdout() -> None:
    """Write out what stdout still buffers; a reader that left raises ``ReaderGone``."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise ReaderGone from None


def emit(data: Any, as_json: bool, text: str, ok: bool = True, *, indent: int | None = 2,
         extra: dict[str, Any] | None = None, end: str = "\n") -> int:
    """Print a command's result: ``text`` for people (followed by ``end``; nothing when empty), or with
    ``as_json`` the envelope ``{"success": ok, "data": data, **extra}`` (``indent`` None: one line). Returns
    the exit code (0, or 1 when not ``ok``)."""
    if as_json:
        _out(json.dumps({"success": ok, "data": data, **(extra or {})}, ensure_ascii=False, indent=indent))
    elif text:
        _out(text, end=end)
    return EXIT_OK if ok else EXIT_ERROR


def usage_error(message: str, as_json: bool = False) -> int:
    """A usage error (exit 2): the message on stderr, or ``{"success": false, "error": ...}`` on stdout with
    ``as_json``."""
    if as_json:
        _out(json.dumps({"success": False, "error": message}, ensure_ascii=False))
    else:
        print(f"memcue: {message}", file=sys.stderr)
    return EXIT_USAGE


def fail(message: str, code: int = EXIT_ERROR, as_json: bool = False) -> int:
    """A command that could not do its job: ``memcue: message`` on stderr, or with ``as_json``
    ``{"success": false, "error": ...}`` on stdout (ASCII-escaped). Returns ``code``."""
    if as_json:
        _out(json.dumps({"success": False, "error": message}))
    else:
        print(f"memcue: {message}", file=sys.stderr)
    return code


def narrator(as_json: bool) -> Callable[..., None]:
    """How a long command tells its steps as they happen (``print``'s signature): ``print`` for people,
    silence with ``as_json`` (the JSON comes once, at the end, through ``emit``)."""
    return _silent if as_json else print


def _silent(*_args: Any, **_kwargs: Any) -> None:
    return None


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
        tags = "".join(f", #{t}" for t in r.get("tags") or [])
        lines.append(f"{rank}. #{r['memory_id']} {float(r.get('score') or 0):.2f}{label} "
                     f"({r['memory_kind']}, {r['age_label']}{tags}{'; ' + why if why else ''})\n"
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
    if cuts := _budget_cuts(layers):
        lines.append(f"(to fit {layers['max_tokens']} tokens: {cuts})")
    statuses = ", ".join(f"{k}={v}" for k, v in answer.get("channel_status", {}).items())
    tier = answer["tier"]
    if tier == "supported" and answer["results"] and all(r["tier"] == "weak" for r in answer["results"]):
        tier = "weak matches only"
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


def _budget_cuts(layers: dict[str, Any]) -> str:
    """What ``--max-tokens`` cut, from a recall answer's ``layers``: "2 results left out, context dropped from 1
    result"; "" when nothing was cut."""
    def results(n: int) -> str:
        return f"{n} result{'' if n == 1 else 's'}"

    cuts = [f"{results(n)} left out" for n in [int(layers.get("left_out") or 0)] if n]
    cuts += [f"{results(n)} shortened" for n in [len(layers.get("shortened") or [])] if n]
    cuts += [f"context dropped from {results(n)}" for n in [int(layers.get("context_dropped") or 0)] if n]
    return ", ".join(cuts)
