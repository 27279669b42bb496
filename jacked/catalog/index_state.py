"""What the catalog records of the vector index, per user (jacked.index.indexer): the points
each session has in the store (`index_points`), how far each session was indexed and whether
a run was interrupted (`index_sessions`), and the cache of dense vectors (`embed_cache`).

A session is marked dirty before the store is written and clean, with its points, after: a
crash in between leaves it dirty, and the next run asks the store what it really holds.
"""
from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

from jacked.catalog import Catalog


def index_progress(catalog: Catalog, user_name: str) -> list[tuple[str, int | None, int | None, int | None]]:
    """Every session's (session id, content sequence, indexed sequence, dirty) for `user_name`."""
    return [(r[0], r[1], r[2], r[3]) for r in catalog.db.execute(
        "SELECT s.session_id, s.content_seq, i.indexed_seq, i.dirty FROM sessions s "
        "LEFT JOIN index_sessions i ON i.session_id = s.session_id AND i.user_name = ?", (user_name,))]


def indexed_points(catalog: Catalog, session_id: str, user_name: str) -> tuple[dict[str, str], bool]:
    """(point id → content hash of the session's recorded points, whether its last run completed)."""
    rows = catalog.db.execute(
        "SELECT i.point_id, i.content_hash, s.dirty FROM index_points i LEFT JOIN index_sessions s "
        "ON s.session_id = i.session_id AND s.user_name = i.user_name "
        "WHERE i.session_id = ? AND i.user_name = ?", (session_id, user_name)).fetchall()
    dirty = catalog.db.execute("SELECT dirty FROM index_sessions WHERE session_id = ? AND user_name = ?",
                               (session_id, user_name)).fetchone()
    return {r[0]: r[1] for r in rows}, dirty is not None and not dirty[0]


def mark_dirty(catalog: Catalog, session_ids: Sequence[str], user_name: str) -> None:
    """Mark sessions as being indexed (in one transaction), before their points are written to the store."""
    with catalog.transaction():
        catalog.db.executemany(
            "INSERT INTO index_sessions (session_id, user_name, indexed_seq, dirty) VALUES (?, ?, 0, 1) "
            "ON CONFLICT(session_id, user_name) DO UPDATE SET dirty = 1",
            [(sid, user_name) for sid in session_ids])


def record_indexed(catalog: Catalog, user_name: str, deleted: Sequence[str],
                   written: Sequence[tuple[str, str, str, str]], indexed: Sequence[tuple[str, int]]) -> None:
    """In one transaction: drop `deleted` points, record `written` ones, mark `indexed` sessions clean."""
    with catalog.transaction():
        db = catalog.db
        db.executemany("DELETE FROM index_points WHERE point_id = ?", [(p,) for p in deleted])
        db.executemany("INSERT OR REPLACE INTO index_points VALUES (?, ?, ?, ?, ?)",
                       [(pid, sid, ctype, h, user_name) for pid, sid, ctype, h in written])
        db.executemany("UPDATE index_sessions SET indexed_seq = ?, dirty = 0 WHERE session_id = ? AND user_name = ?",
                       [(seq, sid, user_name) for sid, seq in indexed])


def forget_user(catalog: Catalog, user_name: str) -> None:
    """Drop every point and session record of `user_name` (in one transaction)."""
    with catalog.transaction():
        catalog.db.execute("DELETE FROM index_points WHERE user_name = ?", (user_name,))
        catalog.db.execute("DELETE FROM index_sessions WHERE user_name = ?", (user_name,))


def cached_vectors(catalog: Catalog, keys: Sequence[str]) -> dict[str, list[float]]:
    """The cached dense vectors of those `keys` that have one: key → vector."""
    out: dict[str, list[float]] = {}
    for start in range(0, len(keys), 500):  # SQLite caps the number of parameters
        part = list(keys[start:start + 500])
        for k, blob in catalog.db.execute(
                f"SELECT key, vector FROM embed_cache WHERE key IN ({','.join('?' * len(part))})", part):
            out[k] = array("f", blob).tolist()
    return out


def cache_vectors(catalog: Catalog, vectors: Iterable[tuple[str, Iterable[float]]]) -> None:
    """Store (key, vector) pairs in the vector cache as float32, replacing any, in one transaction."""
    with catalog.transaction():
        catalog.db.executemany("INSERT OR REPLACE INTO embed_cache VALUES (?, ?)",
                               [(k, array("f", v).tobytes()) for k, v in vectors])


def payload_version(catalog: Catalog, user_name: str) -> int:
    """Which payload upgrade this user's points have had (0: none yet)."""
    row = catalog.db.execute("SELECT value FROM meta WHERE key = ?", (f"payload_version:{user_name}",)).fetchone()
    return int(row[0]) if row else 0


def set_payload_version(catalog: Catalog, user_name: str, version: int) -> None:
    catalog.db.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = ?",
                       (f"payload_version:{user_name}", version, version))
