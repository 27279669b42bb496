"""Reading sessions into the catalog: discover → read → reconstruct → catalog, incrementally.

`SessionReader` does the work of one scan pass over session files; `jacked.ingest.scan.Scanner`
adds what a whole scan does around it (the archive, history.jsonl, worker processes), so that
those modules can build on this one without importing the scan back.

A re-scan opens no file whose size and mtime are unchanged; a file that grew is read from
the end of its last complete line with the saved builder state; a file that shrank or
whose earlier bytes changed is re-read whole.
"""
from __future__ import annotations

import gc
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from jacked.catalog import Catalog, FileState, FileStates, dump_state, forget_queries, load_state, scan_state
from jacked.sources.claude.assemble import assemble, subagent_meta
from jacked.sources.claude.discover import SessionFiles
from jacked.sources.model import Session
from jacked.sources.reader import MAX_LINE_BYTES, ReadResult, iter_records
from jacked.sources.claude.turns import PARSER_VERSION, FileBuilder
from jacked.util.time import parse_ts

if TYPE_CHECKING:  # the published shape (docs/schema.md); never imported at run time
    from jacked.schema.answers import HistoryReport, ScanAnswer

PROBE_BYTES = 4096
BATCH_SECONDS = 0.5  # built sessions are written at least this often, several per transaction
RESUME_STATE_DAYS = 7


@dataclass
class ScanReport:
    """What a scan did; `to_json` is the `scan --json` shape."""

    sessions: int = 0
    sessions_scanned: int = 0
    sessions_unchanged: int = 0
    files_opened: int = 0
    files_resumed: int = 0
    bytes_read: int = 0
    turns: int = 0
    lines_read: int = 0
    lines_skipped: int = 0
    lines_malformed: int = 0
    lines_unknown: int = 0
    lines_duplicate: int = 0
    tool_results_missing: int = 0  # results referring to a tool-results/ file that is not there
    sessions_forgotten: int = 0  # passed over: forgotten earlier (`jacked forget`, `exclude`, `#nomem`)
    sessions_excluded: int = 0  # forgotten by this scan: caught by `exclude` or `#nomem` (jacked.ingest.privacy)
    files_without_session: int = 0  # files that hold no session (empty, summaries only): in neither count above
    errors: list[str] = field(default_factory=list)
    changed_session_ids: list[str] = field(default_factory=list)
    session_ids: list[str] = field(default_factory=list)  # every session seen, changed or not
    seconds: float = 0.0
    history: dict[str, int] = field(default_factory=dict)  # history.jsonl: see jacked.ingest.prompt_history
    # the other agents' sessions (jacked.ingest.agents): {agent: {root, sessions, scanned, skipped}}
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> ScanAnswer:
        return {
            "sessions": self.sessions, "sessions_scanned": self.sessions_scanned,
            "sessions_unchanged": self.sessions_unchanged, "turns": self.turns,
            "lines_read": self.lines_read, "lines_skipped": self.lines_skipped,
            "lines_malformed": self.lines_malformed, "lines_unknown": self.lines_unknown,
            "lines_duplicate": self.lines_duplicate, "tool_results_missing": self.tool_results_missing,
            "sessions_forgotten": self.sessions_forgotten, "sessions_excluded": self.sessions_excluded,
            "files_without_session": self.files_without_session,
            "files_opened": self.files_opened,
            "files_resumed": self.files_resumed, "bytes_read": self.bytes_read, "errors": self.errors,
            "seconds": round(self.seconds, 3),
            "history": cast("HistoryReport", self.history),
            "agents": self.agents,
        }


def _probe(path: Path, offset: int) -> tuple[str, str]:
    """Hashes of the first bytes and of the bytes just before `offset`: did earlier bytes change?"""
    with open(path, "rb") as fh:
        head = fh.read(min(PROBE_BYTES, offset))
        start = max(0, offset - PROBE_BYTES)
        fh.seek(start)
        tail = fh.read(offset - start)
    return hashlib.blake2b(head, digest_size=8).hexdigest(), hashlib.blake2b(tail, digest_size=8).hexdigest()


def _may_resume(builder: FileBuilder) -> bool:
    """Whether to keep a file's builder state for resuming: only while its session is live.

    Claude Code appends to the sessions in use; an old one grows only when resumed, and is
    then read whole once (and kept from then on). Saving every old file's state would cost
    a cold scan a third of its time for resumes that rarely come.
    """
    last = parse_ts(builder.ended_at)
    return last is None or (time.time() - last.timestamp()) < RESUME_STATE_DAYS * 86400


