"""A memory's brief: its text as the session-start block shows it, so the block holds more of the project.

The session-start block is the only place a memory reaches the model without a prompt that names it (a task
such as "add a map command" needs the box size decided days before, and no recall of the task's words finds
it), so within its token budget it shows as many memories as it can. A brief keeps what a memory says and
drops what the agent can look up: a commit's ``Files:`` trailer (git has it), the shell commands that made a
failing test pass (the commit says what changed), and, in text a capture signal wrote from git or a test run,
anything past ``SIGNAL_BRIEF_CHARS`` (the subject and first sentences say what changed and why; git keeps the
rest). A commit's ``Tests added:`` line stays after the cut, its first ``BRIEF_TESTS`` names: "which test covers
the till export?" is asked by name, and the block leaves out the test transitions such a commit tells
(``inject.covered``). What a person or an agent wrote is cut only past ``BRIEF_CHARS``: its
words are stored nowhere else. A cut ends at a word with "…"; the memory's id stays in the block, so the whole
text is one ``recall``/``fetch`` away.

A memory's ``title`` is shorter still: its first line (a commit's subject) or first sentence; for a fix the agent
told and a commit confirmed (``capture.turn_edits``), the sentence saying what the code does now. When the block
cannot hold the project's newer memories whole, the older of them show as titles (``inject.service``): a title
costs about half a brief's line, so the block keeps more of what the project did in view, each a ``fetch``
away.
"""

from __future__ import annotations

import re

from memcue.sidecar.capture.commits import FILES_LABEL, TESTS_LABEL, tests_named
from memcue.sidecar.capture.commits import SIGNAL as COMMIT_SIGNAL
from memcue.sidecar.capture.test_runs import SIGNAL as TEST_SIGNAL
from memcue.sidecar.capture.turn_edits import SIGNAL as EPISODE_COMMITTED_SIGNAL

#: The longest brief of a person's or an agent's memory (characters, about 100 tokens of English).
BRIEF_CHARS = 400
#: The longest brief of a memory a capture signal wrote from git or a test run (``SIGNAL_SOURCES``): about 55
#: tokens, so with a line's 34 tokens of attributes about 24 memories fit a 2,200-token block (13-15 whole ones
#: did in 1,500 tokens, measured on the scripted week's stores, ``benchmarks/capture_week.py``).
SIGNAL_BRIEF_CHARS = 240
#: The longest title (characters, about 25 tokens of English): a commit subject fits (git's own advice is 50).
TITLE_CHARS = 110
#: The stored ``source`` of a memory a capture signal wrote from git or a test run (``capture.Gate`` stores
#: ``capture:<signal>``).
SIGNAL_SOURCES = (f"capture:{COMMIT_SIGNAL}", f"capture:{TEST_SIGNAL}")
#: Most test names of a commit's ``Tests added:`` line kept in its brief.
BRIEF_TESTS = 3
#: The trailer lines of a captured commit (``capture.commits``): listed files and added tests.
_TRAILER = re.compile(r"\n\n(?:" + re.escape(TESTS_LABEL) + r"|" + re.escape(FILES_LABEL) + r")[^\n]*")
#: How a cut brief ends: " …", then the kept ``Tests added:`` line, if any.
_CUT_END = re.compile(r" …(?:\n\n" + re.escape(TESTS_LABEL) + r"[^\n]*)?$")
#: How a test transition says what else ran before the pass (``capture.test_runs``): "… and running `sed …`"
#: or "after running `…`": the commands' text, not what they changed.
_RUNNING = re.compile(r"(?: and|after) running `.*$", re.DOTALL)
#: Where a title's first sentence may end: ". ", "! " or "? " (a dot inside a name like ``config.py`` is not
#: followed by a space); ``_ABBREVIATION`` says where it does not.
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")
#: A word whose dot does not end a sentence: "i.e.", "e.g.", "Dr.", "vs.", "etc.", a single letter ("J. Smith").
_ABBREVIATION = re.compile(r"(?:\b(?:i\.e|e\.g|cf|vs|etc|approx|incl|dr|mr|mrs|ms|st|no|fig)|(?<![\w.])\w)\.$",
                           re.IGNORECASE)
#: The stored source of a fix the agent told and a later commit confirmed (``capture.turn_edits``): the agent's
#: answer, which tells the symptom and cause first and then what the code does now.
EPISODE_COMMITTED_SOURCE = f"capture:{EPISODE_COMMITTED_SIGNAL}"
#: The sentence of such an answer that says the fix: "load_roster() now reads with skipinitialspace=True, ...",
#: "The handler now acks `pd` right away ...".
_FIX = re.compile(r"\bnow\s+(?!that\b|on\b|is\b|are\b)[a-z]\w*", re.IGNORECASE)
#: Fewest words a title must hold to say anything ("Refactor …", "``` …" do not): with fewer the brief is shown.
TITLE_MIN_WORDS = 3


