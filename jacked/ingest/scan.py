"""Scan: bring the catalog up to date with a Claude directory, incrementally.

A re-scan opens no file whose size and mtime are unchanged; a file that grew is read from
the end of its last complete line with the saved builder state; a file that shrank or
whose earlier bytes changed is re-read whole (`jacked.ingest.reading`). Around that, a scan
keeps the archive's copies, restores sessions whose transcripts are gone, recovers prompt-only
sessions from history.jsonl and spreads a large cold scan over worker processes.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from jacked.catalog import Catalog, forget_queries
from jacked.ingest.agents import scan_agents
from jacked.ingest.archive import for_catalog
from jacked.ingest.prompt_history import recover_from_history, settle_archived
from jacked.ingest.reading import (  # noqa: F401 (the scan's public names, re-exported)
    BATCH_SECONDS,
    ScanReport,
    SessionReader,
    _collector_paused,
)
from jacked.ingest.workers import scan_in_workers
from jacked.sources.claude.discover import SessionFiles, discover

# A cold scan of this many changed sessions or more is spread over worker processes.
PARALLEL_MIN_SESSIONS = 16
# Sessions read per chunk when a backfill indexes each chunk before reading on (newest first).
CHUNK_SESSIONS = 500


class Scanner(SessionReader):
    """Brings the catalog up to date with a Claude directory and the other agents' folders."""

    def __init__(self, catalog: Catalog, claude_dir: Path, agents: Mapping[str, Path | Sequence[Path]] | None = None,
                 archive: Any = True, privacy: Any = None) -> None:
        """`agents`: {agent: folder or folders} of the other sources to read too (`jacked.ingest.agents.source_roots`).
        The archive keeps a compressed copy of every Claude file read (True: the one beside the catalog;
        False: none, the `archive` setting off). `privacy`: the sessions not to keep
        (`jacked.ingest.privacy.Privacy.from_settings`; None keeps all but the forgotten ones)."""
        super().__init__(catalog, claude_dir,
                         for_catalog(catalog, claude_dir) if archive is True else (archive or None),
                         privacy=privacy)
        self.agents = dict(agents or {})

    def scan(self, progress: Callable[[int, int], None] | None = None,
             only: Callable[[SessionFiles], bool] | None = None,
             on_chunk: Callable[[list[str]], None] | None = None) -> ScanReport:
        """Scan every session (or those `only` accepts); `progress(done, total)` is called per session.

        With `on_chunk`, sessions are read newest first (their main file's last write) in chunks of
        `CHUNK_SESSIONS`, and `on_chunk(session_ids)` runs once each chunk is in the catalog: a
        backfill indexes the newest sessions before it reads the older ones."""
        t0 = time.perf_counter()
        report = ScanReport()
        groups = discover(self.projects_dir, self._flat_parent, report.errors)
        if only is not None:
            groups = [g for g in groups if only(g)]
        report.session_ids = [g.session_id for g in groups]
        if self.privacy is not None:  # cataloged sessions a new `exclude` glob catches
            report.sessions_excluded += len(self.privacy.sweep(self.catalog))
        if self.archive is not None:
            self.archive.capture_plans(self.plans_dir, skip=forget_queries.forgotten_slugs(self.catalog))
        with _collector_paused():
            if on_chunk is None:
                self._scan_groups(groups, report, progress)
            else:
                self._scan_newest_first(groups, report, progress, on_chunk)
        if self.archive is not None and only is None:
            # Sessions whose transcript Claude Code deleted stay in the scan, read from the archive if need be.
            self.archive.restore_missing(self, report, {str(g.main.absolute()) for g in groups if g.main})
        if only is None:
            # Sessions Claude Code deleted before the archive saw them: their prompts, from history.jsonl.
            settle_archived(self.catalog, {g.session_id for g in groups if g.main})
            report.history = recover_from_history(self, report).to_json()
            if self.agents:
                scan_agents(self.catalog, self.agents, self.known, report, self.privacy)
        if self.archive is not None and report.sessions_excluded:
            # What the archive copied of sessions this scan forgot (in worker processes too, or read
            # back from the archive itself) goes with them.
            self.archive.drop_sessions(sorted(forget_queries.forgotten_ids(self.catalog)),
                                       forget_queries.forgotten_slugs(self.catalog))
        totals = self.catalog.totals()
        report.sessions = totals["sessions"]
        report.seconds = time.perf_counter() - t0
        return report

    def _scan_newest_first(self, groups: list[SessionFiles], report: ScanReport,
                           progress: Callable[[int, int], None] | None,
                           on_chunk: Callable[[list[str]], None]) -> None:
        def last_write(g: SessionFiles) -> float:
            try:
                return (g.main or next(iter(g.all_paths()))).stat().st_mtime
            except (OSError, StopIteration):
                return 0.0

        ordered = sorted(groups, key=last_write, reverse=True)
        for start in range(0, len(ordered), CHUNK_SESSIONS):
            part = ordered[start:start + CHUNK_SESSIONS]
            tick = None
            if progress is not None:
                tick = lambda done, _n, base=start: progress(base + done, len(ordered))  # noqa: E731  # binds this chunk's start
            self._scan_groups(part, report, tick)
            on_chunk([g.session_id for g in part])

    def _parallel_ok(self, changed: int) -> bool:
        # Fork only from a single-threaded process (e.g. not inside `jacked ui`'s server):
        # another thread could hold a lock the child would then wait on forever.
        return (changed >= PARALLEL_MIN_SESSIONS and (os.cpu_count() or 1) > 1 and hasattr(os, "fork")
                and str(self.catalog.path) != ":memory:" and threading.active_count() == 1)

    def _in_workers(self, todo: list[Any], tick: Callable[[int], None]) -> Iterator[ScanReport]:
        return scan_in_workers(self, todo, tick)


def scan(catalog: Catalog, claude_dir: Path, progress: Callable[[int, int], None] | None = None,
         agents: Mapping[str, Path | Sequence[Path]] | None = None) -> ScanReport:
    """Bring `catalog` up to date with every session under `claude_dir` (and the `agents` folders)."""
    return Scanner(catalog, claude_dir, agents).scan(progress)
