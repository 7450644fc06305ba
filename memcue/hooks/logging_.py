"""Best-effort diagnostics for the hook: one timestamped line per event in ``locations().hook_log``, secrets
redacted (``memcue.core.redaction``).

Standard library only. Never raises and never writes to stdout or stderr: the harness reads stdout,
and stderr can surface in the user's session.
"""

from __future__ import annotations

import os
import time

from memcue.core.paths import locations

#: The log is rotated to ``hook.log.1`` when it grows past this many bytes (1 MiB).
MAX_LOG_BYTES = 1 << 20

#: Prefix of every line: set by the runner once it knows the harness and event.
context = ""


def log(message: str) -> None:
    """Append ``<UTC time> pid=<pid> <context> <message>`` to the hook log, secrets in ``message`` replaced by
    markers; swallow every error."""
    try:
        from memcue.core.redaction import redact  # only a run that logs pays for the rules

        message = redact(message).text
        path = locations().hook_log
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            if path.stat().st_size > MAX_LOG_BYTES:
                os.replace(path, path.with_name(path.name + ".1"))
        except OSError:
            pass
        now = time.time()
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"
        text = " ".join(part for part in (stamp, f"pid={os.getpid()}", context, message) if part)
        line = text.replace("\n", "\\n") + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "backslashreplace"))
        finally:
            os.close(fd)
    except Exception:  # diagnostics must never break the hook
        pass
