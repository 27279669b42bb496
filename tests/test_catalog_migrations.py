"""Numbered catalog migrations (jacked.catalog.migrations): an existing catalog is brought to the
current layout in place, keeping its rows, and ends with the same columns as a new one."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from jacked.catalog import SCHEMA, Catalog
from jacked.catalog.migrations import BASELINE_VERSION, SCHEMA_VERSION

# The `sessions` table as version 6 (the first numbered layout) created it: a fixed fact.
SESSIONS_V6 = """
CREATE TABLE sessions (
    session_id TEXT PRIMARY KEY, file TEXT, project_dir TEXT, cwd TEXT, repo_name TEXT, git_branch TEXT,
    slug TEXT, version_first TEXT, version_last TEXT, started_at TEXT, ended_at TEXT, turn_count INTEGER,
    title TEXT, first_prompt TEXT, plan TEXT, plan_source TEXT, models TEXT, tool_call_count INTEGER,
    tool_error_count INTEGER, input_tokens INTEGER, output_tokens INTEGER, lines INTEGER,
    lines_skipped INTEGER, subagent_count INTEGER, has_main INTEGER, updated_at REAL,
    content_seq INTEGER, user_name TEXT, own_title TEXT, source TEXT, tool_results_missing INTEGER
)"""
# `index_points` before version 11: a rowid table beside its id index.
INDEX_POINTS_V6 = """
CREATE TABLE index_points (
    point_id TEXT PRIMARY KEY, session_id TEXT, content_type TEXT, content_hash TEXT, user_name TEXT
)"""

# `llm_calls` before version 13: no role, causing turn, recorded cost or one-hour cache writes.
LLM_CALLS_V6 = """
CREATE TABLE llm_calls (
    session_id TEXT, owner TEXT, turn_index INTEGER, ord INTEGER, message_id TEXT, model TEXT, timestamp TEXT,
    input_tokens INTEGER, output_tokens INTEGER, cache_read_tokens INTEGER, cache_creation_tokens INTEGER,
    tool_calls INTEGER, repeated INTEGER
)"""


def _columns(path: Path, table: str) -> list[str]:
    db = sqlite3.connect(path)
    try:
        return [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
    finally:
        db.close()


def _v6_catalog(path: Path) -> None:
    db = sqlite3.connect(path)
    db.executescript(SCHEMA.replace("CREATE INDEX IF NOT EXISTS sessions_agent ON sessions(agent);", ""))
    db.execute("DROP TABLE sessions")
    db.execute(SESSIONS_V6)
    db.execute("DROP TABLE index_points")
    db.execute(INDEX_POINTS_V6)
    db.execute("INSERT INTO index_points VALUES ('p1', 's1', 'user_prompt', 'h1', 'ada')")
    db.execute("DROP TABLE llm_calls")
    db.execute(LLM_CALLS_V6)
    db.execute("INSERT INTO subagents (session_id, ord, agent_id, turn_index, role) VALUES ('s1', 0, 'a1', 1, 'teammate')")
    db.executemany("INSERT INTO llm_calls VALUES ('s1', ?, ?, 0, ?, 'claude-sonnet-4-5', NULL, 10, 20, 30, 40, 0, 0)",
                   [("", 1, "m1"), ("a1", 2, "m2"), ("gone", 1, "m3")])
    db.execute("INSERT INTO sessions (session_id, repo_name, turn_count, has_main, user_name) "
               "VALUES ('s1', 'jacked', 3, 1, 'ada')")
    db.execute("INSERT INTO turns (session_id, turn_index, prompt) VALUES ('s1', 1, 'fix the build')")
    db.execute(f"PRAGMA user_version={BASELINE_VERSION}")
    db.commit()
    db.close()


def test_an_old_catalog_is_migrated_in_place_to_the_layout_of_a_new_one(tmp_path: Path) -> None:
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    _v6_catalog(old)
    Catalog(old).close()
    Catalog(new).close()
    assert _columns(old, "sessions") == _columns(new, "sessions")
    assert _columns(old, "llm_calls") == _columns(new, "llm_calls")
    assert "agent" in _columns(old, "sessions") and "user_name" not in _columns(old, "sessions")
    cat = Catalog(old)
    try:
        assert cat.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        # each API response says whose it is and which main-chain turn caused it (a subagent: its call's)
        assert [tuple(r) for r in cat.db.execute("SELECT message_id, role, parent_turn FROM llm_calls "
                                                 "ORDER BY message_id")] == [
            ("m1", "main", 1), ("m2", "teammate", 1), ("m3", "subagent", None)]
        # the rows stay: nothing to rescan, and every session before version 7 was Claude Code's
        row = cat.db.execute("SELECT session_id, turn_count, agent FROM sessions").fetchone()
        assert tuple(row) == ("s1", 3, "claude")
        assert cat.db.execute("SELECT prompt FROM turns").fetchone()[0] == "fix the build"
        # the index bookkeeping too, now keyed by point id alone, with its session index
        assert tuple(cat.point_rows(["p1"])["p1"].values())[:3] == ("s1", "h1", "ada")
        sql = cat.db.execute("SELECT sql FROM sqlite_master WHERE name = 'index_points'").fetchone()[0]
        assert sql.rstrip().endswith("WITHOUT ROWID")
        for index in ("index_points_session", "sessions_rank_keys", "turns_repeats"):
            assert cat.db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (index,)).fetchone(), index
    finally:
        cat.close()


def test_a_catalog_older_than_the_numbered_steps_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "ancient.db"
    _v6_catalog(path)
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={BASELINE_VERSION - 1}")
    db.commit()
    db.close()
    cat = Catalog(path)
    try:
        assert cat.db.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 0  # rebuilt by the next scan
    finally:
        cat.close()
    Catalog(tmp_path / "fresh.db").close()
    assert _columns(path, "sessions") == _columns(tmp_path / "fresh.db", "sessions")
