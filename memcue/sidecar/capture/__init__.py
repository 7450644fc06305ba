"""Capture: what becomes a memory without an explicit remember. Today the spool the hooks write while the
sidecar is unreachable (``SpoolReader``), and the hook captures delivered lately (``TwinDeliveries``)."""

from memcue.sidecar.capture.spool import SpoolReader
from memcue.sidecar.capture.twins import TwinDeliveries

__all__ = ["SpoolReader", "TwinDeliveries"]
