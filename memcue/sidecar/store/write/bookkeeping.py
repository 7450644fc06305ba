"""Recognise bookkeeping rows: lines a tool writes about itself, which never answer a question.

Examples that match (case C20): "session ended", "[codex] session ended (exit) at 17:42 in billing",
"Session started in billing-api", "File changed: src/app.py", "file created:", "files: a.py, b.md",
"Tool: Bash completed (exit 0)", "Read 3 files". A sentence that merely mentions a session or a file
("we decided the session-ended event should flush the cache because ...") is a real memory.
"""

from __future__ import annotations

import re

# Leading agent/project tags: "[codex]", "(claude-code)", "billing-api:", "memcue |", timestamps.
_PREFIX = re.compile(
    r"^(?:\s*(?:\[[^\]]{0,40}\]|\([^)]{0,40}\)|<[^>]{0,40}>|\d{4}-\d\d-\d\d[T ][\d:.]+Z?|\d\d:\d\d(?::\d\d)?"
    r"|[\w.-]{1,40}\s*[:|>-]\s+(?=(?:session|conversation|files?|tool|read|ran|edited|changed|created|\d+\s+files?"
    r"|" + "|".join(("sessionstart", "sessionend", "userpromptsubmit", "pretooluse", "posttooluse", "stop",
                     "subagent", "memory", "grep", "glob", "turn")) + r")\b))\s*)*",
    re.IGNORECASE,
)
_VERBS = (
    r"start(?:ed|ing)?|end(?:ed|ing)?|clos(?:ed|ing)|resum(?:ed|ing)|stop(?:ped|ping)?|finish(?:ed|ing)"
    r"|clear(?:ed)?|compact(?:ed)?|exit(?:ed)?|open(?:ed)?|init(?:ialized|ialised)?|begun|began|restor(?:ed)"
)
_FILE_VERBS = r"changed|edited|created|modified|deleted|removed|renamed|written|wrote|saved|updated|touched|added|read"
_PATTERNS = [
    re.compile(rf"^(?:new\s+|end\s+of\s+)?(?:session|conversation|chat)(?:\s+[\w-]{{1,40}})?\s+(?:{_VERBS})\b(?P<rest>.*)$"),
    re.compile(r"^(?:new|end\s+of)\s+(?:session|conversation)\b(?P<rest>.*)$"),
    re.compile(rf"^(?:session|conversation)\s*[:=-]\s*(?:{_VERBS})\b(?P<rest>.*)$"),
    re.compile(rf"^files?\s+(?:{_FILE_VERBS})\b(?P<paths>\s*:?.*)$"),
    re.compile(rf"^(?:{_FILE_VERBS})\s+files?(?P<paths>\s*:.*)$"),
    re.compile(r"^files?(?P<paths>\s*:.*)$"),
    re.compile(r"^(?:tool|tool\s+call|tool\s+use|tool\s+result)\s*:?\s*[\w.-]+\s+(?:completed|succeeded|failed|ran|finished|returned|called|done)\b(?P<rest>.*)$"),
    re.compile(r"^(?:bash|edit|multiedit|write|read|grep|glob|webfetch|task|shell|apply_patch)\s+(?:tool\s+)?(?:completed|succeeded|failed|ran|finished|returned|done)\b(?P<rest>.*)$"),
    re.compile(r"^(?:ran|executed|running)\s+(?:command|tool|bash|shell)\b(?P<rest>.*)$"),
    re.compile(rf"^(?:{_FILE_VERBS})\s+\d+\s+files?\b(?P<rest>.*)$"),
    re.compile(r"^(?:tool|command)\s*:\s*\S+(?P<rest>.*)$"),
    # Harness hook events by name (Claude Code / Codex): "SessionEnd reason=clear", "PostToolUse: Edit x ✔".
    re.compile(r"^(?:session_?start|session_?end|user_?prompt_?submit|pre_?tool_?use|post_?tool_?use|"
               r"subagent_?stop|pre_?compact|notification)\b(?P<rest>.*)$"),
    re.compile(r"^(?:stop|subagent|\w+)\s+hook\s+(?:fired|ran|completed|triggered|finished)\b(?P<rest>.*)$"),
    re.compile(r"^subagent\s+(?:finished|started|stopped|completed|done)\b(?P<rest>.*)$"),
    re.compile(r"^turn\s+(?:finished|ended|completed|started)\b(?P<rest>.*)$"),
    re.compile(r"^(?:grep|glob|search)\s*:\s*\d+\s+(?:matches|results|hits|files)\b(?P<rest>.*)$"),
    re.compile(r"^memor(?:y|ies)\s+(?:saved|stored|updated|written|added)\b(?P<rest>.*)$"),
    re.compile(rf"^\d+\s+files?\s+(?:{_FILE_VERBS})\b(?P<paths>\s*:?.*)$"),
    # A file verb and nothing but paths: "Edited app.py", "wrote src/a.py, src/b.py".
    re.compile(rf"^(?:{_FILE_VERBS}|edit|write|create|delete|update|modify)\s+(?P<paths>[^\s:]+(?:[,\s]+\S+)*)$"),
    # Tool receipts with a label: "Tool result: Bash exit 0", "tool output: 3 lines".
    re.compile(r"^tool\s+(?:result|output|call|use|response)s?\s*:\s*(?P<rest>.*)$"),
    # A shell command and its exit status: "Bash: pytest -q (exit 0)", "shell: make test, exit code 2",
    # "Bash(npm run build) exited 1". The command's words are no reasoning: nothing of it is read as such.
    re.compile(r"^(?:bash|shell|sh|zsh|exec(?:_command)?|terminal|cmd)\s*[:(]\s*\S.*?\)?[\s,;(\[—-]*"
               r"exit(?:ed)?(?:\s+(?:code|status))?\s*[:=]?\s*-?\d+\s*[)\]]?\.?(?P<rest>)$"),
]
# A tail that carries reasoning makes the row a real memory, not bookkeeping.
_REASONING = re.compile(
    r"\b(?:because|so that|since|which|but|why|decid|instead|should|must|never|always|bug|fix|caus|"
    r"prefer|we\b|I\b|need|don't|do not)",
    re.IGNORECASE,
)
#: Longest text still considered a bookkeeping line (characters); longer text is a real memory.
MAX_BOOKKEEPING_CHARS = 300
#: Fewest words an agent's answer needs to be kept as an episode that can answer; a shorter one ("Done.", "ok",
#: "All tests pass.") says nothing a later "what did we do about X?" could use, and is a bookkeeping row.
MIN_EPISODE_WORDS = 6


