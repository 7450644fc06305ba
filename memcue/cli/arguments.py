"""What every command group shares when it registers its commands: the registration shape (``AddCommand``),
the project options and the argument types that turn a typo into a usage error (exit 2)."""

from __future__ import annotations

import argparse
import datetime as dt
import math
import re
from collections.abc import Callable
from typing import Protocol

PROJECT_HELP = ("a path in the project (its git top-level is the project, as for the hooks), or a bare project "
                "key as stored; default: the current directory")


class AddCommand(Protocol):
    """What each command group's ``register(add)`` is given: ``add(name, help_text)`` makes the subcommand
    ``memcue NAME`` (its help and description ``help_text``; with a ``--json`` flag unless ``json_flag`` is
    False) and returns its parser, on which the group adds arguments and ``set_defaults(fn=cmd)`` with
    ``cmd(args) -> exit code``."""

    def __call__(self, name: str, help_text: str, json_flag: bool = True) -> argparse.ArgumentParser: ...


def add_project_options(p: argparse.ArgumentParser, *, global_flag: bool = False,
                        all_projects: bool = False) -> None:
    """``--project DIR``; with ``global_flag`` also ``--global`` (a memory for every project), with
    ``all_projects`` also ``--all-projects`` (read every project). ``project_of`` reads them."""
    p.add_argument("--project", metavar="DIR", help=PROJECT_HELP)
    if global_flag:
        p.add_argument("--global", dest="global_", action="store_true", help="a memory for every project")
    if all_projects:
        p.add_argument("--all-projects", action="store_true", help="every project, not just this one")


def project_of(args: argparse.Namespace) -> str | None:
    """The project key a command acts on: None with ``--all-projects``; ``""`` (global) with ``--global``;
    else the key of ``--project`` or of the current directory (``memcue.core.project.project_key``)."""
    if getattr(args, "all_projects", False):
        return None
    from memcue.core.project import project_key

    return project_key(getattr(args, "project", None), global_=getattr(args, "global_", False))


def iso_time(text: str) -> str | float:
    """An ISO 8601 date or date-time ("2026-10-01", "2026-10-01T09:30:00Z") as given, or Unix seconds
    ("1790000000") as a float, as the API takes both; checked here so a typo is a usage error (exit 2) with a
    clear message."""
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        if math.isfinite(seconds):
            return seconds
    try:
        dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 date or date-time (e.g. 2026-10-01 or 2026-10-01T09:30:00Z) nor Unix "
            "seconds") from None
    return text


def count(most: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from 1 to ``most``; anything else is a usage error (exit 2) naming
    the range."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if not 1 <= value <= most:
            raise argparse.ArgumentTypeError(f"{text!r}: must be a whole number from 1 to {most}")
        return value
    return parse


#: ``count(100)``: a recall's result limit.
limit = count(100)
#: A block's token budget: 1 to 100,000 tokens, the sidecar API's range (``api_models``).
token_budget = count(100_000)


def kind(text: str) -> str:
    """An argparse ``type`` for a memory kind: one word, lowercased ("Decision" -> "decision"), of letters, ``_``
    and ``-``, at most 32 characters (what the sidecar accepts); anything else is a usage error (exit 2)."""
    value = text.strip().lower()
    if not re.fullmatch(r"[a-z_-]{1,32}", value):
        raise argparse.ArgumentTypeError(f"{text!r}: a kind is one word of letters, _ and - (at most 32 characters), "
                                         "such as decision, preference, bug, howto or note")
    return value


def days(most: float) -> Callable[[str], float]:
    """An argparse ``type`` for a number of days: more than 0 and at most ``most``; anything else is a usage
    error that names the range."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = 0.0
        if not 0 < value <= most:
            raise argparse.ArgumentTypeError(f"{text!r}: days must be more than 0 and at most {most:g}")
        return value
    return parse


def tag(text: str) -> str:
    """An argparse ``type`` for a tag: normalised as the store keeps it ("Web UI" -> "web-ui"); anything else is a
    usage error (exit 2) saying what a tag may hold."""
    value = re.sub(r"\s+", "-", text.strip().lower())
    if not re.fullmatch(r"[a-z0-9][a-z0-9_.:/-]{0,47}", value):
        raise argparse.ArgumentTypeError(f"{text!r}: a tag is a letter or digit, then letters, digits, _ . : / - "
                                         "(at most 48 characters)")
    return value


def add_tag_option(p: argparse.ArgumentParser, help_text: str) -> None:
    """``--tag TAG`` (repeatable) on ``p``: ``args.tags``, a list."""
    p.add_argument("--tag", dest="tags", action="append", type=tag, default=[], metavar="TAG", help=help_text)
