"""``memcue reindex``: re-embed every memory with the configured embedding model after a model change (case
C17). Thin over ``Client.reindex`` (``POST /reindex``); the sidecar's worker does the work
(``memcue.sidecar.reindex``).

Starts the re-index (or resumes one that was stopped: memories already re-embedded are not done again) and
follows it with a progress bar on the terminal until the new vectors are swapped in. Ctrl-C pauses it (the
progress is kept; run ``memcue reindex`` again to go on); ``--no-wait`` starts it and returns (the sidecar goes
on by itself, also after a restart); ``--status`` only shows where it is. Recall is keyword-only until it
completes. ``--json`` gives the final status. Exit codes: 0 done or nothing to do, 1 error (no model, the model
failed, the sidecar stopped), 2 usage, 75 busy, 130 paused by Ctrl-C.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from memcue.cli.arguments import AddCommand
from memcue.cli.output import emit, progress

#: How often the progress is read (s).
POLL_S = 0.3
#: How long ``memcue reindex`` waits for the embedding model to finish loading before starting (s).
MODEL_WAIT_S = 120.0
#: Exit code of a re-index paused by Ctrl-C (128 + SIGINT, as the shell reports it).
EXIT_PAUSED = 130


def _text(status: dict[str, Any], followed: bool = False) -> str:
    """A status as ``memcue reindex`` prints it; ``followed``: after following a running re-index to its end."""
    state = status["state"]
    if state == "none" and followed and status.get("finished") is not None:
        return (f"re-index done: {status['finished']} memories re-embedded with {status['model']} "
                f"({status['dim']} dims); hybrid recall is back")
    if state == "none":
        return f"nothing to re-index: {status['note']}"
    return status["note"]


def _start(client: Any) -> dict[str, Any]:
    """Start the re-index once the model has loaded (waits up to ``MODEL_WAIT_S``)."""
    deadline = time.monotonic() + MODEL_WAIT_S
    status = client.reindex("start")
    while status["state"] == "warming" and time.monotonic() < deadline:
        time.sleep(POLL_S)
        status = client.reindex("start")
    return status


def _follow(client: Any, status: dict[str, Any]) -> dict[str, Any]:
    """Show the progress of a running re-index until it is no longer running; its last status."""
    while status["state"] == "running":
        progress(status["done"], max(status["total"], 1), "re-embedding memories")
        time.sleep(POLL_S)
        status = client.reindex("status")
    if status["state"] == "none" and status.get("finished") is not None:
        progress(status["finished"], max(status["finished"], 1), "re-embedding memories")
    return status


def cmd_reindex(args: argparse.Namespace) -> int:
    """``memcue reindex [--status] [--no-wait]`` (see the module docstring)."""
    from memcue.client import Client, ClientError

    with Client(timeout_s=30) as client:
        client.ensure_running()
        if args.status:
            status = client.reindex("status")
            return emit(status, args.json, status["note"])
        status = _start(client)
        if args.no_wait or status["state"] != "running":
            ok = status["state"] in ("none", "running")
            return emit(status, args.json, _text(status), ok=ok)
        try:
            status = _follow(client, status)
        except KeyboardInterrupt:
            status = client.reindex("pause")
            emit(status, args.json, f"\nre-index paused at {status['done']} of {status['total']} memories; run "
                                    "`memcue reindex` again to go on from there")
            return EXIT_PAUSED
        except ClientError as exc:
            raise ClientError(f"{exc}; the re-index keeps its progress: run `memcue reindex` again") from exc
    return emit(status, args.json, _text(status, followed=True), ok=status["state"] == "none")


def register(add: AddCommand) -> None:
    """Register ``reindex``."""
    p = add("reindex", "Re-embed every memory with the configured embedding model after a model change "
                       "(resumable; Ctrl-C pauses; recall is keyword-only until it completes).")
    p.add_argument("--status", action="store_true", help="only show the re-index's state and progress")
    p.add_argument("--no-wait", action="store_true", help="start it and return; the sidecar goes on by itself")
    p.set_defaults(fn=cmd_reindex)
