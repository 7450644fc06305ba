"""The hook run: stdin -> adapter -> sidecar -> stdout, under one deadline, failing open.

Standard library only (plus ``memcue.hooks``, ``memcue.adapters``, ``memcue.harnesses``, ``memcue.core``). The contract:
exit status 0 whatever happens, stdout either empty or the adapter's one JSON object, nothing on stderr;
diagnostics go to ``locations().hook_log``. Environment:

- ``MEMCUE_HOOK_DEADLINE_S``: the whole run's deadline in seconds from process start (default 2.5 for
  prompt hooks, 4.5 at session start, 1.0 before a tool call). On Linux the start is the kernel's
  (``process_started``), so time spent starting the interpreter under CPU contention counts, as it does for
  the harness's timeout.
- ``MEMCUE_HOOK_SPAWN``: ``0``/``false``/``no``/``off`` stops the hook from starting the sidecar when
  nothing listens on the socket (for setups that manage the sidecar themselves).
- ``MEMCUE_HOOK_DEBUG``: when set, every run logs one summary line with its timings (ms).

A prompt with text always ends stored (the sidecar answered 2xx) or spooled: when the sidecar cannot be
asked in time (the payload came late), is unreachable, fails, or is only probed and says nothing, and
when the watchdog fires first. Either way under the event's ``request_id`` (``hooks.request_id``), which two
hook processes for one delivery (a hook registered twice) share, so the store counts the prompt once.
"""

from __future__ import annotations

import os
import time
from types import ModuleType

from memcue import __version__, adapters
from memcue.adapters.base import (
    POST_TOOL_USE,
    POST_TOOL_USE_FAILURE,
    PRE_COMPACT,
    PRE_TOOL_USE,
    SESSION_END,
    SESSION_START,
    STOP,
    USER_PROMPT_SUBMIT,
    Budget,
    HookEvent,
)
from memcue.core.hooks_off import hooks_off
from memcue.core.paths import STALL_MARK, locations, socket_blocked
from memcue.core.switches import HOOK_SPAWN_ENV, switched_off
from memcue.core.text import scrub_surrogates
from memcue.hooks import logging_
from memcue.hooks.logging_ import log
from memcue.hooks.request_id import request_id
from memcue.hooks.stdin import decode_payload, read_stdin

#: Default deadline (s from process start) per event; other events get ``DEFAULT_DEADLINE_S``. Prompt
#: hooks leave 0.5 s under the 3 s timeout memcue installs; session start has more room. A tool call waits for its
#: PreToolUse hook, so that one gets 1 s (the sidecar answers a lookup in milliseconds, or not at all).
DEADLINES_S: dict[str, float] = {USER_PROMPT_SUBMIT: 2.5, SESSION_START: 4.5, PRE_TOOL_USE: 1.0}
#: Events that only record (spooled at once, no sidecar call, no output); Claude Code's SessionEnd hooks
#: share a 1.5 s budget (DESIGN.md section 3).
CAPTURE_ONLY = (STOP, SESSION_END, POST_TOOL_USE, POST_TOOL_USE_FAILURE, PRE_COMPACT)
DEFAULT_DEADLINE_S = 2.5
DEADLINE_ENV = "MEMCUE_HOOK_DEADLINE_S"
SPAWN_ENV = HOOK_SPAWN_ENV
DEBUG_ENV = "MEMCUE_HOOK_DEBUG"

