"""opencode's SQLite store (`opencode.db` in newer releases), read-only.

The one module of jacked that runs SQL outside the catalog: these are opencode's tables, not
jacked's (`session`: one column per field; `message` and `part`: the record's JSON minus its
ids in a `data` column). A record that does not decode is counted, never fatal; a file that is
not an opencode database, or cannot be opened, raises `OSError` / `ValueError`.
"""
from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jacked.sources.opencode.store import RawSession, decode


SESSION_COLUMNS = ("id", "project_id", "parent_id", "slug", "directory", "title", "version", "agent",
                   "time_created", "time_updated")


@contextmanager
def _errors(path: Path) -> Iterator[None]:
    """SQLite's errors as `OSError` (a database locked, corrupt or replaced while read)."""
    try:
        yield
    except sqlite3.Error as e:
        raise OSError(f"{path}: {e}") from e


class DbStore:
    """`opencode.db`: tables session, message and part, opened read-only (opencode may be
    writing: WAL lets it go on while we read one consistent snapshot)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = self._open(path)
        try:
            with _errors(path):
                tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                missing = {"session", "message", "part"} - tables
                if not missing and "id" not in self._columns("session"):
                    missing = {"session"}
                if missing:
                    raise ValueError(f"{path}: not an opencode database (no table {', '.join(sorted(missing))})")
                self.columns = {t: self._columns(t) for t in ("session", "message", "part", "project") if t in tables}
        except BaseException:
            self.conn.close()
            raise

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=5,
                                   check_same_thread=False)
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.DatabaseError as e:  # not a database, locked, unreadable
            raise OSError(f"{path}: cannot open the database ({e})") from e
        return conn

    def _columns(self, table: str) -> set[str]:
        return {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> DbStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _session_rows(self, where: str = "", args: tuple[Any, ...] = ()) -> Iterator[dict[str, Any]]:
        # The columns a session's info needs, of those this schema has (not `summary_diffs`: every
        # file's diff, read for every session at every scan otherwise).
        columns = ", ".join(c for c in SESSION_COLUMNS if c in self.columns["session"])
        cur = self.conn.execute(f"SELECT {columns} FROM session {where}", args)
        names = [d[0] for d in cur.description]
        for row in cur:
            yield dict(zip(names, row))

    def sessions(self) -> dict[str, dict[str, Any]]:
        """{session id: its info, in the JSON store's shape}."""
        with _errors(self.path):
            return {str(row["id"]): info_of_row(row) for row in self._session_rows() if row.get("id")}

    def counts(self) -> dict[str, tuple[int, Any, int, Any]]:
        """{session id: (messages, their newest time_updated, parts, theirs)}: with the session's
        own time_updated, what tells that a session changed without reading it."""
        with _errors(self.path):
            return self._counts()

    def _counts(self) -> dict[str, tuple[int, Any, int, Any]]:
        out: dict[str, list[Any]] = {}
        for sid, n, newest in self.conn.execute(
                "SELECT session_id, COUNT(*), MAX(time_updated) FROM message GROUP BY session_id"):
            out[str(sid)] = [n, newest, 0, None]
        if "session_id" in self.columns["part"]:
            query = "SELECT session_id, COUNT(*), MAX(time_updated) FROM part GROUP BY session_id"
        else:  # an early schema: parts reach their session through their message
            query = ("SELECT m.session_id, COUNT(*), MAX(p.time_updated) FROM part p "
                     "JOIN message m ON m.id = p.message_id GROUP BY m.session_id")
        for sid, n, newest in self.conn.execute(query):
            entry = out.setdefault(str(sid), [0, None, 0, None])
            entry[2], entry[3] = n, newest
        return {k: (v[0], v[1], v[2], v[3]) for k, v in out.items()}

    def project(self, project_id: Any) -> dict[str, Any]:
        if "project" not in self.columns or not isinstance(project_id, str):
            return {}
        with _errors(self.path):
            cur = self.conn.execute("SELECT * FROM project WHERE id = ?", (project_id,))
            row = cur.fetchone()
        return dict(zip([d[0] for d in cur.description], row)) if row else {}

    def read(self, session_id: str) -> RawSession:
        """One session, read in one snapshot of the database."""
        with _errors(self.path):
            return self._read(session_id)

    def _read(self, session_id: str) -> RawSession:
        location = f"{self.path.absolute()}#{session_id}"
        self.conn.execute("BEGIN")
        try:
            rows = list(self._session_rows("WHERE id = ?", (session_id,)))
            if not rows:
                raise ValueError(f"{location}: no such session in the database")
            raw = RawSession(session_id, location, info=info_of_row(rows[0]), records=1)
            raw.project = self.project(raw.info.get("projectID"))
            messages: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
            for mid, data in self.conn.execute(
                    "SELECT id, data FROM message WHERE session_id = ? ORDER BY id", (session_id,)):
                raw.records += 1
                message = decode(data)
                if message is None:
                    raw.malformed += 1
                    continue
                message["id"] = mid
                messages[str(mid)] = (message, [])
            if "session_id" in self.columns["part"]:
                parts = self.conn.execute(
                    "SELECT id, message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id", (session_id,))
            else:
                parts = self.conn.execute(
                    "SELECT p.id, p.message_id, p.data FROM part p JOIN message m ON m.id = p.message_id "
                    "WHERE m.session_id = ? ORDER BY p.message_id, p.id", (session_id,))
            for pid, mid, data in parts:
                raw.records += 1
                part = decode(data)
                if part is None:
                    raw.malformed += 1
                    continue
                owner = messages.get(str(mid))
                if owner is None:
                    raw.malformed += 1  # a part whose message did not decode or is gone
                    continue
                part["id"] = pid
                owner[1].append(part)
            raw.messages = list(messages.values())
        finally:
            self.conn.rollback()
        return raw


def info_of_row(row: dict[str, Any]) -> dict[str, Any]:
    """A `session` row in the shape of a JSON session file."""
    info: dict[str, Any] = {
        "id": row.get("id"), "projectID": row.get("project_id"), "parentID": row.get("parent_id"),
        "slug": row.get("slug"), "directory": row.get("directory"), "title": row.get("title"),
        "version": row.get("version"),
        "time": {"created": row.get("time_created"), "updated": row.get("time_updated")},
    }
    if isinstance(row.get("agent"), str):
        info["agent"] = row["agent"]
    return info


def databases(root: Path) -> list[Path]:
    """opencode's databases under its data folder: `opencode.db` first, then other channels'."""
    try:
        with os.scandir(root) as it:
            names = sorted(e.name for e in it if e.is_file() and e.name.endswith(".db")
                           and (e.name == "opencode.db" or e.name.startswith("opencode-")))
    except (FileNotFoundError, NotADirectoryError):
        return []
    names.sort(key=lambda n: n != "opencode.db")
    return [root / n for n in names]
