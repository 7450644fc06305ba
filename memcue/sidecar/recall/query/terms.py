"""Turning user text into safe keyword queries (cases C03, C04).

User text never reaches FTS5 MATCH raw: it is split into words, each word is double-quoted (so
``AND``, ``OR``, ``NOT``, ``*``, ``:``, ``-``, ``(`` and ``"`` are plain text), stop words are dropped,
and the words are joined with OR so each matches on its own and ``bm25()`` ranks by how many and how
rare. A prompt is never searched as one phrase.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?|_+[^\W_][\w]*", re.UNICODE)
#: Words too common to carry meaning in a question (a short English list, as in most IR stop lists).
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
    during each few for from further had hadn't has hasn't have haven't having he her here hers herself him
    himself his how i i'm i've if in into is isn't it it's its itself just let's me more most my myself no
    nor not now of off on once only or other ought our ours ourselves out over own same she should
    shouldn't so some such than that that's the their theirs them themselves then there there's these they
    this those through to too under until up very was wasn't we we're we've were weren't what what's when
    where which while who whom why will with won't would wouldn't you you're your yours yourself
    yourselves again also get got please thanks thank hey hi ok okay tell know think want like way
    use used using make sure need needs thing things something anything us via per etc re one still already
    actually really even much many lot bit quite rather anyway""".split()
)
#: At most this many words go into one MATCH expression (the rarest are kept by the caller's order).
MAX_TERMS = 32


@dataclass(frozen=True)
class KeywordQuery:
    """``terms``: the words searched (lowercase, in order, no duplicates); ``match``: the FTS5
    expression, "" when there is nothing to search; ``note``: why it is empty, if it is."""

    terms: tuple[str, ...]
    match: str
    note: str = ""


def words(text: str) -> list[str]:
    """Lowercase words of ``text`` (letters and digits; punctuation splits words; an apostrophe inside a word
    keeps it whole, "don't"), a possessive without its "'s": "Ines's box" and "Monday's inventory" are about
    Ines and Monday, and FTS5 reads them as "ines" and "monday" too (its tokenizer splits at the apostrophe)."""
    out = []
    for w in _WORD.findall(text):
        w = w.lower().replace("’", "'")
        out.append(w[:-2] if w.endswith("'s") and len(w) > 3 else w)
    return out


def content_terms(text: str) -> list[str]:
    """Words of ``text`` minus stop words, de-duplicated in order; all words if every one is a stop word."""
    all_words = list(dict.fromkeys(words(text)))
    kept = [w for w in all_words if w not in STOP_WORDS and len(w) > 1 or w.isdigit()]
    return kept or all_words


def keyword_query(text: str, common: frozenset[str] = frozenset()) -> KeywordQuery:
    """Build the FTS5 MATCH expression for ``text`` (see module docstring).

    Words in ``common`` (in so many memories that they barely move ``bm25()``, yet make it score every one
    of those memories) are left out of the MATCH, and so are phrases made only of them, unless that would
    leave nothing to search. ``terms`` keeps every word either way (cue terms, notes)."""
    terms = tuple(_ends(content_terms(text), MAX_TERMS))
    if not terms:
        return KeywordQuery((), "", note="the query has no searchable words")
    searched = [t for t in terms if t not in common]
    if not searched:
        searched, common = list(terms), frozenset()
    parts = [" ".join(ws) for ws in compounds(text) if any(w not in common for w in ws)] + searched
    match = " OR ".join('"' + p.replace('"', '""') + '"' for p in dict.fromkeys(parts))
    return KeywordQuery(terms, match)


def _ends(terms: list[str], limit: int) -> list[str]:
    """``terms`` when there are at most ``limit``; else the first and last ``limit // 2`` of them: a prompt's
    question is at one end of what it pastes (``core.limits.cap_query`` reads a long prompt the same way)."""
    if len(terms) <= limit:
        return terms
    half = limit // 2
    return terms[:half] + terms[-(limit - half):]


def compounds(text: str) -> list[list[str]]:
    """Words written together with punctuation ("build-cache", "OPS-4821", "2.1.3", "src/app.py"),
    searched also as a phrase so an exact identifier outranks its parts found apart."""
    out = []
    for chunk in text.split():
        parts = words(chunk)
        if 1 < len(parts) <= 8:
            out.append(parts)
    return _ends(out, 8)


_SUFFIXES = ("ations", "ation", "ings", "ing", "edly", "ies", "ied", "ers", "er", "es", "ed", "ly", "s")


