"""Forgetting sessions in the catalog (`jacked forget`, the `exclude` setting, `#nomem`).

A forgotten session gets a tombstone (`forgotten`: id, reason, when, its plan's slug) and loses
every row it had: its session tables, its files' scan state (whose builder blobs hold its
texts), its summaries, the labels other files wrote for it, and — once its points are out of
the store — its index bookkeeping. `Catalog.replace_sessions` never writes a tombstoned
session again, so no later scan brings it back.

Deletes run with `PRAGMA secure_delete` on (SQLite zeroes what it frees); `compact` then
rewrites the file (`VACUUM`) and empties the write-ahead log (`wal_checkpoint(TRUNCATE)`), so
no old bytes of a forgotten session stay in `catalog.db` or `catalog.db-wal`.
"""
from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from typing import Any

from jacked.catalog import SESSION_TABLES, Catalog, repo_match

COMPACT_KEY = "forget_compact_pending"  # meta: a forget left bytes to compact (catalog, index)
NOMEM_SWEPT_KEY = "nomem_swept"  # meta: sessions cataloged before `#nomem` existed were looked at


def _chunks(ids: Sequence[str], size: int = 500) -> Iterable[list[str]]:
    for i in range(0, len(ids), size):  # SQLite caps the number of parameters
        yield list(ids[i:i + size])


def _marks(part: Sequence[Any]) -> str:
    return ",".join("?" * len(part))


def forgotten_rows(catalog: Catalog) -> list[dict[str, Any]]:
    """Every tombstone: {session_id, reason, forgotten_at, slug}, oldest first."""
    return [dict(r) for r in catalog.db.execute("SELECT * FROM forgotten ORDER BY forgotten_at, session_id")]


def forgotten_matching(catalog: Catalog, prefix: str) -> list[dict[str, Any]]:
    """Tombstones whose session id starts with `prefix` (LIKE wildcards escaped), at most 50."""
    esc = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return [dict(r) for r in catalog.db.execute(
        "SELECT * FROM forgotten WHERE session_id LIKE ? ESCAPE '\\' ORDER BY session_id LIMIT 50", (esc + "%",))]


def forgotten_ids(catalog: Catalog) -> set[str]:
    return {r[0] for r in catalog.db.execute("SELECT session_id FROM forgotten")}


def forgotten_slugs(catalog: Catalog) -> set[str]:
    """Plans (by slug) of forgotten sessions that no remembered session uses: not to archive."""
    return {r[0] for r in catalog.db.execute(
        "SELECT DISTINCT f.slug FROM forgotten f WHERE f.slug IS NOT NULL AND f.slug != '' "
        "AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.slug = f.slug)")}


