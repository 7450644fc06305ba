"""``memcue install`` / ``uninstall`` / ``doctor``: wire memcue into a harness's config, take it out, check it.

The face of the package: ``install``, ``uninstall``, ``installer``, ``present`` (``install.engine``),
``InstallError`` and ``HARNESS_CHOICES``. One module per harness (``install/<harness>.py``, the
``install.protocol.Installer`` contract with the defaults of ``install.base``), named by its row in
``memcue.harnesses``; the safe file edits (``edits``: JSON hooks, YAML, TOML), Codex's
hook trust (``codex_trust``), MCP server registration (``mcp_servers``) and ``doctor`` beside them.
"""

from __future__ import annotations

from memcue.harnesses import NAMES
from memcue.install.edits.files import InstallError
from memcue.install.engine import install, installer, present, uninstall

#: What ``memcue install`` / ``uninstall`` accept: every registered harness, or ``all``.
HARNESS_CHOICES = (*NAMES, "all")

__all__ = ["HARNESS_CHOICES", "InstallError", "install", "installer", "present", "uninstall"]
