"""The store's text cleaner (case C06) is ``memcue.core.text.sanitize_text``, the one cleaner for text that
enters memcue; this module names it for the store's write path."""

from memcue.core.text import sanitize_text

__all__ = ["sanitize_text"]
