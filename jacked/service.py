"""`Jacked(settings)`: the one object the surfaces (CLI, MCP, web view, hooks) talk to.

It owns the catalog connection, brings it up to date before answering (incrementally, at most
every `rescan_seconds`), keeps the model and the index open across calls, and returns plain
data; surfaces only parse their input and format these answers. Problems the user can fix
raise `jacked.errors.JackedError` subclasses with a one-line message.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from jacked.catalog import Catalog
from jacked.config import Settings

Progress = Callable[[str, int, int], None]


class Jacked:
    """jacked for one user and one Claude directory."""

    def __init__(self, settings: Settings, scan: bool = True, rescan_seconds: float = 30.0) -> None:
        """`scan`: bring the catalog up to date before answering (False: answer from it as it is)."""
        self.settings = settings
        self.scan_enabled = scan
        self.rescan_seconds = rescan_seconds
        self._catalog: Catalog | None = None
        self._indexer: Any = None
        self._scanned_at: float | None = None

    # ------------------------------------------------------------------ plumbing
    @property
    def catalog(self) -> Catalog:
        """The catalog as it is (no scan)."""
        if self._catalog is None:
            self._catalog = Catalog(self.settings.catalog_path)
        return self._catalog

    @property
    def indexer(self) -> Any:
        """The indexer (model and store), loaded once and kept."""
        if self._indexer is None:
            from jacked.index.indexer import Indexer

            self._indexer = Indexer(self.settings, self.catalog)
        return self._indexer

    def fresh(self) -> Catalog:
        """The catalog, re-scanned (incrementally) when the last scan is older than `rescan_seconds`."""
        now = time.monotonic()
        if self.scan_enabled and (self._scanned_at is None or now - self._scanned_at > self.rescan_seconds):
            if self.settings.projects_dir.is_dir():
                self.scan()
            self._scanned_at = now
        return self.catalog

    def session_id(self, ref: str) -> str:
        """A full session id from an id, a unique prefix or a transcript path."""
        from jacked.query.history import resolve_session

        return resolve_session(self.fresh(), ref, self.settings.claude_dir)

    # ------------------------------------------------------------------ ingest and index
    def scan(self, progress: Callable[[int, int], None] | None = None) -> Any:
        """Bring the catalog up to date with the Claude directory; the `ScanReport`."""
        from jacked.ingest.scan import Scanner

        report = Scanner(self.catalog, self.settings.claude_dir, self.settings.user_name).scan(progress)
        self._scanned_at = time.monotonic()
        return report

    def backfill(self, rebuild: bool = False, repo: str | None = None, progress: Progress | None = None) -> Any:
        """Scan, then index every session that changed; the `IndexReport`."""
        report = self.indexer.backfill(rebuild=rebuild, repo=repo, progress=progress)
        self._scanned_at = time.monotonic()
        return report

    # ------------------------------------------------------------------ query
    def search(self, query: str, opts: Any) -> dict[str, Any]:
        """The `search --json` object for one query (`opts`: a `SearchOptions`)."""
        return self.search_many([query], opts)[0]

    def search_many(self, queries: list[str], opts: Any) -> list[dict[str, Any]]:
        """One answer per query, with one model load and one store open."""
        from jacked.query.search import search_many

        self.fresh()
        return search_many(self.settings, queries, opts, indexer=self.indexer)

    def retrieve(self, refs: list[str], mode: str = "smart", budget: int | None = None) -> Any:
        """Context from sessions (ids, prefixes or paths) fitted into `budget` tokens; a `RetrieveResult`."""
        from jacked.query.retrieve import retrieve

        ids = [self.session_id(r) for r in refs]
        return retrieve(self.catalog, ids, mode=mode, budget=budget or self.settings.default_max_tokens,
                        margin=self.settings.token_safety_margin)

    def restore(self, ref: str, budget: int) -> Any:
        """A brief to pick a session up where it stopped; a `Brief`."""
        from jacked.query.restore import restore_brief

        return restore_brief(self.catalog, self.session_id(ref), budget, margin=self.settings.token_safety_margin)

    def sessions(self, repo: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Sessions, newest first (the `sessions --json` rows)."""
        from jacked.query.history import list_sessions

        return list_sessions(self.fresh(), repo, limit)

    def turns(self, ref: str) -> dict[str, Any]:
        """A session's turns with invocations and metrics (the `turns --json` object)."""
        from jacked.query.history import turns_json

        return turns_json(self.catalog, self.session_id(ref))

    def timeline(self, query: Any) -> list[dict[str, Any]]:
        """Events of a session or a repo (`query`: a `TimelineQuery`, its session already resolved)."""
        from jacked.query.timeline import timeline

        return timeline(self.fresh(), query, self.settings.claude_dir)

    def file_history(self, path: str, repo: str | None = None) -> list[dict[str, Any]]:
        """What happened to one file, across sessions."""
        from jacked.query.timeline import file_history

        return file_history(self.fresh(), path, self.settings.claude_dir, repo)

    def stats(self, query: Any) -> dict[str, Any]:
        """Tool use, errors, files and commands (`query`: a `StatsQuery`)."""
        from jacked.query.stats import compute_stats

        return compute_stats(self.fresh(), query)

    def summaries(self, ref: str) -> tuple[str, dict[int, dict[str, Any]], dict[str, Any] | None]:
        """(session id, turn index → turn summary, session summary), brought up to date."""
        from jacked.index.summarize import ensure_summaries, summaries_for

        sid = self.session_id(ref)
        ensure_summaries(self.catalog, sid)
        by_turn, session = summaries_for(self.catalog, sid)
        return sid, by_turn, session