def session_facts(catalog: Catalog, session_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """id → {slug, file, cwd} of the cataloged `session_ids` (what a forget needs before the rows go)."""
    out: dict[str, dict[str, Any]] = {}
    for part in _chunks(session_ids):
        for r in catalog.db.execute(
                f"SELECT session_id, slug, file, cwd FROM sessions WHERE session_id IN ({_marks(part)})", part):
            out[r[0]] = {"slug": r[1], "file": r[2], "cwd": r[3]}
    return out


def session_files(catalog: Catalog, session_ids: Sequence[str]) -> list[str]:
    """The paths of every file the catalog read for `session_ids` (main, subagents)."""
    out: list[str] = []
    for part in _chunks(session_ids):
        out += [r[0] for r in catalog.db.execute(
            f"SELECT path FROM files WHERE session_id IN ({_marks(part)})", part)]
    return out


def repeated_by(catalog: Catalog, session_ids: Sequence[str]) -> dict[str, list[str]]:
    """Sessions outside `session_ids` that repeat turns of them (resumes, forks): id → [those ids].
    Their own transcripts hold the same texts, so forgetting one does not forget the other."""
    wanted = set(session_ids)
    out: dict[str, list[str]] = {}
    for part in _chunks(session_ids):
        for copy, original in catalog.db.execute(
                f"SELECT DISTINCT session_id, repeat_of FROM turns WHERE repeat_of IN ({_marks(part)})", part):
            if copy not in wanted:
                out.setdefault(original, []).append(copy)
        for copy, original in catalog.db.execute(
                f"SELECT DISTINCT session_id, repeat_of FROM turns WHERE session_id IN ({_marks(part)}) "
                "AND repeat_of IS NOT NULL", part):
            if original not in wanted:
                out.setdefault(copy, []).append(original)
    return {k: sorted(set(v)) for k, v in out.items()}


def select_sessions(catalog: Catalog, repo: str | None = None) -> list[dict[str, Any]]:
    """Sessions (listed or not) of `repo` (its name or its cwd), or all: {session_id, started_at,
    ended_at}."""
    sql = "SELECT session_id, started_at, ended_at FROM sessions"
    args: list[Any] = []
    if repo:
        sql += " WHERE " + repo_match()
        args = [repo, repo]
    return [dict(r) for r in catalog.db.execute(sql + " ORDER BY session_id", args)]


def exclusion_candidates(catalog: Catalog) -> list[dict[str, Any]]:
    """Every cataloged session's {session_id, file, cwd, repo_name, project_dir}: what `exclude` globs match."""
    return [dict(r) for r in catalog.db.execute("SELECT session_id, file, cwd, repo_name, project_dir FROM sessions")]


def prompts_with(catalog: Catalog, needle: str) -> dict[str, list[str]]:
    """session id → its prompts that contain `needle` (case-insensitive LIKE; the caller checks precisely)."""
    esc = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    out: dict[str, list[str]] = {}
    for sid, prompt in catalog.db.execute(
            "SELECT session_id, prompt FROM turns WHERE prompt LIKE ? ESCAPE '\\'", (f"%{esc}%",)):
        out.setdefault(sid, []).append(prompt)
    return out


def meta_flag(catalog: Catalog, key: str) -> int:
    row = catalog.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def set_meta_flag(catalog: Catalog, key: str, value: int) -> None:
    catalog.db.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = ?",
                       (key, value, value))


def tombstone(catalog: Catalog, entries: Sequence[tuple[str, str, str | None]]) -> int:
    """Forget sessions in the catalog (call inside a transaction): each entry (session id, reason,
    slug or None) gets a tombstone and loses its rows, zeroed on disk (secure_delete). The index
    bookkeeping stays until the points are out of the store (`forget_index_rows`). Returns how many
    of them had rows; when any had, the catalog is marked for compaction."""
    if not entries:
        return 0
    db = catalog.db
    ids = [sid for sid, _, _ in entries]
    facts = session_facts(catalog, ids)
    now = time.time()
    db.executemany(
        "INSERT INTO forgotten (session_id, reason, forgotten_at, slug) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(session_id) DO UPDATE SET slug = COALESCE(forgotten.slug, excluded.slug)",
        [(sid, reason, now, slug or (facts.get(sid) or {}).get("slug")) for sid, reason, slug in entries])
    had: set[str] = set(facts)
    with _secure_delete(db):
        for part in _chunks(ids):
            marks = _marks(part)
            had.update(r[0] for r in db.execute(f"SELECT DISTINCT session_id FROM files WHERE session_id IN ({marks})",
                                                part))
            # labels other files wrote for these sessions (by the uuid of one of their lines)
            db.execute("DELETE FROM texts WHERE kind = 'foreign_label' AND leaf_uuid IN "
                       f"(SELECT uuid FROM leaves WHERE session_id IN ({marks}))", part)
            # sessions that repeated their turns count those turns again
            copies = [r[0] for r in db.execute(
                f"SELECT DISTINCT session_id FROM turns WHERE repeat_of IN ({marks})", part)]
            for table in (*SESSION_TABLES, "files", "summaries"):
                db.execute(f"DELETE FROM {table} WHERE session_id IN ({marks})", part)
            _unmark_repeats(catalog, [c for c in copies if c not in set(ids)], part)
    if had:
        set_meta_flag(catalog, COMPACT_KEY, 1)
    return len(had)


