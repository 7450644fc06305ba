"""The first zero-cost signal: the user's durable statements in a captured prompt ("from now on ...", "we
decided ...", "always/never ...", "don't ...", "remember ...", "I prefer ...", corrections such as "no, use X
instead"), and what the user asks to have kept ("save to memory: ...", "... Please save that.").

``find_statements(prompt)`` is pure text work (about 0.1 ms for a typed prompt). It reads the prompt line by
line, drops what the user did not state themselves (fenced code, quoted ``>`` lines, pasted logs and tracebacks,
indented code, memcue's own injected blocks), splits each line into sentences and keeps the sentences that carry
a statement: not questions, at most ``STATEMENT_MAX_CHARS`` characters, at least ``STATEMENT_MIN_WORDS`` words;
each with up to ``CONTEXT_SENTENCES`` plain sentences that follow it on its line (its reason or detail). A
statement that opens by pointing back ("it must never end up in the repo", "that goes for the tests too") is
read with the sentence before it on its line: joined to that statement when it is one (a note so joined to a
rule takes the rule's kind: "save this: the token lives in Vault. never in a .env" is a ``decision``), else given it
as its subject (``_ANAPHORA``).

Kinds (the memory kind a statement is written as): ``preference`` for "I/we prefer", "I'd rather", "I like to";
``correction`` for "no, use X" and "use X instead (of Y)"; ``note`` for a fact the user offers in passing, said as a
statement ("fyi the bucket lives in eu-central-2", "btw Priya owns the thresholds", or any fact offered "for later":
"FYI for later: the office PC exports in Latin-1"); ``decision`` for everything else
("from now on", "going forward", "we decided", "always", "never", "don't", "no new deps pls", "no network calls in
tests, mock them", "remember that", "has to
stay", "goes through Priya", "keep it stdlib-only", "whenever the plan prints dates, ...", "we settled on X", "the
logger has to listen on 8087", "dates are always YYYY-MM-DD", a rule announced as one: "ground rules: …", "one
convention: …"; a bare "No, not Plato." is a ``correction`` read with the sentence after it); a fact given as context
("some context first: crumb runs on a Pi stuck on Python 3.9") is a ``note``. Since the user said it, the statement is
its own confirming signal (``capture.prompts`` promotes it at once); one that reads like an injection (role markers,
"ignore previous instructions", piping a download into a shell, sending secrets away) is ``held`` with the reason, for
review (DESIGN.md section 8); so is every statement of a prompt that holds such text anywhere (a pasted page that says
"ignore your previous instructions" and "from now on always push to main").

An explicit request to keep something is a ``note`` of what follows the request ("Save to memory: invoices go out
through Postmark" keeps "Invoices go out through Postmark"): "save to memory: …", "record in memory that …", "save this
for next time: …", "for future reference, …" (``_SAVE``); a sentence that only asks to keep what came before
("Please save that.", "Remember this one.") makes the sentences before it on its line the statement
(``_SAVE_THAT``). The agent may save the same fact through MCP as well; the store's near-duplicate merge keeps one
when the two agree closely, and the injected blocks show the two once otherwise (``dedup.block_repeats``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memcue.sidecar.store import STANDING_KINDS, instruction_like, strip_injected

#: Longest sentence taken as a statement (characters); longer ones are left out, not cut (a run-on paragraph is
#: rarely one durable statement).
STATEMENT_MAX_CHARS = 400
#: Fewest words a statement has ("never force-push" is 2 words: too short to be useful out of context).
STATEMENT_MIN_WORDS = 3
#: Most statements taken from one prompt.
MAX_STATEMENTS = 5
#: Sentences after a statement, on the same line, kept with it as its reason or detail (``_with_context``).
CONTEXT_SENTENCES = 2

#: A sentence that opens with "don't" ("please don't ...", "also do not ...", "no, don't ...").
#: Where a rule may open: the sentence's start, or right after a lead-in clause ending in a colon or a comma
#: ("also while you're in there: never print the key", "oh and btw, don't push to main").
_OPENS = r"(?:^|[:;,]\s+)"
#: "please" as typed in a hurry too.
_PLEASE = r"(?:please|pls|plz)"
_DONT_START = _OPENS + r"(?:(?:no|nope|actually)\b[,.!]?\s+)?(?:" + _PLEASE + r"\s+|and\s+|also\s+)?(?:don'?t|do not)\b"
_LEAD = r"^(?:(?:ok|okay|also|and|so)\b[,\s]+)*(?:" + _PLEASE + r"\s+)?"
_MEMORY = r"(?:in|to|into|for)\s+(?:(?:the|your)\s+)?(?:memory|memcue|notes)\b"
#: When something is to be kept for: "for later", "for next time", "for the future", "for future reference".
_FOR_LATER = r"\s+for\s+(?:later|next\s+time|the\s+future|future\s+reference)\b"
#: An explicit request to keep what follows: "save to memory: …", "record in memory that …", "please save this in
#: memcue: …", "save this for later, …", "save this for next time: …", "keep this in mind for next time: …", "note
#: for later: …", "note for memory: …", "remember for later: …", "save this somewhere: …", "save this pls: …", "for
#: future reference, …", "memorize …", "save how we deploy: …" (kept as
#: "How we deploy: …"). The user asked for it to be kept, whether or not the agent
#: can save it (Codex may start a turn before memcue's MCP server is up and offer it no tool to save with).
_SAVE = (_LEAD + r"(?:(?:save|store|record|log|add|put|keep|write down|jot down|note down|note)"
         r"(?:\s+(?:this|that|it|the following))?(?:\s+one)?\s+" + _MEMORY
         + r"|(?:save|store|record|memori[sz]e|note|remember)(?:\s+(?:this|that|it))?(?:\s+one)?"
         r"(?:\s+(?:somewhere|" + _PLEASE + r"))?(?:" + _FOR_LATER + r"|\s*:)|memori[sz]e\b"
         r"|keep\s+(?:this|that)\s+in\s+mind(?:" + _FOR_LATER + r")?\s*[:,]"
         r"|(?:make\s+)?(?:a\s+)?note\s+to\s+self\b|for\s+future\s+reference\b|"
         r"(?:save|store|record|note(?:\s+down)?)\s+(?=(?:how|where|what|which|why|when)\b[^:?]{0,80}:\s*\S))")
_SAVE_RE = re.compile(_SAVE, re.IGNORECASE)
#: A request to keep what the sentences before it said: "Please save that.", "Remember this one, thanks.",
#: "Note that down.", "Save it to memory!", "no time today, remember that and we'll do it later", "save that so we
#: don't argue about it again" (``find_statements`` takes the sentences before it as the statement). A short lead
#: clause ending in a comma, and a closing "and we'll do it later" or a reason ("so …", "because …"), may stand
#: around it. "Save it." alone is left: it is as often about a file.
_SAVE_THAT = re.compile(
    r"^(?:[\w' ]{1,30},\s+)?" + _LEAD[1:] + r"(?:(?:save|store|record|remember|memori[sz]e|note|keep)\s+(?:that|this)"
    r"(?:\s+(?:one|down|in mind))?(?:\s+" + _MEMORY + r")?|(?:save|store|record|keep|put|add)\s+(?:it|that|this)"
    r"(?:\s+one)?\s+" + _MEMORY + r")(?:" + _FOR_LATER + r")?(?:,?\s+(?:" + _PLEASE + r"|thanks|thank you))?"
    r"(?:,?\s+and\s+(?:we'll|we will|i'll|i will|let's)\s+(?:do|get to|look at|fix|handle)\s+(?:it|that|this)"
    r"(?:\s+(?:later|another time|next time|tomorrow))?|,?\s+(?:so|so that|because|since)\s+[^.!?]{1,100})?[.!]*$",
    re.IGNORECASE)
#: A request to keep something named only by pointing back at it: "remember that exact command for the smoke
#: tests", "save those steps, please", "note this fix". Its words hold no fact (the command is in an earlier
#: answer, which the agent can save): it is read like ``_SAVE_THAT``, keeping the user's sentences before it on its
#: line, if any. One that goes on to say it ("remember this one: the key is in the keychain") is not this.
_REFERS_BACK = re.compile(
    _LEAD + r"(?:remember|save|store|record|note|keep)\s+(?:that|this|these|those)\s+(?:\w+\s+){0,2}?"
    r"(?:commands?|invocations?|one|ones|fix|fixes|steps?|things?|tricks?|settings?|way|approach|paths?|urls?|links?|"
    r"names?|numbers?|values?|workarounds?|solutions?|answers?|outputs?|snippets?|queries|query|scripts?|lines?|"
    r"recipes?|procedure)(?=\s*(?:$|[.!,;]|\s+(?:for|so|because|please|too|as\s+well|and|in\s+case)\b))",
    re.IGNORECASE)
#: A correction that only says what is wrong ("No, not Plato."): the sentence after it says what is right, and is
#: kept with it even when it reads as a task ("Show gravity as specific gravity, like 1.050.").
_REJECTION = (r"^(?:no|nope)\b[,.!]?\s+not\s+(?!(?:that|this|it|those|these|yet|now|quite|really|exactly|there|here|"
              r"so|sure|again)\b)\w")
_REJECTION_RE = re.compile(_REJECTION, re.IGNORECASE)
#: After "no, that's"/"it's": a verdict and nothing to keep ("nope, that's wrong", "no, that's not what I meant"),
#: or a verdict and a report ("no, that's wrong, it still fails"): a rejection of the last answer, not a correction
#: that says what is right ("no, that's wrong, use the v2 endpoint" is one).
_VERDICT_ONLY = (r"(?!\s+(?:not\s+)?(?:\w+\s+)?(?:wrong|it|right|correct|incorrect|bad|broken|off|"
                 r"what\s+i\s+\w+)(?:\W*$|[,;.!]\s+(?!.*\b(?:use|instead|should|must)\b)))")
#: "instead of" said of a choice ("we store cents instead of floats", "prefer tabs instead of spaces"), not of a
#: fault the user reports ("week 5 went back to marta instead of sam") or a task ("print it instead of posting").
_CHOSEN_INSTEAD = (r"\b(?:use|uses|using|prefer|switch(?:ed)?\s+to|go\s+with|went\s+with|pick|picked|store|keep|"
                   r"stick\s+with|we\s+(?:use|store|keep|send|write|log|run|deploy|call|put|read|ship|build))\b[^.;]{0,60}"
                   r"\binstead\s+of\b")
#: What follows "we always"/"I never" in a report or a complaint rather than a rule ("we never got a reply", "we
#: always forget the changelog", "I always get confused", "the CI is always flaky"): a past tense or a verb of
#: what happens to one.
_NOT_A_RULE = (r"(?!\s+(?:\w+ed|got|had|was|were|did|forget|forgets|get|gets|seem|seems|fail|fails|break|breaks|"
               r"crash|crashes|hang|hangs|miss|misses|happen|happens|know|knew|remember|understand|see|saw|"
               r"flaky|broken|slow|empty|wrong|down|late|red|stuck|busy|full|confused|annoying)\b)")
#: A sentence that asks for "no ..." politely: "no new deps pls", "please no new packages, keep it stdlib", "and no
#: force-pushes to main please" (a rule
#: like "don't ..."; "no" alone, as in "no worries" or "no, use X", is not one).
_NO_PLEASE = (r"^(?:(?:oh|and|so|also|btw)[,\s]+)*(?:no\s+(?:[\w.-]+\s+){0,4}?[\w.-]+\s*,?\s+(?:please|pls|plz)\b|"
              r"(?:please|pls|plz)[,\s]+no\s+[\w.-]+)")
#: A sentence that bans something and goes on, after ``;``, ``:`` or ``,``, with what to do instead or why: "No new
#: dependencies; we ship a single file.", "no network calls in tests, mock them", "No secrets in the repo: they go
#: in Vault." (a rule like "don't ..."). "No" before a word of a reply or a report ("no worries, ...", "no errors, it
#: passes now", "no luck, ...") is not one.
_NO_RULE = (r"^(?:(?:oh|and|so|also|btw)[,\s]+)*no\s+(?!(?:worries|worry|problems?|idea|luck|thanks|rush|hurry|way|"
            r"clue|doubt|matter|changes?|errors?|issues?|failures?|difference|news|reply|response|output|results?|"
            r"warnings?|need|wonder|kidding|biggie|sweat|dice|chance|time|one|longer|more|further)\b)"
            r"(?:[\w.-]+\s+){0,5}?[\w.-]+\s*[;:,]\s+(?:(?:just|instead|always|only)\s+)?(?:use|mock|stub|fake|put|keep|"
            r"stick|go|call|ask|write|send|log|store|pin|vendor|inline|wrap|pass|raise|return|read|route|load|reuse|hit|extend|"
            r"we\s+(?:ship|run|use|deploy|need|want|have|keep|build|target|support|only|vendor|pin)|"
            r"(?:it|they|those|these)\s+(?:must|should|has\s+to|have\s+to|needs?\s+to|go|goes|belongs?|lives?|"
            r"breaks?|leaks?|costs?|slows?))\b")
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((kind, re.compile(rx, re.IGNORECASE)) for kind, rx in (
    ("preference", r"\b(?:i|we)\s+(?:really\s+)?prefer\b|\b(?:i|we)(?:'d| would) rather\b|\bi like to\b"),
    ("correction", r"^(?:(?:no|nope)\b(?:[,.!:;]\s+(?:\w+\s+){0,3}?|\s+)|(?:wrong|actually)\b[,.!:;]?\s+"
                   r"(?:\w+\s+){0,3}?)(?:use|(?:it's|it is|that's)"
                   + _VERDICT_ONLY + r"|we use|the)\b|\buse\s+\S+(?:\s+\S+){0,3}\s+instead\b|" + _CHOSEN_INSTEAD + "|"
                   + _REJECTION),
    ("decision", r"\bfrom now on\b|\bgoing forward\b|\bfrom here on\b|\b(?:we|i)(?:'ve| have)?\s+decided\b|"
                 + _OPENS + r"(?:(?:ok|okay|so|and|also|alright|right)[,\s]+)*(?:we(?:'ve| have)?\s+(?:finally\s+)?"
                 r"(?:settled on|agreed (?:on|that|to)|chose|picked|went with)|i(?:'ve| have)?\s+(?:finally\s+)?"
                 r"settled on)\b|\bwe(?:'re| are) (?:going|sticking) with\b|\bour (?:convention|rule|policy) is\b|"
                 r"^(?:(?:one|a|the|our|some|another|new|quick|important|two|three)\s+)?(?:(?:ground|house|golden|"
                 r"team)\s+)?(?:rules?|conventions?|policy|principles?)\b(?:\s+[\w']+){0,4}?\s*:\s+\S"),
    ("decision", _OPENS + r"(?:" + _PLEASE + r"\s+|and\s+|also\s+)?(?:always|never)\b(?!\s+mind\b)"
                 r"(?!\s+(?:the|a|an|same|so|that|this|it)\b)|"
                 r"\b(?:we|i)\s+(?:should\s+|must\s+)?(?:always|never)\b" + _NOT_A_RULE + r"|\byou\s+(?:should|must)\s+"
                 r"(?:always|never)\b|\b(?:must|should)\s+(?:always|never)\b|\blet'?s (?:always|never)\b|"
                 r"(?<!\bthis )(?<!\bit )(?<!\bthat )\b(?:is|are)\s+(?:always|never)\s+(?!\w+ing\b)" + _NOT_A_RULE),
    ("decision", _DONT_START + r"\s+\w+"),
    ("decision", r"^(?:" + _PLEASE + r"\s+)?remember\b(?:\s+that)?|\bkeep in mind\b|\bnote that\b|"
                 r"(?:^|[,;:]\s+)(?:(?:ok|okay|also|and|so|oh)\b[,\s]+)*(?:" + _PLEASE + r"\s+)?remember\s+that\b"),
    ("note", _SAVE),
    ("decision", r"^(?:(?:and|so|also)\s+)?(?:nothing|no one|nobody|no \w+)\s+(?:\w+\s+){0,2}?(?:should|must|may|"
                 r"ever)\b(?!\s+have\b)|^(?:we|our \w+)\b.{0,80}\band only\b"),
    ("decision", _NO_PLEASE),
    ("decision", _NO_RULE),
    ("decision", r"\b(?:has|have|needs?) to (?:stay|remain)\b|\bmust (?:stay|remain)\b|"
                 r"\bgoes through (?:me|him|her|them|[A-Z][\w'-]+)\b|"
                 r"\b(?:keep|keeps|stays?|remains?)\s+(?:\w+\s+){0,3}?[\w.]+-(?:only|compatible)\b|"
                 r"^(?:(?:and|also|so)\s+)?(?:the|our|my)\s+(?:[\w.-]+\s+){1,3}?(?:has|have|needs?|must)\s+(?:to\s+)?"
                 r"(?!be\s+(?:done|fixed|finished|ready|merged|reviewed)\b)(?<=to |st )\w+|"
                 + _OPENS + r"(?:(?:and|also|so|please)\s+)*(?:whenever|whatever|wherever|every time|each time|"
                 r"any time)\b(?=.{0,80},)"),
    ("note", r"^(?:(?:oh|and|also|ok|okay|so)\b[,\s]+)*(?:fyi|fwiw|btw|psa|heads[- ]up|just so you know)"
             + _FOR_LATER + r"\s*[,:!-]?\s+\S"),
    ("note", r"^(?:(?:oh|and|also|ok|okay|so)\b[,\s]+)*(?:fyi|fwiw|btw|psa|heads[- ]up|for the record|"
             r"for what it'?s worth|just so you know|"
             r"(?:(?:some|a|for|quick|(?:a )?(?:little )?bit of)\s+)*(?:context|ctx|background)(?: first)?)\b"
             r"[,:!]?\s+(?=.*\b(?:is|are|was|were|has|"
             r"have|lives?|lands?|sits?|owns?|runs?|uses?|stays?|must|needs?|goes|comes?|belongs?|points?|depends?|"
             r"means?|gets?|got|becomes?|will|won't|moves?|moved|switched|migrated|renamed|closes?|retires?)\b)"),
))
#: A "don't ..." that holds only for the moment ("don't change anything yet", "don't commit for now, just look",
#: "don't push until I review it"), or that only bounds the task at hand and names nothing to keep a rule about
#: ("Can you figure out why? Don't change anything.", "don't commit this", "don't touch anything else"): an
#: instruction for this turn, not a rule to keep.
_MOMENTARY = re.compile(
    r"\b(?:yet|for now|right now|just now|this time|at the moment|for the moment|until (?:i|we|you)\b|"
    r"before (?:i|we|you)\b)|\bjust (?:look|read|check|explain|tell|show|answer|review)\b|"
    r"^(?:(?:no|ok|okay|and|but|so|also|please|pls)\b[,\s]+)*(?:don'?t|do not)\s+(?:change|touch|modify|edit|fix|"
    r"commit|push|merge|deploy|delete|remove|rewrite)\s+(?:anything|it|this|that|them|these|those)(?:\s+else)?"
    r"\s*[.!]*$", re.IGNORECASE)
_DONT = re.compile(_DONT_START + "|" + _NO_PLEASE + "|" + _NO_RULE, re.IGNORECASE)
#: A note that only reports how something is doing now ("fyi the build is red", "heads up: CI is down again",
#: "fyi the tests are failing on CI"): news of the moment, like ``_TODAY``'s, not a fact to keep.
_STATE_NOW = re.compile(
    r"\b(?:is|are|'s|went|seems?|looks?)\s+(?:\w+\s+)?(?:red|green|down|broken|failing|passing|flaky|stuck|offline|"
    r"out)(?:\s+(?:again|now|atm|(?:on|in)\s+[\w.-]+))*\s*[.!]*$", re.IGNORECASE)
_TODAY = re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening|week)|right now|at the moment|for now)\b",
                    re.IGNORECASE)
_QUESTION_START = re.compile(
    r"^(?:what|why|how|where|when|which|who|whom|whose|is|are|was|were|do|does|did|can|could|should|would|will|"
    r"shall|may|might|have|has|had|am)\b", re.IGNORECASE)
#: Lines the user pasted rather than typed: tracebacks, log lines, shell prompts, stack frames, diffs.
_PASTED = re.compile(
    r"^\s*(?:Traceback \(most recent call last\)|File \"|at \S+\(|\$ |# |>>> |\+\+\+ |--- |@@ |"
    r"\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|\[?\d{2}:\d{2}:\d{2}|(?:DEBUG|INFO|WARN|WARNING|ERROR|FATAL|TRACE)\b|"
    r"\w+(?:Error|Exception)\b:|E\s{2,})")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
#: A sentence that opens by pointing back at the one before: "it"/"they" as its subject, "this"/"that"/"these"/
#: "those" followed by a verb ("that goes for ...", "this has to stay"), no subject at all ("never in a .env in
#: the repo", "only from the worker"), or a rule whose object is such a pronoun ("never expose it publicly", "don't
#: run it from a dirty tree", "always tag them first", "never convert anything to UTC"); "this repo always ..."
#: names its subject.
_ANAPHORA = re.compile(
    r"^(?:(?:and|also|but|so|oh)\b[,\s]+)?(?:it|it's|they|they're|(?:whatever|whichever|wherever)\s+(?:it|they)\s+"
    r"(?:is|are|was|were)\b|(?:this|that|these|those)\s+(?:is|are|was|were|"
    r"must|should|has|have|needs?|goes|go|stays?|can|cannot|can't|will|won't|means?|applies|apply)\b|"
    r"(?:never|always|not|only)\s+(?:in|on|at|to|from|into|with|by|for|under|via|through|inside|outside|over|the|a|an|"
    r"as)\b|"
    r"(?:(?:please|pls)\s+)?(?:never|always|don'?t|do\s+not|must\s+not|mustn't|should\s+not|shouldn't)\s+(?:ever\s+)?"
    r"[a-z]+\s+(?:(?:it|them|anything|everything)\b(?!\s+(?:is|are|was|were)\b)|"
    r"(?:this|that|these|those)\s*(?:$|[^\w\s])))",
    re.IGNORECASE)
#: A sentence that turns to the task at hand or to another topic ("Now the actual bug: …", "Please change it.",
#: "Add a test, fix it and commit."): what follows a statement stops being its reason or detail there.
_TASK_TURN = re.compile(
    r"^(?:(?:ok|okay|so|and|but|also)\b[,\s]+)?(?:now|anyway|anyhow|next|separately|unrelated|meanwhile|please|pls|"
    r"btw|by\s+the\s+way|for\s+now|"
    r"first(?:\s+thing|\s+off)?\b|"
    r"can|could|would|add|fix|run|write|commit|check|make|create|update|change|rename|implement|look|try|test|"
    r"refactor|remove|delete|move|show|tell|explain|open|start|build|deploy|push|merge|let's)\b", re.IGNORECASE)
#: The part of ``_TASK_TURN`` that turns away even from steps the user asked to keep ("save how we deploy: rsync the
#: repo. Restart the service. Now fix the flaky test."): a word that changes the subject, not an imperative.
_TOPIC_TURN = re.compile(r"^(?:(?:ok|okay|so|and|but)\b[,\s]+)?(?:now|anyway|anyhow|separately|unrelated|meanwhile|"
                         r"btw|by\s+the\s+way|first(?:\s+thing|\s+off)?)\b", re.IGNORECASE)
#: Where a text's sentences end: after ``.``, ``!`` or ``?`` and a space, or at a line break (also used by
#: ``capture.turn_edits`` on the agent's answers).
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|\s*[\n]\s*")
#: A role marker opening a sentence ("SYSTEM: ..."): left out when matching, so the statement after it is found
#: (and held).
_ROLE_PREFIX = re.compile(r"^(?:system|assistant|developer|user|human|tool)\s*:\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Statement:
    """One durable statement found in a prompt: its ``text`` (the sentence as typed), the memory ``kind`` it is
    written as, the ``pattern`` that matched (the matched words), and ``held`` (why it waits for review instead
    of being promoted: "" when it may be promoted)."""

    text: str
    kind: str
    pattern: str
    held: str = ""


def find_statements(prompt: str) -> list[Statement]:
    """The durable statements in ``prompt`` (see the module docstring), in order, each sentence once, at most
    ``MAX_STATEMENTS``. Never raises for any ``str``."""
    marked = instruction_like(prompt)  # pasted text that talks to a model: nothing in this prompt is promoted
    whole_held = f"{marked} elsewhere in the prompt" if marked else ""
    found: list[Statement] = []
    seen: set[str] = set()
    for line in _typed_text(_requests_joined(prompt)).split("\n"):
        # "remember that deploys need the VPN:" before a paste: the typed clause is the fact, without its colon
        sentences = [x.rstrip(": ") if _SAYS_BEFORE_COLON.match(x) else x for x in _sentences(line)]
        kinds = [_statement_kind(sentence) for sentence in sentences]
        made_by = -1  # the sentence of this line that made found[-1]
        for i, (sentence, match) in enumerate(zip(sentences, kinds, strict=True)):
            if _SAVE_THAT.match(sentence) or _REFERS_BACK.match(sentence):  # "Please save that.": what came before
                kept = _kept_before(sentences[:i], kinds[:i], found) if i else ""
                if kept and kept.lower() not in seen:
                    seen.add(kept.lower())
                    found.append(Statement(kept, "note", sentence, _held(kept) or whole_held))
                continue
            if match is None or sentence.lower() in seen:
                continue
            seen.add(sentence.lower())
            saved = _SAVE_RE.match(sentence)
            if saved and match[0] != "note":  # "remember: …" (a decision), "note: never …": without the request
                match = _statement_kind(_without_request(sentence, saved.end())) or match
            text = _with_context(sentence, sentences[i + 1:], kinds[i + 1:], steps=saved is not None)
            if saved:
                text = _without_request(text, saved.end())
            if i and _ANAPHORA.match(sentence):  # "it must never ...": about what the sentence before names
                if made_by == i - 1:
                    joined = f"{found[-1].text} {text}"
                    if len(joined) <= STATEMENT_MAX_CHARS:
                        kind, pattern = _joined_kind(found[-1], match)
                        found[-1] = Statement(joined, kind, pattern, _held(joined) or whole_held)
                        continue
                text = f"{sentences[i - 1]} {text}"
            found.append(Statement(text, match[0], match[1], _held(text) or whole_held))
            made_by = i
            if len(found) >= MAX_STATEMENTS:
                return found
    return found


def _joined_kind(before: Statement, match: tuple[str, str]) -> tuple[str, str]:
    """The ``(kind, matched words)`` of ``before`` once a sentence that points back at it (``_ANAPHORA``), of kind
    and words ``match``, is joined to it: a rule's kind (``STANDING_KINDS``) when ``before`` is a plain note and the
    sentence states a rule ("save this: the token lives in Vault. never in a .env in the repo" is a rule to keep,
    not only a fact), else ``before``'s own."""
    if before.kind not in STANDING_KINDS and match[0] in STANDING_KINDS:
        return match[0], f"{before.pattern}; {match[1]}"
    return before.kind, before.pattern


