"""Numbered steps that bring an existing catalog to the current layout without a rescan.

The catalog's `PRAGMA user_version` is the number of the last step applied. A catalog older
than `BASELINE_VERSION` predates numbered steps and is rebuilt from the transcripts (its
index bookkeeping kept, see `Catalog._migrate`). A new catalog is created at the current layout
(`jacked.catalog.SCHEMA`) directly. Adding a step: append `(number, [sql, ...])` here and make
the same change to `SCHEMA`, so both roads end in the same columns in the same order
(`tests/test_catalog_migrations.py` checks it).
"""
from __future__ import annotations

BASELINE_VERSION = 6

MIGRATIONS: list[tuple[int, list[str]]] = [
    # 7: sessions of other coding agents (Codex CLI, Gemini CLI, opencode) beside Claude Code's.
    (7, ["ALTER TABLE sessions ADD COLUMN agent TEXT NOT NULL DEFAULT 'claude'"]),
    # 8: `sessions.user_name` was filled by some scans and read by none (the index keeps its own).
    (8, ["ALTER TABLE sessions DROP COLUMN user_name"]),
    # 9: a session's decisions and the user's feedback (turn_events), counted like its tool calls
    # (filled by the rescan that the parser version of the same release brings).
    (9, ["ALTER TABLE sessions ADD COLUMN decision_count INTEGER",
         "ALTER TABLE sessions ADD COLUMN feedback_count INTEGER"]),
    # 10: tombstones of forgotten sessions (`jacked forget`, `exclude`, `#nomem`): no scan writes them again.
    (10, ["CREATE TABLE IF NOT EXISTS forgotten (session_id TEXT PRIMARY KEY, reason TEXT, forgotten_at REAL, "
          "slug TEXT)"]),
    # 11: what search reads of ~150 points and their sessions, from one B-tree each (10,000 sessions):
    # `index_points` keyed by its point id alone (WITHOUT ROWID), not an id index then the table
    # (1.9 -> 1.2 ms for 150 ids), and the session keys from a covering index (1.3 -> 0.6 ms).
    (11, ["CREATE TABLE index_points_by_id (point_id TEXT PRIMARY KEY, session_id TEXT, content_type TEXT, "
          "content_hash TEXT, user_name TEXT) WITHOUT ROWID",
          "INSERT OR IGNORE INTO index_points_by_id SELECT point_id, session_id, content_type, content_hash, "
          "user_name FROM index_points WHERE point_id IS NOT NULL",
          "DROP TABLE index_points",
          "ALTER TABLE index_points_by_id RENAME TO index_points",
          "CREATE INDEX IF NOT EXISTS index_points_session ON index_points(session_id)",
          "CREATE INDEX IF NOT EXISTS sessions_rank_keys ON sessions(session_id, repo_name, started_at, ended_at, agent)"]),
    # 12: `copies_of` (every search asks it) read from an index rather than the wide turn rows
    # (0.34 -> 0.15 ms for 30 sessions at 10,000 sessions).
    (12, ["CREATE INDEX IF NOT EXISTS turns_repeats ON turns(session_id, repeat_of)"]),
    # 13: what each API response cost, whoever made it (issue 40): its `role` (main | subagent |
    # teammate | compaction), the main-chain turn that caused it, the cost the agent recorded
    # (opencode) and the one-hour cache writes (priced above five-minute ones). Compaction runs' responses and recorded costs arrive with the rescan that the
    # parser versions of the same release bring.
    (13, ["ALTER TABLE llm_calls ADD COLUMN role TEXT",
          "ALTER TABLE llm_calls ADD COLUMN parent_turn INTEGER",
          "ALTER TABLE llm_calls ADD COLUMN agent_cost_usd REAL",
          "ALTER TABLE llm_calls ADD COLUMN cache_creation_1h_tokens INTEGER",
          "UPDATE llm_calls SET role = 'main', parent_turn = turn_index WHERE owner = ''",
          "UPDATE llm_calls SET (role, parent_turn) = (SELECT COALESCE(a.role, 'subagent'), a.turn_index "
          "FROM subagents a WHERE a.session_id = llm_calls.session_id AND a.agent_id = llm_calls.owner) "
          "WHERE owner != ''",
          "UPDATE llm_calls SET role = 'subagent' WHERE role IS NULL"]),
    # 14: each turn's raw text, for the lexical leg and exact strings (filled by the rescan that the
    # parser versions of the same release bring).
    (14, ["CREATE TABLE IF NOT EXISTS turn_texts (session_id TEXT, turn_index INTEGER, text TEXT, "
          "PRIMARY KEY (session_id, turn_index))"]),
]

SCHEMA_VERSION = MIGRATIONS[-1][0]