#: Waiting for stdin ends this long (s) before the deadline, or at half the deadline if that is later.
#: Bytes already in the pipe are read whenever the hook gets to them (``read_stdin``); this bounds only the
#: wait for a payload not written yet: a harness writing late (or as starved as the hook) gets until 2.4 s
#: of a prompt hook's 2.5 s, under its 3 s timeout. What is left after a late payload goes to the sidecar,
#: or, under ``MIN_ASK_S``, straight to the spool (an append of a few ms; the watchdog adds
#: ``WATCHDOG_GRACE_S`` past the deadline for it). A stdin held open with nothing on it costs the same wait.
STDIN_RESERVE_S = 0.1
#: With less than this left (s) once the payload is read, the sidecar is not asked (its smallest budget,
#: ``MIN_BUDGET_S``, plus the trip would overrun the deadline): the prompt is spooled at once.
MIN_ASK_S = 0.2
#: The sidecar is asked to answer this long (s) before the hook's deadline, to leave time for the reply
#: to travel and be printed; never less than ``MIN_BUDGET_S``.
BUDGET_MARGIN_S = 0.25
MIN_BUDGET_S = 0.1
#: The sidecar's API accepts budgets up to this many seconds (a long ``MEMCUE_HOOK_DEADLINE_S`` is capped).
MAX_BUDGET_S = 60.0
#: Network waits end this long (s) before the deadline, leaving time to spool and print.
FINISH_MARGIN_S = 0.05
#: While a freshly started sidecar comes up, the socket is retried every this many seconds.
POLL_INTERVAL_S = 0.05
#: If anything at all still runs this long (s) after the deadline, the watchdog exits 0 silently, after
#: spooling a prompt that is neither stored nor spooled yet; a hook that starts past its deadline still
#: gets ``WATCHDOG_GRACE_S`` to read, spool and exit.
WATCHDOG_GRACE_S = 0.25
#: A kernel start time saying the process is older than this (s) is not trusted (``process_started``): no
#: harness waits that long for a hook, so the clocks must disagree, and trusting them would send every
#: prompt to the spool unasked.
MAX_START_AGE_S = 60.0
#: The watchdog's own spooling gets this long (s) before the process exits regardless.
WATCHDOG_SPOOL_S = 0.2
#: How long (s) to drain stdin when the harness or event is unknown (so the harness never sees EPIPE).
DRAIN_S = 0.2
#: A working sidecar answers by its budget (with nothing, if need be). When one took a hook's request and
#: sent not one byte of an answer although the hook waited past the budget it gave (stopped, wedged),
#: hooks in the next ``STALL_WINDOW_S`` seconds give it only ``STALL_PROBE_S`` seconds: a hung sidecar then
#: costs each prompt 0.3 s instead of 2.5 s. A sidecar that answered slowly (some bytes came), answered with
#: an error (busy), or was given less than its budget (a late payload) does not arm it, and a probe that
#: times out does not re-arm it (a busy sidecar must not keep itself on probation); a probe that gets any
#: answer ends it. The mark is the modification time of ``STALL_MARK`` (``core.paths``) in the data dir.
STALL_WINDOW_S = 60.0
STALL_PROBE_S = 0.3


class Outcome:
    """What a sidecar call produced: the context to inject, whether to spool the prompt, and why."""

    __slots__ = ("context", "spool", "error", "answered_by", "version")

    def __init__(self, context: str = "", spool: bool = False, error: str = "", answered_by: str = "",
                 version: str = "") -> None:
        self.context = context
        self.spool = spool
        self.error = error
        self.answered_by = answered_by
        self.version = version


def deadline_seconds(event: str) -> float:
    """The run's deadline in seconds for ``event``: ``$MEMCUE_HOOK_DEADLINE_S`` if a positive number."""
    raw = os.environ.get(DEADLINE_ENV, "").strip()
    if raw:
        try:
            value = float(raw)
            if 0 < value < 3600:
                return value
        except ValueError:
            pass
        log(f"ignoring {DEADLINE_ENV}={raw!r}")
    return DEADLINES_S.get(event, DEFAULT_DEADLINE_S)


def spawn_enabled() -> bool:
    """False when ``$MEMCUE_HOOK_SPAWN`` is 0/false/no/off."""
    return not switched_off(SPAWN_ENV)


