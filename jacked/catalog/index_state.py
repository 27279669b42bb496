"""What the catalog records of the vector index, per user (jacked.index.indexer): the points
each session has in the store (`index_points`), how far each session was indexed and whether
a run was interrupted (`index_sessions`), and the cache of dense vectors (`embed_cache`).

A session is marked dirty before the store is written and clean, with its points, after: a
crash in between leaves it dirty, and the next run asks the store what it really holds.

A backfill writes in two passes: every point first with its BM25 vector only (its content hash
recorded with the `PENDING` mark when its dense vector is still to come; the session's `dirty`
is then `LEXICAL`), the dense vectors after (`record_dense` drops the marks, and the session is
clean once it has none left).
"""
from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

from jacked.catalog import Catalog, rows_in
from jacked.catalog.forget_queries import meta_flag, set_meta_flag

#: `index_sessions.dirty` of a session whose points are all written, some without their dense vector yet.
LEXICAL = 2
#: Prefix of a recorded content hash whose point still waits for its dense vector.
PENDING = "-"


def index_progress(catalog: Catalog,
                   user_name: str) -> list[tuple[str, int | None, int | None, int | None, bool]]:
    """Every session's (session id, content sequence, indexed sequence, dirty, listed) for
    `user_name`; not listed: a file that holds no session (empty, summaries only)."""
    return [(r[0], r[1], r[2], r[3], bool(r[4])) for r in catalog.db.execute(
        "SELECT s.session_id, s.content_seq, i.indexed_seq, i.dirty, s.has_main FROM sessions s "
        "LEFT JOIN index_sessions i ON i.session_id = s.session_id AND i.user_name = ?", (user_name,))]


def indexed_points(catalog: Catalog, session_id: str, user_name: str) -> tuple[dict[str, str], bool | None]:
    """(point id → content hash of the session's recorded points, whether its last run completed:
    None where no run was ever recorded)."""
    rows = catalog.db.execute(
        "SELECT i.point_id, i.content_hash, s.dirty FROM index_points i LEFT JOIN index_sessions s "
        "ON s.session_id = i.session_id AND s.user_name = i.user_name "
        "WHERE i.session_id = ? AND i.user_name = ?", (session_id, user_name)).fetchall()
    dirty = catalog.db.execute("SELECT dirty FROM index_sessions WHERE session_id = ? AND user_name = ?",
                               (session_id, user_name)).fetchone()
    return {r[0]: r[1] for r in rows}, None if dirty is None else dirty[0] in (0, LEXICAL)


def mark_dirty(catalog: Catalog, session_ids: Sequence[str], user_name: str) -> None:
    """Mark sessions as being indexed (in one transaction), before their points are written to the store."""
    with catalog.transaction():
        catalog.db.executemany(
            "INSERT INTO index_sessions (session_id, user_name, indexed_seq, dirty) VALUES (?, ?, 0, 1) "
            "ON CONFLICT(session_id, user_name) DO UPDATE SET dirty = 1",
            [(sid, user_name) for sid in session_ids])


def record_indexed(catalog: Catalog, user_name: str, deleted: Sequence[str],
                   written: Sequence[tuple[str, str, str, str]], indexed: Sequence[tuple[str, int]],
                   lexical: Sequence[str] = ()) -> None:
    """In one transaction: drop `deleted` points, record `written` ones, mark `indexed` sessions clean
    (those in `lexical`: written, with dense vectors still to come)."""
    waiting = set(lexical)
    with catalog.transaction():
        db = catalog.db
        db.executemany("DELETE FROM index_points WHERE point_id = ?", [(p,) for p in deleted])
        db.executemany("INSERT OR REPLACE INTO index_points VALUES (?, ?, ?, ?, ?)",
                       [(pid, sid, ctype, h, user_name) for pid, sid, ctype, h in written])
        db.executemany("UPDATE index_sessions SET indexed_seq = ?, dirty = ? WHERE session_id = ? AND user_name = ?",
                       [(seq, LEXICAL if sid in waiting else 0, sid, user_name) for sid, seq in indexed])


def dense_pending_sessions(catalog: Catalog, user_name: str) -> list[str]:
    """Sessions whose points wait for dense vectors, newest first (by their last activity)."""
    return [r[0] for r in catalog.db.execute(
        "SELECT i.session_id FROM index_sessions i LEFT JOIN sessions s ON s.session_id = i.session_id "
        "WHERE i.user_name = ? AND i.dirty = ? ORDER BY COALESCE(s.ended_at, s.started_at, '') DESC, i.session_id",
        (user_name, LEXICAL))]


def pending_points(catalog: Catalog, session_ids: Sequence[str], user_name: str) -> list[tuple[str, str, str]]:
    """(point id, session id, content hash) of the points of `session_ids` that wait for a dense
    vector, in the sessions' order."""
    order = {sid: i for i, sid in enumerate(session_ids)}
    out = [(r[0], r[1], r[2][len(PENDING):]) for r in rows_in(
        catalog.db, "SELECT point_id, session_id, content_hash FROM index_points WHERE session_id IN (?*) "
                    "AND user_name = ? AND content_hash LIKE ? ORDER BY point_id", session_ids,
        after=[user_name, PENDING + "%"])]
    out.sort(key=lambda r: order.get(r[1], 0))
    return out


