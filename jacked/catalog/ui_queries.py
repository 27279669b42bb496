"""The catalog reads behind `jacked ui`'s JSON API (jacked.surfaces.ui.api) that no other
module answers: repos with their session counts, the session list with dates, text and
paging, list rows by id, call times, and the stats page's per-day series.

Time bounds are ISO strings comparable with the stored UTC `...Z` timestamps.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jacked.catalog import Catalog, repo_match, rows_in
from jacked.catalog.stats_queries import session_filter

# The columns `history.session_summary` reads: the list never loads plans or other big texts.
LIST_COLUMNS = ("session_id, repo_name, cwd, started_at, ended_at, turn_count, title, first_prompt, git_branch, "
                "slug, version_first, tool_call_count, tool_error_count, subagent_count, input_tokens, "
                "output_tokens, lines_skipped, file, source, agent, decision_count, feedback_count")


def repo_counts(catalog: Catalog) -> list[tuple[str, int, str | None]]:
    """(repo, listed sessions, latest start) per repo, most sessions first, then by name."""
    return [(r[0], r[1], r[2]) for r in catalog.db.execute(
        "SELECT repo_name, COUNT(*) AS sessions, MAX(started_at) AS last FROM sessions "
        "WHERE has_main = 1 AND repo_name IS NOT NULL GROUP BY repo_name ORDER BY 2 DESC, 1")]


def list_rows(catalog: Catalog, session_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The list columns of those `session_ids` that have a row (any order)."""
    return [dict(r) for r in rows_in(catalog.db, f"SELECT {LIST_COLUMNS} FROM sessions WHERE session_id IN (?*)",
                                      session_ids)]


def sessions_page(catalog: Catalog, repo: str | None, since: str | None, until: str | None, limit: int,
                  offset: int, text: str | None = None, agent: str | None = None) -> tuple[int, list[dict[str, Any]]]:
    """(total matching, one page of list rows) of listed sessions, newest first; `text`: a case-insensitive
    substring of the title or first prompt; `agent`: only that coding agent's sessions."""
    where = ["has_main = 1"]
    args: list[Any] = []
    if agent:
        where.append("agent = ?")
        args.append(agent)
    if repo:
        where.append(repo_match())
        args += [repo, repo]
    if since:
        where.append("COALESCE(ended_at, started_at) >= ?")
        args.append(since)
    if until:
        where.append("started_at <= ?")
        args.append(until)
    if text:
        esc = text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        where.append("(LOWER(COALESCE(title, '')) LIKE ? ESCAPE '\\' OR LOWER(COALESCE(first_prompt, '')) "
                     "LIKE ? ESCAPE '\\')")
        args += ["%" + esc + "%"] * 2
    clause = " AND ".join(where)
    total = catalog.db.execute(f"SELECT COUNT(*) FROM sessions WHERE {clause}", args).fetchone()[0]
    rows = catalog.db.execute(
        f"SELECT {LIST_COLUMNS} FROM sessions WHERE {clause} ORDER BY COALESCE(started_at, '') DESC, session_id "
        f"LIMIT ? OFFSET ?", args + [limit, offset]).fetchall()
    return total, [dict(r) for r in rows]


def call_times(catalog: Catalog, session_id: str) -> list[tuple[str | None, str | None, str | None]]:
    """(tool use id, call time, result time) of a session's main-chain calls, in table order."""
    return [(r[0], r[1], r[2]) for r in catalog.db.execute(
        "SELECT tool_use_id, timestamp, result_timestamp FROM invocations WHERE session_id = ? AND owner = ''",
        (session_id,))]


def turns_per_day(catalog: Catalog, repo: str | None, session_id: str | None,
                  since: str | None) -> list[dict[str, Any]]:
    """Per UTC day of turn start, by day: turns, sessions, tokens in / out, tool calls and errors."""
    where, args = session_filter(repo, session_id, "t.")
    sql = (f"SELECT SUBSTR(t.started_at, 1, 10) AS day, COUNT(*), COUNT(DISTINCT t.session_id), "
           f"COALESCE(SUM(t.input_tokens), 0), COALESCE(SUM(t.output_tokens), 0), "
           f"COALESCE(SUM(t.tool_call_count), 0), COALESCE(SUM(t.tool_error_count), 0) "
           f"FROM turns t WHERE {where} AND t.started_at IS NOT NULL")
    if since:
        sql += " AND t.started_at >= ?"
        args = args + [since]
    sql += " GROUP BY day ORDER BY day"
    return [{"day": r[0], "turns": r[1], "sessions": r[2], "input_tokens": r[3], "output_tokens": r[4],
             "tool_calls": r[5], "tool_errors": r[6]} for r in catalog.db.execute(sql, args).fetchall()]