#: What says a change was made: a past-tense change verb, or "now", "no longer", "instead".
_CHANGE_WORDS = (
    r"\b(?:added|changed|fixed|moved|removed|renamed|updated|created|replaced|switched|wrote|rewrote|implemented|"
    r"refactored|bumped|reverted|committed|deleted|configured|migrated|split|merged|raised|lowered|increased|"
    r"decreased|pinned|upgraded|downgraded|enabled|disabled|introduced|dropped|extracted|wired|installed|"
    r"tightened|relaxed|retried|patched|tested|ran)\b|\b(?:now|no longer|instead)\b")
#: What an answer that reports work carries: a change done (``_CHANGE_WORDS``), a file or path, a command in
#: backticks, or a cause found. An answer without any ("Nothing in this project covers that.", "It writes rows to a
#: CSV file.") informs but records nothing done, so no later "what did we do about X?" needs it.
_WORK_REPORT = re.compile(
    _CHANGE_WORDS + r"|`[^`\n]+`|\b[\w.-]+/[\w./-]+|"
    r"\b[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|java|kt|rb|php|cs|c|h|cpp|md|toml|json|ya?ml|sql|sh|cfg|ini|lock)\b|"
    r"\bbecause\b|\bcaus(?:e|ed|ing)\b", re.IGNORECASE)
