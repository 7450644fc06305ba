"""A minimal HTTP/1.1 client for the sidecar's unix socket, bounded by one deadline.

Standard library only, and deliberately not ``http.client`` (it imports the ``email`` package, which
costs more than the whole request on a warm sidecar). One request per connection with
``Connection: close``. Deadlines are ``time.monotonic()`` values in seconds; every socket operation's
timeout is the time left until the deadline.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

from memcue.core.paths import locations

#: Responses larger than this many bytes are refused (a hook block is under 10,000 characters).
MAX_RESPONSE_BYTES = 4 << 20


class SidecarError(Exception):
    """A sidecar call failed.

    ``reached`` is True when the whole request was written to a connected socket, so the sidecar
    may have it even though no answer came back in time; ``answered`` is True when at least one byte of
    a response came back (a sidecar that answered slowly or badly, as opposed to one that said nothing);
    ``status`` is the HTTP status when a whole answer did come (a non-2xx status, or a 2xx whose body could
    not be decoded), else None.
    """

    def __init__(self, message: str, *, reached: bool = False, status: int | None = None,
                 answered: bool | None = None) -> None:
        super().__init__(message)
        self.reached = reached
        self.status = status
        self.answered = status is not None if answered is None else answered


class SidecarUnreachable(SidecarError):
    """Nothing is listening: no socket file (ENOENT) or connection refused (ECONNREFUSED).

    Starting the sidecar can help; for every other failure it cannot.
    """


def _remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise SidecarError("deadline passed", reached=False)
    return left


def _connect(path: Path, deadline: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(_remaining(deadline))
        sock.connect(os.fsencode(path))
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        sock.close()
        raise SidecarUnreachable(f"connect {path}: {exc.strerror or exc}") from None
    except TimeoutError:
        sock.close()
        raise SidecarError(f"connect {path}: timed out") from None
    except OSError as exc:
        sock.close()
        raise SidecarError(f"connect {path}: {exc}") from None
    except BaseException:
        sock.close()
        raise
    return sock


def _parse_response(raw: bytes) -> tuple[int, bytes]:
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        raise SidecarError("truncated HTTP response", reached=True)
    lines = head.split(b"\r\n")
    parts = lines[0].split(None, 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        raise SidecarError(f"bad status line {lines[0][:80]!r}", reached=True)
    headers: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
        body = _dechunk(body)
    elif b"content-length" in headers:
        length = int(headers[b"content-length"])
        if len(body) < length:
            raise SidecarError("truncated HTTP body", reached=True)
        body = body[:length]
    return int(parts[1]), body


def _dechunk(data: bytes) -> bytes:
    out = bytearray()
    while True:
        size_line, sep, rest = data.partition(b"\r\n")
        if not sep:
            raise SidecarError("truncated chunked body", reached=True)
        size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            return bytes(out)
        if len(rest) < size:
            raise SidecarError("truncated chunked body", reached=True)
        out += rest[:size]
        data = rest[size + 2 :]


def _body_complete(raw: bytes) -> bool:
    """True once ``raw`` holds the headers and a Content-Length body (saves waiting for EOF)."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return len(body) >= int(value.strip())
            except ValueError:
                return False
    return False


def request(
    method: str, path: str, body: bytes | None, deadline: float, *, socket_path: Path | None = None
) -> tuple[int, bytes]:
    """Send one HTTP request to the sidecar and return ``(status, body)``.

    ``deadline`` is a ``time.monotonic()`` value (s). Raises ``SidecarUnreachable`` when nothing
    listens at the socket and ``SidecarError`` for any other failure, including the deadline. An answer
    already waiting in the socket when the deadline passes (the hook was starved of CPU) is still read.
    """
    target = socket_path
    if target is None:
        loc = locations()
        if not loc.socket_trusted():
            raise SidecarUnreachable(f"{loc.socket.parent} is not a private folder of this user's: not connecting")
        target = loc.socket
    payload = body or b""
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: memcue\r\nUser-Agent: memcue-hook\r\n"
        f"Accept: application/json\r\nConnection: close\r\nContent-Length: {len(payload)}\r\n"
    )
    if body is not None:
        head += "Content-Type: application/json\r\n"
    message = head.encode("ascii") + b"\r\n" + payload
    sock = _connect(target, deadline)
    reached = False
    received = bytearray()
    try:
        try:
            sock.settimeout(_remaining(deadline))
            sock.sendall(message)
            reached = True
            _receive(sock, received, deadline)
        except SidecarError as exc:
            exc.reached, exc.answered = reached, bool(received)
            raise
        except TimeoutError:
            what = "timed out waiting for the answer" if reached else "timed out sending the request"
            raise SidecarError(what, reached=reached, answered=bool(received)) from None
        except OSError as exc:
            raise SidecarError(f"{method} {path}: {exc}", reached=reached, answered=bool(received)) from None
    finally:
        sock.close()
    try:
        return _parse_response(bytes(received))
    except SidecarError as exc:
        exc.answered = bool(received)
        raise
    except ValueError as exc:
        raise SidecarError(f"bad HTTP response: {exc}", reached=True, answered=True) from None


def _receive(sock: socket.socket, received: bytearray, deadline: float) -> None:
    """Read the answer into ``received`` until it is complete, EOF, or ``deadline`` (raises TimeoutError).

    At the deadline, bytes already in the socket are still taken (non-blocking) before giving up.
    """
    while not _body_complete(received):
        left = deadline - time.monotonic()
        if left > 0:
            sock.settimeout(left)
            chunk = sock.recv(65536)
        else:
            sock.setblocking(False)
            try:
                chunk = sock.recv(65536)
            except BlockingIOError:
                raise TimeoutError from None
        if not chunk:
            break
        received += chunk
        if len(received) > MAX_RESPONSE_BYTES:
            raise SidecarError("response too large", reached=True, answered=True)


def post_json(path: str, data: dict[str, object], deadline: float, *, socket_path: Path | None = None) -> object:
    """POST ``data`` as JSON and return the decoded JSON answer; non-2xx raises ``SidecarError``."""
    body = json.dumps(data, ensure_ascii=False).encode("utf-8", "replace")
    status, answer = request("POST", path, body, deadline, socket_path=socket_path)
    if not 200 <= status < 300:
        raise SidecarError(f"POST {path}: HTTP {status}: {answer[:200]!r}", reached=True, status=status)
    try:
        return json.loads(answer.decode("utf-8", "replace"), strict=False)
    except ValueError as exc:
        raise SidecarError(f"POST {path}: answer is not JSON: {exc}", reached=True, status=status) from None


def spawn_sidecar() -> int:
    """Start ``python -P -m memcue.sidecar`` detached and return its pid (the caller does not wait).

    New session, stdio on /dev/null, inherited environment with ``MEMCUE_HOME`` made absolute, working
    directory the data dir (``-P`` keeps that directory off ``sys.path``). The sidecar's own
    single-instance lock makes a spare start exit at once.
    """
    import subprocess  # only when the sidecar must be started: kept off the common path

    loc = locations()
    env = dict(os.environ)
    if env.get("MEMCUE_HOME"):
        env["MEMCUE_HOME"] = str(loc.root)
    cwd = "/"
    try:
        loc.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        cwd = str(loc.root)
    except OSError:
        pass
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "memcue.sidecar"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        start_new_session=True,
        cwd=cwd,
        env=env,
    )
    return proc.pid
