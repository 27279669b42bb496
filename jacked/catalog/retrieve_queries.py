"""The catalog reads behind `jacked recall` (jacked.query.retrieve.recall_brief) and the decisions
`jacked retrieve` keeps."""
from __future__ import annotations

from typing import Any

import orjson

from jacked.catalog import Catalog, repo_match, rows_in
from jacked.sources.decisions import SEARCHABLE_DECISIONS, decision_text


def decision_lines(catalog: Catalog, session_id: str) -> list[tuple[int, str]]:
    """(turn, one line) of each question answered and plan approved or rejected in a session, in
    order, leaving out turns it repeats from another session (what the `decision` points hold)."""
    out = []
    for turn_index, data in catalog.db.execute(
            "SELECT e.turn_index, e.data FROM turn_events e JOIN turns t ON t.session_id = e.session_id "
            "AND t.turn_index = e.turn_index WHERE e.session_id = ? AND e.type = 'decision' AND t.repeat_of IS NULL "
            "ORDER BY e.turn_index, e.ord", (session_id,)):
        d = orjson.loads(data or "{}")
        text = decision_text(d) if d.get("kind") in SEARCHABLE_DECISIONS else None
        if text:
            out.append((turn_index, text))
    return out


def sessions_in_folder(catalog: Catalog, folder: str, repo_name: str | None,
                       limit: int | None = None) -> tuple[list[dict[str, Any]], int]:
    """(the newest `limit` listed sessions run in `folder` or below it, or in a repo named
    `repo_name`, newest first; how many there are in all): a repo with thousands of sessions is
    counted, not read whole."""
    below = folder.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"
    where = "has_main = 1 AND (cwd = ? OR cwd LIKE ? ESCAPE '\\' OR repo_name = ?)"
    args = (folder, below, repo_name)
    rows = [dict(r) for r in catalog.db.execute(
        f"SELECT * FROM sessions WHERE {where} ORDER BY COALESCE(ended_at, started_at, '') DESC LIMIT ?",
        (*args, -1 if limit is None else limit))]
    total = len(rows) if limit is None or len(rows) < limit else int(catalog.db.execute(
        f"SELECT COUNT(*) FROM sessions WHERE {where}", args).fetchone()[0])
    return rows, total


def recent_work(catalog: Catalog, repo: str, since: str, until: str | None = None, limit: int = 40,
                turn_chars: int = 4000) -> list[dict[str, Any]]:
    """What the newest `limit` listed sessions of `repo` active since `since` (and started by `until`)
    worked on, newest first: `session_id`, `started_at`, `ended_at`, `title`, `prompts` (typed, in
    order) and `text` (prompts, each turn's answer cut at `turn_chars`, the files its calls touched)."""
    sql = ("SELECT session_id, repo_name, started_at, ended_at, title, first_prompt FROM sessions "
           f"WHERE has_main = 1 AND {repo_match()} AND COALESCE(ended_at, started_at) >= ?")
    args: list[Any] = [repo, repo, since]
    if until:
        sql += " AND started_at <= ?"
        args.append(until)
    sessions = {r["session_id"]: {**dict(r), "prompts": [], "parts": []} for r in catalog.db.execute(
        sql + " ORDER BY COALESCE(ended_at, started_at) DESC LIMIT ?", [*args, limit])}
    ids = list(sessions)
    for sid, prompt, answer in rows_in(
            catalog.db, f"SELECT session_id, prompt, substr(assistant_text, 1, {int(turn_chars)}) FROM turns "
            "WHERE session_id IN (?*) ORDER BY session_id, turn_index", ids, tuples=True):
        s = sessions[sid]
        if prompt:
            s["prompts"].append(prompt)
        s["parts"] += [prompt or "", answer or ""]
    for sid, path in rows_in(catalog.db, "SELECT DISTINCT session_id, file_path FROM invocations "
                             "WHERE session_id IN (?*) AND file_path IS NOT NULL", ids, tuples=True):
        sessions[sid]["parts"].append(path)
    return [{**{k: v for k, v in s.items() if k != "parts"}, "text": "\n".join([s["title"] or "", *s["parts"]])}
            for s in sessions.values()]


def prompted_before(catalog: Catalog, session_id: str, before: str | None = None) -> bool:
    """Whether the session has a typed prompt that started before `before` (ISO time; None: any):
    a prompt that opens a session has none (the Stop hook indexes each turn as it ends)."""
    sql = "SELECT 1 FROM turns WHERE session_id = ? AND prompt IS NOT NULL AND prompt != ''"
    args: list[Any] = [session_id]
    if before:
        sql += " AND started_at < ?"
        args.append(before)
    return catalog.db.execute(sql + " LIMIT 1", args).fetchone() is not None