def _without_request(text: str, end: int) -> str:
    """``text`` without the request to keep it that ends at ``end`` ("Save to memory: ", "Record in memory that ",
    "For future reference, "), its first letter made a capital: the memory is the fact, not the asking. ``text``
    as it is when fewer than ``STATEMENT_MIN_WORDS`` words would be left."""
    rest = re.sub(r"^[\s:,;.\-–—]*(?:(?:" + _PLEASE + r"|thanks|thx)\b[\s:,;.!\-–—]*)?(?:that\s+)?", "", text[end:],
                  flags=re.IGNORECASE)
    if len(rest.split()) < STATEMENT_MIN_WORDS:
        return text
    return rest[0].upper() + rest[1:]


def _kept_before(before: list[str], kinds: list[tuple[str, str] | None], found: list[Statement]) -> str:
    """What a "save that" sentence asks to keep: the up to ``CONTEXT_SENTENCES`` + 1 sentences before it on its
    line (stopping at a question), within ``STATEMENT_MAX_CHARS``; "" when the sentence right before it is
    already a statement (it is kept as one) or nothing is left."""
    if kinds[-1] is not None and found and found[-1].text.endswith(before[-1]):
        return ""
    text = ""
    for sentence in reversed(before[-(CONTEXT_SENTENCES + 1):]):
        if sentence.endswith("?") or _QUESTION_START.match(sentence):
            break
        joined = f"{sentence} {text}".strip()
        if len(joined) > STATEMENT_MAX_CHARS:
            break
        text = joined
    return text if len(text.split()) >= STATEMENT_MIN_WORDS else ""


