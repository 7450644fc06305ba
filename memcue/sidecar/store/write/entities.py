"""Entity extraction: the names a memory (at write time) or a question (at recall) carries.

An entity is a token that names something: a URL or file path, a ticket id (``OPS-4821``, ``#123``), a
version (``2.1.3``, ``v0.27``, ``Python 3.12``), an identifier (``snake_case``, ``UPPER_SNAKE``,
``CamelCase``, dotted names like ``os.path.join``, ``--flags``, back-quoted code, commit hashes) or a
capitalised name (people, products, places: "Caroline", "LGBTQ", "Postgres", "New York").
``extract_entities(text)`` returns them normalised (lowercase) with a kind; the backend records them for a
memory as the entity graph (``store.sqlite.graph.link_entities``: entities, which memory carries which, and
co-occurrence edges).

Extraction is rule-based (regular expressions plus a few word lists), in the spirit of the pattern-based
term extractors of early information extraction; it runs for every write (``store.write.prepare``, before the
store's writer lock) and every question, so it must stay cheap (tens of microseconds per memory, see
``tests/test_entity_graph.py``) and proportional to the text: a pasted 300 KB log takes about 0.1 s (no
pattern is retried across a long run, and a span already taken is checked in its own length;
``benchmarks/capture_cost.py``). Capitalisation is the only
cue for names, so the rules that keep false positives down are about capitalised words that are *not*
names:

* function words, interjections, weekday and month names, titles ("The", "Thanks", "Friday", "May",
  "Mr") never count, wherever they stand ("Thanks Caroline" gives "caroline");
* a lone capitalised word that opens a sentence is a name when it is a speaker label ("Caroline: hi"), an
  acronym ("LGBTQ") or written capitalised mid-sentence in the same text; a listed common word or one shaped
  like one (``-ing``, ``-ly``, ``-ed``, ``-tion``, ... endings: "Finally", "Going", "Decided") is dropped;
  any other ("Postgres is slow", but also "Appreciate it!") is a ``maybe_name``: linked like any entity,
  but recall matches a lowercase query word to it only once some memory names it mid-sentence (which
  promotes the stored kind to ``name``);
* "I" and other one-letter words are never entities; two-part numbers ("3.5 stars") are versions only
  after a capitalised or software word ("Python 3.12", "version 2.0").
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator

#: At most this many entities are linked per memory (bounds the edges one write adds to 66 pairs, i.e.
#: 132 directed rows; a long text keeps the entities it names first).
MAX_ENTITIES_PER_MEMORY = 12
#: Kind of a lone capitalised word at a sentence start that no list marks as ordinary vocabulary ("Postgres
#: is slow", but also "Appreciate it!"). Stored and linked like any entity; a later use of another kind
#: (a mid-sentence "Postgres") promotes the stored kind. Recall treats unpromoted ones as unconfirmed.
MAYBE_NAME = "maybe_name"
#: Longest entity name kept (characters); longer tokens are data, not names.
MAX_NAME_CHARS = 80

_UP = "A-ZÀ-ÖØ-ÞĀĂĄĆČĎĐĒĘĚĞĪŁŃŇŌŐŒŘŚŞŠŤŪŮŰŹŻŽ"
_URL = re.compile(r"\b(?:https?|ftp|file)://[^\s<>\"'`)\]]+")
#: An e-mail address is ``\b[\w.+-]+@`` followed by ``_EMAIL_DOMAIN``; ``_emails`` finds them from each "@"
#: (one regex for the whole address retried at every word boundary of a long dotted run: quadratic).
_EMAIL_DOMAIN = re.compile(r"[\w-]+(?:\.[\w-]+)+\b")
_EMAIL_LOCAL = re.compile(r"[\w.+-]")
_BOUNDARY = re.compile(r"\b")
_SLASH_PATH = re.compile(r"(?<![\w/.~-])(?:~|\.{1,2})?/?(?:[\w.-]++/)+[\w.-]*")  # src/app.py, ~/.config/x
_FILE = re.compile(
    r"(?<![\w/.-])\.[a-z][\w-]{1,30}(?:\.[a-z0-9]+)?\b"  # dotfiles: .env, .gitignore, .env.local
    r"|(?<![\w/.-])[\w-]++(?:\.[\w-]+)*\.(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|go|rs|rb|java|kt|kts|swift|c|h|cc|cpp"
    r"|hpp|cs|php|pl|lua|scala|sql|sh|bash|zsh|ps1|toml|yaml|yml|json|jsonl|xml|ini|cfg|conf|env|lock|md|rst|txt"
    r"|csv|html|css|scss|vue|svelte|ipynb|proto|tf|dockerfile|gradle|mk|log|db|sqlite)\b"
)
#: Cheap tests (a literal first character) that say whether a text can hold a match of the costlier patterns.
_DOT_GATE = re.compile(r"\.[A-Za-z_]")
_TICKET_GATE = re.compile(r"[A-Z0-9]-\d|#\d")
_VERSION_GATE = re.compile(r"\d\.\d")
_CAMEL_GATE = re.compile(r"[a-z0-9][A-Z]")
_HEX_GATE = re.compile(r"[0-9a-f]{7}")
_NUMERIC = re.compile(r"[\d/.:-]+")
_TICKET = re.compile(r"(?<![\w-])[A-Z][A-Z0-9]{1,9}-\d{1,6}\b|(?<![\w&#])#\d{2,7}\b")
#: Prefixes written like ticket ids that are standards or model names rather than tickets.
_NOT_TICKET_PREFIXES = frozenset("UTF SHA ISO GPT COVID MD AES RSA TLS SSL HTTP IPV PEP RFC ECMA ES".split())
_VERSION_TAIL = r"(?:[-.+]?(?:rc|a|b|alpha|beta|post|dev|pre|final|lts)\d*)?"
_VERSION = re.compile(
    rf"(?<![\w.$€£])(?:[vV]\d+(?:\.\d+)+|\d+\.\d+\.\d+(?:\.\d+)?){_VERSION_TAIL}(?![\w.]*\d)(?!%)"
    rf"|(?<![\w.$€£])(?P<two>\d+\.\d+){_VERSION_TAIL}(?![\w.]*\d)(?!\s*%)"
)
#: Lowercase words after which a two-part number is a version ("python 3.12"); any capitalised word also is.
_VERSIONED = frozenset(
    """version versions release releases ver rel python python3 node nodejs npm java jdk go golang ruby rust
    rustc php perl postgres postgresql psql mysql sqlite sqlite3 redis django flask fastapi react vue angular
    ubuntu debian macos ios android kernel linux gcc clang llvm rails numpy pandas torch pytorch tensorflow
    cuda docker kubernetes helm terraform pip poetry uv tag bump bumped upgrade upgraded pin pinned""".split()
)
_WORD_BEFORE = re.compile(r"([A-Za-z][\w+#-]*)\s+$")
_CODE = re.compile(r"`([^`\s]{2,80})`")
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]")  # --no-verify
_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)+(?:\(\))?")  # os.path.join, Store.remember()
_SNAKE = re.compile(r"\b_*+[A-Za-z][A-Za-z0-9]*+(?:_++[A-Za-z0-9]++)+_*+(?:\(\))?|\b__[a-z]+__")  # snake, UPPER_SNAKE
_CAMEL = re.compile(r"\b(?=[A-Za-z])[A-Za-z0-9]*[a-z0-9][A-Z][A-Za-z0-9]*(?:\(\))?")  # CamelCase, camelCase, iPhone
_HASH = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")  # commit hashes
#: Dotted tokens that are abbreviations, not identifiers.
_NOT_DOTTED = frozenset("e.g i.e a.m p.m u.s u.k vs etc n.b p.s".split())
_MENTION = re.compile(r"(?<![\w@])@[A-Za-z][\w-]*[A-Za-z0-9]")
#: Lowercase words that may join capitalised words into one name ("Lord of the Rings", "Ludwig van Beethoven").
_CONNECTORS = frozenset("of the de la le du da del di van von der den".split())
_CAP_WORD = rf"[{_UP}][^\W\d_]+(?:-[^\W\d_]+)*(?:['’][sS])?"
_NAME_RUN = re.compile(
    rf"(?<![\w'’@#$/.-]){_CAP_WORD}"
    rf"(?:[ ](?:(?:{'|'.join(sorted(_CONNECTORS))})[ ]){{0,2}}{_CAP_WORD}){{0,3}}(?![\w'’-])"
)
_POSSESSIVE = re.compile(r"['’][sS]$")
#: Capitalised words that are never names wherever they stand: function words, pronouns, interjections,
#: politeness, titles, weekday and month names (time is the temporal channel's business).
_NOT_NAMES = frozenset(
    """a an the this that these those there then than what whats when where which who whom whose why how
    yes yeah yep yup nope no not nor but and or for with from into onto upon also just well okay ok sure
    thanks thank thx hey hi hello bye goodbye wow oh ooh ah aw aww haha hah lol omg hmm um uh yay woohoo
    cheers congrats congratulations sorry please welcome great good nice cool awesome amazing wonderful
    really maybe let lets our ours your yours his her hers their theirs its they them she he you we me my
    mine us it it's is am are was were be been being do does did done have has had will would could should
    can cannot may might must shall to of in on at by as if so too very all any some each every both either
    neither none one two three here now today tomorrow yesterday tonight after before since until while
    about again once still even only ever never always sometimes often usually mr mrs ms miss dr sir madam
    mom mum dad mommy daddy monday tuesday wednesday thursday friday saturday sunday january february march
    april june july august september october november december jan feb mar apr jun jul aug sep sept oct nov
    dec mon tue tues wed thu thur thurs fri sat am pm btw ttyl imo imho fyi tbh asap afaik idk brb fwiw irl""".split()
)
#: Words that open sentences but rarely name anything; dropped only when they stand alone at a sentence start.
_COMMON_INITIAL = frozenset(
    """sounds sound looks look seems seem glad happy sad hope wish love like know think guess bet feel felt
    true totally absolutely definitely exactly right wait way make take talk keep go get got try check see
    use run add fix set put note remember avoid prefer need want give tell ask said says say new old next
    last first second third another other others such most more less many much few several lots lot
    everyone everybody everything something someone somebody nothing nobody anything anyone anyway besides
    however though although because unless otherwise instead therefore thus hence overall plus meanwhile
    speaking anyhow actually basically honestly seriously literally personally hopefully luckily sadly
    unfortunately fortunately currently recently finally usually apparently obviously clearly probably
    yes good bad best better fun funny interesting beautiful gorgeous lovely sweet cute fantastic super
    pretty kinda sorta oops ugh huh whoa yikes hooray bravo indeed definitely certainly agreed agree
    same fine done ready true false null none todo fixme warning error errors tip tips rule rules step
    steps bug bugs issue issues test tests build deploy install upgrade update remove rename revert restart
    switch move merge commit push pull rebase ran went came saw made took gave had found left kept
    someday everyday anytime nowhere somewhere everywhere""".split()
)
_COMMON_SUFFIXES = (
    "ing", "ly", "ed", "tion", "tions", "sion", "ness", "ment", "ments", "ful", "less", "ous", "ive", "able",
    "ible", "ies", "est", "ism", "ity",
)
_SENTENCE_END = frozenset(".!?:]})\"“”'‘’*>|\n\r\t-–—•")


def extract_entities(text: str) -> list[tuple[str, str]]:
    """Entities in ``text`` as ``(name, kind)``.

    ``name`` is lowercase (a path keeps its separators, a mention loses its ``@``), at most
    ``MAX_NAME_CHARS`` long; ``kind`` is one of ``url``, ``path``, ``ticket``, ``version``, ``identifier``,
    ``name``, ``maybe_name`` (see ``MAYBE_NAME``). First-occurrence order, no duplicate names, at most
    ``MAX_ENTITIES_PER_MEMORY``. Never raises on any ``str`` (an empty or symbol-only text gives ``[]``).
    """
    if not text:
        return []
    found: dict[str, tuple[int, str]] = {}
    # One byte per character, 1 where an earlier match took it: checking and marking a span costs its length,
    # so the whole extraction stays proportional to the text (a list of spans made it quadratic).
    taken = bytearray(len(text))

    def free(start: int, end: int) -> bool:
        return taken.find(1, start, end) < 0

    def add(name: str, kind: str, start: int, end: int) -> None:
        taken[start:end] = b"\x01" * (end - start)
        if 2 <= len(name) <= MAX_NAME_CHARS and name not in found:
            found[name] = (start, kind)

    dotted = _DOT_GATE.search(text) is not None
    _marked(text, dotted, free, add)
    _identifiers(text, dotted, free, add)
    _names(text, free, add)
    ordered = sorted(found.items(), key=lambda item: item[1][0])
    return [(name, kind) for name, (_, kind) in ordered[:MAX_ENTITIES_PER_MEMORY]]


_Free = Callable[[int, int], bool]
_Add = Callable[[str, str, int, int], None]


def _marked(text: str, dotted: bool, free: _Free, add: _Add) -> None:
    """URLs, e-mail addresses, back-quoted code, paths, ticket ids and versions (``dotted``: the text has a
    dot before a letter, so it may hold a file name)."""
    if "://" in text:
        for m in _URL.finditer(text):
            add(m.group(0).rstrip(".,;:!?'\"").split("://", 1)[1].rstrip("/").lower(), "url", *m.span())
    if "@" in text:
        for start, end in _emails(text):
            if free(start, end):
                add(text[start:end].lower(), "identifier", start, end)
    if "`" in text:
        for m in _CODE.finditer(text):
            if free(*m.span()):
                inner = m.group(1).strip(".,;:!?()[]{}'\"")
                add(inner.removesuffix("()").lower(), "path" if "/" in inner else "identifier", *m.span())
    for m in itertools.chain(_SLASH_PATH.finditer(text) if "/" in text else (),
                             _FILE.finditer(text) if dotted else ()):
        raw = m.group(0).rstrip(".-")
        if free(m.start(), m.start() + len(raw)) and _is_path(raw):
            add(raw.removeprefix("./").rstrip("/").lower(), "path", m.start(), m.start() + len(raw))
    if _TICKET_GATE.search(text):
        for m in _TICKET.finditer(text):
            if free(*m.span()):
                raw = m.group(0)
                kind = "name" if raw.split("-", 1)[0] in _NOT_TICKET_PREFIXES else "ticket"
                add(raw.lower(), kind, *m.span())
    if _VERSION_GATE.search(text):
        for m in _VERSION.finditer(text):
            if free(*m.span()) and (m.group("two") is None or _versioned(text, m.start())):
                add(m.group(0).lower(), "version", *m.span())


def _identifiers(text: str, dotted: bool, free: _Free, add: _Add) -> None:
    """Flags, dotted names, snake_case, CamelCase, commit hashes and @mentions."""
    for pattern, gate in ((_FLAG, "--" in text), (_DOTTED, dotted), (_SNAKE, "_" in text),
                          (_CAMEL, _CAMEL_GATE.search(text)), (_HASH, _HEX_GATE.search(text))):
        if not gate:
            continue
        for m in pattern.finditer(text):
            if free(*m.span()):
                name = m.group(0).removesuffix("()").lower()
                if "." in name and (name in _NOT_DOTTED or all(len(p) == 1 for p in name.split("."))):
                    continue
                add(name, "identifier", *m.span())
    if "@" in text:
        for m in _MENTION.finditer(text):
            if free(*m.span()):
                name = m.group(0)[1:].lower()
                add(name, "identifier" if "." in name else "name", *m.span())


def _emails(text: str) -> Iterator[tuple[int, int]]:
    """Spans of e-mail addresses in ``text``, the same as ``finditer`` of ``\\b[\\w.+-]+@`` + ``_EMAIL_DOMAIN``
    would give, in time proportional to the text: for each "@", the local part is the run of ``[\\w.+-]``
    before it (from its first word boundary), the domain is matched after it."""
    pos = 0
    while (at := text.find("@", pos)) >= 0:
        run = at
        while run > pos and _EMAIL_LOCAL.match(text, run - 1):
            run -= 1
        edge = _BOUNDARY.search(text, run, at) if run < at else None
        domain = _EMAIL_DOMAIN.match(text, at + 1) if edge is not None and edge.start() < at else None
        if edge is None or domain is None:
            pos = at + 1
            continue
        yield edge.start(), domain.end()
        pos = domain.end()


def _is_path(raw: str) -> bool:
    """A slash token is a path when it has a file extension, starts at a root (``/``, ``~/``, ``./``) or
    has two or more separators; "and/or" and "diet/exercise" are prose."""
    if "/" not in raw:
        return True
    if _NUMERIC.fullmatch(raw):  # dates and fractions: 8/5/2023, 24/7
        return False
    if raw.startswith(("/", "~/", "./", "../")):
        return raw.strip("/.~") != ""
    last = raw.rstrip("/").rsplit("/", 1)[-1]
    return raw.count("/") >= 2 or ("." in last and not last.endswith("."))


def _versioned(text: str, start: int) -> bool:
    """True when the word before a two-part number marks it as a version (capitalised or a software word)."""
    m = _WORD_BEFORE.search(text[max(0, start - 24):start])
    return bool(m) and (not m.group(1).islower() or m.group(1).lower() in _VERSIONED)


def _sentence_initial(text: str, start: int) -> bool:
    """True when the word at ``start`` opens the text, a line, a sentence, a quote or a bracketed prefix."""
    i = start - 1
    while i >= 0 and text[i] == " ":
        i -= 1
    return i < 0 or text[i] in _SENTENCE_END


def _common(word: str) -> bool:
    """A lowercase word that looks like ordinary vocabulary rather than a name."""
    return word in _COMMON_INITIAL or (len(word) >= 5 and word.endswith(_COMMON_SUFFIXES))


def _names(text: str, free: Callable[[int, int], bool], add: Callable[[str, str, int, int], None]) -> None:
    """Capitalised-name runs (see the module docstring for the false-positive rules)."""
    runs: list[list[tuple[str, int]]] = []
    for m in _NAME_RUN.finditer(text):
        words, pos = [], m.start()
        for raw in m.group(0).split(" "):
            word = _POSSESSIVE.sub("", raw)
            if free(pos, pos + len(word)):
                words.append((word, pos))
            else:
                words.append(("", pos))  # taken by an earlier pattern: splits the run
            pos += len(raw) + 1
        runs.append(words)
    # Words written capitalised somewhere other than a sentence start: a sentence-initial use is a name too.
    mid = {w.lower() for words in runs for w, at in words if w[:1].isupper() and not _sentence_initial(text, at)}
    for words in runs:
        groups: list[list[tuple[str, int]]] = [[]]
        for word, at in words:
            low = word.lower()
            if word[:1].islower() and low in _CONNECTORS:
                groups[-1].append((low, at))
            elif len(word) < 2 or low in _NOT_NAMES:
                groups.append([])
            else:
                groups[-1].append((word, at))
        for group in groups:
            while group and group[-1][0] in _CONNECTORS:
                group.pop()
            while group and group[0][0] in _CONNECTORS:
                group.pop(0)
            if len(group) > 1 and _sentence_initial(text, group[0][1]) and _common(group[0][0].lower()):
                group = group[1:]  # "Go Jon!", "Sounds Good": the sentence's first word is no part of the name
            while group and group[0][0] in _CONNECTORS:
                group.pop(0)
            if not group:
                continue
            first, at = group[0]
            end = group[-1][1] + len(group[-1][0])
            kind = "name"
            if len(group) == 1 and _sentence_initial(text, at):
                kind = _initial_kind(text, first, end, mid)
                if not kind:
                    continue
            add(" ".join(w for w, _ in group).lower(), kind, at, end)


def _initial_kind(text: str, word: str, end: int, mid: set[str]) -> str:
    """The kind of a lone capitalised word at a sentence start: ``name`` (a speaker label, an acronym, or
    written capitalised mid-sentence in the same text), ``maybe_name`` (not ordinary vocabulary as far as the
    lists know) or ``""`` (ordinary vocabulary: dropped)."""
    low = word.lower()
    if text[end:end + 1] == ":" or (word.isupper() and len(word) >= 2) or low in mid:
        return "name"
    if ("-" in word and word.split("-", 1)[1].islower()) or _common(low):  # "Not-so-great", "Finally"
        return ""
    return MAYBE_NAME
