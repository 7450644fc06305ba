"""Safe edits of a user's config files: read without guessing, back up once, write atomically, record what was
written, and change only memcue's part of a JSON (``hooks_json``), YAML (``yaml_file``) or TOML (``toml_file``)
file. ``files`` holds the shared steps and ``InstallError``."""

from __future__ import annotations

from memcue.install.edits.files import InstallError

__all__ = ["InstallError"]