def process_started(fallback: float) -> float:
    """When this process started, as a ``time.monotonic()`` value (s), never later than ``fallback``.

    On Linux, the kernel's start time (``/proc/self/stat`` field 22, clock ticks on the boot clock), which
    counts the interpreter's own start-up; elsewhere, if that cannot be read, or if it says the process
    is older than ``MAX_START_AGE_S`` (clocks that disagree), ``fallback`` (the time the entry module was
    imported).
    """
    try:
        with open("/proc/self/stat", "rb") as stat:
            ticks = int(stat.read().rpartition(b")")[2].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return fallback
    if not 0 <= age < MAX_START_AGE_S:
        return fallback
    return min(fallback, time.monotonic() - age)


#: The prompt of this run while it is neither stored by the sidecar nor spooled (the watchdog spools it).
_unsaved: list[HookEvent] = []


def _arm_watchdog(at: float) -> None:
    """Exit 0 silently if the process is still running at monotonic time ``at`` (s), spooling the prompt
    first if it is neither stored nor spooled yet (``_unsaved``)."""
    import signal

    def fire(signum: int, frame: object) -> None:
        if _unsaved:
            event = _unsaved.pop()
            signal.setitimer(signal.ITIMER_REAL, WATCHDOG_SPOOL_S)  # fires again (and exits) if this hangs
            log("watchdog: still running after the deadline; spooling the prompt and exiting silently")
            _spool_prompt(event)
        else:
            log("watchdog: still running after the deadline; exiting silently")
        os._exit(0)

    signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, max(0.01, at - time.monotonic()))


def _disarm_watchdog() -> None:
    import signal

    signal.setitimer(signal.ITIMER_REAL, 0)


def _request_body(event: HookEvent, budget: Budget, deadline: float) -> dict[str, object]:
    budget_s = min(MAX_BUDGET_S, max(MIN_BUDGET_S, deadline - time.monotonic() - BUDGET_MARGIN_S))
    return {
        "event": event.to_dict(),
        "budget_s": round(budget_s, 3),
        "sent_at": round(time.time(), 3),  # the sidecar takes the time this request waits off budget_s
        "max_tokens": budget.max_tokens,
        "max_chars": budget.max_chars,
    }


def ask_sidecar(event: HookEvent, budget: Budget, deadline: float, *, may_spawn: bool,
                wait_for_start: bool = True) -> dict[str, object]:
    """POST the event to ``/hooks/{harness}/{event}`` and return the sidecar's JSON answer.

    ``deadline`` is a ``time.monotonic()`` value (s). When nothing listens on the socket and
    ``may_spawn`` is true, starts the sidecar once; with ``wait_for_start`` it retries every
    ``POLL_INTERVAL_S`` until the deadline (session start, case C10), without it the hook goes on at once
    (a prompt: the sidecar needs about a second to come up, longer than anyone should wait while typing).
    Raises ``SidecarError`` (or ``SidecarUnreachable``) when no answer came.
    """
    from memcue.hooks.client import SidecarUnreachable, post_json, spawn_sidecar  # off the capture-only path

    path = f"/hooks/{event.harness}/{event.event}"
    net_deadline = deadline - FINISH_MARGIN_S
    try:
        answer = post_json(path, _request_body(event, budget, deadline), net_deadline)
    except SidecarUnreachable as exc:
        if not may_spawn:
            raise
        first = exc
    else:
        return answer if isinstance(answer, dict) else {}
    if _blocked_socket():
        raise first
    try:
        pid = spawn_sidecar()
    except (OSError, ValueError) as exc:
        log(f"could not start the sidecar: {exc}")
        raise first from None
    log(f"sidecar unreachable ({first}); started pid={pid}")
    if not wait_for_start:
        raise SidecarUnreachable("started the sidecar; not waiting for it on a prompt (it answers the next one)")
    socket_path = locations().socket
    while True:
        left = net_deadline - time.monotonic()
        if left <= 0:
            raise SidecarUnreachable("started the sidecar but it did not answer before the deadline")
        time.sleep(min(POLL_INTERVAL_S, left))
        if not os.path.exists(socket_path):
            continue
        try:
            answer = post_json(path, _request_body(event, budget, deadline), net_deadline)
        except SidecarUnreachable:
            continue
        return answer if isinstance(answer, dict) else {}


