"""Event anchors: "before the migration", "after we deployed the cache" name an event, not a date. The
words of the event are returned; the temporal channel finds the event (best BM25 match) and bounds the
window with its time."""

from __future__ import annotations

from memcue.sidecar.recall.query import STOP_WORDS, words
from memcue.sidecar.recall.time.patterns import (
    ANCHOR,
    ANCHOR_STOP,
    AUXILIARY,
    DETERMINERS,
    GENERIC,
    NOT_TEMPORAL_BEFORE_AFTER,
)
from memcue.sidecar.recall.time.spans import Span

#: The anchor's head word -> the relation it bounds the window by.
RELATIONS = {"before": "before", "prior": "before", "ahead": "before", "until": "until", "till": "until",
             "after": "after", "following": "after", "since": "since"}
#: Words after which a head word is a noun or an adjective, not a bound ("the till", "our following").
_NOUN_BEFORE = frozenset("the a an our my your their his her its".split())
#: Words that, right after the head word, make it an adverb ("we've hit this before with the digest", "seen it
#: before too"), not a bound before an event.
_ADVERB_NEXT = frozenset("with in on at for about around too already again yet now".split())
#: Event words kept at most.
MAX_ANCHOR_WORDS = 4


def _event_words(phrase: str, head: str) -> list[str]:
    """The event's content words in ``phrase`` (up to the next clause); [] when the phrase is a clause of
    reason or state ("since it is slow")."""
    phrase_words = []
    for w in words(phrase):
        if w in ANCHOR_STOP:
            break
        phrase_words.append(w)
    if head in ("since", "after") and any(w in AUXILIARY for w in phrase_words[:3]):
        return []
    while phrase_words and phrase_words[0] in DETERMINERS:
        phrase_words.pop(0)
    return [w for w in phrase_words if w not in STOP_WORDS and w not in GENERIC and (len(w) > 1 or w.isdigit())]


def find_anchor(text: str, spans: list[Span]) -> tuple[str, str, str]:
    """``(anchor words, relation, matched phrase)`` for "before/after/since the <event>" in ``text`` outside
    the date ``spans``, or ("", "", "")."""
    masked = list(text)
    for s in spans:
        masked[s.begin:s.finish] = "|" * (s.finish - s.begin)
    masked_text = "".join(masked)
    for m in ANCHOR.finditer(masked_text):
        head = m.group(1).lower().split()[0]
        prev = words(masked_text[: m.start()])[-1:] or [""]
        if prev[0] in NOT_TEMPORAL_BEFORE_AFTER or prev[0] in _NOUN_BEFORE:
            continue  # "look after", "the till export" (a cash register), "the following list"
        first = words(m.group(2))[:1]
        if head == "till" and first and first[0] not in DETERMINERS:
            continue  # "till export", "till receipts": the noun (a cash register), not "till the release"
        if first and first[0] in _ADVERB_NEXT:
            continue  # "we've hit this before with the digest": "previously", no event
        kept = _event_words(m.group(2), head)
        if not kept:
            continue
        return " ".join(kept[:MAX_ANCHOR_WORDS]), RELATIONS[head], m.group(0).strip()
    return "", "", ""
