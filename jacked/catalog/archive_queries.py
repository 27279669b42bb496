"""The archive's manifest (`JACKED_HOME/archive/manifest.db`, jacked.ingest.archive): one row
per archived original file, in a SQLite file of its own beside the catalog.

A row (`entries`) holds the original's path (`source`), the Claude dir it was found under,
where its copy is kept (`rel`), its kind and session, the archived size and mtime, probe
hashes of its first bytes and of the bytes before the archived end, the compressed size,
the number of gzip members and when it was archived. Rows are returned as plain dicts keyed
by those column names.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jacked.catalog import connect_read_only, rows_in

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    source TEXT PRIMARY KEY, claude_dir TEXT, rel TEXT, kind TEXT, session_id TEXT, size INTEGER,
    mtime_ns INTEGER, head_hash TEXT, tail_hash TEXT, gz_size INTEGER, members INTEGER, archived_at REAL
);
CREATE INDEX IF NOT EXISTS entries_session ON entries(session_id);
"""


def open_manifest(path: Path, read_only: bool = False) -> sqlite3.Connection:
    """Open (creating the table if missing) the manifest at `path`: autocommit, WAL, rows by name.
    `read_only` (a read-only JACKED_HOME): read as it is; a WAL file whose -shm went with its last
    writer cannot be opened the usual way there."""
    if read_only:
        db = connect_read_only(path)
        db.row_factory = sqlite3.Row
        return db
    db = sqlite3.connect(str(path), timeout=60, isolation_level=None)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(SCHEMA)
    return db


@contextmanager
def manifest_transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction on the manifest: committed on leaving, rolled back on any exception."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    else:
        db.execute("COMMIT")


def entry(db: sqlite3.Connection, source: str) -> dict[str, Any] | None:
    """The row of the original file `source`, or None."""
    row = db.execute("SELECT * FROM entries WHERE source = ?", (source,)).fetchone()
    return dict(row) if row else None


def entries(db: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every row, by `rel`."""
    return [dict(r) for r in db.execute("SELECT * FROM entries ORDER BY rel")]


def main_entries(db: sqlite3.Connection, claude_dir: str) -> list[dict[str, Any]]:
    """The rows of main transcripts found under `claude_dir`, in table order."""
    return [dict(r) for r in db.execute("SELECT * FROM entries WHERE claude_dir = ? AND kind = 'main'",
                                        (claude_dir,))]


def session_file_entries(db: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """A session's subagent, meta, journal and tool-result rows, by `rel`."""
    return [dict(r) for r in db.execute(
        "SELECT * FROM entries WHERE session_id = ? AND kind IN ('subagent', 'meta', 'journal', 'tool_result') "
        "ORDER BY rel", (session_id,))]


def main_session_ids(db: sqlite3.Connection) -> set[str]:
    """The sessions whose main transcript is archived."""
    return {r[0] for r in db.execute(
        "SELECT DISTINCT session_id FROM entries WHERE kind = 'main' AND session_id IS NOT NULL")}


def put_entry(db: sqlite3.Connection, row: tuple[Any, ...]) -> None:
    """Insert or replace one row, given in column order."""
    db.execute("INSERT OR REPLACE INTO entries VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", row)


def archived_sizes(db: sqlite3.Connection, sources: Sequence[str] | None = None) -> list[tuple[str, int, int, str, int]]:
    """(source, size, mtime_ns, rel, gz_size) of every row (of `sources`), in table order."""
    sql = "SELECT source, size, mtime_ns, rel, gz_size FROM entries"
    rows = db.execute(sql) if sources is None else rows_in(db, sql + " WHERE source IN (?*)", sources)
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def forget_sizes(db: sqlite3.Connection, sources: Sequence[str]) -> None:
    """Set size and mtime of `sources` to -1, so that their copies are rewritten on the next capture."""
    db.executemany("UPDATE entries SET mtime_ns = -1, size = -1 WHERE source = ?", [(s,) for s in sources])


def session_entries(db: sqlite3.Connection, session_ids: Sequence[str]) -> list[dict[str, Any]]:
    """Every row (main, subagents, metas, journals, tool results) of `session_ids`."""
    return [dict(r) for r in rows_in(db, "SELECT * FROM entries WHERE session_id IN (?*)", session_ids)]


def plan_entries(db: sqlite3.Connection, names: Sequence[str]) -> list[dict[str, Any]]:
    """The rows of plan files named `names` (`<slug>.md`), wherever they were found."""
    wanted = set(names)
    return [dict(r) for r in db.execute("SELECT * FROM entries WHERE kind = 'plan'")
            if r["rel"].rsplit("/", 1)[-1] in wanted]


def delete_entries(db: sqlite3.Connection, sources: Sequence[str]) -> None:
    """Drop the rows of `sources`, zeroing the space they held (secure_delete; inside a transaction)."""
    was = db.execute("PRAGMA secure_delete").fetchone()[0]
    db.execute("PRAGMA secure_delete=ON")
    try:
        db.executemany("DELETE FROM entries WHERE source = ?", [(s,) for s in sources])
    finally:
        db.execute(f"PRAGMA secure_delete={int(was)}")
