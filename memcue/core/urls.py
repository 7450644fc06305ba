"""URL checks shared by the parts that may send text to a model the user configured (the answer check, the
distiller): whether a URL stays on this machine. Standard library only."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_loopback(url: str) -> bool:
    """True when ``url``'s host is this machine (localhost or a loopback address)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
