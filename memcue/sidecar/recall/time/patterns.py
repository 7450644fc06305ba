"""The regular expressions and word lists that find and classify time phrases in a query (all
case-insensitive unless noted). ``spans`` finds spans with ``SPAN_PATTERNS``; ``intent`` reads bounds, order
words and anchors with the rest."""

from __future__ import annotations

import re

#: Full month names (a regex alternation, lower case).
MONTHS_FULL = "january|february|march|april|may|june|july|august|september|october|november|december"
_MONTHS_ABBR = r"jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec"
_MONTH = rf"(?:{MONTHS_FULL}|(?:{_MONTHS_ABBR})\.?)"
#: Month names that are also everyday words; they count only with date context (a preposition, a day, a
#: year), never alone: "May I ask", "march on".
_SAFE_MONTHS = "january|february|april|june|july|august|september|october|november|december"
#: A weekday name.
WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_NUM_WORD = (r"(?:\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
             r"(?:a\s+)?few|(?:a\s+)?couple(?:\s+of)?|several)")
_UNIT = r"(?:minute|hour|day|week|month|year)s?"
_ORD = r"\d{1,2}(?:st|nd|rd|th)?"
#: A four-digit year 1900-2099.
YEAR = r"(?:19|20)\d{2}"
#: Words that put a month or year in time ("in March", "since 2023", "end of May").
PREP = (r"(?:in|during|since|before|after|until|till|through|throughout|by|of|from|between|early|late|"
        r"end\s+of|beginning\s+of|start\s+of|middle\s+of)\s+(?:the\s+)?|mid-?\s*")

#: Span patterns in priority order, each with the name of its resolver in ``resolvers.RESOLVERS``.
#: Case-insensitive except the bare "March" (a capital letter makes the verb unlikely); spans never
#: overlap (earlier wins).
SPAN_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("iso_day", re.compile(r"\b\d{4}-(?:0?[1-9]|1[0-2])-(?:0?[1-9]|[12]\d|3[01])\b")),
    ("iso_month", re.compile(r"\b\d{4}-(?:0[1-9]|1[0-2])\b(?!-)")),
    ("numeric_day", re.compile(r"\b\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})\b")),
    ("month_day", re.compile(
        rf"\b(?:(?:the\s+)?{_ORD}\s+(?:of\s+)?{_MONTH}|{_MONTH}\s+(?:the\s+)?{_ORD}(?![\d:.]))"
        rf"(?:,?\s+{YEAR})?\b", re.I)),
    ("month_year", re.compile(rf"\b{_MONTH},?\s+{YEAR}\b", re.I)),
    ("quarter", re.compile(rf"\bq[1-4](?:\s+{YEAR})?\b", re.I)),
    ("month", re.compile(rf"\b(?:{PREP}){_MONTH}\b", re.I)),
    ("month", re.compile(rf"\b(?:{_SAFE_MONTHS})\b", re.I)),
    ("month", re.compile(r"\bMarch\b|(?<=\bto\s)May\b|(?<=\band\s)May\b")),
    ("year", re.compile(rf"\b(?:{PREP})({YEAR})\b(?![.\d])", re.I)),
    ("weekend", re.compile(r"\b(?:(?:last|this|past|previous)\s+weekend|(?:over|on|during)\s+the\s+weekend)\b",
                           re.I)),
    ("weekday", re.compile(rf"\b(?:(?:last|this|past|previous|next|on)\s+)?{WEEKDAY}"
                           r"(?:\s+(?:morning|afternoon|evening|night))?\b", re.I)),
    ("relative_day", re.compile(
        r"\b(?:(?:the\s+)?day\s+before\s+yesterday|yesterday|today|tonight|tomorrow|earlier\s+today|"
        r"this\s+(?:morning|afternoon|evening)|last\s+night)\b", re.I)),
    ("rolling", re.compile(
        rf"\b(?:(?:in|over|during|within)\s+)?(?:the\s+)?(?:past|last|previous)\s+{_NUM_WORD}\s+{_UNIT}\b|"
        rf"\b(?:(?:in|over|during|within)\s+)?(?:the\s+)?past\s+(?:minute|hour|day|week|month|year)\b", re.I)),
    ("calendar", re.compile(r"\b(?:last|this|previous|next|(?:the\s+)?current)\s+(?:week|month|year|quarter)\b",
                            re.I)),
    ("ago", re.compile(rf"\b{_NUM_WORD}\s+{_UNIT}\s+ago\b", re.I)),
]
#: Month names that are everyday words; written in lower case next to a bare number they are not dates
#: ("retry 3 may fail", "it may 2x the load") unless an ordinal, "of" or a year makes them one.
AMBIGUOUS_MONTH = re.compile(r"\b(?:may|march|mar)\b")
#: What makes an ambiguous month a date: an ordinal, "of" or a year.
DATE_MARKERS = re.compile(rf"\d(?:st|nd|rd|th)\b|\bof\b|{YEAR}", re.I)
#: A span that starts with its own bound word ("since March", "before 2024").
SPAN_BOUND = re.compile(r"^(since|after|before|until|till|through|by|from|between)\b", re.I)

