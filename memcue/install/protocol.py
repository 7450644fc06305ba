"""The contract every harness installer module follows (after pre-commit's ``lang_base.py``).

A harness's installer is one module, ``memcue/install/<harness>.py``, named by its row in
``memcue.harnesses``, providing every name below; where it does not differ it assigns the shared default
from ``memcue.install.base`` (``files = base.no_files``), so nothing is probed for. ``tests/
test_harness_conformance.py`` checks every registered installer against this.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol


class Installer(Protocol):
    """What every harness installer module provides (``memcue/install/<harness>.py``).

    ``NAME`` is the harness's registry name; ``EVENTS`` maps the harness's event names to (memcue event,
    timeout s) as the registry gives them (``memcue.harnesses.hook_events(NAME)``). ``settings`` is the parsed
    config file (any mapping the module's ``parse`` returns), ``style`` what ``dump`` needs to write it back
    byte for byte. Every function raises ``InstallError`` (``memcue.install.edits.files``) for a file it will not
    touch, having changed nothing.
    """

    NAME: str
    EVENTS: dict[str, tuple[str, int | None]]
    #: True when ``memcue install <harness>`` registers memcue's MCP server unless told ``--no-mcp``.
    MCP_BY_DEFAULT: bool

    def settings_path(self) -> Path:
        """The user's config file memcue edits."""
        ...

    def project_settings_path(self, project: Path) -> Path | None:
        """The per-project config file in the project root ``project``, or None when the harness has none
        (default ``base.no_project_settings``)."""
        ...

    def keep_out_of_git(self, project: Path) -> str:
        """After a per-project install: keep the personal file out of git; returns a note ("" when nothing was
        done; default ``base.nothing_to_keep_out``). Never raises."""
        ...

    def parse(self, data: bytes | None, path: Path) -> tuple[Any, dict[str, Any]]:
        """``(settings, style)`` from the file's bytes (None: no file)."""
        ...

    def dump(self, settings: Any, style: dict[str, Any]) -> bytes:
        """The file's bytes for ``settings`` in ``style``."""
        ...

    def install(self, settings: Any, path: Path, python: str | None = None, mcp: bool = True) -> Any:
        """``settings`` with memcue wired in (edited in place and returned); ``python`` the interpreter the
        hook runs with (default: this one); ``mcp``: memcue's MCP server is (to be) registered, so what the
        harness needs in this file to let the agent use it goes in too (Claude Code: its permission rule)."""
        ...

    def uninstall(self, settings: Any, path: Path, state: dict[str, Any] | None = None) -> Any:
        """``settings`` without memcue (edited in place and returned); ``state`` is what ``install_state``
        recorded."""
        ...

    def files(self, python: str | None = None) -> dict[Path, bytes]:
        """Whole files memcue owns outright in the harness (path -> bytes; default ``base.no_files``)."""
        ...

    def install_state(self, settings: Any, recorded: dict[str, Any]) -> dict[str, Any]:
        """What an install over ``settings`` replaces, kept in the install record and passed back to
        ``uninstall`` (``recorded``: the state an earlier install kept; default ``base.no_state``: {})."""
        ...

    def install_note(self, settings: Any) -> str:
        """The install report's note ("" for none; default ``base.no_note``)."""
        ...

    def check(self) -> dict[str, Any]:
        """``memcue doctor``'s finding for this harness (``doctor.finding`` shape, with ``installed``)."""
        ...

    def mcp_registered(self) -> dict[str, Any] | None:
        """The harness's current ``memcue`` MCP server entry (``{"command", "args", "env"}``), or None; read
        without starting it (default ``base.no_mcp_server``: None)."""
        ...

    def mcp_add(self, state_dir: Path, argv: list[str], home: Path, replace: bool) -> str:
        """Register memcue's MCP server ``argv`` with ``MEMCUE_HOME=home`` (``replace``: an older entry of ours
        is there); returns what was done."""
        ...

    def mcp_remove(self, state_dir: Path) -> str:
        """Remove memcue's MCP server registered by ``mcp_add``; returns what was done ("" for nothing)."""
        ...

    def mcp_preview(self, state_dir: Path, argv: list[str], home: Path, replace: bool) -> str:
        """What ``mcp_add`` would do, for a dry run (a command it would run, the text it would append), changing
        nothing; "" when it would do nothing. ``replace`` as for ``mcp_add``."""
        ...
