"""The catalog reads behind `jacked usage` and every token or cost figure: the API responses
(`llm_calls`) summed by a key, by model and by whose they are (main, subagent, teammate,
compaction), so that the caller can price each sum with the model's rates.

A response repeated by a resumed or forked session counts once, in the session that had it
first (`repeated`). Times are the responses' own UTC timestamps.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jacked.catalog import Catalog, repo_match, rows_in

# A response whose input (fresh, cache reads and cache writes) is above this many tokens is
# priced at the model's long-context rates, where it has them.
LONG_CONTEXT_ABOVE = 200_000

# What a usage report can be grouped by: the SQL of the key (llm_calls `l`, sessions `s`).
GROUP_KEYS: dict[str, str] = {
    "day": "substr(l.timestamp, 1, 10)",
    # the Monday that starts the response's ISO week
    "week": "date(substr(l.timestamp, 1, 10), 'weekday 0', '-6 days')",
    "month": "substr(l.timestamp, 1, 7)",
    "session": "l.session_id",
    "turn": "l.session_id || ':' || COALESCE(l.parent_turn, '')",
    "model": "COALESCE(l.model, '')",
    "agent": "s.agent",
    "role": "COALESCE(l.role, CASE WHEN l.owner = '' THEN 'main' ELSE 'subagent' END)",
    "repo": "COALESCE(s.repo_name, '')",
}

SESSION_KEYS = frozenset({"agent", "repo"})  # keys read from the session row (`s`)


@dataclass(frozen=True, slots=True)
class UsageFilter:
    """Which responses: of a repo (name or cwd), of some sessions, of one coding agent, in a
    time range (ISO strings comparable with the stored UTC `...Z` timestamps; `until` exclusive)."""

    repo: str | None = None
    session_ids: Sequence[str] | None = None
    agent: str | None = None
    since: str | None = None
    until: str | None = None


@dataclass(frozen=True, slots=True)
class UsageSum:
    """The responses of one key, one model, one role and one side of the long-context line."""

    key: str
    model: str
    long_context: bool
    role: str
    calls: int
    input: int
    output: int
    cache_creation: int
    cache_creation_1h: int
    cache_read: int
    agent_cost_usd: float | None  # summed over the responses whose agent recorded a cost
    agent_costed_calls: int


def usage_sums(catalog: Catalog, by: str, where: UsageFilter) -> list[UsageSum]:
    """The selected responses summed by `by` (a `GROUP_KEYS` name), model, long context and role."""
    key = GROUP_KEYS[by]
    role = GROUP_KEYS["role"]
    conds = ["NOT l.repeated"]
    args: list[Any] = []
    if where.repo:
        conds.append(repo_match("s."))
        args += [where.repo, where.repo]
    if where.agent:
        conds.append("s.agent = ?")
        args.append(where.agent)
    if where.since:
        conds.append("l.timestamp >= ?")
        args.append(where.since)
    if where.until:
        conds.append("l.timestamp < ?")
        args.append(where.until)
    select = (f"SELECT {key}, COALESCE(l.model, ''), "
              f"(l.input_tokens + l.cache_read_tokens + l.cache_creation_tokens) > {LONG_CONTEXT_ABOVE}, {role}, "
              "SUM(l.input_tokens + l.output_tokens + l.cache_read_tokens + l.cache_creation_tokens > 0), "
              "COALESCE(SUM(l.input_tokens), 0), COALESCE(SUM(l.output_tokens), 0), "
              "COALESCE(SUM(l.cache_creation_tokens), 0), COALESCE(SUM(l.cache_creation_1h_tokens), 0), "
              "COALESCE(SUM(l.cache_read_tokens), 0), SUM(l.agent_cost_usd), COUNT(l.agent_cost_usd) "
              "FROM llm_calls l ")
    if by in SESSION_KEYS or where.repo or where.agent:  # the session row only when asked for
        select += "JOIN sessions s ON s.session_id = l.session_id "
    select += "WHERE "
    group = " GROUP BY 1, 2, 3, 4"
    if where.session_ids is None:
        rows: Any = catalog.db.execute(select + " AND ".join(conds) + group, args)
    else:
        rows = rows_in(catalog.db, select + " AND ".join(["l.session_id IN (?*)", *conds]) + group,
                       list(where.session_ids), after=args, tuples=True)
    return [UsageSum(str(r[0] if r[0] is not None else ""), r[1], bool(r[2]), r[3], int(r[4] or 0), r[5], r[6],
                     r[7], r[8], r[9], r[10], r[11]) for r in rows]


def session_labels(catalog: Catalog, session_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """What names a session in a report: its repo, coding agent, title and start time."""
    return {r[0]: {"repo_name": r[1], "agent": r[2], "title": r[3] or None, "started_at": r[4]}
            for r in rows_in(catalog.db, "SELECT session_id, repo_name, agent, COALESCE(title, own_title), started_at "
                                         "FROM sessions WHERE session_id IN (?*)", list(session_ids), tuples=True)}
