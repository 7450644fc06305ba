"""The embedded backend: SQLite through apsw, FTS5 for keywords, sqlite-vec for vectors, schema changes as
numbered migrations (``migrations``). ``Store`` is its facade; each part (``memories``, ``keywords``,
``vectors``, ``graph``, ``timeline``, ``forgetting``, ``usage``, ``meta``) owns its SQL."""

from memcue.sidecar.store.sqlite.db import VecStatus, connect
from memcue.sidecar.store.sqlite.keywords import DF_CAP
from memcue.sidecar.store.sqlite.store import Store

__all__ = ["DF_CAP", "Store", "VecStatus", "connect"]
