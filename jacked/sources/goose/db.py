"""Goose's `sessions.db`, read-only: the one place jacked runs SQL on Goose's tables (not jacked's
catalog).

Goose (block/goose, `crates/goose/src/session/session_manager.rs`, schema versions 1-5 and later
ones that add columns) keeps `sessions` (`id`, `name`/`description`, `session_type`,
`working_dir`, `created_at`, `updated_at`, token totals, `provider_name` and `model_config_json`
in newer releases) and `messages` (`session_id`, `role`, `content_json`, `created_timestamp`
in epoch seconds, `metadata_json`), read in insertion order.

Goose keeps the database open while it runs: it is opened with `mode=ro` (never written, no
journal created) and, when Goose holds a write lock, again with `immutable=1` (read without
taking any lock). A file that is not a Goose database raises `OSError`.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jacked.sources.sqlite_ro import ReadOnlyDb, open_read_only, sqlite_errors as _errors

MAX_ROW_BYTES = 32 << 20  # a message larger than this (a pasted dump) is skipped and counted
SESSION_COLUMNS = ("id", "name", "description", "session_type", "working_dir", "created_at", "updated_at",
                   "input_tokens", "output_tokens", "accumulated_input_tokens", "accumulated_output_tokens",
                   "provider_name", "model_config_json")


class GooseDb(ReadOnlyDb):
    """One `sessions.db`, opened read-only (immutable when Goose holds it locked)."""

    def __init__(self, path: Path, immutable: bool = False) -> None:
        self.path = path
        self.conn, self.immutable = open_read_only(path, immutable)
        try:
            with _errors(path):
                tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                if not {"sessions", "messages"} <= tables:
                    raise OSError(f"{path}: not a Goose sessions database (no sessions and messages tables)")
                self.columns = {r[1] for r in self.conn.execute("PRAGMA table_info(sessions)")}
        except BaseException:
            self.conn.close()
            raise

    def stats(self) -> dict[str, tuple[Any, ...]]:
        """{session id: (updated_at, message count, last message row id, bytes)}: what a fingerprint needs."""
        with _errors(self.path):
            rows = self.conn.execute(
                "SELECT s.id, s.updated_at, COUNT(m.id), MAX(m.id), SUM(length(m.content_json)) "
                "FROM sessions s LEFT JOIN messages m ON m.session_id = s.id GROUP BY s.id ORDER BY s.id").fetchall()
        return {str(r[0]): tuple(r[1:]) for r in rows if r[0] is not None}

    def session(self, session_id: str) -> dict[str, Any] | None:
        columns = ", ".join(c for c in SESSION_COLUMNS if c in self.columns)
        with _errors(self.path):
            cur = self.conn.execute(f"SELECT {columns} FROM sessions WHERE id = ?", (session_id,))
            row = cur.fetchone()
        return dict(zip([d[0] for d in cur.description], row)) if row is not None else None

    def messages(self, session_id: str) -> Iterator[tuple[Any, Any, Any, Any]]:
        """(role, content_json, created_timestamp, metadata_json) in the order Goose wrote them;
        a row over `MAX_ROW_BYTES` comes with its content None."""
        with _errors(self.path):
            rows = self.conn.execute(
                "SELECT role, CASE WHEN length(content_json) > ? THEN NULL ELSE content_json END, "
                "created_timestamp, metadata_json FROM messages WHERE session_id = ? ORDER BY id",
                (MAX_ROW_BYTES, session_id)).fetchall()
        yield from rows