#: A bound word right before a span: ("since", "March") -> start of March.
BOUND_BEFORE_SPAN = re.compile(
    r"\b(since|after|from|before|until|till|through|by|between|and|to|prior\s+to|following)\s+(?:the\s+)?$", re.I)
#: Words asking for the oldest first ("earliest", "originally") and the newest first ("latest").
ORDER_OLDEST = re.compile(
    r"\b(?:earliest|oldest|first\s+time|at\s+first|(?:we|i|you|they|it)\s+first|originally|"
    r"initially|in\s+the\s+beginning|to\s+begin\s+with)\b", re.I)
ORDER_NEWEST = re.compile(  # not Python's "Traceback (most recent call last)": a pasted trace asks no order
    r"\b(?:latest|newest|most\s+recent(?:ly)?(?!\s+call\s+last)|recently|lately|last\s+time|just\s+now)\b", re.I)
#: "before the migration", "after we deployed the cache": the event phrase that follows.
ANCHOR = re.compile(r"\b(before|after|since|until|till|prior\s+to|following|ahead\s+of)\s+([^.;:!?|()\[\]\n]{1,80})",
                    re.I)
#: Words that end an anchor phrase (a new clause starts).
ANCHOR_STOP = frozenset("and but or so when where what which who why how then while because if".split())
#: An auxiliary soon after "since"/"after" marks a clause of reason or state, not an event ("since it is slow").
AUXILIARY = frozenset(
    "is are was were isn't aren't wasn't weren't has have hasn't haven't can can't does doesn't do don't will "
    "won't would should must".split())
#: Verbs with which "after" is not about time ("look after the cache", "named after the ticket").
NOT_TEMPORAL_BEFORE_AFTER = frozenset(
    "look looks looked looking name named take takes took taking ask asks asked asking seek seeks chase "
    "chased".split())
#: Leading words skipped in an anchor phrase.
DETERMINERS = frozenset("the a an our my your their his her its this that these those we i you they he she it"
                        .split())

#: Fast prefilter: anything that may be a time expression. A superset of the span, order and anchor
#: patterns, plus question forms ("when did", "how long ago").
MENTIONS = re.compile(
    rf"\b(?:{_SAFE_MONTHS}|{WEEKDAY})\b"
    rf"|\b(?:{PREP})(?:{_MONTH}|{YEAR})\b"
    rf"|\b{_MONTH}\s+(?:the\s+)?{_ORD}\b|\b{_ORD}\s+(?:of\s+)?{_MONTH}\b|\b{_MONTH},?\s+{YEAR}\b"
    r"|\bMarch\b"
    r"|\b(?:yesterday|today|tonight|tomorrow|ago|recently|lately|earliest|latest|oldest|newest|originally|"
    r"initially|weekend|earlier|since)\b"
    r"|\b(?:last|this|next|past|previous|current)\s+(?:\w+\s+)?(?:week|month|year|quarter|time|night|morning|"
    r"afternoon|evening|days?|weeks|months|years|hours?)\b"
    r"|\b(?:most\s+recent|first\s+time|at\s+first|(?:we|i|you|they|it)\s+first)\b"
    r"|\b(?:before|after|until|till|prior\s+to|following)\s+\w"
    r"|\bwhen\s+(?:did|was|were|have|had|do|does|is|will)\b|\bwhat\s+(?:time|day|date)\b|\bhow\s+long\b"
    r"|\b\d{4}-\d{1,2}(?:-\d{1,2})?\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\bq[1-4]\s+(?:19|20)\d{2}\b",
    re.I,
)

#: Words a time question uses without naming a topic ("what did we do / what happened / what changed").
#: Without a topic word left, every memory in the window is evidence.
GENERIC = frozenset(
    """do did done doing happen happened happening happens change changed changes changing work worked
    working works go went going decide decided decision decisions discuss discussed talk talked say said
    mention mentioned note notes time times day days week weeks month months year years stuff anything
    everything something remember recall ask asked event events going on around ago earlier latest
    earliest recent recently lately first last newest oldest originally initially since until till prior
    following ahead morning afternoon evening night tonight weekend""".split())