class SessionReader:
    """Reads changed session files into the catalog (no archive set-up, no worker processes)."""

    source = "transcript"  # `sessions.source` of what it writes (the archive's restorer: "archive")

    def __init__(self, catalog: Catalog, claude_dir: Path, archive: Any = None,
                 known: FileStates | None = None, privacy: Any = None) -> None:
        """`known`: the cataloged files' scan states, when the caller has them already. `privacy`: a
        `jacked.ingest.privacy.Privacy` whose sessions not to keep are forgotten as they are read
        (None: every session is kept; forgotten ones are never written again either way)."""
        self.catalog = catalog
        self.archive = archive  # keeps a compressed copy of every file read, when given
        self.privacy = privacy
        self.claude_dir = claude_dir
        self.projects_dir = claude_dir / "projects"
        self.plans_dir = claude_dir / "plans"
        self._known: FileStates | None = known

    @property
    def known(self) -> FileStates:
        """The cataloged files' scan states, read as they are looked up (`Catalog.lazy_file_states`)."""
        if self._known is None:
            self._known = self.catalog.lazy_file_states()
        return self._known

    @known.setter
    def known(self, value: FileStates | None) -> None:
        self._known = value

    def rel(self, path: Path) -> str:
        """The catalog key of a file: its absolute path (one catalog may serve several Claude dirs)."""
        return str(path.absolute())

    def _flat_parent(self, path: Path) -> str | None:
        st = self.known.get(self.rel(path))
        return st.parent_id if st else None

    def _scan_groups(self, groups: list[SessionFiles], report: ScanReport,
                     progress: Callable[[int, int], None] | None) -> None:
        """Build the changed sessions (in worker processes when there are many) and write them,
        several per transaction (each still all-or-nothing): commits are costly."""
        todo: list[tuple[SessionFiles, dict[Path, os.stat_result]]] = []
        unchanged: list[str] = []
        done = 0
        forgotten = forget_queries.forgotten_ids(self.catalog)
        for group in groups:
            if group.session_id in forgotten:  # never read, archived or written again
                report.sessions_forgotten += 1
                done += 1
                if progress:
                    progress(done, len(groups))
                continue
            try:
                stats = self.changed_stats(group, report)
                if stats is None:
                    unchanged.append(group.session_id)
            except OSError as e:
                report.errors.append(_file_error(group, e))
                stats = None
            if stats is None:
                done += 1
                if progress:
                    progress(done, len(groups))
            else:
                todo.append((group, stats))
        self._count_unchanged(unchanged, report)
        if self._parallel_ok(len(todo)):
            base = done

            def tick(taken: int) -> None:
                if progress:
                    progress(base + taken, len(groups))

            for counters in self._in_workers(todo, tick):
                _merge(report, counters)
            if progress:
                progress(len(groups), len(groups))
            self._known = None  # the workers' writes are not in it: reload when next needed
            return
        built = (self.build_safely(group, stats) for group, stats in todo)
        pending: list[Any] = []
        batch_start = time.perf_counter()
        for item in built:
            pending.append(item)
            if time.perf_counter() - batch_start >= BATCH_SECONDS:
                self.write_batch(pending, report)
                pending, batch_start = [], time.perf_counter()
            done += 1
            if progress:
                progress(done, len(groups))
        self.write_batch(pending, report)

    def _parallel_ok(self, changed: int) -> bool:
        """Whether to spread `changed` sessions over worker processes (never, at this level)."""
        return False

    def _in_workers(self, todo: list[Any], tick: Callable[[int], None]) -> Iterator[ScanReport]:
        raise NotImplementedError  # only a Scanner, which has workers, says yes to _parallel_ok

    def build_safely(self, group: SessionFiles, stats: dict[Path, os.stat_result]) -> tuple[Any, ...]:
        """(group, built session or None, error or None, counters): never raises for a bad file."""
        counters = ScanReport()
        try:
            return group, self._build(group, stats, counters), None, counters
        except OSError as e:
            return group, None, _file_error(group, e), counters

    def write_batch(self, items: list[tuple[Any, ...]], report: ScanReport) -> None:
        """Write `build_safely` results in one transaction and count them."""
        if not items:
            return
        with self.catalog.transaction():
            ready = []
            for group, built, error, counters in items:
                for name in ("files_opened", "files_resumed", "bytes_read", "lines_read"):
                    setattr(report, name, getattr(report, name) + getattr(counters, name))
                report.errors.extend(counters.errors)
                if error:
                    report.errors.append(error)
                elif built is not None:
                    ready.append((group, *built))
            self._store(ready, report)

    def scan_group(self, group: SessionFiles, report: ScanReport, in_transaction: bool = False) -> Session | None:
        """Scan one session's files; returns the session when it was (re)built."""
        if self.catalog.forgotten_among([group.session_id]):
            report.sessions_forgotten += 1
            return None
        stats = self.changed_stats(group, report)
        if stats is None:
            self._count_unchanged([group.session_id], report)
            return None
        session, states, skipped = self._build(group, stats, report)
        if in_transaction:
            self._store([(group, session, states, skipped)], report)
        else:
            with self.catalog.transaction():
                self._store([(group, session, states, skipped)], report)
        return session

    def changed_stats(self, group: SessionFiles, report: ScanReport) -> dict[Path, os.stat_result] | None:
        """The files' stats when any changed since the last scan; None (counted) when none did."""
        stats: dict[Path, os.stat_result] = {}
        changed = False
        try:
            for p in group.all_paths():
                st = p.stat()
                stats[p] = st
                known = self.known.get(self.rel(p))
                if (known is None or known.size != st.st_size or known.mtime_ns != st.st_mtime_ns
                        or known.parser_version != PARSER_VERSION):
                    changed = True
        finally:  # even when a file just vanished: the others are kept
            if self.archive is not None:
                self.archive.capture_group(group, stats)
        if changed:
            return stats
        report.sessions_unchanged += 1
        return None

    def _build(self, group: SessionFiles, stats: dict[Path, os.stat_result],
               report: ScanReport) -> tuple[Session, list[FileState], int]:
        """Read a changed session's files and assemble it; nothing is written."""
        states: list[FileState] = []
        main_builder = None
        main_state = None
        if group.main is not None:
            main_builder, st = self._read_file(group.main, stats[group.main], "main", None, group, report)
            main_state = st or self.known.get(self.rel(group.main))
            if st:
                states.append(st)
        subs = []
        for sf in group.subagents + group.compactions:
            try:
                b, st = self._read_file(sf.path, stats[sf.path], "subagent", sf.layout, group, report)
            except OSError as e:  # one unreadable agent file: the session is kept without it
                report.errors.append(f"{sf.path}: {e.strerror or e}: not read, the rest of the session is kept")
                continue
            if st:
                states.append(st)
            subs.append((b, sf.layout, subagent_meta(sf)))
        session = assemble(group.session_id, group.project_dir, main_builder, subs, self.plans_dir,
                           session_dir=group.session_dir)
        skipped = (main_state.malformed + main_state.pending_malformed) if main_state else 0
        skipped += session.lines_unknown
        session.lines_malformed = skipped - session.lines_unknown
        session.lines_skipped = skipped
        return session, states, skipped

    def _store(self, built: list[tuple[SessionFiles, Session, list[FileState], int]], report: ScanReport) -> None:
        """Write built sessions (inside a transaction), several at once, and count them."""
        if not built:
            return
        if self.privacy is not None:  # sessions the user keeps out (`exclude`, `#nomem`): forgotten now
            dropped = self.privacy.screen(self.catalog, [s for _, s, _, _ in built])
            if dropped:
                report.sessions_excluded += len(dropped)
                built = [b for b in built if b[1].session_id not in dropped]
                if self.archive is not None:  # copied as the scan looked at it: not to be kept either
                    self.archive.drop_sessions(list(dropped), forget_queries.forgotten_slugs(self.catalog))
                if not built:
                    return
        seen_files = [any(self.rel(p) in self.known for p in g.all_paths()) for g, _, _, _ in built]
        # The same session may already be cataloged from another path (a copy, another Claude dir).
        in_catalog = self.catalog.existing_session_ids(
            [s.session_id for (_, s, _, _), seen in zip(built, seen_files) if not seen])
        entries = [(session, skipped, seen or session.session_id in in_catalog)
                   for (_, session, _, skipped), seen in zip(built, seen_files)]
        forgotten = self.catalog.replace_sessions(entries, source=self.source)
        if forgotten:  # forgotten meanwhile (or read back from somewhere): nothing of them is kept
            report.sessions_forgotten += len(forgotten)
            entries = [e for e in entries if e[0].session_id not in forgotten]
        states = [st for _, session, file_states, _ in built if session.session_id not in forgotten
                  for st in file_states]
        self.catalog.save_file_states(states)
        if self.archive is not None:
            for session, _, _ in entries:
                if session.slug:
                    self.archive.capture(self.plans_dir / f"{session.slug}.md", "plan")
        for st in states:
            st.state = None  # keep the in-memory index light
            self.known[st.path] = st
        unlisted = scan_state.unlisted_count(self.catalog, [session.session_id for session, _, _ in entries])
        report.sessions_scanned -= unlisted  # read, but they hold no session: counted apart
        report.files_without_session += unlisted
        for session, skipped, _ in entries:
            report.sessions_scanned += 1
            report.changed_session_ids.append(session.session_id)
            report.turns += len(session.turns)
            report.lines_skipped += skipped
            report.lines_malformed += session.lines_malformed
            report.lines_unknown += session.lines_unknown
            report.lines_duplicate += session.lines_duplicate
            report.tool_results_missing += session.tool_results_missing

    def _count_unchanged(self, session_ids: list[str], report: ScanReport) -> None:
        """Add the cataloged turns and skipped lines of sessions that were not re-read."""
        turns, skipped, missing = scan_state.unchanged_totals(self.catalog, session_ids)
        unlisted = scan_state.unlisted_count(self.catalog, session_ids)
        report.sessions_unchanged -= unlisted  # changed_stats counted every unchanged file group
        report.files_without_session += unlisted
        report.turns += turns
        report.lines_skipped += skipped
        report.tool_results_missing += missing

    def _read_file(self, path: Path, st: os.stat_result, kind: str, layout: str | None,
                   group: SessionFiles, report: ScanReport) -> tuple[FileBuilder, FileState | None]:
        """Bring one file's builder up to date: load it, resume it, or read the file whole.

        The returned state is None when the file was unchanged (nothing to save).
        """
        rel = self.rel(path)
        known = self.known.get(rel)
        builder: FileBuilder | None = None
        start = lines = malformed = 0
        usable = known if known is not None and known.parser_version == PARSER_VERSION else None
        if usable is not None and usable.size == st.st_size and usable.mtime_ns == st.st_mtime_ns:
            builder = load_state(self.catalog.file_blob(rel))
            if builder is not None:  # unchanged: reuse the saved state without opening the file
                return builder, None
        if usable is not None and st.st_size >= usable.offset:
            head, tail = _probe(path, usable.offset)
            if head == usable.head_hash and tail == usable.tail_hash:
                builder = load_state(self.catalog.file_blob(rel))
                if builder is not None:
                    start, lines, malformed = usable.offset, usable.lines, usable.malformed
        if builder is None:
            builder = FileBuilder(rel, is_subagent_file=(kind == "subagent"))
        res = ReadResult(end_offset=start)
        report.files_opened += 1
        if start:
            report.files_resumed += 1
        feed = builder.feed
        for rec in iter_records(path, start, res):
            feed(rec)
        report.bytes_read += res.bytes_read
        report.lines_read += res.lines
        if res.oversized:
            report.errors.append(f"{path}: {res.oversized} line(s) over {MAX_LINE_BYTES >> 20} MB skipped "
                                 "(e.g. a huge file-history snapshot); the rest of the session is kept")
        head, tail = _probe(path, res.end_offset)
        builder.finalize()  # redacts what was captured: the stored state holds no secret
        parent = builder.session_id if kind == "subagent" and layout == "flat" else group.session_id
        state = FileState(
            path=rel, session_id=group.session_id, kind=kind, layout=layout, size=st.st_size,
            mtime_ns=st.st_mtime_ns, offset=res.end_offset, head_hash=head, tail_hash=tail,
            lines=lines + res.lines, malformed=malformed + res.malformed,
            pending_malformed=res.pending_tail_malformed, parent_id=parent,
            state=dump_state(builder) if _may_resume(builder) else None,
            parser_version=PARSER_VERSION)
        return builder, state


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Automatic garbage collection off while sessions are built: a scan makes millions of
    short-lived objects but no reference cycles to speak of, and the collector's passes over
    what a large scan holds cost a tenth of it (1,000 sessions: 0.80 s -> 0.70 s)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _file_error(group: SessionFiles, e: OSError) -> str:
    """The line of a session skipped for a file it could not read: the file, else the session."""
    return f"{e.filename or group.session_id}: {e.strerror or e}: session {group.session_id} not read"


def _merge(report: ScanReport, part: ScanReport) -> None:
    for name in ("sessions_scanned", "files_opened", "files_resumed", "bytes_read", "turns", "lines_read",
                 "lines_skipped", "lines_malformed", "lines_unknown", "lines_duplicate", "tool_results_missing",
                 "sessions_forgotten", "sessions_excluded", "files_without_session"):
        setattr(report, name, getattr(report, name) + getattr(part, name))
    report.errors.extend(part.errors)
