"""The one table of search filters: what each is called (CLI `--name`, MCP argument, web API
parameter), which payload field of the index it tests, and how.

Adding a filter is one entry here: `jacked search`, the MCP `search` tool and `GET /api/search`
are built from this table (the field should have a payload index in the store for speed).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jacked.util.time import parse_since


@dataclass(frozen=True)
class SearchFilterSpec:
    """One filter of `jacked search`."""

    name: str  # `--name` on the CLI (underscores become dashes), the MCP argument, the API parameter
    payload_key: str  # the index payload field it tests
    op: str  # "value" (equals), "any" (one of) or "gte" (at least)
    help: str
    operand: Callable[[str, datetime], Any] | None = None  # the text given → what the index compares

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")


def _since_epoch(value: str, now: datetime) -> float:
    return parse_since(value, now).timestamp()


FILTERS: list[SearchFilterSpec] = [
    SearchFilterSpec("repo", "repo_name", "value", "Only sessions of this repo."),
    SearchFilterSpec("user", "user_name", "value", "Only this user's sessions."),
    SearchFilterSpec("agent", "agent", "value", "Only sessions of this coding agent: claude, codex, gemini, opencode, aider."),
    SearchFilterSpec("agent_type", "agent_type", "value", "Only subagent units of this agent type."),
    SearchFilterSpec("since", "ts", "gte", "Only units since: 7d, 2w, 3m, 1y or a date.", operand=_since_epoch),
]


def conditions(values: dict[str, Any], now: datetime) -> list[tuple[str, str, Any]]:
    """The store conditions of the filters given a value (unknown names are ignored)."""
    out = []
    for spec in FILTERS:
        value = values.get(spec.name)
        if value is None or value == "":
            continue
        out.append((spec.op, spec.payload_key, spec.operand(value, now) if spec.operand else value))
    return out