def _with_context(sentence: str, after: list[str], kinds: list[tuple[str, str] | None], steps: bool = False) -> str:
    """``sentence`` with the sentences that follow it on its line, up to ``CONTEXT_SENTENCES`` of them and
    ``STATEMENT_MAX_CHARS`` in all, stopping at a question, another statement, a turn to the task
    (``_TASK_TURN``, except right after a bare "No, not X."; in what the user asked to save, ``steps``, only a
    change of subject, ``_TOPIC_TURN``: "save how we deploy: rsync the repo. Restart the service." keeps its steps,
    "… Now fix the flaky test." does not) or a short remark ("Thanks!"):
    what comes right after a decision is usually its reason or its detail ("from now on put type hints on
    everything public. we're turning on mypy --strict in CI next week")."""
    text = sentence
    rejection = _REJECTION_RE.match(sentence) is not None  # "No, not bcrypt." then "Use argon2id."
    for i, (nxt, kind) in enumerate(list(zip(after, kinds, strict=True))[:CONTEXT_SENTENCES]):
        fix = i == 0 and rejection
        turned = (_TOPIC_TURN.match(nxt) if steps else _TASK_TURN.match(nxt)) and not fix
        if kind is not None or nxt.endswith("?") or _QUESTION_START.match(nxt) or turned or \
                (len(nxt.split()) < STATEMENT_MIN_WORDS and not fix):
            break
        if len(text) + 1 + len(nxt) > STATEMENT_MAX_CHARS:
            break
        text = f"{text} {nxt}"
    return text