def _blocked_socket() -> bool:
    """True (and logged) when something other than a socket sits at the socket path: the sidecar refuses
    to start there (case C09), so starting one on every prompt would only fail again."""
    path = locations().socket
    if not socket_blocked(path):
        return False
    log(f"{path} exists and is not a socket; not starting the sidecar (move it away, or set MEMCUE_HOME)")
    return True


def _stalled_recently(mark: str) -> bool:
    try:
        return time.time() - os.stat(mark).st_mtime < STALL_WINDOW_S
    except OSError:
        return False


def _set_stalled(mark: str, stalled: bool) -> None:
    try:
        if stalled:
            with open(mark, "a"):
                os.utime(mark)
        else:
            os.unlink(mark)
    except OSError:
        pass


def _outcome(event: HookEvent, budget: Budget, deadline: float) -> Outcome:
    """Ask the sidecar (or only probe it, ``STALL_PROBE_S``) and say what to inject and whether to spool."""
    from memcue.hooks.client import SidecarError  # capture-only events (tool calls, Stop) never load socket

    mark = os.path.join(locations().root, STALL_MARK)
    probing = _stalled_recently(mark)
    if probing:
        log(f"the sidecar gave no answer recently; giving it {STALL_PROBE_S} s")
        deadline = min(deadline, time.monotonic() + STALL_PROBE_S)
    asked = time.monotonic()
    given_s = deadline - asked - BUDGET_MARGIN_S  # the budget the sidecar is told (before the clamp)
    try:
        answer = ask_sidecar(event, budget, deadline, may_spawn=spawn_enabled(),
                             wait_for_start=event.event not in (USER_PROMPT_SUBMIT, PRE_TOOL_USE))
    except SidecarError as exc:
        if probing and exc.answered:
            _set_stalled(mark, False)
        elif (not probing and exc.reached and not exc.answered
              and time.monotonic() - asked >= max(MIN_BUDGET_S, given_s)):
            _set_stalled(mark, True)  # it took the request and sent not a byte within its own budget
        # Only a 2xx answer proves the sidecar stored the prompt; after a timeout it may or may not
        # have. Spooling then risks a duplicate rather than a loss: the spool record's spool_id is the
        # request_id sent in event.extra, so the sidecar drops a copy of a request it already has (and a twin
        # hook's copy of the same delivery has the same id: hooks.request_id).
        stored = exc.status is not None and 200 <= exc.status < 300
        return Outcome(spool=not stored, error=f"sidecar call failed: {exc}")
    if probing:
        _set_stalled(mark, False)
    context = answer.get("context")
    if not isinstance(context, str):
        return Outcome(error="sidecar answer has no context string")
    return Outcome(context=scrub_surrogates(context), answered_by=str(answer.get("answered_by", "")),
                   version=str(answer.get("version") or ""))


def _spool_prompt(event: HookEvent) -> None:
    """Append the prompt to this session's spool file, then forget it as unsaved; failures are logged."""
    from memcue.core import spool_format
    from memcue.hooks import spool

    try:
        record = spool_format.remember_prompt(
            event.prompt,
            project=event.project,
            session_id=event.session_id,
            harness=event.harness,
            spool_id=str(event.extra.get("request_id") or "") or None,
        )
        path = spool.append(record, spool.spool_path(event.harness, event.session_id))
        log(f"spooled prompt ({len(event.prompt)} characters) to {path}")
    except Exception as exc:  # a full disk must not break the prompt
        log(f"could not spool the prompt: {exc!r}")
    _unsaved.clear()


def _prompt_outcome(event: HookEvent, budget: Budget, deadline: float) -> Outcome:
    """The sidecar's outcome for a prompt, or a spool when it cannot be asked in time or the call breaks."""
    left = deadline - time.monotonic()
    if left < MIN_ASK_S:
        when = (f"{left * 1000:.0f} ms before the deadline" if left >= 0
                else f"{-left * 1000:.0f} ms after the deadline")
        return Outcome(spool=True, error=f"payload read {when}; not asking the sidecar, spooling it")
    try:
        return _outcome(event, budget, deadline)
    except Exception as exc:  # a bug on this path must not lose the prompt
        return Outcome(spool=True, error=f"sidecar call broke: {type(exc).__name__}: {exc}")


