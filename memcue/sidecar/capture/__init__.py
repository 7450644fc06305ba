"""Capture: what becomes a memory without an explicit remember. Today the spool the hooks write while the
sidecar is unreachable (``SpoolReader``)."""

from memcue.sidecar.capture.spool import SpoolReader

__all__ = ["SpoolReader"]
