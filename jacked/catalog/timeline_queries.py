"""The catalog reads behind timelines and file histories (jacked.query.timeline).

Reads by path narrow in SQL only: an exact absolute path, or a relative one as a path suffix.
The caller checks every row again in Python, where `\\` and `/` separators are equal.
"""
from __future__ import annotations

from collections.abc import Collection
from typing import Any

from jacked.catalog import Catalog, repo_match


def _path_sql(wanted: str, column: str = "file_path") -> tuple[str, list[Any]]:
    """SQL narrowing rows to a path in `column` (checked exactly again by the caller)."""
    w = wanted.replace("\\", "/").rstrip("/")
    if w.startswith("/"):
        return f"({column} = ? OR {column} = ?)", [w, wanted]
    w = w[2:] if w.startswith("./") else w
    esc = w.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"({column} = ? OR REPLACE({column}, '\\', '/') LIKE ? ESCAPE '\\')", [w, "%/" + esc]


def backup_rows(catalog: Catalog, session_id: str) -> list[dict[str, Any]]:
    """A session's file-history backups (path, version, backup file and time, turn), by version."""
    return [dict(r) for r in catalog.db.execute(
        "SELECT path, version, backup_file, backup_time, turn_index FROM file_backups WHERE session_id = ? "
        "ORDER BY version", (session_id,))]


def main_llm_calls(catalog: Catalog, session_id: str) -> list[dict[str, Any]]:
    """A session's main-chain API responses, by turn and order."""
    return [dict(r) for r in catalog.db.execute(
        "SELECT * FROM llm_calls WHERE session_id = ? AND owner = '' ORDER BY turn_index, ord", (session_id,))]


def compaction_events(catalog: Catalog, session_id: str) -> list[dict[str, Any]]:
    """A session's compaction boundaries (turn_events rows, `data` as stored JSON), by turn and order."""
    return [dict(r) for r in catalog.db.execute(
        "SELECT * FROM turn_events WHERE session_id = ? AND type = 'compaction' ORDER BY turn_index, ord",
        (session_id,))]


def turn_event_rows(catalog: Catalog, session_id: str, types: Collection[str]) -> list[dict[str, Any]]:
    """A session's turn_events of `types` (`data` as stored JSON), by turn and order."""
    kinds = sorted(types)
    return [dict(r) for r in catalog.db.execute(
        f"SELECT turn_index, ord, type, timestamp, data FROM turn_events WHERE session_id = ? AND type IN "
        f"({','.join('?' * len(kinds))}) ORDER BY turn_index, ord", [session_id, *kinds])]


def timeline_sessions(catalog: Catalog, repo: str | None, file: str | None, with_errors: bool,
                      with_counts: Collection[str] = ()) -> list[tuple[str, str]]:
    """(id, start or '') of listed sessions (of a repo; whose main chain touched `file`; with a failed
    call; with a nonzero count among `with_counts`: decision_count, feedback_count), oldest first."""
    sql = "SELECT session_id, COALESCE(started_at, '') FROM sessions WHERE has_main = 1"
    args: list[Any] = []
    if repo:
        sql += " AND " + repo_match()
        args += [repo, repo]
    if file:
        # only sessions that touched the file: saves reading every session's calls
        clause, pargs = _path_sql(file)
        sql += f" AND session_id IN (SELECT session_id FROM invocations WHERE owner = '' AND {clause})"
        args += pargs
    if with_errors:
        sql += " AND tool_error_count > 0"
    counts = [c for c in ("decision_count", "feedback_count") if c in with_counts]
    if counts:
        sql += " AND (" + " OR ".join(f"{c} > 0" for c in counts) + ")"
    sql += " ORDER BY COALESCE(started_at, ''), session_id"
    return [(r[0], r[1]) for r in catalog.db.execute(sql, args)]


def file_change_rows(catalog: Catalog, path: str, tools: Collection[str],
                     repo: str | None = None) -> list[dict[str, Any]]:
    """Successful main-chain calls of `tools` on about `path`, with `session_cwd` and `repo_name`; unordered."""
    clause, args = _path_sql(path, "i.file_path")
    sql = (f"SELECT i.*, s.cwd AS session_cwd, s.repo_name FROM invocations i JOIN sessions s "
           f"ON s.session_id = i.session_id WHERE i.owner = '' AND i.is_error = 0 AND i.tool_name IN "
           f"({','.join('?' * len(tools))}) AND {clause}")
    params: list[Any] = sorted(tools) + args
    if repo:
        sql += " AND " + repo_match("s.")
        params += [repo, repo]
    return [dict(r) for r in catalog.db.execute(sql, params)]
