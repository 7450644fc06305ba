"""Claude Code: hook payload in, ``hookSpecificOutput`` out.

Standard library only (runs inside the hook process). Claude Code sends one JSON object on stdin, e.g.
for UserPromptSubmit ``{"session_id", "transcript_path", "cwd", "permission_mode",
"hook_event_name": "UserPromptSubmit", "prompt", "prompt_id"}`` and for SessionStart ``{"session_id",
"transcript_path", "cwd", "hook_event_name": "SessionStart", "source": "startup"}``. ``prompt_id`` (2.1.x) names
the prompt's turn; that turn's Stop and the SessionEnd after it carry it too (``hooks.request_id``). The
transcript file does not exist yet at a new session's first prompt. Text is injected
through ``{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": ...}}`` on stdout; empty
stdout injects nothing. What differs from the command-hook defaults (``adapters.base``): the session id and
working directory fall back to Claude Code's environment variables, and the session-start block may fill Claude
Code's character cap (``TOKENS``).
"""

from __future__ import annotations

from memcue.adapters import base
from memcue.adapters.base import HookEvent
from memcue.core.limits import CLAUDE_CODE_SESSION_BLOCK_TOKENS
from memcue.harnesses import harness_events

NAME = "claude-code"
#: memcue event name -> Claude Code's ``hook_event_name`` / ``hookEventName`` (the registry's).
EVENTS = harness_events(NAME)
#: Characters of one block (``base.MAX_CHARS``: under Claude Code's 10,000-character cap).
MAX_CHARS = base.MAX_CHARS

#: Payload keys copied into ``HookEvent.extra`` when present (scalars only).
_EXTRA_KEYS = ("hook_event_name", "permission_mode", "model", "agent_type", "reason", "trigger",
               "stop_hook_active", "prompt_id", "tool_use_id")


def parse(event: str, payload: object) -> HookEvent:
    """A ``HookEvent`` from a decoded Claude Code payload; a non-object payload counts as empty.

    ``session_id`` falls back to ``$CLAUDE_CODE_SESSION_ID``; ``cwd`` to ``$CLAUDE_PROJECT_DIR`` and
    then the process's working directory. ``project`` is ``resolve_project(cwd)``. Never raises on
    payload content.
    """
    return base.command_parse(NAME, event, payload, _EXTRA_KEYS, cwd_env="CLAUDE_PROJECT_DIR",
                              session_env="CLAUDE_CODE_SESSION_ID")


#: Token budgets of Claude Code's blocks (o200k_base tokens): the command-hook harnesses' (``base.COMMAND_HOOK_TOKENS``)
#: but the session start's, which may fill Claude Code's character cap
#: (``core.limits.CLAUDE_CODE_SESSION_BLOCK_TOKENS``); the same environment variables override them.
TOKENS = {**base.COMMAND_HOOK_TOKENS,
          base.SESSION_START: (CLAUDE_CODE_SESSION_BLOCK_TOKENS, base.COMMAND_HOOK_TOKENS[base.SESSION_START][1])}


def budget(event: str) -> base.Budget:
    """Budget for ``event``: ``TOKENS`` (600 a prompt, 2,450 at session start, 300 beside a tool call), at most
    ``MAX_CHARS`` characters; ``$MEMCUE_PROMPT_TOKENS`` / ``$MEMCUE_SESSION_START_TOKENS`` / ``$MEMCUE_TOOL_TOKENS``
    override the tokens (positive integers; anything else is ignored)."""
    return base.token_budget(event, TOKENS, MAX_CHARS)


render = base.render_hook_output