def _unmark_repeats(catalog: Catalog, copies: list[str], originals: list[str]) -> None:
    """Turns of `copies` that repeated one of `originals` are their own again: totals recounted,
    and a new content sequence so that the next index run gives them their points."""
    if not copies:
        return
    db = catalog.db
    marks = _marks(originals)
    for sid in copies:
        db.execute(f"UPDATE turns SET repeat_of = NULL WHERE session_id = ? AND repeat_of IN ({marks})",
                   [sid, *originals])
        for table in ("invocations", "llm_calls"):
            db.execute(f"UPDATE {table} SET repeated = (SELECT t.repeat_of IS NOT NULL FROM turns t WHERE "
                       f"t.session_id = {table}.session_id AND t.turn_index = {table}.turn_index) "
                       "WHERE session_id = ? AND owner = ''", (sid,))
        db.execute(
            "UPDATE sessions SET (tool_call_count, tool_error_count, input_tokens, output_tokens) = "
            "(SELECT COALESCE(SUM(tool_call_count), 0), COALESCE(SUM(tool_error_count), 0), "
            "COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0) FROM turns t "
            "WHERE t.session_id = sessions.session_id AND t.repeat_of IS NULL) WHERE session_id = ?", (sid,))
        db.execute("UPDATE sessions SET content_seq = ? WHERE session_id = ?", (catalog.next_seq(), sid))


def pending_index_sessions(catalog: Catalog, user_name: str | None = None) -> list[str]:
    """Forgotten sessions whose points the index bookkeeping still records (of `user_name`, or any
    user's): their points are still to be taken out of the store."""
    sql = ("SELECT DISTINCT session_id FROM index_points WHERE session_id IN (SELECT session_id FROM forgotten)"
           + (" AND user_name = ?" if user_name is not None else ""))
    sql2 = ("SELECT DISTINCT session_id FROM index_sessions WHERE session_id IN (SELECT session_id FROM forgotten)"
            + (" AND user_name = ?" if user_name is not None else ""))
    args = (user_name,) if user_name is not None else ()
    return sorted({r[0] for r in catalog.db.execute(sql, args)} | {r[0] for r in catalog.db.execute(sql2, args)})


def forget_index_rows(catalog: Catalog, session_ids: Sequence[str], user_name: str | None = None) -> None:
    """Drop the index bookkeeping of `session_ids` (of `user_name`, or every user's), in one transaction."""
    with catalog.transaction(), _secure_delete(catalog.db):
        for part in _chunks(session_ids):
            extra, args = ("", part) if user_name is None else (" AND user_name = ?", [*part, user_name])
            for table in ("index_points", "index_sessions"):
                catalog.db.execute(f"DELETE FROM {table} WHERE session_id IN ({_marks(part)}){extra}", args)


def forget_vectors(catalog: Catalog, keys: Sequence[str]) -> None:
    """Drop cached dense vectors by key (the embedding cache of forgotten texts), in one transaction."""
    if not keys:
        return
    with catalog.transaction(), _secure_delete(catalog.db):
        for part in _chunks(keys):
            catalog.db.execute(f"DELETE FROM embed_cache WHERE key IN ({_marks(part)})", part)


def compact(catalog: Catalog) -> dict[str, Any]:
    """Rewrite the catalog without free pages (`VACUUM`) and empty its write-ahead log; clears the
    pending-compaction mark. Returns {bytes_before, bytes_after, wal_emptied}."""
    return compact_db(catalog.db, catalog.path, after=lambda: set_meta_flag(catalog, COMPACT_KEY, 0))


def compact_db(db: sqlite3.Connection, path: Any, after: Any = None) -> dict[str, Any]:
    """`VACUUM` and `wal_checkpoint(TRUNCATE)` on an open SQLite connection in autocommit mode
    (the catalog, the archive's manifest). `wal_emptied` is False when another process was reading."""
    from pathlib import Path

    p = Path(str(path))

    def size() -> int:
        return sum(q.stat().st_size for q in (p, p.with_name(p.name + "-wal")) if q.exists())

    before = size()
    if after is not None:
        after()
    db.execute("PRAGMA secure_delete=ON")
    try:
        db.execute("VACUUM")
    finally:
        db.execute("PRAGMA secure_delete=OFF")
    busy = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
    return {"bytes_before": before, "bytes_after": size(), "wal_emptied": not busy}


class _secure_delete:
    """`PRAGMA secure_delete=ON` for the deletes inside (SQLite zeroes the space they free)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.was = self.db.execute("PRAGMA secure_delete").fetchone()[0]
        self.db.execute("PRAGMA secure_delete=ON")

    def __exit__(self, *exc: object) -> None:
        self.db.execute(f"PRAGMA secure_delete={int(self.was)}")
