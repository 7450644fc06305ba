"""Handing freed heap memory back to the system after a large, short-lived allocation (a model load, a
full vector-index load), so the sidecar's resident size reflects what it keeps (issue 4: RSS <= 350 MB)."""

from __future__ import annotations


def trim_heap() -> None:
    """Release free heap pages to the system with glibc's ``malloc_trim(0)``; does nothing where glibc is
    absent (musl, macOS). Never raises."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


#: glibc's ``mallopt`` parameter number for the arena limit (``M_ARENA_MAX`` in malloc.h).
_M_ARENA_MAX = -8
#: Arenas the sidecar allows: glibc's default (8 per core) lets each thread pool worker keep its own
#: arena of freed memory; two keep the resident size close to what is in use.
ARENAS = 2


def limit_arenas(arenas: int = ARENAS) -> None:
    """Cap glibc's malloc arenas at ``arenas`` (call before threads start); nothing elsewhere. Never raises."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(_M_ARENA_MAX, int(arenas))
    except (OSError, AttributeError):
        pass