def _capture(event: HookEvent) -> None:
    """Spool what a capture-only event records. SessionEnd becomes a "Session ended" row, PreCompact a "Context
    compacted" row (bookkeeping: the record of the session, kept; the optional distiller reads the session at
    either); Stop the turn's answer (``last_assistant_message``) an ``episode`` (it answers
    only "what did we do about X?"; a trivial one is flagged bookkeeping at write). Both are cut like every
    captured text at ``core.limits.CAPTURE_MAX_CHARS`` by the spool writer, after redaction. The record carries its
    provenance: ``source`` "hook:<harness>", the session, and as ``spool_id`` the event's ``request_id`` (the
    turn's id), so the copy a twin hook spools for the same delivery is stored once; it carries the event's
    ``cwd``, where the sidecar reads the session's commits (``sidecar/capture/commits.py``)."""
    if not event.project:
        return
    if event.event in (POST_TOOL_USE, POST_TOOL_USE_FAILURE):
        _capture_tool(event)
        return
    if event.event == SESSION_END:
        text, kind = f"Session ended (reason: {event.extra.get('reason') or 'other'})", "event"
    elif event.event == PRE_COMPACT:
        text, kind = f"Context compacted (trigger: {event.extra.get('trigger') or 'other'})", "event"
    elif event.event == STOP and str(event.extra.get("last_assistant_message") or "").strip():
        text, kind = str(event.extra["last_assistant_message"]), "episode"
    else:
        return
    from memcue.core import spool_format
    from memcue.hooks import spool

    record = spool_format.remember_prompt(text, project=event.project, session_id=event.session_id,
                                          harness=event.harness, kind=kind, spool_id=request_id(event, text),
                                          cwd=event.cwd)
    try:
        spool.append(record, spool.spool_path(event.harness, event.session_id))
    except Exception as exc:  # a full disk must not break the harness
        log(f"could not spool the {event.event}: {exc!r}")


def _capture_tool(event: HookEvent) -> None:
    """Spool a finished tool call's compact record (``extra["tool"]``, built and cut by the adapter: a shell
    command with its exit status and key failure line, or an edit's file paths); nothing for other tools. The
    ``spool_id`` is derived from the tool call's id, so a twin hook's copy is read once."""
    tool = event.extra.get("tool")
    if not isinstance(tool, dict):
        return
    from memcue.core import spool_format
    from memcue.hooks import spool

    turn = str(event.extra.get("turn_id") or event.extra.get("prompt_id") or "")
    call = str(event.extra.get("tool_use_id") or "")
    record = spool_format.tool_call(tool, project=event.project, session_id=event.session_id, harness=event.harness,
                                    turn=turn, spool_id=request_id(event, call) if call else None)
    try:
        spool.append(record, spool.spool_path(event.harness, event.session_id))
    except Exception as exc:  # a full disk must not break the harness
        log(f"could not spool the {event.event}: {exc!r}")


def _write_stdout(text: str) -> None:
    data = memoryview(text.encode("utf-8", "replace"))
    try:
        while data:
            data = data[os.write(1, data) :]
    except OSError as exc:
        log(f"could not write stdout: {exc}")


def _resolve(argv: list[str]) -> tuple[ModuleType, str] | None:
    if len(argv) < 2:
        log(f"usage: python -m memcue.hooks <harness> <event>; got {argv!r}")
        return None
    if len(argv) > 2:
        log(f"ignoring extra arguments {argv[2:]!r}")
    try:
        adapter = adapters.get(argv[0])
    except ImportError as exc:
        log(f"adapter for harness {argv[0]!r} cannot be imported: {exc}")
        return None
    if adapter is None:
        log(f"unknown harness {argv[0]!r}")
        return None
    event = adapters.event_name(adapter, argv[1])
    if event is None:
        log(f"harness {adapter.NAME} has no event {argv[1]!r}")
        return None
    return adapter, event


