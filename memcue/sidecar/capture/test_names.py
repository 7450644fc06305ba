"""Which tests a commit adds: test files by their path, test names from the added lines of a unified diff.

A commit that fixes a bug usually adds the test that shows it, and a later session asks for it by name ("which
test covers the cutoff?"). The commit signal (``capture.commits``) reads the diff of a commit's test files and
names the tests it adds in the commit's memory, so whoever recalls the fix also gets its test.

Pure text work, no git here. Test names are read from added lines (``+``, not the ``+++`` header) in the shapes
of the common test frameworks: Python ``def test_…``, Go ``func TestX(``, JavaScript/TypeScript
``it("…")``/``test("…")`` (also ``.only``/``.each``-style suffixes), RSpec ``it "…" do``, and a function
right after a test annotation: Rust ``#[test]``/``#[tokio::test]``, JUnit ``@Test``/``@ParameterizedTest``,
xUnit/NUnit/MSTest ``[Fact]``/``[Theory]``/``[Test]``/``[TestMethod]``.
"""

from __future__ import annotations

import re

#: Most test names read from one commit.
MAX_TESTS = 20

_TEST_DIR = re.compile(r"(?:^|/)(?:tests?|specs?|__tests__|testing)/", re.IGNORECASE)
_TEST_BASENAME = re.compile(
    r"(?:^|/)(?:test_[^/]+\.py|[^/]+_test\.(?:py|go|rb|exs?)|[^/]+\.(?:test|spec)\.[cm]?[jt]sx?|[^/]+_spec\.rb|"
    r"[^/]+Tests?\.(?:java|kt|cs|swift|scala)|conftest\.py)$")
_NAMED = re.compile(
    r"^\+\s*(?:(?:async\s+)?def\s+(test\w*)\s*\(|func\s+(Test\w+)\s*\(|"
    r"(?:it|test)(?:\.\w+)?\s*\(\s*(['\"`])(.{3,100}?)\3|it\s+(['\"])(.{3,100}?)\5\s+do\b)")
_ANNOTATION = re.compile(r"^\+\s*(?:#\[(?:\w+::)?test\]|@(?:Test|ParameterizedTest|RepeatedTest)\b|"
                         r"\[(?:Fact|Theory|Test|TestMethod|TestCase)\b)")
_ANNOTATED = re.compile(r"^\+.*?\b(?:fn|void|fun|def|Task|func)\s+(\w+)\s*[(<]")


def is_test_file(path: str) -> bool:
    """True when ``path`` (as git prints it, ``/``-separated) is a test file: under a ``tests``/``spec``-like
    folder or named like one (``test_x.py``, ``x_test.go``, ``x.spec.ts``, ``XTest.java``)."""
    return bool(_TEST_DIR.search(path) or _TEST_BASENAME.search(path))


def added_tests(diff: str) -> list[str]:
    """The test names the added lines of a unified ``diff`` define, in order, each once, at most ``MAX_TESTS``.
    A described test (``it("rounds up")``) is named by its description."""
    names: list[str] = []
    annotated = False
    for line in diff.splitlines():
        if not line.startswith("+") or line.startswith("+++"):
            continue
        m = _NAMED.match(line)
        name = next((g for g in (m.group(1), m.group(2), m.group(4), m.group(6)) if g), "") if m else ""
        if not name and annotated:
            a = _ANNOTATED.match(line)
            name = a.group(1) if a else ""
        if _ANNOTATION.match(line):
            annotated = True
        elif line[1:].strip() and not line[1:].lstrip().startswith(("#[", "@", "[")):
            annotated = False
        if name and name not in names:
            names.append(name)
            if len(names) >= MAX_TESTS:
                break
    return names