def kept_by_git(source: str, kind: str) -> bool:
    """Whether git keeps the rest of a memory's story: a capture signal wrote it from git or a test run (its stored
    ``source`` one of ``SIGNAL_SOURCES``, or a fix the agent told that a commit confirmed,
    ``EPISODE_COMMITTED_SOURCE``), or it is of ``kind`` "change" (what the code did, whoever wrote it down). False for
    a note, rule, howto or bug a person or an agent wrote (MCP, CLI, a prompt's statement, a native memory file):
    its words are stored nowhere else."""
    return source.startswith(SIGNAL_SOURCES) or source == EPISODE_COMMITTED_SOURCE or kind == "change"


def was_cut(text: str, shown: str) -> bool:
    """True when ``shown`` (``brief`` of ``text``) is ``text`` cut short ("…" that ``text`` itself does not end
    with): the session-start block did not show the memory whole."""
    return bool(_CUT_END.search(shown)) and not text.rstrip().endswith("…")


def brief(text: str, source: str = "") -> str:
    """``text`` (a memory's content) as the session-start block shows it: trailers and the commands of a
    test transition dropped, at most ``SIGNAL_BRIEF_CHARS`` characters when ``source`` (its stored source) is
    one of ``SIGNAL_SOURCES``, else ``BRIEF_CHARS`` (cut at a word, ending in " …"); then a commit's
    ``Tests added:`` line with at most ``BRIEF_TESTS`` names."""
    out = _cut(_TRAILER.sub("", text).strip(), source)
    names = tests_named(text)
    if not names:
        return out
    more = f" (+{len(names) - BRIEF_TESTS} more)" if len(names) > BRIEF_TESTS else ""
    return f"{out}\n\n{TESTS_LABEL}{', '.join(names[:BRIEF_TESTS])}{more}"


def title(text: str, source: str = "") -> str:
    """``text`` (a memory's content, ``source`` its stored source) as one short line: ``title_of`` its ``brief``."""
    return title_of(brief(text, source), source)


def title_of(shown: str, source: str = "") -> str:
    """A ``brief`` (``shown``; ``source``: the memory's stored source) as one short line: its first line (a
    commit's subject), up to its first sentence's end, at most ``TITLE_CHARS`` characters (cut at a word); for a
    confirmed fix (``EPISODE_COMMITTED_SOURCE``) the first later sentence saying what the code does now (``_FIX``),
    when there is one. " …" ends it when anything of the brief was left out, and the brief's ``Tests added:`` line
    stays after it (a test is asked by name). The brief itself when such a line would hold fewer than
    ``TITLE_MIN_WORDS`` words (a code fence, a one-word subject)."""
    body, tests, names = shown.partition("\n\n" + TESTS_LABEL)
    head = body.split("\n", 1)[0].strip()
    if source == EPISODE_COMMITTED_SOURCE:
        head = _fix_sentence(head)
    end = next((m.start() for m in _SENTENCE.finditer(head)
                if m.start() >= TITLE_CHARS // 4 and not _ABBREVIATION.search(head[:m.start()])), None)
    head = head if end is None else head[:end]
    if len(head) > TITLE_CHARS:
        space = head.rfind(" ", 0, TITLE_CHARS)
        head = head[:space if space > TITLE_CHARS // 2 else TITLE_CHARS].rstrip(" ,;:")
    if head == body or head + " …" == body or len(re.findall(r"\w+", head)) < TITLE_MIN_WORDS:
        return shown
    return head.removesuffix(" …").rstrip(" ,;:") + " …" + tests + names


def _fix_sentence(text: str) -> str:
    """``text`` from its first sentence after the first that says what the code does now (``_FIX``); ``text``
    itself when no later sentence does."""
    starts = [m.end() for m in _SENTENCE.finditer(text) if not _ABBREVIATION.search(text[:m.start()])]
    return next((text[i:] for i in starts if _FIX.search(text[i:_next_end(text, i)])), text)


def _next_end(text: str, start: int) -> int:
    """Where the sentence of ``text`` that starts at ``start`` ends (``_SENTENCE``), or ``len(text)``."""
    m = _SENTENCE.search(text, start)
    return m.start() if m else len(text)


def _cut(out: str, source: str) -> str:
    """``out`` with a test transition's commands dropped and cut to the brief's length for ``source``."""
    if "` failed" in out and "; it passed " in out:
        cut = _RUNNING.sub("", out).rstrip()
        out = cut if not cut.endswith("; it passed") else cut + " after a change"
        out = out if out.endswith(".") else out + "."
    most = SIGNAL_BRIEF_CHARS if source.startswith(SIGNAL_SOURCES) else BRIEF_CHARS
    if len(out) <= most:
        return out
    head = out[:most]
    space = head.rfind(" ")
    return (head[:space] if space > most // 2 else head).rstrip(" ,;:") + " …"
