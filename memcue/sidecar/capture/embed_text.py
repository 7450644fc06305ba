"""What of a captured memory's text is embedded: its meaning, without the lists and command lines around it.

A commit's memory ends with ``Files: a.py, b.py``, a test transition's is mostly a shell command and a dotted
test path. Both are kept in the stored text (BM25 and identifier matching find them there), but a sentence
embedding averages every token, so they pull the vector away from what the memory is about. The text embedded
instead (a candidate's ``evidence["embed_text"]``, which the gate passes on as the memory's
``metadata["embed_text"]``, embedded by the worker in place of the content):

- a commit (``capture.commits``): subject, body and the tests it adds, names read as words (``test_late_order``
  -> "test late order"); no file list;
- a test transition (``capture.test_runs``): "A test failed and then passed: <the failure's key line>", the key
  line without the test's dotted path, names read as words.

Measured on the four week scripts' stores (``benchmarks/data/week``): the cosine between a prompt and the
commit it needs rose by 0.018 on average (52 pairs), to the test transition it needs by 0.031 (23 pairs), while
the cosine to prompts that need neither fell by 0.017 (3,240 pairs).
"""

from __future__ import annotations

import re

#: A test's dotted path in parentheses, as unittest prints it: ``(tests.test_crumb.SesameTest.test_x)``.
_DOTTED_PATH = re.compile(r"\([A-Za-z_]\w*(?:\.[A-Za-z_]\w*){2,}\)")


def commit_embedding_text(subject: str, body: str, tests: tuple[str, ...] | list[str]) -> str:
    """A commit's text to embed: ``subject``, ``body`` and the ``tests`` it adds as words; no file list."""
    parts = [subject, body]
    if tests:
        parts.append("Tests added: " + ", ".join(_as_words(t) for t in tests))
    return "\n\n".join(p for p in parts if p)


def transition_embedding_text(key_line: str) -> str | None:
    """A test transition's text to embed from its failure's ``key_line``: "A test failed and then passed: …",
    a test's dotted path in parentheses left out and names read as words; None when nothing is left."""
    key = " ".join(_as_words(_DOTTED_PATH.sub(" ", key_line)).split())
    return f"A test failed and then passed: {key}" if key else None


def _as_words(names: str) -> str:
    """``test_late_order_skips`` -> "test late order skips"."""
    return names.replace("_", " ")
