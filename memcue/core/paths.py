"""Where memcue keeps its files: one resolver for the hook, the sidecar and the CLI.

Standard library only (the hook path imports it). The data directory is ``$MEMCUE_HOME`` when set,
otherwise the same folder ``platformdirs.user_data_dir("memcue")`` gives on Linux and macOS
(``$XDG_DATA_HOME/memcue``, default ``~/.local/share/memcue``; ``~/Library/Application Support/memcue``).
A test checks that the two agree, so the hook never needs platformdirs.

``$MEMCUE_HOME`` must be absolute (``~`` is expanded). A relative one is refused with ``RelativeHomeError``
everywhere: the hook, the sidecar, the CLI and the MCP server all run in folders of their own (a hook in the
user's project), so a relative data dir would scatter stores across projects, and the folder the user meant
it from cannot be known. The CLI and sidecar report the error; the hook fails open (creates nothing).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: AF_UNIX paths longer than this do not fit ``sockaddr_un.sun_path`` (108 bytes on Linux, 104 on macOS).
MAX_SOCKET_PATH_BYTES = 100
#: Files the hooks and the MCP server keep at the top of the data dir: the record of the hook's last
#: version-mismatch restart (``hooks.upgrade``), the mark of a stalled sidecar (``hooks.run``), the MCP server's
#: handshake cache (``mcp.early``).
RESTART_RECORD = "restart.json"
STALL_MARK = "hook-stalled"
MCP_HANDSHAKE_CACHE = "mcp_handshake.json"
#: The names memcue writes at the top of its data dir: ``Locations``' own and the three above. Anything else
#: there is the user's: the sidecar leaves its mode alone.
DATA_DIR_ENTRIES = frozenset({
    "memcue.db", "memcue.db-wal", "memcue.db-shm", "memcue.db-journal", "sidecar.sock", "sidecar.pid",
    "sidecar.lock", "logs", "spool", "models", "tiktoken", "config.toml", "install", RESTART_RECORD, STALL_MARK,
    MCP_HANDSHAKE_CACHE,
})


class RelativeHomeError(OSError):
    """``$MEMCUE_HOME`` is set to a relative path (see the module docstring). An ``OSError``: the environment
    names an unusable data directory, and callers that handle a missing or unwritable data dir handle this too.
    """


def data_dir() -> Path:
    """The data directory (not created), absolute. ``$MEMCUE_HOME`` (``~`` expanded) wins over the platform
    default. Raises ``RelativeHomeError`` when ``$MEMCUE_HOME`` is relative."""
    home = os.environ.get("MEMCUE_HOME")
    if home:
        path = Path(home).expanduser()
        if not path.is_absolute():
            raise RelativeHomeError(
                f"MEMCUE_HOME={home!r} is a relative path; memcue needs an absolute one (hooks run in your "
                "projects' folders, and a relative data dir would be made inside each). Set it to an absolute "
                "path, or unset it for the default.")
        return path
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "memcue"
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / "memcue"


class Locations:
    """Every path memcue uses, derived from one data directory ``root``.

    Attributes are absolute paths. ``socket`` falls back to a short path in a private folder of the user's in
    the temp dir (``<tmp>/memcue-<uid>/``, mode 0700) when the data dir is too deep for an AF_UNIX address (see
    ``MAX_SOCKET_PATH_BYTES``); ``socket_trusted`` says whether that folder is really the user's. A plain class
    rather than a dataclass: the hook imports this module on every prompt.
    """

    __slots__ = ("root",)

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Locations) and self.root == other.root

    def __hash__(self) -> int:
        return hash(self.root)

    def __repr__(self) -> str:
        return f"Locations({str(self.root)!r})"

    @property
    def database(self) -> Path:
        return self.root / "memcue.db"

    @property
    def socket(self) -> Path:
        path = self.root / "sidecar.sock"
        if len(os.fsencode(path)) <= MAX_SOCKET_PATH_BYTES:
            return path
        import hashlib  # only for deep data dirs: kept off the hook's import path
        import tempfile

        digest = hashlib.sha256(os.fsencode(self.root)).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"memcue-{os.getuid()}" / f"{digest}.sock"

    def socket_trusted(self) -> bool:
        """Whether ``socket`` may be used: always in the data dir; a fallback socket only inside a private folder
        of this user's (``private_dir``), so another local user cannot put a socket of theirs in its place."""
        path = self.socket
        return path.parent == self.root or private_dir(path.parent)

    @property
    def pid_file(self) -> Path:
        return self.root / "sidecar.pid"

    @property
    def lock_file(self) -> Path:
        return self.root / "sidecar.lock"

    @property
    def sidecar_log(self) -> Path:
        return self.root / "logs" / "sidecar.log"

    @property
    def hook_log(self) -> Path:
        return self.root / "logs" / "hook.log"

    @property
    def spool_dir(self) -> Path:
        return self.root / "spool"

    @property
    def models_dir(self) -> Path:
        return self.root / "models"

    @property
    def tiktoken_cache(self) -> Path:
        return self.root / "tiktoken"

    @property
    def config_file(self) -> Path:
        return self.root / "config.toml"

    def install_record(self, name: str) -> Path:
        """Where ``memcue install`` keeps its record ``name`` (a harness's hooks: its name; the MCP server it
        registered with a harness: ``mcp_record(harness)``)."""
        return self.root / "install" / f"{name}.json"


def mcp_record(harness: str, *, declined: bool = False) -> str:
    """The install-record name of the MCP server memcue registered with ``harness`` (``Locations.install_record``),
    or, ``declined``, of the user's ``--no-mcp`` for it."""
    return f"mcp-declined-{harness}" if declined else f"mcp-{harness}"


def locations() -> Locations:
    """Locations for the current environment (reads ``MEMCUE_HOME`` each call). Raises ``RelativeHomeError``
    (``data_dir``)."""
    return Locations(data_dir())


def private_dir(path: Path) -> bool:
    """Whether ``path`` is a real folder (not a symlink) owned by this user that no one else can enter or list
    (no group or other permission bits). False when it is missing or unreadable."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (st.st_mode & 0o170000) == 0o040000 and st.st_uid == os.getuid() and not st.st_mode & 0o077


def socket_blocked(path: Path) -> bool:
    """True when something other than a socket sits at ``path``: the sidecar will not start there and
    memcue never deletes it (case C09)."""
    import stat  # off the hook's common path: only asked after a failed connect

    try:
        return not stat.S_ISSOCK(os.lstat(path).st_mode)
    except OSError:
        return False

