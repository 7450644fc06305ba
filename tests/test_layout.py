"""The layout rules of DESIGN.md section 1 (issue 12), checked on the source tree without importing it.

- functions at most 60 lines, unless the docstring says why (``N lines: <reason>``);
- all SQL lives in ``memcue/sidecar/store/``;
- no import cycle, not even between packages (a package's modules count as one node; memcue's root modules,
  such as ``client.py`` and ``harnesses.py``, are nodes of their own);
- ``sidecar/recall/`` imports nothing from the sidecar root (``memcue/sidecar/*.py``);
- the hook path (``core/``, ``hooks/``, ``adapters/``, ``harnesses.py``) imports the standard library and
  itself only.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "memcue"
MAX_FUNCTION_LINES = 60
#: A string that is a SQL statement: a keyword that starts one, at the string's start or after a newline.
SQL = re.compile(r"(?:^|\n)\s*(?:SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE (?:TABLE|INDEX|VIRTUAL "
                 r"TABLE|TRIGGER)|PRAGMA|WITH \w+ AS)\b")
HOOK_PATH = ("memcue.core", "memcue.hooks", "memcue.adapters", "memcue.harnesses")


def _modules() -> dict[str, tuple[Path, ast.Module]]:
    """Dotted module name -> (file, parsed tree) for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = (path, ast.parse(path.read_text(encoding="utf-8")))
    return out


MODULES = _modules()


def _node(module: str) -> str:
    """The package-level node of ``module``: its package, or itself for a package or a root module."""
    if module in MODULES and MODULES[module][0].name == "__init__.py":
        return module
    parent = module.rpartition(".")[0]
    return module if parent == "memcue" else parent


def _imports(tree: ast.Module) -> list[tuple[int, str]]:
    """``(line, module)`` for every absolute import in ``tree``, lazy ones inside functions included; ``from
    package import module`` names the module."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            out += [(n.lineno, a.name) for a in n.names]
        elif isinstance(n, ast.ImportFrom) and n.module and n.level == 0:
            for a in n.names:
                sub = f"{n.module}.{a.name}"
                out.append((n.lineno, sub if sub in MODULES else n.module))
    return out


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the string constants that are docstrings."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and n.body:
            first = n.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def test_functions_are_at_most_60_lines_or_say_why() -> None:
    long = []
    for name, (_path, tree) in MODULES.items():
        for n in ast.walk(tree):
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = n.end_lineno - n.lineno + 1
                if lines > MAX_FUNCTION_LINES and not re.search(r"\d+ lines: \S", ast.get_docstring(n) or ""):
                    long.append(f"{name}.{n.name}: {lines} lines")
    assert long == []


def test_sql_lives_in_the_store() -> None:
    found = []
    for name, (_path, tree) in MODULES.items():
        if name.startswith("memcue.sidecar.store"):
            continue
        docs = _docstrings(tree)
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs and SQL.search(n.value):
                found.append(f"{name}:{n.lineno}: {n.value[:50]!r}")
            if isinstance(n, ast.Attribute) and n.attr in ("_reader", "_writer", "execute", "executemany"):
                found.append(f"{name}:{n.lineno}: .{n.attr}")
    assert found == []


def test_no_import_cycle_between_packages() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for name, (_path, tree) in MODULES.items():
        for _line, target in _imports(tree):
            if target.startswith("memcue.") and _node(target) not in (_node(name), "memcue"):
                edges[_node(name)].add(_node(target))
    cycles = []

    def visit(node: str, stack: list[str], done: set[str]) -> None:
        for nxt in sorted(edges[node]):
            if nxt in stack:
                cycles.append(" -> ".join([*stack[stack.index(nxt):], nxt]))
            elif nxt not in done:
                done.add(nxt)
                visit(nxt, [*stack, nxt], done)

    done: set[str] = set()
    for start in sorted(edges):
        if start not in done:
            done.add(start)
            visit(start, [start], done)
    assert cycles == []


def test_recall_imports_nothing_from_the_sidecar_root() -> None:
    bad = [f"{name}:{line}: {target}" for name, (_path, tree) in MODULES.items()
           if name.startswith("memcue.sidecar.recall") for line, target in _imports(tree)
           if target.startswith("memcue.sidecar") and _node(target) == "memcue.sidecar"]
    assert bad == []


def test_hook_path_imports_the_standard_library_and_itself_only() -> None:
    bad = []
    for name, (_path, tree) in MODULES.items():
        if not name.startswith(HOOK_PATH):
            continue
        for line, target in _imports(tree):
            top = target.split(".")[0]
            if top == "memcue":
                if target != "memcue" and not target.startswith(HOOK_PATH):
                    bad.append(f"{name}:{line}: {target}")
            elif top not in sys.stdlib_module_names and top != "__future__":
                bad.append(f"{name}:{line}: {target}")
    assert bad == []


def test_the_rules_see_what_they_check() -> None:
    """The checks above are not vacuous: the tree they read has the modules they judge."""
    assert {"memcue.sidecar.recall.pipeline", "memcue.sidecar.store.sqlite.store", "memcue.hooks.run",
            "memcue.harnesses", "memcue.core.paths"} <= set(MODULES)
    assert _node("memcue.sidecar.service") == "memcue.sidecar"
    assert _node("memcue.sidecar.recall.channels.graph") == "memcue.sidecar.recall.channels"
    assert _node("memcue.client") == "memcue.client"
    assert SQL.search("SELECT id FROM memories") and not SQL.search("select the best memory")
