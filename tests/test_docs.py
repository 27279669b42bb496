"""The user documentation stays short, linked and true to the CLI.

README.md is the page a newcomer reads: at most 300 lines, every page of docs/ linked from it,
every relative link in it and in docs/ leading to a file (and heading) that exists, and every
`jacked <command> --option` in the shell blocks of README and docs/ one the typer app really has.
"""
from __future__ import annotations

import re
import shlex
import unicodedata
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import typer

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_README_LINES = 300

FENCE = re.compile(r"^(```|~~~)")
SHELL_BLOCKS = {"", "bash", "sh", "shell", "console"}
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# Shell operators that end one command and start the next.
COMMAND_BREAK = re.compile(r"\s(?:&&|\|\||\|)\s|;\s")
# What ends a command's own words: a comment or a redirection.
WORDS_END = re.compile(r"\s(?:#|[<>]).*$")
JACKED_CALL = re.compile(r"(?:^|[\s/$])jacked\s+(.*)")


def doc_pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def split_markdown(text: str) -> tuple[list[str], list[str]]:
    """(prose lines, shell code-block lines) of a markdown text; other code blocks (JSON, a
    directory tree) are neither."""
    prose: list[str] = []
    code: list[str] = []
    fence: str | None = None  # the info string of the open code block
    for line in text.splitlines():
        m = FENCE.match(line.strip())
        if m:
            fence = line.strip()[3:].strip().lower() if fence is None else None
            continue
        if fence is None:
            prose.append(line)
        elif fence == "console":  # a terminal copy: its commands follow a `$ ` prompt, the rest is output
            if line.startswith("$ "):
                code.append(line[2:])
        elif fence in SHELL_BLOCKS:
            code.append(line)
    return prose, code


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]", "", heading)  # inline markup (an underscore stays: snake_case names)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    out = []
    for ch in text.strip().lower():
        if ch == " " or ch == "-":
            out.append("-")
        elif ch == "_" or unicodedata.category(ch)[0] in "LN":
            out.append(ch)
    return "".join(out)


def anchors(path: Path) -> set[str]:
    prose, _ = split_markdown(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for line in prose:
        m = HEADING.match(line)
        if m:
            found.add(slug(m.group(2)))
    return found


def relative_links(path: Path) -> list[str]:
    prose, _ = split_markdown(path.read_text(encoding="utf-8"))
    targets = [m.group(1) for line in prose for m in LINK.finditer(line)]
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]  # http:, https:, mailto:


@cache
def cli() -> Any:
    """The `jacked` command group as typer builds it (typer carries its own click)."""
    from jacked.surfaces.cli.main import app

    group = typer.main.get_command(app)
    assert hasattr(group, "commands"), "the jacked app is not a command group"
    return group


def options_of(command: Any) -> set[str]:
    names: set[str] = {"--help"}
    for param in command.params:
        if param.param_type_name == "option":
            names.update(param.opts)
            names.update(param.secondary_opts)
    return names


def jacked_calls(code_lines: list[str]) -> list[tuple[str, list[str]]]:
    """Each `jacked ...` call in shell lines, as (the line, its words after `jacked`)."""
    calls = []
    for line in code_lines:
        if line.lstrip().startswith("#"):
            continue
        for part in COMMAND_BREAK.split(line):
            m = JACKED_CALL.search(part)
            if m is None:
                continue
            rest = WORDS_END.sub("", m.group(1))
            try:
                words = shlex.split(rest)
            except ValueError:  # an apostrophe in prose after the command: plain split
                words = rest.split()
            calls.append((line.strip(), words))
    return calls


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines (at most {MAX_README_LINES})"


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {(README.parent / t.split("#")[0]).resolve() for t in relative_links(README) if t.split("#")[0]}
    missing = [p.name for p in doc_pages() if p.resolve() not in linked]
    assert doc_pages(), "docs/ holds no pages"
    assert not missing, f"docs pages not linked from README.md: {missing}"


@pytest.mark.parametrize("page", [README, *doc_pages()], ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in relative_links(page):
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page.resolve()
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no heading with that anchor in {dest.name})")
    assert not broken, f"{page.name}: broken links: {broken}"


def command_problems(page: Path) -> tuple[int, list[str]]:
    """(how many `jacked` calls the page's shell blocks hold, what is wrong with them)."""
    _, code = split_markdown(page.read_text(encoding="utf-8"))
    calls = jacked_calls(code)
    problems = []
    for line, words in calls:
        if not words or words[0].startswith("-"):
            continue  # `jacked --help`
        name = words[0]
        command = cli().commands.get(name)
        if command is None:
            problems.append(f"{line}: no command `jacked {name}`")
            continue
        args = words[1:]
        if hasattr(command, "commands") and args and not args[0].startswith("-"):
            sub = command.commands.get(args[0])
            if sub is None:
                problems.append(f"{line}: no command `jacked {name} {args[0]}`")
                continue
            command, args = sub, args[1:]
        known = options_of(command)
        for word in (w.strip("[]") for w in args):  # `[--mode M]` in a usage line is checked too
            if word.startswith("-") and word != "-":
                option = word.split("=", 1)[0]
                if option not in known:
                    problems.append(f"{line}: `jacked {name}` has no option {option}")
    return len(calls), problems


def test_readme_commands_exist() -> None:
    count, problems = command_problems(README)
    assert count >= 20, f"expected the README's command list, found {count} jacked calls"
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", doc_pages(), ids=lambda p: p.name)
def test_docs_commands_exist(page: Path) -> None:
    _, problems = command_problems(page)
    assert not problems, "\n".join(problems)


def test_the_checker_catches_a_wrong_command_and_option() -> None:
    """The command check itself: a made-up command and a made-up option are both reported."""
    calls = jacked_calls(["jacked serch foo  # typo", ".venv/bin/jacked search x --nope && jacked status",
                          "echo {} | jacked index --hook; echo done"])
    assert [w[0] for _, w in calls] == ["serch", "search", "status", "index"]
    assert "serch" not in cli().commands
    assert "--nope" not in options_of(cli().commands["search"])
    assert "--type" in options_of(cli().commands["search"])


def test_slug_matches_github() -> None:
    assert slug("bench.py: the benchmark suite") == "benchpy-the-benchmark-suite"
    assert slug("search_timeline.py: where a search's time goes") == "search_timelinepy-where-a-searchs-time-goes"
    assert slug("The web view: `jacked ui`") == "the-web-view-jacked-ui"
    assert slug("Stop and SessionEnd → `jacked index --hook`") == "stop-and-sessionend--jacked-index---hook"
