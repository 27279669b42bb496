"""Another program's SQLite database, opened so that jacked never writes to it (Cursor's
`state.vscdb`, Goose's `sessions.db`).

`mode=ro`: never written, no journal created. When the program holds a write lock, the file is
opened again with `immutable=1`: read as it is, without taking (or waiting for) any lock.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Self

LOCK_TIMEOUT_S = 2.0


@contextmanager
def sqlite_errors(path: Path) -> Iterator[None]:
    """SQLite's errors as `OSError` (a database locked, corrupt or replaced while read)."""
    try:
        yield
    except sqlite3.Error as e:
        raise OSError(f"{path}: {e}") from e


def open_read_only(path: Path, immutable: bool = False) -> tuple[sqlite3.Connection, bool]:
    """A connection that never writes to `path` and whether it had to be immutable (locked)."""
    uri = path.absolute().as_uri()
    try:
        if not immutable:
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=LOCK_TIMEOUT_S, check_same_thread=False)
            try:
                conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
                return conn, False
            except sqlite3.OperationalError as e:
                conn.close()
                if "locked" not in str(e) and "busy" not in str(e):
                    raise
        # the agent is writing: read the file as it is without taking (or waiting for) a lock
        conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return conn, True
    except sqlite3.DatabaseError as e:
        raise OSError(f"{path}: cannot open the database ({e})") from e


class ReadOnlyDb:
    """A database opened with `open_read_only`, closed on leaving a `with` block."""

    conn: sqlite3.Connection

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
