"""The one table of search filters: what each is called (CLI `--name`, MCP argument, web API
parameter), which payload field of the index it tests, how, and which values it takes.

Adding a filter is one entry here: `jacked search`, the MCP `search` tool and `GET /api/search`
are built from this table (the field should have a payload index in the store for speed), and
all of them refuse an unknown value of a filter whose values are a closed set, naming the valid ones.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jacked.errors import JackedError
from jacked.util.time import parse_since


class FilterError(JackedError, ValueError):
    """A filter name or value the user must fix."""


@dataclass(frozen=True)
class SearchFilterSpec:
    """One filter of `jacked search`."""

    name: str  # `--name` on the CLI (underscores become dashes), the MCP argument, the API parameter
    payload_key: str  # the index payload field it tests
    op: str  # "value" (equals), "any" (one of) or "gte" (at least)
    help: str
    operand: Callable[[str, datetime], Any] | None = None  # the text given → what the index compares
    # The valid values when they are a closed set (read when asked: the content-type and agent
    # tables are not loaded to build the CLI).
    choices: Callable[[], Iterable[str]] | None = None
    many: bool = False  # several values: a repeated CLI option, an MCP list, `a,b` in the web API
    cli_flags: tuple[str, ...] = ()  # the CLI's spelling, when it is not `--name`
    value_name: str = ""  # what one value is called in an error ("content type"), when not `name`

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def flags(self) -> tuple[str, ...]:
        return self.cli_flags or (self.option,)

    def values_of(self, value: Any) -> list[str]:
        """A value as given on any surface (a string, `a,b`, a list) → the list of its values."""
        items = value if isinstance(value, (list, tuple)) else str(value).split(",") if self.many else [value]
        return [str(v).strip() for v in items if str(v).strip()]


def _since_epoch(value: str, now: datetime) -> float:
    return parse_since(value, now).timestamp()


def _content_types() -> Iterable[str]:
    from jacked.index.content_types import CONTENT_TYPES

    return CONTENT_TYPES


def _agents() -> Iterable[str]:
    from jacked.sources.registry import SOURCES

    return SOURCES


FILTERS: list[SearchFilterSpec] = [
    SearchFilterSpec("types", "content_type", "any", "Only these content types (repeat the option, or give a,b).",
                     choices=_content_types, many=True, cli_flags=("--type", "-t"), value_name="content type"),
    SearchFilterSpec("repo", "repo_name", "value", "Only sessions of this repo."),
    SearchFilterSpec("user", "user_name", "value", "Only this user's sessions."),
    SearchFilterSpec("agent", "agent", "value",
                     "Only sessions of this coding agent: claude, codex, gemini, opencode, aider.", choices=_agents),
    SearchFilterSpec("agent_type", "agent_type", "value", "Only subagent units of this agent type."),
    SearchFilterSpec("since", "ts", "gte", "Only units since: 7d, 2w, 3m, 1y or a date.", operand=_since_epoch),
]


def spec(name: str) -> SearchFilterSpec:
    """The table's entry called `name`; an unknown name is a FilterError naming the known ones."""
    for s in FILTERS:
        if s.name == name:
            return s
    raise FilterError(f"unknown filter {name!r}: use one of {', '.join(s.name for s in FILTERS)}")


def checked(values: dict[str, Any]) -> dict[str, Any]:
    """The filters given a value, each as the index compares it (several values as a list).

    An unknown filter, or a value outside a filter's closed set, is a FilterError that names
    the valid ones: a typo must not quietly answer as if no filter had been given."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        s = spec(name)
        if value is None or value == "" or value == []:
            continue
        given = s.values_of(value)
        if not given:
            continue
        if s.choices is not None:
            valid = list(s.choices())
            bad = [v for v in given if v not in valid]
            if bad:
                raise FilterError(f"unknown {s.value_name or s.name} {bad[0]!r}: use one of {', '.join(valid)}")
        out[name] = given if s.many else given[0]
    return out


def conditions(values: dict[str, Any], now: datetime) -> list[tuple[str, str, Any]]:
    """The store conditions of the filters given a value (checked: see `checked`)."""
    given = checked(values)
    out = []
    for s in FILTERS:
        value = given.get(s.name)
        if value is None:
            continue
        out.append((s.op, s.payload_key, s.operand(value, now) if s.operand else value))
    return out
