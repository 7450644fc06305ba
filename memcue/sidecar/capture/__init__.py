"""Capture: what becomes a memory without an explicit remember. The spool the hooks write while the sidecar is
unreachable (``SpoolReader``); signals that hold candidates (``PromptStatements``: the user's durable statements
in captured prompts, ``find_statements``); the promotion gate every candidate passes to become a memory
(``Gate``); the commits that landed during a session, read from git at Stop/SessionEnd (``CommitSignal``); a test
or build that failed and then passed in a session (``TestRuns``, from spooled tool records); a pending candidate
that recurred in another session of the project (``Recurrence``, ``RECURRING_SIGNALS``); the agent's answer of a
turn embedded with the turn's prompt (``with_turn_requests``; ``backfill_turn_prompts`` for episodes stored
without it); an episode whose turn's edits a later commit landed (``TurnEdits``). The optional model distiller
(off by default) is ``capture.distiller``, its configuration ``capture.distill_config`` and its two ways of
asking a model ``capture.distill_runners``."""

from memcue.sidecar.capture.commits import COMMIT_LANDED, CommitSignal
from memcue.sidecar.capture.episodes import backfill_turn_prompts, with_turn_requests
from memcue.sidecar.capture.gate import (
    EXPIRE_EVERY_S,
    CandidateDecided,
    CandidateHeld,
    CandidateNotFound,
    Gate,
)
from memcue.sidecar.capture.prompts import SIGNAL, USER_STATEMENT, PromptStatements
from memcue.sidecar.capture.recurrence import RECURRED, RECURRING_SIGNALS, Recurrence
from memcue.sidecar.capture.spool import SpoolReader
from memcue.sidecar.capture.statements import Statement, find_statements
from memcue.sidecar.capture.test_runs import TestRuns
from memcue.sidecar.capture.turn_edits import EPISODE_COMMITTED, TurnEdits

__all__ = ["COMMIT_LANDED", "EPISODE_COMMITTED", "EXPIRE_EVERY_S", "RECURRED", "RECURRING_SIGNALS", "SIGNAL",
           "USER_STATEMENT", "CandidateDecided", "CandidateHeld", "CandidateNotFound", "CommitSignal", "Gate",
           "PromptStatements", "Recurrence", "SpoolReader", "Statement", "TestRuns", "TurnEdits",
           "backfill_turn_prompts", "find_statements", "with_turn_requests"]
