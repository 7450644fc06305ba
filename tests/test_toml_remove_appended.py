"""memcue's table comes off Codex's config.toml exactly, also after the user wrote more below it (fresh-clone
trial: the fallback, ``codex mcp remove``, rewrote the user's other tables and dropped their comments)."""

from __future__ import annotations

from pathlib import Path

from memcue.install.edits.toml_file import append, remove_appended

USER = (b'# my Codex settings: keep this comment\nmodel = "o4"\n\n[mcp_servers.notes]  # notes server: keep\n'
        b'command = "notes-mcp"\nenv = { NOTES_DIR = "/srv/notes" }\n')
OURS = b'\n[mcp_servers.memcue]\ncommand = "/venv/bin/python"\nargs = ["-P", "-m", "memcue", "mcp"]\n'


def test_the_block_comes_off_the_end_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(USER)
    added, _, existed = append(path, OURS, "memcue's MCP server")
    assert remove_appended(path, added, existed) and path.read_bytes() == USER


def test_a_table_the_user_added_after_ours_stays_and_so_does_every_other_byte(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(USER)
    added, _, existed = append(path, OURS, "memcue's MCP server")
    later = b'\n[profiles.work]  # added after memcue\nmodel = "o4-mini"\n'
    path.write_bytes(path.read_bytes() + later)
    assert remove_appended(path, added, existed)
    assert path.read_bytes() == USER + later


def test_keys_the_user_added_under_our_table_leave_the_file_to_the_harness(tmp_path: Path) -> None:
    """A key written right after our table belongs to it: cutting the block would move it to another table."""
    path = tmp_path / "config.toml"
    path.write_bytes(USER)
    added, _, existed = append(path, OURS, "memcue's MCP server")
    edited = path.read_bytes() + b"startup_timeout_sec = 20\n"
    path.write_bytes(edited)
    assert not remove_appended(path, added, existed) and path.read_bytes() == edited
