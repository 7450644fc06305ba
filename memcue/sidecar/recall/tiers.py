"""Support tiers: is a memory real support for the question, or only related to it?

Each memory is judged on its own, from its ``Evidence``: closeness (cosine) and the share of the
query's rarest words it carries. A memory is ``supported`` when it is close by meaning (cosine at or
above ``SUPPORT_COSINE``); it is ``weak`` (shown, labelled) when it carries at least half of the query's
key terms and is not far by meaning, unless the query looks like gibberish (most of its words are in no
memory at all). Everything else that passed the floor is ``related``.
"""

from __future__ import annotations

from memcue.sidecar.recall.floor import COSINE_FLOOR, SUPPORT_COSINE, Evidence

SUPPORTED, WEAK, RELATED = "supported", "weak", "related"
#: Share of the query's key terms (its rarest known words) that, with a cosine near the floor, counts as
#: support. Key terms rather than all words, so a long prompt's filler does not dilute a real match.
MIN_KEY_COVERAGE = 0.5
#: How far below the cosine floor a memory carrying the query's words may be and still count.
WORDED_COSINE_SLACK = 0.15
NOTE_RELATED = "I don't have this exactly — here are the closest memories."
NOTE_NONE = "That isn't in memcue."
NOTE_NO_CANDIDATES = "Nothing in memory matched this question."
NOTE_EMPTY_QUERY = "The question is empty: there is nothing to recall."
NOTE_WARMING = "memcue is still warming up — results may be incomplete."


def support_label(ev: Evidence) -> str:
    """``supported``, ``weak`` or ``related`` for one memory."""
    if ev.cosine is not None and ev.cosine >= SUPPORT_COSINE:
        return SUPPORTED
    worded = not ev.gibberish and ev.key_coverage >= MIN_KEY_COVERAGE
    if worded and (ev.cosine is None or ev.cosine >= COSINE_FLOOR - WORDED_COSINE_SLACK):
        return WEAK
    return RELATED
