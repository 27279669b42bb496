"""The one table of content types: what jacked indexes, how, and where search finds it.

Adding a content type is one entry here plus the code in `extract.py` that produces it.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ContentType:
    """One kind of indexed text."""

    name: str
    dense: bool  # embedded (dense + BM25); False: BM25 only (cheap to index, found by its words)
    scopes: tuple[str, ...]  # the `search --scope` layers it belongs to
    label: str  # how a person calls it


TABLE: tuple[ContentType, ...] = (
    ContentType("plan", True, ("sessions",), "plan"),
    # a question the user answered (with the alternatives) or a plan approved or rejected
    ContentType("decision", True, ("sessions", "turns"), "decision"),
    ContentType("subagent_summary", True, ("sessions",), "subagent report"),
    ContentType("summary_label", True, ("sessions",), "topic label"),
    ContentType("compact_summary", True, ("sessions",), "compaction summary"),
    ContentType("recap", True, ("sessions",), "recap"),
    ContentType("title", True, ("sessions",), "title"),
    ContentType("user_message", True, ("turns", "messages"), "user prompt"),
    ContentType("assistant_response", True, ("turns", "messages"), "final answer of a turn"),
    ContentType("turn_summary", True, ("turns",), "turn summary"),
    ContentType("session_summary", True, ("sessions",), "session summary"),
    ContentType("chunk", False, ("messages",), "tool work: calls, commands, paths, outputs, errors"),
)
BY_NAME = {t.name: t for t in TABLE}
CONTENT_TYPES: tuple[str, ...] = tuple(t.name for t in TABLE)
DENSE_TYPES: tuple[str, ...] = tuple(t.name for t in TABLE if t.dense)
SPARSE_ONLY_TYPES: tuple[str, ...] = tuple(t.name for t in TABLE if not t.dense)
# `--scope`: which layer of the memory to search; "all" is every type.
SCOPES: dict[str, tuple[str, ...] | None] = {
    scope: tuple(t.name for t in TABLE if scope in t.scopes) for scope in ("sessions", "turns", "messages")
} | {"all": None}
