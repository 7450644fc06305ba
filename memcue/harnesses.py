"""The harness registry: one row per harness memcue wires into, the only list of harnesses and events.

Standard library only, and light (the hook imports it on every prompt: no ``typing``, no ``dataclasses``).
A row names the harness's adapter module (``memcue/adapters/<harness>.py``: its payloads in, its stdout out),
its installer module (``memcue/install/<harness>.py``: its config file), the program looked for on PATH, and
its events: memcue's event name -> the harness's own name and the hook timeout memcue writes for it (s).
The sidecar, the hook, the installer, doctor and the CLI all take their lists from here; modules are named,
not imported, so the hook loads only the adapter it runs. Adding a harness is one adapter module, one
installer module and one row below.
"""

from __future__ import annotations

from collections import namedtuple

#: memcue's own event names, whatever a harness calls them.
USER_PROMPT_SUBMIT = "user-prompt-submit"
SESSION_START = "session-start"
STOP = "stop"
SESSION_END = "session-end"
#: A tool call is about to run: memories that name its file or command are injected beside it (file edits and
#: shell commands only; ``sidecar/inject/tool_context.py``).
PRE_TOOL_USE = "pre-tool-use"
#: A tool call finished (capture only: shell commands and file edits, ``sidecar/capture/test_runs.py``).
POST_TOOL_USE = "post-tool-use"
#: A tool call failed (Claude Code sends a failing Bash command here, not to PostToolUse).
POST_TOOL_USE_FAILURE = "post-tool-use-failure"
#: The conversation is about to be compacted (capture only: a session event the optional distiller reads the
#: session at, before the harness summarises it away).
PRE_COMPACT = "pre-compact"
#: Every memcue event, in the order a session meets them.
EVENTS = (USER_PROMPT_SUBMIT, SESSION_START, PRE_TOOL_USE, POST_TOOL_USE, POST_TOOL_USE_FAILURE, STOP, PRE_COMPACT,
          SESSION_END)

Event = namedtuple("Event", ["name", "timeout_s", "background", "matcher"], defaults=(False, None))
Event.__doc__ = ("One harness event: ``name``, the harness's own (its ``hook_event_name``); ``timeout_s``, the "
                 "hook timeout memcue writes into the harness's config (integer s), None when the harness has no "
                 "such setting; ``background``, True when memcue installs the hook to run without blocking the "
                 "agent (Claude Code's ``\"async\": true``); ``matcher``, the tool-name pattern memcue writes into "
                 "the hook's group (the harness runs the hook only for tools it matches), None for none.")

Harness = namedtuple("Harness", ["name", "adapter", "installer", "program", "events"])
Harness.__doc__ = ("One registered harness: ``name`` (memcue's, as typed on the command line), ``adapter`` and "
                   "``installer`` (module paths), ``program`` (looked for on PATH), ``events`` (memcue event -> "
                   "``Event``, for every event memcue handles in that harness).")

#: The command-hook harnesses' events. Prompt hooks get 3 s (the hook's own deadline is 2.5 s, DESIGN.md
#: section 3), session start 5 s (deadline 4.5 s), Stop and SessionEnd (capture only, spooled at once) 5 s.
_COMMAND_HOOK_EVENTS = {
    USER_PROMPT_SUBMIT: Event("UserPromptSubmit", 3),
    SESSION_START: Event("SessionStart", 5),
    STOP: Event("Stop", 5),
    SESSION_END: Event("SessionEnd", 5),
}
#: Tool-call capture (spooled at once, never asks the sidecar). Claude Code runs these hooks in the background
#: (``"async": true`` in the hook entry, Claude Code 2.1.x), and sends a failing tool call (a Bash command
#: that exited non-zero) to PostToolUseFailure instead of PostToolUse. Codex 0.171 has PostToolUse only (its
#: ``post-tool-use.command.input`` schema: ``tool_name``, ``tool_input``, ``tool_response``, ``turn_id``) and
#: runs it in the foreground.
#: PreCompact (capture only, spooled at once) exists in both: Claude Code 2.1.x (``trigger``: manual | auto, run in
#: the background) and Codex 0.171 (its ``pre-compact.command.input`` schema).
_CLAUDE_TOOL_EVENTS = {
    POST_TOOL_USE: Event("PostToolUse", 5, True),
    POST_TOOL_USE_FAILURE: Event("PostToolUseFailure", 5, True),
    PRE_COMPACT: Event("PreCompact", 5, True),
}
_CODEX_TOOL_EVENTS = {POST_TOOL_USE: Event("PostToolUse", 5), PRE_COMPACT: Event("PreCompact", 5)}
#: Recall at the point of action: PreToolUse, in the foreground (the tool waits for it), 2 s timeout over the
#: hook's own 1 s deadline (``hooks/run.py``). Claude Code 2.1.x matches ``matcher`` (a regular expression) against
#: the tool name, so its Read, Grep and other tools never start the hook. Codex 0.171 (``pre-tool-use.command.input``:
#: ``tool_name``, ``tool_input``, ``tool_use_id``, ``turn_id``) names its shell tool ``Bash``; what it names its patch
#: tool in hooks could not be observed (the loopback model is never offered ``apply_patch``), so Codex gets no
#: matcher: the hook runs for every tool there and looks up only shell commands and edits (``adapters/tool_query``).
_CLAUDE_PRE_TOOL = {PRE_TOOL_USE: Event("PreToolUse", 2, False, "Edit|Write|MultiEdit|NotebookEdit|Bash")}
_CODEX_PRE_TOOL = {PRE_TOOL_USE: Event("PreToolUse", 2)}