@functools.lru_cache(maxsize=16384)  # about 2 MB when full
def stem(word: str) -> str:
    """A light suffix-stripping stem, enough to match "retries" with "retry", "formatting" with "format" and
    "changed" with "change" when naming cue terms (FTS5's porter stemmer does the matching itself)."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if suffix in ("ies", "ied"):
                return base[:-1]
            if len(base) > 3 and base[-1] == base[-2] and base[-1] not in "lsz":
                return base[:-1]  # formatt -> format, runn -> run
            return base
    if len(word) > 3 and word.endswith("e"):
        return word[:-1]  # change -> chang, as "changed" -> chang; date -> dat, as "dates" -> dat
    return word


#: How many of a query's rarest words count as its key terms.
KEY_TERMS = 4
#: Words that say *when*, not *what*: never key terms (the temporal channel handles them).
TIME_WORDS = frozenset(
    """time times last first next earlier later ago recently recent yesterday today tonight tomorrow week weeks
    month months year years day days morning afternoon evening night since until ever lately previous
    monday tuesday wednesday thursday friday saturday sunday january february march april may june july
    august september october november december""".split()
)


#: Words of conversation, not of the subject: how people ask, report and hedge ("remind me", "someone said",
#: "any thoughts", "a quick question", "walk me through it"). Never key terms: a memory need not carry them.
CHAT_WORDS = frozenset(
    """remind ask asks asked asking tell tells told telling say says said saying someone somebody anyone anybody
    everyone people person folks guy guys team thoughts think thinking idea ideas question questions wondering
    wonder want wants wanted need needs needed help please thanks thank hey hi ok okay quick quickly little tiny bit
    really actually basically guess mind sure right exactly walk give gives giving get gets getting got put putting
    make making see seeing look looking know let going gonna sort kind thing things way part either along least
    still also new one two three again already maybe probably""".split()
)


def key_terms(doc_freq: dict[str, int], terms: tuple[str, ...], asking: frozenset[str] | None = None,
              *, known_only: bool = False) -> tuple[list[str], bool]:
    """The query's key terms and whether it looks like gibberish, from each term's document frequency.

    Key terms: up to ``KEY_TERMS`` of the query's words, rarest first by document frequency (ties keep
    query order), time words (``TIME_WORDS``) left out. A word no memory carries is the rarest of all: it
    stays a key term, so a memory that lacks the question's distinctive words ("service worker caching")
    is not taken as support because it shares the common ones ("web app"). ``asking``: the words of the
    sentence that asks, when the prompt also tells or pastes something (``asking_words``); then only those of
    the words no memory carries count: a pasted log's or a story's own words (``ConnectError``, a host name)
    are what the user saw, not what the memory must say. ``known_only`` (a task, not a question): only words some
    memory carries count; a task names the new work it asks for ("a separate entrypoint"), which no memory can
    carry, while a question's unknown word is what no memory knows. Gibberish: none of the query's words (other than
    time words) is found in any memory; then there are no key terms.
    """
    asked = [t for t in terms if t not in TIME_WORDS and t not in CHAT_WORDS] or list(terms)
    if not any(doc_freq.get(t, 0) > 0 for t in asked):
        return [], bool(asked)
    if known_only:
        asked = [t for t in asked if doc_freq.get(t, 0) > 0]
    elif asking is not None:
        asked = [t for t in asked if doc_freq.get(t, 0) > 0 or t in asking]
    ranked = sorted(asked, key=lambda t: (doc_freq.get(t, 0), terms.index(t)))
    return ranked[:KEY_TERMS], False


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_SENTENCE_OR_LINE_END = re.compile(r"(?<=[.!?])\s+|\n+")
#: A sentence piece that ends in a title or an initial ("Dr.", "Mrs.", "U.S.", "C."), not a sentence.
_ABBREVIATION = re.compile(r"(?:\b(?:Dr|Mr|Mrs|Ms|Prof|St|Jr|Sr|vs|etc|e\.g|i\.e)|(?<![A-Za-z])[A-Z])\.$")


def sentence_spans(text: str, *, lines: bool = False) -> list[tuple[int, int]]:
    """``(start, end)`` character offsets of the sentences of ``text``, in order, blank ones left out: a sentence
    ends after ".", "!" or "?" and a space (and at a line break, with ``lines``: a pasted log's lines); a title
    or an initial ("Dr. Seuss", "the U.S. office", "C. S. Lewis") does not end one."""
    spans: list[tuple[int, int]] = []
    start = 0
    ends = (_SENTENCE_OR_LINE_END if lines else _SENTENCE_END).finditer(text)
    for a, b in [(m.start(), m.end()) for m in ends] + [(len(text), len(text))]:
        if spans and _ABBREVIATION.search(text[spans[-1][0]:spans[-1][1]]):
            spans[-1] = (spans[-1][0], a)
        elif text[start:a].strip():
            spans.append((start, a))
        start = b
    return spans


@functools.lru_cache(maxsize=1024)  # read by two recall stages (boosts' unknown names, support's key terms)
def asking_words(text: str) -> frozenset[str] | None:
    """The content words of the last sentence of ``text`` that asks (``_ASKS``), when ``text`` holds
    something else beside it (a pasted log, an error, a story: another sentence or line); None for a prompt that is
    one sentence, or that asks nothing."""
    spans = sentence_spans(text, lines=True)
    if len(spans) < 2:
        return None
    for a, b in reversed(spans):
        if _ASKS.search(text[a:b]):
            return frozenset(content_terms(text[a:b]))
    return None


def cue_terms(query_terms: tuple[str, ...], content: str) -> list[str]:
    """The query terms that ``content`` carries (compared by ``stem``), in query order."""
    have = set(map(stem, set(words(content))))
    return [t for t in query_terms if stem(t) in have]


#: Question words and auxiliaries that open a question.
#: Question words and auxiliaries that open a question; with the apostrophe-less contractions people type in a
#: hurry ("whats the shortcut for …", "hows the export going").
_ASKING_WORDS = r"what|when|where|who|whom|whose|which|why|how|did|do|does|is|are|was|were|can|could|should|would" \
                r"|will|have|has|had|whats|wheres|whens|whos|hows"
#: A sentence that asks: a question mark, or a question word or auxiliary first (not a command: "Find out why
#: and fix it." is a task).
_ASKS = re.compile(rf"\?|^\s*(?:{_ASKING_WORDS})\b", re.IGNORECASE)
#: ``_ASKS``, or a recall command first ("show me the retry policy").
_QUESTION = re.compile(rf"\?|^\s*(?:{_ASKING_WORDS}|tell|show|list|remind|explain|describe|find|recall|give)\b",
                       re.IGNORECASE)


def is_question(text: str) -> bool:
    """True when ``text`` asks something (a question mark, or a question/command word first)."""
    return bool(_QUESTION.search(text))
