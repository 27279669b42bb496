"""What a search is asked: `SearchOptions`, and the repo the user is in.

Light on purpose: a CLI command that hands its search to the daemon builds these and imports
nothing of the index, the model or the transcript readers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from jacked.query.filters import FilterError, checked as checked_filters
from jacked.sources.paths import repo_name_of


class SearchError(FilterError):
    """A query or filter the user must fix."""


@dataclass
class SearchOptions:
    """Filters and weighting of a search."""

    types: list[str] | None = None
    scope: str | None = None  # sessions | turns | messages | all; narrows `types` to that layer
    agent_type: str | None = None
    repo: str | None = None
    user: str | None = None
    mine: bool = False
    since: str | None = None
    limit: int = 10
    filters: dict[str, Any] = field(default_factory=dict)  # more filters of jacked.query.filters, by name
    current_repo: str | None = None
    now: datetime | None = None
    weights: dict[str, float] = field(default_factory=dict)
    # Time words of the query ("last week", "yesterday") are a date range; off, they are words.
    time_words: bool = True
    # The index as it stood then: texts written at or after it are left out (replaying a history).
    as_of: datetime | None = None

    def filter_values(self) -> dict[str, Any]:
        """Every filter of jacked.query.filters given a value, by name (`filters` over the fields)."""
        fields = {"types": self.types, "repo": self.repo, "user": self.user, "agent_type": self.agent_type,
                  "since": self.since}
        return {k: v for k, v in {**fields, **self.filters}.items() if v not in (None, "", [])}

    def content_types(self) -> list[str] | None:
        """The scope's layer of content types (None: every type); the `types` filter narrows it further."""
        from jacked.index.content_types import SCOPES

        layer = SCOPES.get(self.scope or "all")
        return list(layer) if layer is not None else None

    def validate(self) -> None:
        from jacked.index.content_types import SCOPES

        if self.scope is not None and self.scope not in SCOPES:
            raise SearchError(f"unknown scope {self.scope!r}: use one of {', '.join(SCOPES)}")
        try:
            types = checked_filters(self.filter_values()).get("types")
        except FilterError as e:
            raise SearchError(str(e)) from None
        layer = self.content_types()
        if layer is not None and types and not set(types) & set(layer):
            raise SearchError(f"none of the types {', '.join(types)} is in scope {self.scope!r}: "
                              f"its types are {', '.join(layer)}")
        if self.limit < 1:
            raise SearchError("-n must be at least 1")


def current_repo_name(cwd: Path | None = None) -> str | None:
    """The repo the user is in: the git top-level's name, else the folder's name."""
    here = (cwd or Path.cwd()).resolve()
    for p in [here, *here.parents]:
        if (p / ".git").exists():
            return repo_name_of(str(p))
    return repo_name_of(str(here))
