"""The PreToolUse lookup: what the hook reads of a tool call (``adapters.tool_query``) and which memory texts name
it (``sidecar.inject.tool_context.Lookup``): whole identifiers only."""

from __future__ import annotations

import pytest

from memcue.adapters.tool_query import tool_query
from memcue.sidecar.inject.tool_context import Lookup


def _shell(command: str) -> dict | None:
    return tool_query({"tool_name": "Bash", "tool_input": {"command": command}}, "/p", "/p")


@pytest.mark.parametrize("command,terms,paths", [
    ("make check", ["make check"], []),
    ("DATABASE_URL=x uv run pytest tests/test_tax.py --lf -k foo", ["DATABASE_URL", "pytest", "--lf"],
     ["tests/test_tax.py"]),
    ("git push --force origin main", ["git push", "--force"], []),
    ("cd web && npm run build", ["npm run build"], []),
    ("python -m alembic upgrade head", ["alembic upgrade", "alembic"], []),
    ("sudo -E terraform apply -auto-approve", ["terraform apply", "terraform"], []),
    ("cat /p/src/x.py | grep foo", [], ["src/x.py"]),
    ("./scripts/deploy.sh --env staging", ["--env"], ["scripts/deploy.sh"]),
])
def test_shell_commands(command: str, terms: list[str], paths: list[str]) -> None:
    query = _shell(command)
    assert query is not None and (query["terms"], query["paths"]) == (terms, paths)


@pytest.mark.parametrize("command", ["ls -la", "echo 'unclosed", "", "cd ..", "python - <<EOF\nimport json\nEOF"])
def test_commands_naming_nothing_are_not_looked_up(command: str) -> None:
    assert _shell(command) is None


def test_edits_and_other_tools() -> None:
    edit = tool_query({"tool_name": "Edit", "tool_input": {"file_path": "/p/src/billing/tax.py"}}, "/p", "/p")
    assert edit == {"type": "edit", "tool": "Edit", "paths": ["src/billing/tax.py"], "terms": []}
    patch = "*** Begin Patch\n*** Update File: /p/a/b.py\n*** Add File: c.md\n*** End Patch"
    assert tool_query({"tool_name": "apply_patch", "tool_input": {"command": patch}}, "/p", "/p")["paths"] == [
        "a/b.py", "c.md"]
    for tool in ("Read", "Grep", "Glob", "WebFetch", "mcp__x__y"):
        assert tool_query({"tool_name": tool, "tool_input": {"file_path": "/p/a.py"}}, "/p", "/p") is None


@pytest.mark.parametrize("text,strength", [
    ("src/billing/tax.py rounds per line", 3),
    ("see /home/ana/shop/src/billing/tax.py:42.", 3),
    ("`billing/tax.py` is generated", 2),
    ("never edit tax.py by hand", 1),
    ("billing.tax imports the rates", 1),
    ("everything under src/billing/ uses Decimal", 1),
    ("tests/tax.py holds fixtures", 0),
    ("the tax rules changed", 0),
    ("src/billing/tax.pyc is stale", 0),
    ("syntax.py and mytax.py", 0),
])
def test_which_texts_name_a_file(text: str, strength: int) -> None:
    assert Lookup({"paths": ["src/billing/tax.py"]}).strength(text) == strength


@pytest.mark.parametrize("text,named", [
    ("run `make check` first", True),
    ("make  check runs mypy", True),
    ("make checks", False),
    ("pytest-cov is pinned", False),
    ("the --force-with-lease flag", False),
    ("never git push --force to main", True),
])
def test_which_texts_name_a_command(text: str, named: bool) -> None:
    lookup = Lookup({"terms": ["make check", "pytest", "--force"]})
    assert bool(lookup.strength(text)) is named


def test_the_keyword_expression_quotes_every_identifier() -> None:
    lookup = Lookup({"paths": ["src/billing/tax.py"], "terms": ['say "hi"', "--force"]})
    assert lookup.match_expression() == '"tax.py" OR "billing.tax" OR "src/billing" OR "say ""hi""" OR "--force"'
