"""Query classification: what kind of question this is, and so how much each channel counts.

``classify(text)`` returns a ``QueryClass``: its ``query_type`` and the channel weights for weighted RRF,
taken from ``CHANNEL_WEIGHTS`` (the one table of weights; the config file's ``[recall.weights.<type>]``
and a request's ``weights`` override it). Types:

- ``present_tense``: "what am I working on?" — answered from the project's newest real memories;
- ``request_recall``: "what did I ask you to do about X?" — captured prompts come first;
- ``work_recall``: "what did we do about the importer?", "how did you fix the flaky login test?" — the agent's
  captured answers (``episode`` rows) may answer, ranked below saved memories (``WORK_PATTERNS``);
- ``time``: the question names a time ("last Friday", "in March", "when did …"; not "how did she feel when …");
- ``exact_term``: a short query naming an identifier (digits, paths, snake_case, dotted names);
- ``multi_hop``: the question ties several named things together ("Caroline and Melanie", "both");
- ``meaning``: everything else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memcue.sidecar.recall.channels import BM25, GRAPH, HOPFIELD, SEMANTIC, TEMPORAL
from memcue.sidecar.recall.query import compounds, content_terms
from memcue.sidecar.store import extract_entities

PRESENT_TENSE, REQUEST_RECALL, WORK_RECALL, TIME, EXACT_TERM, MULTI_HOP, MEANING = (
    "present_tense", "request_recall", "work_recall", "time", "exact_term", "multi_hop", "meaning")
QUERY_TYPES = (PRESENT_TENSE, REQUEST_RECALL, WORK_RECALL, TIME, EXACT_TERM, MULTI_HOP, MEANING)
#: Captured kinds that answer only the question type that asks for them: a captured prompt (``request``)
#: answers "what did I ask…", an agent's answer kept as an ``episode`` answers "what did we do…". Every other
#: recall leaves them out (unless a request asks for captured prompts: ``include_requests``).
ASKED_KINDS = {REQUEST_RECALL: "request", WORK_RECALL: "episode"}
#: Stored sources of memories that are still, by what they say, of an asked kind though written as another: an
#: episode a later commit confirmed is a ``change`` (``capture.turn_edits``, source ``capture:episode-committed``)
#: and still tells what was done, so "what did we do about X?" weighs it as the episode it was.
ASKED_KIND_SOURCES = {"episode": frozenset({"capture:episode-committed"})}

def of_kind(kind: str, source: str, asked: str) -> bool:
    """True when a memory of ``kind`` with stored ``source`` is of the captured kind ``asked`` ("episode",
    "request"), or was written from one (``ASKED_KIND_SOURCES``)."""
    return kind == asked or source in ASKED_KIND_SOURCES.get(asked, frozenset())


#: Channel weights per query type for weighted RRF. BM25 is the anchor (1.0) because on LoCoMo it is the
#: strongest single channel for the default MiniLM model; semantic below it (equal weights ranked below
#: BM25 alone, benchmarks/results/locomo_recall.md); the temporal channel counts fully only for time
#: questions, the entity graph most for multi-hop ones; Hopfield adds associative candidates at a low weight
#: (at 0.1-0.2 it cost LoCoMo 0.007 MRR: its candidates are near neighbours of the semantic ones).
#: Checked on LoCoMo stage by stage (benchmarks/locomo_ablation.py; benchmarks/results/locomo_ablation.md).
CHANNEL_WEIGHTS: dict[str, dict[str, float]] = {
    MEANING: {SEMANTIC: 0.5, BM25: 1.0, TEMPORAL: 0.2, GRAPH: 0.3, HOPFIELD: 0.05},
    EXACT_TERM: {SEMANTIC: 0.3, BM25: 1.0, TEMPORAL: 0.2, GRAPH: 0.5, HOPFIELD: 0.0},
    TIME: {SEMANTIC: 0.5, BM25: 1.0, TEMPORAL: 0.8, GRAPH: 0.3, HOPFIELD: 0.05},
    MULTI_HOP: {SEMANTIC: 0.5, BM25: 1.0, TEMPORAL: 0.2, GRAPH: 0.5, HOPFIELD: 0.1},
    PRESENT_TENSE: {SEMANTIC: 0.5, BM25: 1.0, TEMPORAL: 0.5, GRAPH: 0.3, HOPFIELD: 0.0},
    REQUEST_RECALL: {SEMANTIC: 0.6, BM25: 1.0, TEMPORAL: 0.3, GRAPH: 0.3, HOPFIELD: 0.0},
    # As ``meaning``; one that names a time ("what did we change last Friday?") takes the ``time`` weights
    # (``classify``): these questions differ from those only in the kinds that may answer them.
    WORK_RECALL: {SEMANTIC: 0.5, BM25: 1.0, TEMPORAL: 0.2, GRAPH: 0.3, HOPFIELD: 0.05},
}

#: Words that only say "what I asked" (with stop and time words, what a request question has when it names
#: no topic: "what did I ask for?", "what was my last prompt?").
REQUEST_WORDS = frozenset("ask asked asking request requested requests tell told say said prompt prompts "
                          "question questions typed wanted ever last previous earlier first".split())
#: Words that only say "what am I doing" (with stop and time words, what a present-tense question has when it
#: names no topic: "what was I working on yesterday?", "where did we leave off?").
PRESENT_WORDS = frozenset("working work doing building fixing focused middle currently current still now just "
                          "right moment presently leave left stop ongoing progress task tasks focus plate team"
                          .split())
#: Words that only say "what was done" ("what did we do?", "what did you change?", "what was fixed?").
WORK_WORDS = frozenset("what how which did have has had was were we you i us do does done doing change changed "
                       "changes fix fixed fixes work worked make made end up try tried just actually ever so far "
                       "before hit seen run ran happened went wrong caused cause watch careful picky gotcha gotchas "
                       "pitfall pitfalls around workaround workarounds".split())
#: The words that frame each question type rather than name its topic: never key terms (``support``).
FRAME_WORDS = {REQUEST_RECALL: REQUEST_WORDS, WORK_RECALL: WORK_WORDS, PRESENT_TENSE: PRESENT_WORDS}

_PRESENT = re.compile(
    r"\bwhat(?:'s| is| are)?\s+(?:am\s+i|are\s+we|i'm|we're|is\s+(?:the\s+)?team)\s+(?:currently\s+|still\s+|now\s+)?"
    r"(?:working\s+on|doing|building|fixing|focused\s+on|in\s+the\s+middle\s+of)\b"
    r"|\bwhere\s+(?:did|was)\s+(?:i|we)\s+(?:leave\s+off|left\s+off|stop)\b"
    r"|\bwhat\s+was\s+(?:i|we)\s+(?:just\s+)?(?:working\s+on|doing)\b"
    r"|\b(?:current|ongoing|in[- ]progress)\s+(?:task|work|focus)s?\b"
    r"|\bwhat(?:'s| is)\s+(?:in\s+progress|on\s+my\s+plate)\b",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"\bwhat\s+(?:did|have|had)\s+(?:i|we)\s+(?:ask(?:ed)?|request(?:ed)?|tell|told)\b"
    r"|\b(?:i|we)\s+(?:asked|requested|told)\s+you\b"
    r"|\b(?:did|have|had)\s+(?:i|we)\s+(?:ever\s+)?(?:ask(?:ed)?|request(?:ed)?|tell|told)\b"
    r"|\bmy\s+(?:last|previous|earlier|first)\s+(?:request|prompt|question|ask)s?\b"
    r"|\bwhat\s+was\s+my\s+(?:last|previous|earlier)?\s*(?:request|prompt|question)\b",
    re.IGNORECASE,
)
#: "What was done" questions, kept narrow: a question word (what/how/which), a past tense of do, have or be, we or
#: you (or "the agent"), then a verb of work. "what did we do about the importer?", "how did we fix the flaky login
#: test?", "what did you change in billing yesterday?", "what have we done on the cron?", "what was changed in
#: billing?", "which files did you touch?", "what did we conclude about the leak?"; and "did we ever (actually) fix
#: it?", which asks the history. So do questions about a problem met before, whose cause and fix an answer told:
#: "we've hit this before, what was it?", "why was the total off earlier this week?", "what went wrong with the
#: export?", "remind me why we needed retries", and what to watch out for ("any gotchas?", "is the logger picky
#: about what it gets?", "anything we had to work around?"): the lessons of earlier work; and prompts that point
#: back at a problem met or looked into before: "same thing as last time or a real bug?", "slow again, fix it properly
#: this time", "let's fix that date problem we found the other day". "why did we pick
#: Postgres?" (a reason: saved decisions answer it), "what do we use for queues?" (present), "did you run the
#: tests?" and "can you work around the flaky test?" (a task) do not match.
_WORK_VERBS = (r"(?:do|done|did|change|changed|fix|fixed|solve|solved|resolve|resolved|handle|handled|implement"
               r"|implemented|build|built|edit|edited|touch|touched|update|updated|refactor|refactored|patch|patched"
               r"|debug|debugged|end\s+up\s+doing|try|tried|work\s+on|worked\s+on|conclude|concluded"
               r"|figure\s+out|figured\s+out)\b")
WORK_PATTERNS = (
    r"\b(?:what|how|which\s+\w+)\s+(?:did|have|had)\s+(?:we|you|the\s+agent)\s+(?:\w+\s+)?" + _WORK_VERBS,
    r"\b(?:did|have|had)\s+(?:we|you)\s+ever\s+(?:\w+\s+)?" + _WORK_VERBS,
    r"\bwhat\s+(?:was|were|got)\s+(?:done|changed|fixed)\b",
    r"\bwhat\s+(?:changes|fixes)\s+did\s+(?:we|you)\s+make\b",
    r"\b(?:we|i)(?:'ve|\s+have)\s+(?:\w+\s+)?(?:hit|seen|had|run\s+into|fixed|solved|dealt\s+with)\s+(?:this|that|it"
    r"|something\s+like\s+(?:this|that))\s+before\b|\b(?:this|that|it)\s+(?:happened|came\s+up)\s+before\b"
    r"|\b(?:have|did)\s+(?:we|you|i)\s+(?:ever\s+)?(?:hit|seen|see|had|have|run\s+into|dealt\s+with|fixed|solved)\b"
    r"[^?.!]{0,60}\bbefore\b",
    r"\bwhat\s+was\s+(?:it|the\s+(?:cause|fix|problem|issue|culprit|trick))\b|\bwhat\s+(?:went\s+wrong|caused|broke)\b"
    r"|\bremind\s+me\s+(?:why|what|how)\b",
    r"\bwhy\s+(?:was|were|did)\b[^?.!]{0,80}\b(?:earlier|before|last\s+(?:time|week|night)|the\s+other\s+day"
    r"|this\s+(?:week|morning)|yesterday)\b",
    r"\b(?:watch\s+out\s+for|gotchas?|pitfalls?|picky\s+about|careful\s+(?:about|with)|trip(?:ped)?\s+(?:us|me)\s+up"
    r"|(?:had\s+to|have\s+to|did\s+we|we)\s+work\s+around|worked\s+around|workarounds?"
    r"|bit\s+us)\b",
    r"\bsame\s+(?:thing|problem|issue|bug|error|cause|story)\s+as\s+(?:last\s+time|before|earlier|yesterday"
    r"|the\s+other\s+day|last\s+week)\b|\b(?:properly|right|for\s+good)\s+this\s+time\b",
    r"\b(?:problem|issue|bug|cause|crash|error|slowness|leak|mismatch|thing)\s+(?:that\s+)?(?:we|you)(?:'ve|\s+have)?"
    r"\s+(?:found|spotted|noticed|diagnosed|tracked\s+down|looked\s+(?:at|into)|investigated|dug\s+into)\b",
)
_WORK = re.compile("|".join(WORK_PATTERNS), re.IGNORECASE)
#: "when" asks a time as a question word ("When did we move?", "so when is the cutoff"), not as a conjunction ("how
#: did she feel when she painted it?", "same count as when the rotation dropped someone"): 37 of LoCoMo's 299
#: questions with "when" are of that second kind, none of them asks a time.
_WHEN = (r"(?:^|[.?!;:,(]\s*|\b(?:and|but|or|so)\s+)when\b"
         r"|\bwhen\s+(?:did|was|were|is|are|do|does|will|would|should|has|have|had|can|could)\b")
_TIME = re.compile(
    _WHEN + r"|\b(?:yesterday|today|tonight|ago|last\s+(?:week|month|year|time|night|monday|tuesday|wednesday|thursday"
    r"|friday|saturday|sunday)|this\s+(?:week|month|year|morning)|since|recently|earliest|latest|before\s+the"
    r"|after\s+the|january|february|march|april|june|july|august|september|october|november|december"
    r"|monday|tuesday|wednesday|thursday|friday|saturday|sunday|\d{4}-\d\d-\d\d|(?:19|20)\d\d)\b",
    re.IGNORECASE,
)
_MULTI = re.compile(r"\b(?:both|in\s+common|together|relationship|related\s+to|compared?\s+(?:to|with)|and\s+also"
                    r"|likely|would\s+\w+\s+(?:be|have|enjoy|want|like))\b", re.IGNORECASE)


@dataclass(frozen=True)
class QueryClass:
    """``query_type`` (one of ``QUERY_TYPES``), the channel ``weights`` that go with it, and ``timed``: the text
    names a time ("yesterday", "last week"; what makes a question ``time``)."""

    query_type: str
    weights: dict[str, float] = field(default_factory=dict)
    timed: bool = False

    @property
    def asks_requests(self) -> bool:
        """True when the question asks what the user requested (captured prompts answer it first)."""
        return self.query_type == REQUEST_RECALL

    @property
    def asked_kind(self) -> str | None:
        """The captured kind this question asks for (``ASKED_KINDS``): "request", "episode" or None."""
        return ASKED_KINDS.get(self.query_type)

    def is_asked(self, row: Mapping[str, Any]) -> bool:
        """True when ``row`` (a stored memory with ``kind`` and ``source``) is of the kind this question asks for,
        or was written from it (``ASKED_KIND_SOURCES``)."""
        asked = self.asked_kind
        return asked is not None and of_kind(str(row.get("kind") or ""), str(row.get("source") or ""), asked)

    def excluded_kinds(self, include_requests: bool = False) -> tuple[str, ...]:
        """The captured kinds recall leaves out for this question: those of ``ASKED_KINDS`` it does not ask
        for; captured prompts stay in when ``include_requests``."""
        return tuple(k for k in ASKED_KINDS.values()
                     if k != self.asked_kind and not (include_requests and k == "request"))

    @property
    def frame_words(self) -> frozenset[str]:
        """The words that frame this question type ("ask", "told" for a request question: ``FRAME_WORDS``)."""
        return FRAME_WORDS.get(self.query_type, frozenset())

    def rank_group(self, kind: str) -> int:
        """0 for a result of ``kind`` that comes first, 1 for one ranked below: captured prompts come first for
        a request question; otherwise saved memories come first and captured kinds (prompts, episodes) after."""
        if self.asks_requests:
            return 0 if kind == "request" else 1
        return 1 if kind in ASKED_KINDS.values() else 0

    def answers_with(self, kind: str) -> bool:
        """True when a result of ``kind`` is an answer of the kind this question asks for: captured prompts for
        a request question; saved memories, and episodes for a "what was done" question, otherwise."""
        if self.asks_requests:
            return kind == "request"
        return kind not in ASKED_KINDS.values() or kind == self.asked_kind


def names_an_identifier_briefly(text: str) -> bool:
    """``text`` is short (at most 6 content words) and names an identifier (a compound such as ``TRL-421`` or
    ``load_roster``, or any digit): the ``exact_term`` shape, whatever type the earlier checks give it ("TRL-421 —
    remind me what broke" asks about work, and about that identifier)."""
    has_identifier = bool(compounds(text)) or any(ch.isdigit() for ch in text) or "_" in text
    return has_identifier and len(content_terms(text)) <= 6


def query_type(text: str) -> str:
    """The type of ``text`` (see the module docstring), checked in that order."""
    if _PRESENT.search(text):
        return PRESENT_TENSE
    if _REQUEST.search(text):
        return REQUEST_RECALL
    if _WORK.search(text):
        return WORK_RECALL
    if _TIME.search(text):
        return TIME
    if names_an_identifier_briefly(text):
        return EXACT_TERM
    names = [name for name, kind in extract_entities(text) if kind == "name"]
    if len(names) >= 2 or _MULTI.search(text):
        return MULTI_HOP
    return MEANING


def classify(text: str, overrides: Mapping[str, Mapping[str, float]] | None = None,
             request_weights: Mapping[str, float] | None = None) -> QueryClass:
    """Classify ``text`` and pick its weights: ``CHANNEL_WEIGHTS[type]`` (``time``'s for a ``work_recall``
    question naming a time), then ``overrides[type]`` (config),
    then ``request_weights`` (one request). Unknown channel names are ignored; weights must be >= 0
    (``ValueError`` otherwise)."""
    qtype = query_type(text)
    timed = _TIME.search(text) is not None
    weights = dict(CHANNEL_WEIGHTS[TIME if timed and qtype == WORK_RECALL else qtype])
    for layer in ((overrides or {}).get(qtype) or {}, request_weights or {}):
        for name, value in layer.items():
            if name in weights:
                if value < 0:
                    raise ValueError(f"channel weight for {name} must be >= 0, got {value}")
                weights[name] = float(value)
    return QueryClass(qtype, weights, timed)
