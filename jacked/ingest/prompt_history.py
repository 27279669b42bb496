"""Prompt-only sessions from `<claude dir>/history.jsonl`: what is left of a session after
Claude Code's 30-day sweep deleted its transcript before jacked archived it.

Claude Code appends every prompt the user types to `history.jsonl`, one JSON object a line:
`display` (the prompt as typed), `timestamp` (epoch milliseconds), `project` (the cwd),
`sessionId` (missing in old versions: such a line names no session and is skipped, counted),
sometimes `pastedContents`. A session named there whose transcript is neither on disk, nor in
the archive, nor already in the catalog from a transcript becomes a prompt-only session: one
turn per prompt (numbered from 1, no tool calls), `source = 'history'` in the catalog.

The file is read incrementally like a transcript: its size, mtime, the offset past its last
complete line and probe hashes sit in the catalog's `files` table (kind `history`), so an
unchanged file is not opened and a grown one is read from where the last read stopped. A file
that shrank or whose earlier bytes changed is read again whole (prompts are merged with what
the catalog holds, never duplicated). When a session's real transcript turns up later, the
scanner's ordinary write replaces the prompt-only rows.

`sessions.source` is where a session's transcript is now: `transcript` (on disk), `archive`
(only in jacked's archive: Claude Code deleted it), `history` (prompts only). Prompt-only
sessions get `has_main = 1`: they are listed, counted, searched and retrieved like the rest.
"""
from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jacked.catalog import FileState, archive_queries, dump_state, load_state, scan_state
from jacked.sources.redact import redact_many
from jacked.sources.textclean import strip_ansi
from jacked.util.time import parse_ts
from jacked.sources.claude.discover import repo_name_of
from jacked.sources.model import Session, Turn
from jacked.sources.reader import ReadResult, iter_records

if TYPE_CHECKING:
    from jacked.ingest.reading import ScanReport, SessionReader

__all__ = ["HISTORY_FILE", "SOURCES", "HistoryReport", "recover_from_history", "source_counts", "epoch_ms_to_iso"]

HISTORY_FILE = "history.jsonl"
KIND = "history"  # the `files.kind` of history.jsonl's read state
SOURCES = ("transcript", "archive", "history")
# Bump when the way history lines become sessions changes: the file is then read again whole.
HISTORY_VERSION = 1
_SLASH = re.compile(r"/[A-Za-z][\w:.-]*(?:\s|$)")
_ENCODE = re.compile(r"[^A-Za-z0-9]")


@dataclass
class HistoryReport:
    """What one look at history.jsonl did (`scan --json` → `history`)."""

    bytes_read: int = 0
    lines_read: int = 0
    lines_malformed: int = 0  # undecodable, not an object, or no prompt text
    lines_without_session: int = 0  # old versions wrote no sessionId
    prompts: int = 0  # prompts taken for prompt-only sessions
    sessions_built: int = 0  # prompt-only sessions written (new or grown)
    sessions: int = 0  # prompt-only sessions in the catalog afterwards
    resumed_at: int = 0  # the offset the read started at (0: from the start)

    def to_json(self) -> dict[str, int]:
        return dict(self.__dict__)