def _typed_text(prompt: str) -> str:
    """``prompt`` without what the user did not type as prose: fenced blocks, quoted lines, pasted log or
    traceback lines, indented code, memcue blocks. A dropped line ends a paragraph (so no sentence spans it)."""
    kept: list[str] = []
    fenced = False
    for line in strip_injected(prompt).splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            kept.append("")
            continue
        if fenced or line.lstrip().startswith(">") or line.startswith(("    ", "\t")) or _PASTED.match(line):
            kept.append("")
            continue
        kept.append(line)
    return "\n".join(kept)


#: A line that only asks to keep what comes next ("remember this:", "note for later:", "save to memory:").
_REQUEST_LINE = re.compile(r"(?:" + _SAVE + r")\s*(?:(?:this|that|the following)\s*)?:?\s*$", re.IGNORECASE)


#: A request to keep a fact it states before a colon ("remember that the staging box needs the VPN up first:"
#: before a pasted error): the fact is the typed clause. One that points at what follows ("remember this:",
#: "remember how to run these:", "from now on use this file:") introduces a paste and keeps nothing itself.
_SAYS_BEFORE_COLON = re.compile(
    r"^(?:[^:]{1,80}?,\s+)?(?:(?:ok|okay|also|and|so)\b[,\s]+)*(?:" + _PLEASE + r"\s+)?(?:remember|note|keep in mind)"
    r"\s+that\s+"
    r"(?!.*\b(?:this|these|the following|below|here|as follows|like so)\b)(?:\S+\s+){2,}\S+\s*:$", re.IGNORECASE)


