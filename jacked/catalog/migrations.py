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
]

SCHEMA_VERSION = MIGRATIONS[-1][0]
