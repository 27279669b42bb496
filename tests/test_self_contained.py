"""The repository stands alone: a clone with nothing beside it runs its tests and scripts, so the
test data lives inside it and no test, script or CI step names a path above the checkout."""
from __future__ import annotations

import re
from pathlib import Path

import independent_count
from kit import FIXTURES, GEN_CORPUS, REAL

REPO = Path(__file__).resolve().parents[1]
# A path built upwards from a file of the repo, or the folder that used to sit beside it.
ESCAPES = re.compile(r"parents\[[2-9]\]|\b(ROOT|REPO)\.parent\b|\.\./shared\b")


def _sources() -> list[Path]:
    return sorted({*REPO.glob("tests/**/*.py"), *REPO.glob("scripts/**/*.py"), *REPO.glob("scripts/**/*.md"),
                   *(p for p in REPO.glob(".ci/*") if p.is_file())})


def test_no_test_script_or_ci_step_names_a_path_outside_the_repo() -> None:
    sources = _sources()
    assert len(sources) > 50  # the globs found the tree, not an empty folder
    hits = [f"{p.relative_to(REPO)}:{n}: {line.strip()}" for p in sources
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if ESCAPES.search(line)]
    assert hits == []


def test_the_fixtures_and_the_generator_are_in_the_repo() -> None:
    for path in (FIXTURES, REAL, GEN_CORPUS, independent_count.REAL):
        assert path.is_relative_to(REPO) and path.exists(), path
    # Each source's licence is kept with its data, and the README names every folder.
    readme = (FIXTURES / "README.md").read_text()
    assert {p.name for p in (FIXTURES / "licenses").iterdir()} == {"claude-code-log.LICENSE", "agent-sessions.LICENSE"}
    for folder in ["real/projects/", *(f"handwritten/{p.name}/" for p in (FIXTURES / "handwritten").iterdir())]:
        assert f"`{folder}`" in readme, folder
