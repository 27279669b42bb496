"""Reading the sessions of the other coding agents (Codex CLI, Gemini CLI, opencode, ...).

Their sessions are found by each source's `discover` and re-read whole when their fingerprint
(size and mtime of their files, by default) changed since the last scan; Claude Code's, much
larger and appended to while in use, go through the incremental scanner instead. A session
that cannot be read is skipped and reported; the others are kept.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from jacked.catalog import Catalog, FileState, FileStates, forget_queries, scan_state
from jacked.sources.base import FoundSession, TranscriptSource, redact_session
from jacked.sources.model import Session
from jacked.sources.registry import SOURCES

WRITE_EVERY = 50  # sessions per transaction


def source_folders(source: TranscriptSource, environ: Mapping[str, str]) -> list[Path]:
    """The folders of a source that exist: its `roots(environ)` when it reads several (Copilot: the
    CLI's home and VS Code's user folders), else its `default_root`."""
    several = getattr(source, "roots", None)
    candidates = several(environ) if several is not None else [source.default_root(environ)]
    return [p for p in candidates if p.is_dir()]


def source_roots(disabled: list[str] | tuple[str, ...] = (), environ: Mapping[str, str] | None = None) -> dict[str, list[Path]]:
    """{agent: folders} of every enabled source besides Claude Code with a folder that exists."""
    env = os.environ if environ is None else environ
    roots = {}
    for name, source in SOURCES.items():
        if getattr(source, "incremental", False) or name in disabled:
            continue
        folders = source_folders(source, env)
        if folders:
            roots[name] = folders
    return roots


def source_status(catalog: Catalog, claude_dir: Path, disabled: list[str] | tuple[str, ...] = (),
                  environ: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Every known source: its folder, whether it is there and read, and its sessions in the catalog."""
    env = os.environ if environ is None else environ
    counts = scan_state.agent_counts(catalog)
    out = []
    for name, source in SOURCES.items():
        folders = [claude_dir] if getattr(source, "incremental", False) else source_folders(source, env)
        root = folders[0] if folders else source.default_root(env)
        out.append({"name": name, "label": source.label, "root": str(root), "found": root.is_dir(),
                    "enabled": name not in disabled, "sessions": counts.get(name, 0)}
                   | ({"roots": [str(f) for f in folders]} if len(folders) > 1 else {}))
    return out


def scan_agents(catalog: Catalog, roots: Mapping[str, Path | Sequence[Path]], known: FileStates, report: Any,
                privacy: Any = None) -> None:
    """Bring the catalog up to date with the sessions under `roots` ({agent: folder or folders}); counts go to
    `report` (a `ScanReport`: its `agents` per agent, `errors`, and the session totals). `privacy`
    (jacked.ingest.privacy): sessions not to keep are forgotten instead of written."""
    forgotten = forget_queries.forgotten_ids(catalog)
    for name, given in roots.items():
        source = SOURCES[name]
        folders = [given] if isinstance(given, Path) else list(given)
        root = folders[0]
        counts = report.agents.setdefault(name, {"root": str(root), "sessions": 0, "scanned": 0, "skipped": 0})
        errors: list[str] = []
        pending: list[tuple[Session, FileState]] = []
        unchanged: list[str] = []
        for found in _found_in(source, folders, errors):
            counts["sessions"] += 1
            if found.session_id in forgotten:  # never read or written again
                report.sessions_forgotten += 1
                continue
            report.session_ids.append(found.session_id)
            if found.extra.get("fallback") and catalog.existing_session_ids([found.session_id]):
                # A stand-in read from what the agent kept after deleting the session (Gemini CLI's
                # prompt log): the session jacked already read whole stays as it is.
                report.sessions_unchanged += 1
                unchanged.append(found.session_id)
                continue
            state = known.get(found.location)
            if state is not None and state.head_hash == found.fingerprint \
                    and state.parser_version == source.parser_version:
                report.sessions_unchanged += 1
                unchanged.append(found.session_id)
                continue
            built = _read(source, found, errors)
            if built is None:
                counts["skipped"] += 1
                continue
            pending.append(built)
            if len(pending) >= WRITE_EVERY:
                _write(catalog, pending, known, report, counts, privacy)
                pending = []
        _write(catalog, pending, known, report, counts, privacy)
        turns, skipped, _ = scan_state.unchanged_totals(catalog, unchanged)
        report.turns += turns
        report.lines_skipped += skipped
        report.errors.extend(f"{source.label}: {e}" for e in errors)


def _found_in(source: TranscriptSource, folders: list[Path], errors: list[str]) -> Iterator[FoundSession]:
    for folder in folders:
        try:
            yield from source.discover(folder, errors)
        except OSError as e:  # the folder itself went away or became unreadable mid-listing
            errors.append(f"{folder}: {e.strerror or e}")


def _read(source: TranscriptSource, found: FoundSession, errors: list[str]) -> tuple[Session, FileState] | None:
    try:
        session = source.read(found)
    except Exception as e:
        errors.append(f"{found.location}: {type(e).__name__}: {e}")
        return None
    session.agent = source.name
    redact_session(session)
    sizes, mtimes = [], []
    for p in found.files:
        try:
            st = p.stat()
        except OSError:
            continue
        sizes.append(st.st_size)
        mtimes.append(st.st_mtime_ns)
    state = FileState(
        path=found.location, session_id=session.session_id, kind="main", layout=source.name,
        size=sum(sizes), mtime_ns=max(mtimes, default=0), offset=0, head_hash=found.fingerprint, tail_hash="",
        lines=session.lines, malformed=session.lines_malformed, pending_malformed=0, parent_id=None, state=None,
        parser_version=source.parser_version)
    return session, state


def _write(catalog: Catalog, built: list[tuple[Session, FileState]], known: FileStates, report: Any,
           counts: dict[str, Any], privacy: Any = None) -> None:
    if not built:
        return
    existing = catalog.existing_session_ids([s.session_id for s, _ in built])
    with catalog.transaction():
        if privacy is not None:  # `exclude` / `#nomem`: forgotten, not written
            dropped = privacy.screen(catalog, [s for s, _ in built])
            report.sessions_excluded += len(dropped)
            built = [b for b in built if b[0].session_id not in dropped]
        skipped = catalog.replace_sessions([(s, s.lines_skipped, s.session_id in existing) for s, _ in built])
        report.sessions_forgotten += len(skipped)
        built = [b for b in built if b[0].session_id not in skipped]
        catalog.save_file_states([st for _, st in built])
    for session, state in built:
        known[state.path] = state
        counts["scanned"] += 1
        report.sessions_scanned += 1
        report.changed_session_ids.append(session.session_id)
        report.turns += len(session.turns)
        report.lines_skipped += session.lines_skipped
        report.lines_malformed += session.lines_malformed
        report.lines_unknown += session.lines_unknown