def run(argv: list[str], started: float) -> None:
    """One hook run for ``argv = [harness, event]``; ``started`` is the process start (monotonic s).

    Prints the adapter's output (or nothing). Exceptions propagate; ``main`` swallows them.
    """
    resolved = _resolve(argv)
    if resolved is None or hooks_off():  # off: the distiller's own headless CLI session (core/hooks_off.py)
        read_stdin(time.monotonic() + DRAIN_S)
        return
    adapter, event_name = resolved
    logging_.context = f"{adapter.NAME} {event_name}"
    total_s = deadline_seconds(event_name)
    deadline = started + total_s
    _arm_watchdog(max(deadline, time.monotonic()) + WATCHDOG_GRACE_S)

    raw = read_stdin(started + max(total_s / 2, total_s - STDIN_RESERVE_S))
    payload, problem = decode_payload(raw)
    if problem:
        log(problem)
    event: HookEvent = adapter.parse(event_name, payload)
    t_parsed = time.monotonic()
    if event_name == USER_PROMPT_SUBMIT and not event.prompt.strip():
        log("no prompt in the payload; nothing to recall")
        return
    if event_name in CAPTURE_ONLY:
        _capture(event)  # hand off to the spool and return at once: nothing is injected
        return
    if event_name == PRE_TOOL_USE and not event.extra.get("tool_query"):
        return  # not an edit or a shell command, or it names nothing: nothing to look up
    event.extra["request_id"] = request_id(event, event.prompt or event.source)  # the same for a twin delivery
    if event_name == USER_PROMPT_SUBMIT:
        _unsaved[:] = [event]
        outcome = _prompt_outcome(event, adapter.budget(event_name), deadline)
    else:
        outcome = _outcome(event, adapter.budget(event_name), deadline)
    if outcome.error:
        log(outcome.error)
    if outcome.spool and event_name == USER_PROMPT_SUBMIT:
        _spool_prompt(event)
    _unsaved.clear()
    output = adapter.render(event, outcome.context)
    _disarm_watchdog()
    if output:
        _write_stdout(output)
    if outcome.version and outcome.version != __version__:
        from memcue.hooks.upgrade import restart_if_other_version  # only on a mismatch: off the common path

        restart_if_other_version(outcome.version)
    if os.environ.get(DEBUG_ENV):
        now = time.monotonic()
        log(
            f"done in {(now - started) * 1000:.1f} ms (parse {(t_parsed - started) * 1000:.1f} ms); "
            f"{len(outcome.context)} characters injected; answered_by={outcome.answered_by or '-'}"
        )


#: What ``--help`` prints (on stderr).
USAGE = ("usage: python -m memcue.hooks HARNESS EVENT < payload.json\n\n"
         "The hook a harness runs (memcue install writes the command). HARNESS: claude-code, codex or hermes; EVENT:\n"
         "user-prompt-submit, session-start, pre-tool-use, post-tool-use, post-tool-use-failure, stop, pre-compact or\n"
         "session-end.\n"
         "It reads the harness's JSON payload on stdin, asks the memcue sidecar for the memories that bear on it\n"
         "(starting the sidecar if needed), prints what the harness injects on stdout, and always exits 0: a\n"
         "failure costs the prompt nothing. Its log: $MEMCUE_HOME/logs/hook.log.\n")


def main(argv: list[str], started: float | None = None) -> int:
    """Run the hook and return the exit status, which is always 0.

    ``started`` is the process start as ``time.monotonic()`` (s); defaults to now.
    """
    if argv[:1] in (["-h"], ["--help"]):
        os.write(2, USAGE.encode())  # stderr: stdout belongs to the harness
        return 0
    try:
        run(argv, time.monotonic() if started is None else started)
    except BaseException as exc:  # fail open: a hook bug must not block the prompt
        try:
            log(f"hook error: {type(exc).__name__}: {exc}")
        except BaseException:
            pass
    return 0
