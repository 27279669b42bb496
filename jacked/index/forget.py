"""Forgetting sessions everywhere jacked keeps them (`jacked forget`, `exclude`, `#nomem`).

A forget removes a session's rows from every catalog table and leaves a tombstone there (so the
next scan or backfill never brings it back, from the transcript, history.jsonl, another agent's
folder or the archive); takes its points out of the index — on the local Edge shard every
user's points of that session, on a Qdrant server only this user's (teammates' copies are theirs
to forget); deletes its archived copies and its plan's copy (when no remembered session uses
that plan); drops the hook log lines and queued hook entries that name it; and then compacts,
so that no old bytes of it stay in any file under JACKED_HOME: SQLite deletes with
`secure_delete`, `VACUUM` and `wal_checkpoint(TRUNCATE)` on catalog.db and the archive's
manifest, and the Edge shard rewritten without deleted points (`EdgeStore.compact`). A Qdrant
server compacts its own storage.

Sessions caught by `exclude` / `#nomem` while scanning are tombstoned there (jacked.ingest.privacy)
and lose their catalog rows and archived copies at once; `purge_forgotten` — run by every index
run — then takes their points out of the store and compacts.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jacked.catalog import Catalog, forget_queries
from jacked.config import Settings
from jacked.errors import JackedError
from jacked.index.indexer import _vec_key, configured_store, store_exists
from jacked.index.purge import purge_forgotten
from jacked.ingest.archive import Archive
from jacked.util.fs import atomic_write
from jacked.util.time import parse_since, parse_ts

if TYPE_CHECKING:  # the published shape (docs/schema.md); never imported at run time
    from jacked.schema.answers import ForgetAnswer


@dataclass
class ForgetReport:
    """What a forget did; `to_json` is the `forget --json` shape."""

    sessions: list[str] = field(default_factory=list)  # forgotten now
    already: list[str] = field(default_factory=list)  # forgotten before: nothing left to do
    catalog_sessions: int = 0  # of `sessions`, those the catalog held rows of
    points_deleted: int = 0
    archive_files: int = 0
    archive_bytes: int = 0
    log_lines: int = 0  # hook log lines and queued hook entries naming them
    repeated_by: dict[str, list[str]] = field(default_factory=dict)  # sessions holding copies of their turns
    compaction: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> ForgetAnswer:
        return {"forgotten": self.sessions, "already_forgotten": self.already,
                "catalog_sessions": self.catalog_sessions, "points_deleted": self.points_deleted,
                "archive_files_deleted": self.archive_files, "archive_bytes_deleted": self.archive_bytes,
                "log_entries_deleted": self.log_lines, "repeated_by": self.repeated_by,
                "compaction": self.compaction, "errors": self.errors, "seconds": round(self.seconds, 3)}


# --------------------------------------------------------------------------- choosing
def select_sessions(catalog: Catalog, repo: str | None = None, before: str | None = None) -> list[str]:
    """Sessions of `repo` (name or cwd) and/or last active before `before` (a date, or an age such
    as `3m`: older than that), both when both are given."""
    if not repo and not before:
        raise JackedError("name the sessions to forget: session ids, --repo REPO or --before DATE")
    cutoff = parse_since(before, option="--before") if before else None
    out = []
    for r in forget_queries.select_sessions(catalog, repo):
        if cutoff is not None:
            last = parse_ts(r["ended_at"] or r["started_at"])
            if last is None or last >= cutoff:
                continue
        out.append(r["session_id"])
    return out


# --------------------------------------------------------------------------- forgetting
def forget_sessions(settings: Settings, catalog: Catalog, session_ids: Sequence[str], reason: str = "forget",
                    store: Any = None) -> ForgetReport:
    """Forget `session_ids` everywhere and compact (see the module's notes). `store`: an unopened
    store to use instead of the configured one (tests)."""
    t0 = time.perf_counter()
    report = ForgetReport()
    ids = list(dict.fromkeys(session_ids))
    done_before = forget_queries.forgotten_ids(catalog)
    report.already = [sid for sid in ids if sid in done_before]
    report.sessions = [sid for sid in ids if sid not in done_before]
    facts = forget_queries.session_facts(catalog, report.sessions)
    needles = set(report.sessions)
    needles.update(f for f in forget_queries.session_files(catalog, report.sessions) if f)
    needles.update(f["file"] for f in facts.values() if f.get("file"))
    report.repeated_by = forget_queries.repeated_by(catalog, report.sessions)
    if report.sessions:
        with catalog.transaction():
            report.catalog_sessions = forget_queries.tombstone(
                catalog, [(sid, reason, (facts.get(sid) or {}).get("slug")) for sid in report.sessions])
    # Points: of these sessions and of any other forgotten session whose points are still there.
    _purge_store(settings, catalog, store, report, report.sessions)
    archive = Archive(settings.home, settings.claude_dir)
    try:
        dropped = archive.drop_sessions(sorted(forget_queries.forgotten_ids(catalog)),
                                        forget_queries.forgotten_slugs(catalog))
        report.archive_files, report.archive_bytes = dropped["files"], dropped["bytes"]
        report.errors += archive.errors
    finally:
        archive.close()
    report.log_lines = scrub_logs(Path(settings.home), sorted(needles))
    report.compaction["catalog"] = forget_queries.compact(catalog)
    report.seconds = time.perf_counter() - t0
    return report


def _purge_store(settings: Settings, catalog: Catalog, store: Any, report: ForgetReport, ids: list[str]) -> None:
    from jacked.index.store import StoreError, StoreNotFound

    store = store if store is not None else configured_store(settings)
    edge = store.backend == "edge"
    if not store_exists(store):
        forget_queries.forget_index_rows(catalog, forget_queries.pending_index_sessions(catalog))
        return
    try:
        with store.open(None, None) as opened:
            deleted, compaction = purge_forgotten(catalog, opened, settings.user_name, _vec_key, also=ids,
                                                  compact_catalog=False)  # done last, after the archive
            report.points_deleted = deleted
            report.compaction.update(compaction)
    except StoreNotFound:
        forget_queries.forget_index_rows(catalog, forget_queries.pending_index_sessions(catalog))
    except StoreError as e:
        report.errors.append(f"{e} — the index keeps their points until the next `jacked backfill` or "
                             f"`jacked forget` reaches it")
    if not edge:
        report.compaction.setdefault("index", {"note": "the Qdrant server compacts its own storage"})


# --------------------------------------------------------------------------- hook log and queue
def scrub_logs(home: Path, needles: Sequence[str]) -> int:
    """Drop the lines of jacked's logs (`JACKED_HOME/logs/*`: the hook log and its rotation) and the
    queued hook entries (the daemon's `JACKED_HOME/daemon/queue/`; `JACKED_HOME/queue/` of an older
    jacked) that name a forgotten session or one of its files.
    They hold ids, paths and problem messages, not transcripts; still, nothing of a forgotten
    session stays. Returns how many lines and entries went."""
    needles = [n for n in needles if n]
    if not needles:
        return 0
    removed = 0
    for folder in (home / "logs", home / "daemon" / "queue", home / "queue", home / "queue" / "claimed"):
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if not path.is_file() or path.is_symlink():
                continue
            try:
                data = path.read_bytes()
            except OSError:
                continue
            text = data.decode("utf-8", "replace")
            if not any(n in text for n in needles):
                continue
            if folder.name == "logs":
                lines = text.splitlines(keepends=True)
                kept = [ln for ln in lines if not any(n in ln for n in needles)]
                removed += len(lines) - len(kept)
                atomic_write(path, "".join(kept).encode("utf-8"), mode=0o600)
            else:
                path.unlink(missing_ok=True)
                removed += 1
    return removed

