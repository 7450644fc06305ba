"""The ``memcue`` command: one module per command group, one output and usage-error path (``output``)."""

from memcue.cli.main import main

__all__ = ["main"]
