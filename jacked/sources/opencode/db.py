"""opencode's SQLite store (`opencode.db` in newer releases), read-only.

The one module of jacked that runs SQL outside the catalog: these are opencode's tables, not
jacked's. Two layouts, often in one file:

* 1.x: `session` (one column per field), `message` and `part` (the record's JSON minus its ids
  in a `data` column);
* 2.x: `session_v2` (one column per field, the 1.x ones among them) and `session_message` (one
  row per conversation record: `type`, `seq`, the record's JSON in `data`). Development builds
  before 2.0 kept these sessions in `session` itself, beside `session_message`; 2.x keeps the
  1.x tables with their sessions.

A session with `session_message` rows is read from them (a copy of it left in the 1.x tables is
not read); any other from `message`/`part`. A record that does not decode is counted, never
fatal; a file that is not an opencode database, or cannot be opened, raises `OSError` /
`ValueError`.
"""
from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jacked.sources.opencode.store import RawSession, decode
from jacked.sources.sqlite_ro import sqlite_errors as _errors


SESSION_COLUMNS = ("id", "project_id", "parent_id", "slug", "directory", "title", "version", "agent",
                   "time_created", "time_updated")
# Where sessions are, in order of precedence: 2.x's table, then 1.x's (which pre-2.0 builds also
# used for the sessions of `session_message`).
SESSION_TABLES = ("session_v2", "session")
ENTRY_COLUMNS = {"session_id", "type", "seq", "data"}


class DbStore:
    """`opencode.db`, opened read-only (opencode may be writing: WAL lets it go on while we read
    one consistent snapshot): the 1.x tables session, message and part, the 2.x tables
    session_v2 and session_message, or both."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = self._open(path)
        try:
            with _errors(path):
                tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                self.columns = {t: self._columns(t) for t in (*SESSION_TABLES, "message", "part", "project",
                                                               "session_message") if t in tables}
                self.session_tables = [t for t in SESSION_TABLES if "id" in self.columns.get(t, ())]
                self.v1 = "session" in self.session_tables and "message" in tables and "part" in tables
                self.v2 = bool(self.session_tables) and ENTRY_COLUMNS <= self.columns.get("session_message", set())
                if not self.v1 and not self.v2:
                    raise ValueError(f"{path}: not an opencode database (no tables session, message and part, "
                                     "nor session_v2 and session_message)")
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

    def _session_rows(self, table: str, where: str = "", args: tuple[Any, ...] = ()) -> Iterator[dict[str, Any]]:
        # The columns a session's info needs, of those this schema has (not `summary_diffs`: every
        # file's diff, read for every session at every scan otherwise).
        columns = ", ".join(c for c in SESSION_COLUMNS if c in self.columns[table])
        cur = self.conn.execute(f"SELECT {columns} FROM {table} {where}", args)
        names = [d[0] for d in cur.description]
        for row in cur:
            yield dict(zip(names, row))

    def sessions(self) -> dict[str, dict[str, Any]]:
        """{session id: its info, in the JSON store's shape} (a session in both tables: its 2.x row)."""
        with _errors(self.path):
            out: dict[str, dict[str, Any]] = {}
            for table in self.session_tables:
                for row in self._session_rows(table):
                    if row.get("id"):
                        out.setdefault(str(row["id"]), info_of_row(row))
            return out

    def counts(self) -> dict[str, tuple[int, Any, int, Any]]:
        """{session id: (messages, their newest time_updated, parts, theirs)}: with the session's
        own time_updated, what tells that a session changed without reading it. A session with
        2.x records counts those (and no parts)."""
        with _errors(self.path):
            return self._counts()

    def _counts(self) -> dict[str, tuple[int, Any, int, Any]]:
        out: dict[str, list[Any]] = {}
        if self.v1:
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
        if self.v2:
            newest = "MAX(time_updated)" if "time_updated" in self.columns["session_message"] else "MAX(seq)"
            for sid, n, last in self.conn.execute(
                    f"SELECT session_id, COUNT(*), {newest} FROM session_message GROUP BY session_id"):
                out[str(sid)] = [n, last, 0, None]
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
            row = next((r for t in self.session_tables for r in self._session_rows(t, "WHERE id = ?", (session_id,))),
                       None)
            if row is None:
                raise ValueError(f"{location}: no such session in the database")
            raw = RawSession(session_id, location, info=info_of_row(row), records=1)
            raw.project = self.project(raw.info.get("projectID"))
            if self.v2 and self.conn.execute("SELECT 1 FROM session_message WHERE session_id = ? LIMIT 1",
                                             (session_id,)).fetchone():
                self._read_entries(raw)
            elif self.v1:
                self._read_messages(raw)
        finally:
            self.conn.rollback()
        return raw

    def _read_entries(self, raw: RawSession) -> None:
        """A 2.x session: its `session_message` rows in `seq` order."""
        created = "time_created" if "time_created" in self.columns["session_message"] else "NULL"
        for mid, kind, at, data in self.conn.execute(
                f"SELECT id, type, {created}, data FROM session_message WHERE session_id = ? ORDER BY seq, id",
                (raw.session_id,)):
            raw.records += 1
            entry = decode(data)
            if entry is None:
                raw.malformed += 1
                continue
            entry["id"], entry["type"] = mid, kind
            if not isinstance(entry.get("time"), dict):
                entry["time"] = {"created": at}
            raw.entries.append(entry)

    def _read_messages(self, raw: RawSession) -> None:
        """A 1.x session: its messages with their parts."""
        session_id = raw.session_id
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