def epoch_ms_to_iso(value: Any) -> str | None:
    """history.jsonl's `timestamp` (epoch milliseconds) as ISO-8601 UTC with 'Z', like the
    transcripts' own timestamps; an ISO string is kept; anything else is None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            secs, milli = divmod(int(value), 1000)
            return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{milli:03d}Z"
        except (OverflowError, ValueError, OSError):
            return None
    if isinstance(value, str):
        return value if parse_ts(value) is not None else None
    return None


def recover_from_history(scanner: SessionReader, report: ScanReport) -> HistoryReport:
    """Bring the prompt-only sessions up to date with history.jsonl, and keep every prompt-only
    session in the scan's session list (so the indexer sees them). Never raises: a problem is
    one line in `report.errors`."""
    out = HistoryReport()
    try:
        _recover(scanner, report, out)
    except Exception as e:
        report.errors.append(f"{scanner.claude_dir / HISTORY_FILE}: {type(e).__name__}: {e}")
    try:
        ids = scan_state.session_ids_with_source(scanner.catalog, "history")
        out.sessions = len(ids)
        seen = set(report.session_ids)
        report.session_ids.extend(sid for sid in ids if sid not in seen)
    except Exception as e:
        report.errors.append(f"history sessions: {type(e).__name__}: {e}")
    return out


def _recover(scanner: SessionReader, report: ScanReport, out: HistoryReport) -> None:
    from jacked.ingest.reading import _probe

    path = scanner.claude_dir / HISTORY_FILE
    try:
        st = path.stat()
    except FileNotFoundError:
        return
    rel = scanner.rel(path)
    known = scanner.known.get(rel)
    usable = known if known is not None and known.kind == KIND and known.parser_version == HISTORY_VERSION else None
    if usable is not None and usable.size == st.st_size and usable.mtime_ns == st.st_mtime_ns:
        return  # unchanged: not even opened
    start = 0
    totals = {"lines": 0, "malformed": 0, "without_session": 0}
    if usable is not None and st.st_size >= usable.offset and _probe(path, usable.offset) == (usable.head_hash,
                                                                                               usable.tail_hash):
        start = usable.offset
        saved = load_state(scanner.catalog.file_blob(rel)) or {}
        totals = {"lines": usable.lines, "malformed": usable.malformed,
                  "without_session": int(saved.get("without_session", 0)) if isinstance(saved, dict) else 0}
    out.resumed_at = start
    skip: set[str] | None = None  # sessions that have a transcript: loaded on the first prompt line
    found: dict[str, list[tuple[str | None, str, str | None]]] = {}  # sid -> (started_at, raw prompt, project)
    res = ReadResult(end_offset=start)
    for rec in iter_records(path, start, res):
        sid = rec.get("sessionId")
        if not isinstance(sid, str) or not sid.strip():
            out.lines_without_session += 1
            continue
        display = rec.get("display")
        if not isinstance(display, str) or not display.strip():
            out.lines_malformed += 1
            continue
        if skip is None:
            skip = _with_transcript(scanner, report)
        if sid in skip:
            continue
        project = rec.get("project")
        found.setdefault(sid, []).append(
            (epoch_ms_to_iso(rec.get("timestamp")), display, project if isinstance(project, str) and project else None))
    out.bytes_read = res.bytes_read
    out.lines_read = res.lines
    out.lines_malformed += res.malformed
    report.bytes_read += res.bytes_read
    head, tail = _probe(path, res.end_offset)
    if start == 0:
        totals = {"lines": 0, "malformed": 0, "without_session": 0}
    totals["lines"] += res.lines
    totals["malformed"] += out.lines_malformed
    totals["without_session"] += out.lines_without_session
    state = FileState(
        path=rel, session_id=None, kind=KIND, layout=None, size=st.st_size, mtime_ns=st.st_mtime_ns,
        offset=res.end_offset, head_hash=head, tail_hash=tail, lines=totals["lines"], malformed=totals["malformed"],
        pending_malformed=res.pending_tail_malformed, parent_id=None,
        state=dump_state({"without_session": totals["without_session"]}), parser_version=HISTORY_VERSION)
    sessions = _build_sessions(scanner, found, out)
    catalog = scanner.catalog
    privacy = getattr(scanner, "privacy", None)
    with catalog.transaction():
        if sessions and privacy is not None:  # `exclude` / `#nomem` (jacked.ingest.privacy): forgotten, not written
            dropped = privacy.screen(catalog, [s for s, _ in sessions])
            report.sessions_excluded += len(dropped)
            sessions = [x for x in sessions if x[0].session_id not in dropped]
        if sessions:
            skipped = catalog.replace_sessions([(s, 0, known_row) for s, known_row in sessions], source="history")
            sessions = [x for x in sessions if x[0].session_id not in skipped]
        catalog.save_file_states([state])
    state.state = None
    scanner.known[rel] = state
    out.sessions_built = len(sessions)
    report.changed_session_ids.extend(s.session_id for s, _ in sessions)


def _with_transcript(scanner: SessionReader, report: ScanReport) -> set[str]:
    """Sessions not to build from history: those found on disk in this scan or kept by the
    archive, and those the catalog holds from a transcript (on disk or archived)."""
    skip = set(report.session_ids)
    skip.update(scan_state.transcript_session_ids(scanner.catalog))
    archive = getattr(scanner, "archive", None)
    if archive is not None and (archive.root / "manifest.db").exists():
        try:
            skip.update(archive_queries.main_session_ids(archive.db))
        except Exception as e:
            report.errors.append(f"archive manifest: {type(e).__name__}: {e}")
    return skip


def _build_sessions(scanner: SessionReader, found: dict[str, list[tuple[str | None, str, str | None]]],
                    out: HistoryReport) -> list[tuple[Session, bool]]:
    """(session, already cataloged) for every session with new prompts: the new prompts
    redacted and merged with the ones the catalog already holds for it."""
    if not found:
        return []
    raw = [p for prompts in found.values() for _, p, _ in prompts]
    clean = iter(redact_many([strip_ansi(p) for p in raw]))
    catalog = scanner.catalog
    built = []
    for sid, prompts in found.items():
        row = catalog.get_session_row(sid)
        have: list[tuple[str | None, str]] = []
        cwd = None
        if row is not None:
            have = [(t["started_at"], t["prompt"]) for t in catalog.turn_rows(sid) if t["turn_index"] >= 1]
            cwd = row.get("cwd")
        # One prompt per moment (a person types one prompt per millisecond at most): a line read
        # again replaces its earlier reading (redacted anew), it is never added twice.
        merged: dict[Any, tuple[str | None, str]] = {(ts or ("text", text)): (ts, text) for ts, text in have}
        changed = row is None
        for ts, _, project in prompts:
            text = next(clean)
            cwd = project or cwd
            key = ts or ("text", text)
            old = merged.get(key)
            if old is None:
                out.prompts += 1
            elif old[1] == text:
                continue
            merged[key] = (ts, text)
            changed = True
        if not changed:
            continue  # nothing new (a file read again whole)
        ordered = sorted(merged.values(), key=lambda x: x[0] or "")
        built.append((_session(sid, cwd, ordered), row is not None))
    return built


def _session(sid: str, cwd: str | None, prompts: list[tuple[str | None, str]]) -> Session:
    turns = [Turn(index=i, prompt=text, started_at=ts, is_slash_command=bool(_SLASH.match(text)),
                  started_by="prompt")
             for i, (ts, text) in enumerate(prompts, 1)]
    stamps = [ts for ts, _ in prompts if ts]
    return Session(session_id=sid, file="", project_dir=_ENCODE.sub("-", cwd) if cwd else "", cwd=cwd,
                   repo_name=repo_name_of(cwd), started_at=min(stamps) if stamps else None,
                   ended_at=max(stamps) if stamps else None, turns=turns)


def source_counts(catalog: Any) -> dict[str, int]:
    """Listed sessions by where their transcript is: {"transcript", "archive", "history"}."""
    counts = dict.fromkeys(SOURCES, 0)
    for src, n in scan_state.source_counts(catalog):
        counts[src] = counts.get(src, 0) + n
    return counts


def settle_archived(catalog: Any, discovered: Iterable[str]) -> None:
    """Sessions marked `archive` whose transcript is on disk again: `transcript` once more
    (one small query when there are none)."""
    try:
        archived = set(scan_state.session_ids_with_source(catalog, "archive"))
        back = sorted(archived.intersection(discovered))
        if back:
            scan_state.set_source(catalog, back, "transcript")
    except Exception:
        pass


def history_file_state(catalog: Any, claude_dir: Path) -> dict[str, Any] | None:
    """What the catalog remembers of history.jsonl's reading (for `status`), or None."""
    path = str((Path(claude_dir) / HISTORY_FILE).absolute())
    row = scan_state.file_read_state(catalog, path, KIND)
    if row is None:
        return None
    saved = load_state(row["state"]) or {}
    return {"path": path, "bytes": row["size"], "read_to": row["offset"], "lines": row["lines"],
            "lines_malformed": row["malformed"],
            "lines_without_session": int(saved.get("without_session", 0)) if isinstance(saved, dict) else 0,
            "present": os.path.exists(path)}
