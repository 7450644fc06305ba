"""Identifiers in a query, matched as whole tokens (issue 15, exact identifiers).

A ticket id (``PAY-219``), an environment variable or snake_case name (``BILLING_TIMEOUT_MS``), a flag
(``--dry-run``), a dotted name (``worker.concurrency``), a path (``src/billing/tax.py``), a version (``2.4.1``)
or a URL names one thing. Split into words it matches its siblings: ``PAY-219`` shares "pay" with every
``PAY-`` ticket, and ``2.4.0`` shares its digits with ``2.4.1`` and ``3.0.0``. So recall also compares them
whole: a memory carries an identifier when the identifier appears in it as one token, not as part of a longer
one (``PAY-219`` is not in ``PAY-2190``, ``2.4.0`` is not in ``2.4.0.1``). A path also matches by its tail
(``tax.py`` is carried by ``src/billing/tax.py``). Identifiers are found by the store's entity extraction
(``store.extract_entities``), the same reading that links memories to entities when they are written.

A memory that carries a *sibling* of the identifier asked about instead (``PAY-2190`` or ``PAY-21`` for
``PAY-219``, ``2.4.1`` for ``2.4.0``, ``BILLING_RETRIES`` for ``BILLING_TIMEOUT_MS``: the same family, see
``family``) is about another thing of the same sort, however close its words are.
"""

from __future__ import annotations

import functools
import re

from memcue.sidecar.recall.query.terms import words
from memcue.sidecar.store import extract_entities

#: Entity kinds (``store.extract_entities``) that name one thing exactly.
IDENTIFIER_KINDS = frozenset({"path", "ticket", "version", "identifier", "url"})
_VERSION_LIKE = re.compile(r"\d+(?:\.\d+)+")
#: An "identifier" entity counts only with a joiner or a digit (``snake_case``, ``a.b``, ``--flag``, ``s3``): a
#: CamelCase word alone ("WeasyPrint") is a product's name, not an exact identifier.
_JOINED = re.compile(r"[_./:-]|\d")
_PREFIX = re.compile(r"-{0,2}[a-z][a-z0-9]*[-_.]")
#: A number word: digits, or a version's "v" and digits ("v3" of ``v3.0.1``).
_NUMBER_PIECE = re.compile(r"v?\d+")


def identifiers(text: str) -> list[str]:
    """The identifiers ``text`` names, lowercase, first-occurrence order, no duplicates (see the module
    docstring); ``[]`` for plain prose."""
    names = (name[1:] if kind == "version" and name[:1] == "v" else name for name, kind in extract_entities(text)
             if kind in IDENTIFIER_KINDS and (kind != "identifier" or _JOINED.search(name)))
    return list(dict.fromkeys(names))


def number_pieces(text: str) -> frozenset[str]:
    """The number words (``words``: all digits, or a ``v`` and digits) that are only pieces of the identifiers
    ``text`` names: "2", "1" and "3" of ``2.1.3``, "v3", "0", "1" of ``v3.0.1``, "219" of ``PAY-219``; a number
    the text also says on its own ("step 3 of PAY-3") is not one. Split into words, a version or ticket would
    match any memory that says "3" ("step:3"); recall compares the identifier whole instead (``carried``).
    ``frozenset()`` when the text names no identifier with a number in it."""
    idents = [i for i in identifiers(text) if any(c.isdigit() for c in i)]
    if not idents:
        return frozenset()
    low = text.lower()
    inside: set[str] = set()
    for ident in idents:
        pattern = _token_pattern(ident)
        inside.update(w for m in pattern.finditer(low) for w in words(m.group(0)) if _NUMBER_PIECE.fullmatch(w))
        low = pattern.sub(" ", low)
    return frozenset(inside - set(words(low)))


@functools.lru_cache(maxsize=512)
def _token_pattern(identifier: str) -> re.Pattern[str]:
    """A whole-token pattern for ``identifier``: not preceded by a word character, ``-`` or ``.`` (nor ``/``,
    unless it is a path, which may be the tail of a longer one), not followed by a word character or by a
    joiner that continues the token (``.1``, ``-2``, ``/x``). A version may carry a ``v`` (``v2.4.0``)."""
    before = r"(?<![\w.-])" if "/" in identifier or "." in identifier.rsplit("/", 1)[-1] else r"(?<![\w./-])"
    if identifier[:1].isdigit():
        before += "v?"
    return re.compile(before + re.escape(identifier) + r"(?![\w]|[./-]\w)")


def carried(query_identifiers: list[str], content: str) -> list[str]:
    """The identifiers of ``query_identifiers`` (lowercase, from ``identifiers``) that ``content`` carries as
    whole tokens, in query order."""
    if not query_identifiers:
        return []
    low = content.lower()
    return [ident for ident in query_identifiers if ident in low and _token_pattern(ident).search(low)]


def family(identifier: str) -> str:
    """The family of an identifier, "" when it has none: every version is of the family "version"; a ticket,
    env var, flag or dotted name is of the family of its first part with its joiner ("pay-" for ``pay-219``,
    "billing_" for ``billing_timeout_ms``, "--dry-" for ``--dry-run``); paths and URLs have none (a file
    next to the one asked about may well be relevant)."""
    if "/" in identifier or ":" in identifier:
        return ""
    if _VERSION_LIKE.fullmatch(identifier):
        return "version"
    m = _PREFIX.match(identifier)
    return m.group(0) if m else ""


def siblings(query_identifiers: list[str], content: str) -> list[str]:
    """The identifiers ``content`` names that are of the family of one of ``query_identifiers`` (``family``)
    without being one of them, lowercase, in order; ``[]`` when it names none."""
    families = {f for f in map(family, query_identifiers) if f}
    low = content.lower()
    if not any(_VERSION_LIKE.search(low) if f == "version" else f in low for f in families):
        return []  # no text of the family: no entity extraction needed
    asked = set(query_identifiers)
    return [ident for ident in identifiers(content) if ident not in asked and family(ident) in families]
