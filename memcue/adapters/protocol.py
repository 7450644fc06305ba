"""The contract every harness adapter module follows (after pre-commit's ``lang_base.py``).

Kept apart from ``base`` so the hook process never imports ``typing``. A harness is one module in
``memcue/adapters/`` providing these names (the shared ones assigned from ``memcue.adapters.base``), named by
its row in ``memcue.harnesses``; ``tests/test_harness_conformance.py`` checks every registered one.
"""

from __future__ import annotations

from typing import Protocol

from memcue.adapters.base import Budget, HookEvent


class Adapter(Protocol):
    """What every harness module provides (``memcue/adapters/<harness>.py``).

    ``NAME`` is the harness's registry name; ``EVENTS`` maps memcue's event names to the harness's own
    (``memcue.harnesses.harness_events(NAME)``); ``MAX_CHARS`` bounds one injected block (characters).
    """

    NAME: str
    EVENTS: dict[str, str]
    MAX_CHARS: int

    def parse(self, event: str, payload: object) -> HookEvent:
        """Turn a decoded stdin payload (any JSON value, or None) into a ``HookEvent``. Never raises.
        Default for command-hook payloads: ``base.command_parse``."""
        ...

    def budget(self, event: str) -> Budget:
        """The token and character budget of the block injected for ``event``. Default: ``base.budget``."""
        ...

    def render(self, event: HookEvent, context: str) -> str:
        """The exact stdout for the harness: "" when there is nothing to inject. Default for
        ``hookSpecificOutput`` harnesses: ``base.render_hook_output``."""
        ...
