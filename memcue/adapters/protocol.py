"""The contract every harness module follows (after pre-commit's ``lang_base.py``).

Kept apart from ``base`` so the hook process never imports ``typing``. A harness is one module in
``memcue/adapters/`` providing these names, registered in ``memcue.adapters.HARNESSES``.
"""

from __future__ import annotations

from typing import Protocol

from memcue.adapters.base import Budget, HookEvent


class Adapter(Protocol):
    """What every harness module provides (``memcue/adapters/<harness>.py``).

    ``EVENTS`` maps memcue's event names (``memcue.adapters.base.EVENTS``) to the harness's own.
    """

    NAME: str
    EVENTS: dict[str, str]

    def parse(self, event: str, payload: object) -> HookEvent:
        """Turn a decoded stdin payload (any JSON value, or None) into a ``HookEvent``. Never raises."""
        ...

    def budget(self, event: str) -> Budget:
        """The token and character budget of the block injected for ``event``."""
        ...

    def render(self, event: HookEvent, context: str) -> str:
        """The exact stdout for the harness: "" when there is nothing to inject."""
        ...
