"""The shape of the code (DESIGN.md "Pipeline and layout"): imports point down the layers, no
module imports itself back through others, and SQL lives in the catalog package only.

The layer contract is import-linter's, configured in pyproject.toml ([tool.importlinter]);
the cycle and SQL checks read the same import graph (grimp) and the sources."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "jacked"
_SQL = re.compile(r"\.execute(?:many|script)?\(|\b(?:SELECT|INSERT INTO|DELETE FROM|UPDATE \w+ SET|CREATE TABLE)\b")


def _cycles(graph: grimp.ImportGraph) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[set[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            recurse = False
            for j in range(i, len(edges[node])):
                nxt = edges[node][j]
                if nxt not in index:
                    work.append((node, j + 1))
                    work.append((nxt, 0))
                    recurse = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if recurse:
                continue
            if low[node] == index[node]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    found.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def test_imports_point_down_the_layers() -> None:
    run = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()"],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "BROKEN" not in run.stdout and "KEPT" in run.stdout


def test_no_import_cycles() -> None:
    assert _cycles(grimp.build_graph("jacked")) == []


def test_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for m in ("a", "a.x", "a.y", "a.z"):
        graph.add_module(m)
    graph.add_import(importer="a.x", imported="a.y")
    graph.add_import(importer="a.y", imported="a.x")
    graph.add_import(importer="a.z", imported="a.x")
    assert _cycles(graph) == [{"a.x", "a.y"}]


# Modules that still run SQL of their own; each is to move its queries into the catalog
# package. The list may only shrink: a new module with SQL fails the test.
SQL_OUTSIDE_CATALOG: set[str] = set()
# Not jacked's catalog: a source reading the agent's own SQLite database (read-only).
OTHER_PROGRAMS_DATABASES = {"sources/opencode/db.py", "sources/cursor/db.py", "sources/goose/db.py",
                            "sources/sqlite_ro.py"}


def test_sql_lives_in_the_catalog() -> None:
    with_sql = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                if not p.relative_to(PACKAGE).parts[0] == "catalog" and _SQL.search(p.read_text(encoding="utf-8"))}
    with_sql -= OTHER_PROGRAMS_DATABASES
    assert with_sql - SQL_OUTSIDE_CATALOG == set(), "new SQL outside jacked/catalog/"
    assert SQL_OUTSIDE_CATALOG - with_sql == set(), "moved into the catalog: take it off the list"