def _requests_joined(prompt: str) -> str:
    """``prompt`` with a line that only asks to keep what follows ("remember this:") joined to the next line
    that is not blank when the user typed it ("the deploy key is in Vault"), so the request and its fact are one
    sentence; a request followed by a paste (a fence, a quote, an indented or log line, a tag) stays as it is."""
    lines = prompt.splitlines()
    for i, line in enumerate(lines):
        if not line.strip() or not _REQUEST_LINE.match(line.strip()):
            continue
        nxt = next((k for k in range(i + 1, len(lines)) if lines[k].strip()), None)
        if nxt is None:
            break
        after = lines[nxt]
        if _FENCE.match(after) or after.lstrip().startswith((">", "<")) or after.startswith(("    ", "\t")) or \
                _PASTED.match(after):
            continue
        lines[i], lines[nxt] = "", f"{line.rstrip()} {after.lstrip()}"
    return "\n".join(lines)


def _sentences(text: str) -> list[str]:
    """Sentences of ``text``: split at ``.``/``!``/``?`` followed by space and at line ends; trimmed."""
    return [s.strip(" \t-*•") for s in SENTENCE_END.split(text) if s and s.strip(" \t-*•")]


def _statement_kind(sentence: str) -> tuple[str, str] | None:
    """``(kind, matched words)`` when ``sentence`` states something durable, None for a question, a sentence out
    of bounds, one that ends with a colon (it introduces a block the capture does not keep: code, a pasted file),
    a "don't ..." for the moment only (``_MOMENTARY``), or no pattern."""
    sentence = _ROLE_PREFIX.sub("", sentence)
    if (sentence.endswith(("?", ":")) or _QUESTION_START.match(sentence) or len(sentence) > STATEMENT_MAX_CHARS
            or len(sentence.split()) < STATEMENT_MIN_WORDS):
        return None  # a question, or an introduction to what follows ("from now on use this file:") that is not kept
    if _DONT.search(sentence) and _MOMENTARY.search(sentence):
        return None
    for kind, pattern in _PATTERNS:
        m = pattern.search(sentence)
        if m:
            if kind == "note" and (_TODAY.search(sentence) or _STATE_NOW.search(sentence)) and \
                    not _SAVE_RE.match(sentence):
                return None  # "heads up: CI is slow today", "fyi the build is red": news of the day, not a fact
            return kind, m.group(0).strip()
    return None


def _held(sentence: str) -> str:
    """Why ``sentence`` must wait for review (``instruction_like``), "" when it may be promoted."""
    return instruction_like(sentence)