_CHANGE_MADE = re.compile(_CHANGE_WORDS, re.IGNORECASE)
#: How an answer opens that reports a search that found nothing: "Not that I can see: there's no LICENSE file",
#: "I couldn't find any crash reporting in cli.py", "I don't know of one: nothing in docs/ mentions it". An answer
#: opening with what is not there ("Nothing in cli.py retries the upload; the 503 comes from …") may go on to a
#: cause found, so it does not count.
_FOUND_NOTHING = re.compile(
    r"^\W*(?:not\s+that\s+I\s+(?:can|could)\s+(?:see|find|tell)|not\s+that\s+I\s+know(?:\s+of)?\b"
    r"|I\s+(?:couldn't|could\s+not|can't|cannot|didn't|did\s+not)\s+find|I\s+(?:don't|do\s+not)\s+(?:know|see)\b)",
    re.IGNORECASE)
#: An answer that opens with a bare "No" ("No: the feed has no podcast: tags at all", "No, nothing sets it") says
#: what is not there, unless it goes on to a cause (``_CAUSE``): "No, the parser is fine; the 503 is caused by …".
_ANSWERED_NO = re.compile(r"^\W*no\s*[:;,.—–-]", re.IGNORECASE)
_CAUSE = re.compile(r"\bbecause\b|\bcaus(?:e|ed|es|ing)\b|\bdue\s+to\b", re.IGNORECASE)


def is_trivial_answer(text: str) -> bool:
    """True when an agent's answer ``text`` is no record of work: fewer than ``MIN_EPISODE_WORDS`` words (empty
    included), nothing of a work report in it (``_WORK_REPORT``), or a search that found nothing (``_FOUND_NOTHING``,
    or a bare "No" with no cause told: ``_ANSWERED_NO``) with no change made (the files it names are where it looked).
    Such an answer is kept as bookkeeping."""
    if len(re.findall(r"\w+", text)) < MIN_EPISODE_WORDS or not _WORK_REPORT.search(text):
        return True
    found_nothing = bool(_FOUND_NOTHING.search(text)) or (bool(_ANSWERED_NO.search(text))
                                                           and not _CAUSE.search(text))
    return found_nothing and not _CHANGE_MADE.search(text)


def is_bookkeeping(text: str) -> bool:
    """True when ``text`` is a bookkeeping row (session/file/tool receipts), whatever its prefix.

    Multi-line text is bookkeeping only when every non-empty line is.
    """
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines or len(text) > MAX_BOOKKEEPING_CHARS * max(1, len(lines)):
        return False
    return all(_line_is_bookkeeping(line) for line in lines)


def _line_is_bookkeeping(line: str) -> bool:
    body = _PREFIX.sub("", line, count=1).strip().lower()
    body = body.lstrip("-*•> ").strip()
    if not body or len(body) > MAX_BOOKKEEPING_CHARS:
        return False
    for pattern in _PATTERNS:
        match = pattern.match(body)
        if not match:
            continue
        if "paths" in pattern.groupindex:
            if _is_path_list(match.group("paths")):
                return True
        elif not _REASONING.search(match.group("rest") or ""):
            return True
    return False


_PATH_TOKEN = re.compile(r"^[\w.\-/\\~@+]+$")


def _is_path_list(rest: str) -> bool:
    """True for "", ": a.py, b.md", " src/app.py (3 lines)": a list of paths, nothing that reads as prose."""
    rest = rest.strip().rstrip(".")
    inner = re.fullmatch(r"\((.*)\)", rest)
    rest = ":" + inner.group(1) if inner else re.sub(r"\([^)]*\)\s*$", "", rest).strip()
    colon = rest.startswith(":")
    tokens = [t for t in re.split(r"[,\s]+|\band\b", rest.lstrip(":")) if t]
    if len(tokens) > 12 or not all(_PATH_TOKEN.match(t) for t in tokens):
        return False
    return colon or all(("." in t or "/" in t) for t in tokens)
