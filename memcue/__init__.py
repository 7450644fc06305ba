"""memcue: local long-term memory for coding agents.

This module is imported by the hook path, so it must import the standard library only.
"""

__version__ = "0.1.0"