def record_dense(catalog: Catalog, user_name: str, filled: Sequence[tuple[str, str]], sessions: Sequence[str],
                 broken: Sequence[str] = ()) -> None:
    """In one transaction: `filled` (point id, content hash) points have their dense vector now; of
    `sessions`, those with no point left waiting are clean; `broken` ones (a waiting point the store
    does not hold as recorded) are marked dirty, so the next run asks the store and repairs them."""
    with catalog.transaction():
        db = catalog.db
        db.executemany("UPDATE index_points SET content_hash = ? WHERE point_id = ?", [(h, pid) for pid, h in filled])
        db.executemany("UPDATE index_sessions SET dirty = 1 WHERE session_id = ? AND user_name = ?",
                       [(sid, user_name) for sid in broken])
        db.executemany(
            "UPDATE index_sessions SET dirty = 0 WHERE session_id = ? AND user_name = ? AND dirty = ? AND NOT EXISTS "
            "(SELECT 1 FROM index_points p WHERE p.session_id = ? AND p.user_name = ? AND p.content_hash LIKE ?)",
            [(sid, user_name, LEXICAL, sid, user_name, PENDING + "%") for sid in sessions])


def index_counts(catalog: Catalog, user_name: str) -> dict[str, int]:
    """How far `user_name`'s index is: listed sessions, those whose points are all written (lexical
    pass done), those complete (dense vectors too), and points still waiting for a dense vector."""
    sessions, lexical, complete = catalog.db.execute(
        "SELECT COUNT(*), COALESCE(SUM(i.dirty IN (0, ?) AND i.indexed_seq = s.content_seq), 0), "
        "COALESCE(SUM(i.dirty = 0 AND i.indexed_seq = s.content_seq), 0) FROM sessions s "
        "LEFT JOIN index_sessions i ON i.session_id = s.session_id AND i.user_name = ? WHERE s.has_main = 1",
        (LEXICAL, user_name)).fetchone()
    pending = catalog.db.execute("SELECT COUNT(*) FROM index_points WHERE user_name = ? AND content_hash LIKE ?",
                                 (user_name, PENDING + "%")).fetchone()[0]
    return {"sessions": int(sessions), "lexical": int(lexical), "complete": int(complete),
            "points_pending_dense": int(pending)}


def forget_user(catalog: Catalog, user_name: str) -> None:
    """Drop every point and session record of `user_name` (in one transaction)."""
    with catalog.transaction():
        catalog.db.execute("DELETE FROM index_points WHERE user_name = ?", (user_name,))
        catalog.db.execute("DELETE FROM index_sessions WHERE user_name = ?", (user_name,))


def cached_vectors(catalog: Catalog, keys: Sequence[str]) -> dict[str, list[float]]:
    """The cached dense vectors of those `keys` that have one: key → vector."""
    return {k: array("f", blob).tolist()
            for k, blob in rows_in(catalog.db, "SELECT key, vector FROM embed_cache WHERE key IN (?*)", keys)}


def cache_vectors(catalog: Catalog, vectors: Iterable[tuple[str, Iterable[float]]]) -> None:
    """Store (key, vector) pairs in the vector cache as float32, replacing any, in one transaction."""
    with catalog.transaction():
        catalog.db.executemany("INSERT OR REPLACE INTO embed_cache VALUES (?, ?)",
                               [(k, array("f", v).tobytes()) for k, v in vectors])


def extract_version(catalog: Catalog, user_name: str) -> int:
    """Which extraction version this user's points were written with (0: before it was recorded)."""
    return meta_flag(catalog, f"extract_version:{user_name}")


def reextract_all(catalog: Catalog, user_name: str, version: int) -> None:
    """Every session of `user_name` to be extracted and indexed again (its points are rewritten where
    their content hash changed), and `version` recorded, in one transaction."""
    with catalog.transaction():
        catalog.db.execute("UPDATE index_sessions SET indexed_seq = -1 WHERE user_name = ?", (user_name,))
        set_meta_flag(catalog, f"extract_version:{user_name}", version)


def payload_version(catalog: Catalog, user_name: str) -> int:
    """Which payload upgrade this user's points have had (0: none yet)."""
    return meta_flag(catalog, f"payload_version:{user_name}")


def set_payload_version(catalog: Catalog, user_name: str, version: int) -> None:
    set_meta_flag(catalog, f"payload_version:{user_name}", version)


def indexed_session_ids(catalog: Catalog, user_name: str) -> set[str]:
    """Sessions `user_name` has (or had, before a crash) points of: any index record at all."""
    return {r[0] for r in catalog.db.execute("SELECT session_id FROM index_sessions WHERE user_name = ?",
                                             (user_name,))}


def _glance_key(user_name: str) -> str:
    return f"glance_pending:{user_name}"


def glance_pending(catalog: Catalog, user_name: str) -> bool:
    """Whether glance points of `user_name` may be in the store (jacked.index.glance)."""
    return bool(meta_flag(catalog, _glance_key(user_name)))


def set_glance_pending(catalog: Catalog, user_name: str, pending: bool) -> None:
    set_meta_flag(catalog, _glance_key(user_name), int(pending))
