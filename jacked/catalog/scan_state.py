"""The catalog reads and writes of a scan besides the session rows (jacked.ingest): totals of
the sessions it did not re-read, where each session's transcript is (`sessions.source`), and
the read state of history.jsonl (a `files` row of its own kind).

`sessions.source` is `transcript` (on disk), `archive` (only in jacked's archive) or `history`
(prompts only, from history.jsonl); a NULL is read as `transcript`.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from jacked.catalog import Catalog

SAID_KEY = "warnings_said"  # meta: the scan problems already shown to the user (JSON list)


def unchanged_totals(catalog: Catalog, session_ids: Sequence[str]) -> tuple[int, int, int]:
    """(turns, skipped lines, missing tool results) summed over the cataloged `session_ids`."""
    turns = skipped = missing = 0
    for i in range(0, len(session_ids), 500):  # SQLite caps the number of parameters
        part = list(session_ids[i:i + 500])
        row = catalog.db.execute(
            "SELECT COALESCE(SUM(turn_count), 0), COALESCE(SUM(lines_skipped), 0), "
            "COALESCE(SUM(tool_results_missing), 0) FROM sessions "
            f"WHERE session_id IN ({','.join('?' * len(part))})", part).fetchone()
        turns += row[0]
        skipped += row[1]
        missing += row[2]
    return turns, skipped, missing


def session_ids_with_source(catalog: Catalog, source: str) -> list[str]:
    """Every session (listed or not) whose `sessions.source` is `source`, in table order."""
    return [r[0] for r in catalog.db.execute("SELECT session_id FROM sessions WHERE source = ?", (source,))]


def transcript_session_ids(catalog: Catalog) -> set[str]:
    """Sessions the catalog holds from a transcript (on disk or archived), not from history.jsonl."""
    return {r[0] for r in catalog.db.execute(
        "SELECT session_id FROM sessions WHERE COALESCE(source, 'transcript') != 'history'")}


def set_source(catalog: Catalog, session_ids: Sequence[str], source: str) -> None:
    """Set `sessions.source` of `session_ids` to `source`, in one transaction."""
    with catalog.transaction():
        catalog.db.executemany("UPDATE sessions SET source = ? WHERE session_id = ?",
                               [(source, sid) for sid in session_ids])


def source_counts(catalog: Catalog) -> list[tuple[str, int]]:
    """(source, listed sessions) per `sessions.source`, NULL counted as `transcript`."""
    return [(r[0], r[1]) for r in catalog.db.execute(
        "SELECT COALESCE(source, 'transcript'), COUNT(*) FROM sessions WHERE has_main = 1 GROUP BY 1")]


def file_read_state(catalog: Catalog, path: str, kind: str) -> dict[str, Any] | None:
    """The `files` row of `path` with `kind`: size, offset, lines, malformed and state blob; or None."""
    row = catalog.db.execute("SELECT size, offset, lines, malformed, state FROM files WHERE path = ? AND kind = ?",
                             (path, kind)).fetchone()
    if row is None:
        return None
    return {"size": row[0], "offset": row[1], "lines": row[2], "malformed": row[3], "state": row[4]}


def agent_counts(catalog: Catalog) -> dict[str, int]:
    """Listed sessions per coding agent."""
    return {r[0]: r[1] for r in catalog.db.execute(
        "SELECT agent, COUNT(*) FROM sessions WHERE has_main = 1 GROUP BY agent")}


def unlisted_count(catalog: Catalog, session_ids: Sequence[str]) -> int:
    """How many of `session_ids` are cataloged files that hold no session (empty, summaries only)."""
    n = 0
    for i in range(0, len(session_ids), 500):
        part = list(session_ids[i:i + 500])
        n += catalog.db.execute(f"SELECT COUNT(*) FROM sessions WHERE has_main = 0 AND session_id IN "
                                f"({','.join('?' * len(part))})", part).fetchone()[0]
    return n


def unsaid(catalog: Catalog, problems: Sequence[str]) -> list[str]:
    """Those of `problems` (a scan's lines about files it could not read) not shown before; the
    ones shown are remembered until they go away, so a broken link is reported once, and again
    only if it is broken anew."""
    row = catalog.db.execute("SELECT value FROM meta WHERE key = ?", (SAID_KEY,)).fetchone()
    try:
        said = json.loads(row[0]) if row and isinstance(row[0], str) else []
    except ValueError:
        said = []
    said = said if isinstance(said, list) else []
    current = list(dict.fromkeys(problems))
    if current != said:  # written only when it changes: most commands meet the same problems
        value = json.dumps(current)
        with catalog.transaction():
            catalog.db.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = ?",
                               (SAID_KEY, value, value))
    return [p for p in current if p not in said]
