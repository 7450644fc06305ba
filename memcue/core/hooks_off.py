"""The variable that turns memcue's hooks off for one process tree: set (to anything but "", "0") in the
environment of the headless harness CLI the optional model distiller runs (``sidecar/capture/distill_runners.py``),
so that CLI's own session, whose prompt is the transcript being distilled, is never captured, recalled for or
distilled again (which would loop until the day's budget was spent). Standard library only (the hook reads it)."""

from __future__ import annotations

import os

HOOKS_OFF_ENV = "MEMCUE_HOOKS_OFF"


def hooks_off() -> bool:
    """True when this process's environment turns memcue's hooks off."""
    return os.environ.get(HOOKS_OFF_ENV, "").strip() not in ("", "0")
