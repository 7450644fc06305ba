"""Claude Code: hook payload in, ``hookSpecificOutput`` out.

Standard library only (runs inside the hook process). Claude Code sends one JSON object on stdin, e.g.
for UserPromptSubmit ``{"session_id", "transcript_path", "cwd", "permission_mode",
"hook_event_name": "UserPromptSubmit", "prompt"}`` and for SessionStart ``{"session_id",
"transcript_path", "cwd", "hook_event_name": "SessionStart", "source": "startup"}``. Text is injected
through ``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`` on stdout; empty
stdout injects nothing.
"""

from __future__ import annotations

import json
import os
import re

from memcue.adapters.base import SESSION_START, USER_PROMPT_SUBMIT, Budget, HookEvent, resolve_project

NAME = "claude-code"

#: memcue event name -> Claude Code's ``hook_event_name`` / ``hookEventName``.
EVENTS: dict[str, str] = {
    USER_PROMPT_SUBMIT: "UserPromptSubmit",
    SESSION_START: "SessionStart",
}

#: Claude Code replaces additionalContext over 10,000 characters with a 2 KB preview; stay under it
#: with room for the harness's own wrapping.
MAX_CHARS = 9_500

#: Default token budgets (o200k_base tokens) and the environment variables that override them.
DEFAULT_TOKENS: dict[str, tuple[int, str]] = {
    USER_PROMPT_SUBMIT: (600, "MEMCUE_PROMPT_TOKENS"),
    SESSION_START: (1_500, "MEMCUE_SESSION_START_TOKENS"),
}

#: Payload keys copied into ``HookEvent.extra`` when present (scalars only).
_EXTRA_KEYS = ("hook_event_name", "permission_mode", "model", "agent_type")


def _text(payload: dict[str, object], key: str) -> str:
    value = payload.get(key)
    return value if isinstance(value, str) else ""


def _cwd(payload: dict[str, object]) -> str:
    cwd = _text(payload, "cwd") or os.environ.get("CLAUDE_PROJECT_DIR", "")
    if cwd:
        return cwd
    try:
        return os.getcwd()
    except OSError:
        return ""


def parse(event: str, payload: object) -> HookEvent:
    """A ``HookEvent`` from a decoded Claude Code payload; a non-object payload counts as empty.

    ``session_id`` falls back to ``$CLAUDE_CODE_SESSION_ID``; ``cwd`` to ``$CLAUDE_PROJECT_DIR`` and
    then the process's working directory. ``project`` is ``resolve_project(cwd)``. Never raises on
    payload content.
    """
    data: dict[str, object] = payload if isinstance(payload, dict) else {}
    cwd = _cwd(data)
    extra = {key: data[key] for key in _EXTRA_KEYS if isinstance(data.get(key), str | int | float | bool)}
    return HookEvent(
        harness=NAME,
        event=event,
        session_id=_text(data, "session_id") or os.environ.get("CLAUDE_CODE_SESSION_ID", ""),
        cwd=cwd,
        project=resolve_project(cwd),
        prompt=_text(data, "prompt") if event == USER_PROMPT_SUBMIT else "",
        source=_text(data, "source") if event == SESSION_START else "",
        transcript_path=_text(data, "transcript_path"),
        extra=extra,
    )


def budget(event: str) -> Budget:
    """Budget for ``event``: 600 tokens for prompts, 1,500 at session start, at most 9,500 characters.

    ``$MEMCUE_PROMPT_TOKENS`` / ``$MEMCUE_SESSION_START_TOKENS`` override the token counts (positive
    integers; anything else is ignored).
    """
    default, env = DEFAULT_TOKENS.get(event, DEFAULT_TOKENS[USER_PROMPT_SUBMIT])
    tokens = default
    raw = os.environ.get(env, "").strip()
    if raw:
        try:
            tokens = int(raw) if int(raw) > 0 else default
        except ValueError:
            tokens = default
    return Budget(max_tokens=tokens, max_chars=MAX_CHARS)


#: The sidecar's own last line when it left memories out (``memcue/sidecar/render.py`` ``left_out_line``).
_LEFT_OUT = re.compile(r"\[memcue: (\d+) more memor(?:y|ies) left out to fit the budget\]")
#: Said instead of a count when the text that was cut held no memory lines at all.
_CUT_MARKER = "[memcue: cut to fit the context limit]"


def left_out_line(n: int) -> str:
    """The last line of a capped block: how many memories were left out (same wording as the sidecar)."""
    return f"[memcue: {n} more {'memory' if n == 1 else 'memories'} left out to fit the budget]"


def _dropped_memories(lines: list[str]) -> int:
    """How many memories ``lines`` hold: memory lines (``- ...``) plus the counts of left-out lines."""
    n = 0
    for line in lines:
        if line.startswith("- "):
            n += 1
        else:
            found = _LEFT_OUT.fullmatch(line)
            n += int(found.group(1)) if found else 0
    return n


def _cap(context: str, max_chars: int) -> str:
    """``context`` cut to ``max_chars`` characters at a memory boundary, ending with a left-out line.

    Keeps whole lines; when the first line dropped continues a memory (continuation lines are indented
    by two spaces), that whole memory goes too. The last line says how many memories were dropped, counting memory
    lines (``- ...``) and any left-out line of the sidecar's that was cut with them.
    """
    if len(context) <= max_chars:
        return context
    lines = context.split("\n")
    # Room for the longest marker this context can need (the count has at most that many digits).
    worst = max(len(_CUT_MARKER), len(left_out_line(_dropped_memories(lines))))
    room = max_chars - 1 - worst
    end, used = 0, -1
    for line in lines:
        if used + 1 + len(line) > room:
            break
        used += 1 + len(line)
        end += 1
    if end == 0:  # not even the first line fits: a hard cut is all that is left
        dropped = _dropped_memories(lines[1:])
        return context[: max(0, room)] + "\n" + (left_out_line(dropped) if dropped else _CUT_MARKER)
    if lines[end].startswith("  "):  # continues a memory (the sidecar indents continuation lines)
        starts = [i for i in range(end) if lines[i].startswith("- ")]
        if starts and starts[-1] > 0:  # drop that memory whole rather than keep half of it
            end = starts[-1]
    dropped = _dropped_memories(lines[end:])
    return "\n".join(lines[:end]) + "\n" + (left_out_line(dropped) if dropped else _CUT_MARKER)


def render(event: HookEvent, context: str) -> str:
    """Claude Code's stdout for ``context``: "" when blank, else one JSON object on one line.

    The shape is exactly ``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}``
    with non-ASCII kept as is (the caller writes it as UTF-8). A context over the event's character
    budget is cut at a memory boundary as a last guard (the sidecar already fits it), ending with
    a line that says how many memories were left out.
    """
    if not context or not context.strip():
        return ""
    hook_event_name = EVENTS.get(event.event)
    if hook_event_name is None:
        return ""
    body = {
        "hookSpecificOutput": {
            "hookEventName": hook_event_name,
            "additionalContext": _cap(context, budget(event.event).max_chars),
        }
    }
    return json.dumps(body, ensure_ascii=False)
