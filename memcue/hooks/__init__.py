"""The hook: what a harness runs on every prompt and at session start (standard library only)."""

from __future__ import annotations

import os
import sys


def command(harness: str, event: str, python: str | None = None) -> list[str]:
    """The argv a harness should run for ``harness``/``event``: ``python -I -S <memcue>/hooks/launch.py
    harness event`` with ``python`` (default: this interpreter). ``-S`` skips ``site`` (about a third of
    a bare interpreter start with an editable install; see ``launch.py``). Where a harness needs one shell
    string, ``memcue.install.edits.hooks_json.hook_command`` quotes it for any path."""
    launcher = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch.py")
    return [python or sys.executable, "-I", "-S", launcher, harness, event]
