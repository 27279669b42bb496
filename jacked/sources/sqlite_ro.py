"""Another program's SQLite database, opened so that jacked never writes to it (Cursor's
`state.vscdb`, Goose's `sessions.db`).

`mode=ro`: never written, no journal created. When the program holds a write lock, the file is
opened again with `immutable=1`: read as it is, without taking (or waiting for) any lock.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

LOCK_TIMEOUT_S = 2.0


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