#: memcue harness name -> its row.
HARNESSES: dict[str, Harness] = {
    "claude-code": Harness("claude-code", "memcue.adapters.claude_code", "memcue.install.claude_code", "claude",
                           {**_COMMAND_HOOK_EVENTS, **_CLAUDE_PRE_TOOL, **_CLAUDE_TOOL_EVENTS}),
    # Codex 0.171 caps SessionEnd hooks at 3 s and warns about more.
    "codex": Harness("codex", "memcue.adapters.codex", "memcue.install.codex", "codex",
                     {**_COMMAND_HOOK_EVENTS, **_CODEX_PRE_TOOL, **_CODEX_TOOL_EVENTS,
                      SESSION_END: Event("SessionEnd", 3)}),
    # Hermes has no command hooks: memcue's provider plugin (install/templates/hermes_plugin.py) sends these
    # names and enforces its own deadlines; PostToolUse for each shell or edit call of a finished turn.
    "hermes": Harness("hermes", "memcue.adapters.hermes", "memcue.install.hermes", "hermes",
                      {**{ours: Event(event.name, None) for ours, event in _COMMAND_HOOK_EVENTS.items()},
                       POST_TOOL_USE: Event("PostToolUse", None)}),
}
#: Every registered harness name, in registry order.
NAMES = tuple(HARNESSES)


def _fold(name: str) -> str:
    """Case- and separator-insensitive form of a name: ``User_Prompt-Submit`` -> ``userpromptsubmit``."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def harness_name(name: str) -> str | None:
    """The registered harness name for ``name`` (``Claude_Code`` -> ``claude-code``), or None if unknown."""
    folded = _fold(name)
    for known in HARNESSES:
        if _fold(known) == folded:
            return known
    return None


def event_name(harness: str, name: str) -> str | None:
    """memcue's event name for ``name`` as the CLI or ``harness`` (a registered name) spells it, or None when
    unsupported: ``user-prompt-submit``, ``UserPromptSubmit`` and ``userpromptsubmit`` all give
    ``user-prompt-submit``. Raises ``KeyError`` for an unregistered ``harness``."""
    folded = _fold(name)
    for ours, event in HARNESSES[harness].events.items():
        if folded in (_fold(ours), _fold(event.name)):
            return ours
    return None


def harness_events(harness: str) -> dict[str, str]:
    """memcue event -> ``harness``'s own event name (the adapter's ``EVENTS``). Raises ``KeyError`` for an
    unregistered ``harness``."""
    return {ours: event.name for ours, event in HARNESSES[harness].events.items()}


def hook_events(harness: str) -> dict[str, tuple[str, int | None]]:
    """``harness``'s event name -> (memcue event, timeout s): what an installer writes (the installer's
    ``EVENTS``). Raises ``KeyError`` for an unregistered ``harness``."""
    return {event.name: (ours, event.timeout_s) for ours, event in HARNESSES[harness].events.items()}


def background_events(harness: str) -> frozenset[str]:
    """``harness``'s own names of the events memcue installs to run in the background (Claude Code's
    ``"async": true``). Raises ``KeyError`` for an unregistered ``harness``."""
    return frozenset(event.name for event in HARNESSES[harness].events.values() if event.background)


def hook_matchers(harness: str) -> dict[str, str]:
    """``harness``'s event name -> the tool-name ``matcher`` memcue writes into that event's hook group, for the
    events that have one. Raises ``KeyError`` for an unregistered ``harness``."""
    return {event.name: event.matcher for event in HARNESSES[harness].events.values() if event.matcher}
