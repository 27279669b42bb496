"""The catalog reads behind `jacked stats`: turn totals and the invocations
that feed the single-pass aggregation (jacked.query.stats).

Every read takes the same selection: a repo (name or cwd), one session, and a `since` time
as an ISO string comparable with the stored UTC `...Z` timestamps.
"""
from __future__ import annotations

from typing import Any

from jacked.catalog import Catalog, repo_match


def session_filter(repo: str | None, session_id: str | None, alias: str = "") -> tuple[str, list[Any]]:
    """SQL (and args) restricting rows to the selected sessions, for a table with `session_id`."""
    col = f"{alias}session_id"
    if not repo and not session_id:
        # Turns, main-chain calls and their API responses exist only for sessions with a main
        # file: no subquery needed (it cost a third of the time on 1,000 sessions).
        return "1 = 1", []
    parts = ["SELECT session_id FROM sessions WHERE has_main = 1"]
    args: list[Any] = []
    if repo:
        parts.append("AND " + repo_match())
        args += [repo, repo]
    if session_id:
        parts.append("AND session_id = ?")
        args.append(session_id)
    return f"{col} IN ({' '.join(parts)})", args


def _turn_selection(repo: str | None, session_id: str | None, since: str | None) -> tuple[str, list[Any]]:
    where, args = session_filter(repo, session_id, "t.")
    sql = (f"FROM turns t WHERE {where}" + (" AND t.started_at >= ?" if since else "")
           + ("" if session_id else " AND t.repeat_of IS NULL"))  # a resumed session's copies count once
    return sql, args + ([since] if since else [])


def turn_totals(catalog: Catalog, repo: str | None, session_id: str | None, since: str | None) -> dict[str, Any]:
    """Sessions, turns, tokens, first and last times and summed durations of the selected turns."""
    sql, args = _turn_selection(repo, session_id, since)
    row = catalog.db.execute(
        f"SELECT COUNT(DISTINCT t.session_id), COUNT(*), COALESCE(SUM(t.input_tokens), 0), "
        f"COALESCE(SUM(t.output_tokens), 0), MIN(t.started_at), MAX(COALESCE(t.ended_at, t.started_at)), "
        f"COALESCE(SUM(t.duration_ms), 0), COUNT(t.duration_ms) {sql}", args).fetchone()
    return {"sessions": row[0], "turns": row[1], "input_tokens": row[2], "output_tokens": row[3],
            "first": row[4], "last": row[5], "turn_ms_total": row[6], "turns_timed": row[7]}


def totals_by_agent(catalog: Catalog, repo: str | None, session_id: str | None,
                    since: str | None) -> dict[str, dict[str, int]]:
    """agent → sessions, turns, tool calls, errors, input and output tokens of the selected turns."""
    sql, args = _turn_selection(repo, session_id, since)
    sql = sql.replace("FROM turns t WHERE", "FROM turns t JOIN sessions s ON s.session_id = t.session_id WHERE", 1)
    return {r[0]: {"sessions": r[1], "turns": r[2], "tool_calls": r[3], "tool_errors": r[4],
                   "input_tokens": r[5], "output_tokens": r[6]}
            for r in catalog.db.execute(
                "SELECT s.agent, COUNT(DISTINCT t.session_id), COUNT(*), COALESCE(SUM(t.tool_call_count), 0), "
                "COALESCE(SUM(t.tool_error_count), 0), COALESCE(SUM(t.input_tokens), 0), "
                f"COALESCE(SUM(t.output_tokens), 0) {sql} GROUP BY s.agent ORDER BY COUNT(*) DESC", args)}


def turn_durations(catalog: Catalog, repo: str | None, session_id: str | None, since: str | None) -> list[int]:
    """The durations (ms) of the selected turns that have one."""
    sql, args = _turn_selection(repo, session_id, since)
    return [r[0] for r in catalog.db.execute(f"SELECT t.duration_ms {sql} AND t.duration_ms IS NOT NULL", args)]


def invocation_rows(catalog: Catalog, repo: str | None, session_id: str | None, since: str | None,
                    include_subagents: bool) -> list[tuple[Any, ...]]:
    """Selected calls in turn order: (session, owner, turn, sequence, tool, error, path, command, +, -, created)."""
    where, args = session_filter(repo, session_id, "i.")
    cols = ("i.session_id, i.owner, i.turn_index, i.sequence, i.tool_name, i.is_error, i.file_path, i.command, "
            "i.lines_added, i.lines_removed, i.file_created")
    if since:
        # Main-chain calls count when their turn started since then; subagent calls by their own time.
        sql = (f"SELECT {cols} FROM invocations i LEFT JOIN turns t ON i.owner = '' AND "
               f"t.session_id = i.session_id AND t.turn_index = i.turn_index WHERE {where} AND "
               f"((i.owner = '' AND t.started_at >= ?) OR (i.owner != '' AND i.timestamp >= ?))")
        args += [since, since]
    else:
        sql = f"SELECT {cols} FROM invocations i WHERE {where}"
    if not include_subagents:
        sql += " AND i.owner = ''"
    if not session_id:
        sql += " AND NOT i.repeated"
    sql += " ORDER BY i.session_id, i.owner, i.turn_index, i.ord"
    cur = catalog.db.cursor()
    cur.row_factory = None  # plain tuples: this read can be the whole catalog's calls
    return cur.execute(sql, args).fetchall()


def feedback_counts(catalog: Catalog, repo: str | None, session_id: str | None,
                    since: str | None) -> list[tuple[str | None, str | None, str | None, int]]:
    """(repo, feedback kind, tool, count) of the selected turns' feedback events (main chain)."""
    sql, args = _turn_selection(repo, session_id, since)
    sql = sql.replace("FROM turns t WHERE", "FROM turn_events e JOIN turns t ON t.session_id = e.session_id AND "
                      "t.turn_index = e.turn_index JOIN sessions s ON s.session_id = t.session_id WHERE "
                      "e.type = 'feedback' AND", 1)
    return [tuple(r) for r in catalog.db.execute(
        f"SELECT s.repo_name, json_extract(e.data, '$.kind'), json_extract(e.data, '$.tool_name'), COUNT(*) {sql} "
        "GROUP BY 1, 2, 3", args)]


def calls_by_repo_and_tool(catalog: Catalog, repo: str | None, session_id: str | None,
                           since: str | None) -> list[tuple[str | None, str, int]]:
    """(repo, tool, calls) of the selected turns' main-chain calls."""
    sql, args = _turn_selection(repo, session_id, since)
    sql = sql.replace("FROM turns t WHERE", "FROM invocations i JOIN turns t ON t.session_id = i.session_id AND "
                      "t.turn_index = i.turn_index JOIN sessions s ON s.session_id = t.session_id WHERE "
                      "i.owner = '' AND", 1)
    return [tuple(r) for r in catalog.db.execute(f"SELECT s.repo_name, i.tool_name, COUNT(*) {sql} GROUP BY 1, 2", args)]


def turns_by_repo(catalog: Catalog, repo: str | None, session_id: str | None, since: str | None) -> dict[Any, int]:
    """repo → number of selected turns."""
    sql, args = _turn_selection(repo, session_id, since)
    sql = sql.replace("FROM turns t WHERE", "FROM turns t JOIN sessions s ON s.session_id = t.session_id WHERE", 1)
    return {r[0]: r[1] for r in catalog.db.execute(f"SELECT s.repo_name, COUNT(*) {sql} GROUP BY 1", args)}
