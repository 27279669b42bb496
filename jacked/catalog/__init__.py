"""The SQLite catalog (`JACKED_HOME/catalog.db`): sessions, turns, invocations, subagents,
distilled texts, and per-file scan state for incremental work.

Everything here is derived from transcripts and can be rebuilt; texts are stored redacted.
A session's rows are replaced whole, together with its files' scan state, in one
transaction, so a crash never leaves a session half-written.
"""
from __future__ import annotations

import pickle
import sqlite3
import time
import urllib.parse
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from jacked.util.fs import make_private, read_only_dir
from jacked.util.lookup import Lookup

from jacked.sources.model import LlmCall, Session, Turn

from jacked.catalog.migrations import BASELINE_VERSION, MIGRATIONS, SCHEMA_VERSION

SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, session_id TEXT, kind TEXT, layout TEXT, size INTEGER, mtime_ns INTEGER,
    offset INTEGER, head_hash TEXT, tail_hash TEXT, lines INTEGER, malformed INTEGER,
    pending_malformed INTEGER, parent_id TEXT, state BLOB, parser_version INTEGER, scanned_at REAL
);
CREATE INDEX IF NOT EXISTS files_session ON files(session_id);
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY, file TEXT, project_dir TEXT, cwd TEXT, repo_name TEXT, git_branch TEXT,
    slug TEXT, version_first TEXT, version_last TEXT, started_at TEXT, ended_at TEXT, turn_count INTEGER,
    title TEXT, first_prompt TEXT, plan TEXT, plan_source TEXT, models TEXT, tool_call_count INTEGER,
    tool_error_count INTEGER, input_tokens INTEGER, output_tokens INTEGER, lines INTEGER,
    lines_skipped INTEGER, subagent_count INTEGER, has_main INTEGER, updated_at REAL,
    content_seq INTEGER, own_title TEXT,
    source TEXT,  -- where the transcript is: transcript (on disk) | archive (only archived) | history (prompts only)
    tool_results_missing INTEGER,  -- results referring to a 2.1.x tool-results/ file that is not there
    agent TEXT NOT NULL DEFAULT 'claude',  -- the coding agent that wrote it (jacked.sources.registry)
    decision_count INTEGER, feedback_count INTEGER  -- decision / feedback turn_events, repeated turns left out
);
CREATE INDEX IF NOT EXISTS sessions_agent ON sessions(agent);
CREATE INDEX IF NOT EXISTS sessions_repo ON sessions(repo_name);
-- what search ranks a point's session by, read from this index alone (`point_rows`): a session
-- row is wide (titles, plans, prompts); reading ~150 of them took twice as long
CREATE INDEX IF NOT EXISTS sessions_rank_keys ON sessions(session_id, repo_name, started_at, ended_at, agent);
CREATE INDEX IF NOT EXISTS sessions_started ON sessions(started_at);
CREATE TABLE IF NOT EXISTS turns (
    session_id TEXT, turn_index INTEGER, prompt TEXT, started_at TEXT, ended_at TEXT, duration_ms INTEGER,
    duration_source TEXT, is_slash_command INTEGER, compacted INTEGER, interrupted INTEGER,
    assistant_text TEXT, models TEXT, metrics TEXT, tool_call_count INTEGER, tool_error_count INTEGER,
    lines_added INTEGER, lines_removed INTEGER, input_tokens INTEGER, output_tokens INTEGER, started_by TEXT,
    prompt_uuid TEXT, repeat_of TEXT,
    PRIMARY KEY (session_id, turn_index)
);
-- a resumed or forked session repeats its parent's turns (same line uuids): counted once
CREATE INDEX IF NOT EXISTS turns_prompt_uuid ON turns(prompt_uuid) WHERE prompt_uuid IS NOT NULL;
-- which sessions only repeat another (`copies_of`, asked by every search), without the wide turn rows
CREATE INDEX IF NOT EXISTS turns_repeats ON turns(session_id, repeat_of);
CREATE TABLE IF NOT EXISTS invocations (
    session_id TEXT, owner TEXT, turn_index INTEGER, ord INTEGER, tool_name TEXT, tool_use_id TEXT,
    sequence INTEGER, parallel_group INTEGER, is_error INTEGER, file_path TEXT, command TEXT,
    description TEXT, input_brief TEXT, result_brief TEXT, timestamp TEXT, result_timestamp TEXT,
    lines_added INTEGER, lines_removed INTEGER, file_created INTEGER, agent_id TEXT,
    diff TEXT, before_hash TEXT, after_hash TEXT, repeated INTEGER
);
CREATE INDEX IF NOT EXISTS invocations_session ON invocations(session_id, owner, turn_index, ord);
CREATE INDEX IF NOT EXISTS invocations_tool ON invocations(tool_name);
CREATE INDEX IF NOT EXISTS invocations_file ON invocations(file_path) WHERE file_path IS NOT NULL;
CREATE TABLE IF NOT EXISTS llm_calls (
    session_id TEXT, owner TEXT, turn_index INTEGER, ord INTEGER, message_id TEXT, model TEXT, timestamp TEXT,
    input_tokens INTEGER, output_tokens INTEGER, cache_read_tokens INTEGER, cache_creation_tokens INTEGER,
    tool_calls INTEGER, repeated INTEGER,
    role TEXT,  -- whose response it is: main | subagent | teammate | compaction
    parent_turn INTEGER,  -- the main-chain turn that caused it (a subagent's: its Task call's turn)
    agent_cost_usd REAL,  -- the cost the agent recorded itself (opencode), else NULL
    cache_creation_1h_tokens INTEGER  -- of cache_creation_tokens, the one-hour writes (priced higher)
);
CREATE INDEX IF NOT EXISTS llm_calls_session ON llm_calls(session_id, owner, turn_index, ord);
-- a turn's raw text (assistant texts, tool inputs and results; redacted, capped): searched by its words only
CREATE TABLE IF NOT EXISTS turn_texts (session_id TEXT, turn_index INTEGER, text TEXT, PRIMARY KEY (session_id, turn_index));
CREATE TABLE IF NOT EXISTS turn_events (
    session_id TEXT, turn_index INTEGER, ord INTEGER, type TEXT, timestamp TEXT, data TEXT
);
CREATE INDEX IF NOT EXISTS turn_events_session ON turn_events(session_id);
CREATE TABLE IF NOT EXISTS file_backups (
    session_id TEXT, turn_index INTEGER, path TEXT, version INTEGER, backup_file TEXT, backup_time TEXT
);
CREATE INDEX IF NOT EXISTS file_backups_session ON file_backups(session_id);
CREATE TABLE IF NOT EXISTS summaries (
    session_id TEXT, turn_index INTEGER, kind TEXT, text TEXT, summarizer TEXT, model TEXT,
    prompt_version TEXT, source_hash TEXT, created_at REAL,
    PRIMARY KEY (session_id, kind, turn_index)
);
CREATE TABLE IF NOT EXISTS subagents (
    session_id TEXT, ord INTEGER, agent_id TEXT, layout TEXT, file TEXT, agent_type TEXT, description TEXT,
    tool_use_id TEXT, turn_index INTEGER, prompt TEXT, summary_text TEXT, started_at TEXT, ended_at TEXT,
    tool_call_count INTEGER, tool_error_count INTEGER, tool_usage TEXT, is_warmup INTEGER,
    role TEXT, team_name TEXT, member_name TEXT, workflow_run TEXT  -- role: subagent | teammate
);
CREATE INDEX IF NOT EXISTS subagents_session ON subagents(session_id);
CREATE TABLE IF NOT EXISTS texts (
    session_id TEXT, kind TEXT, ord INTEGER, text TEXT, timestamp TEXT, turn_index INTEGER, leaf_uuid TEXT
);
CREATE INDEX IF NOT EXISTS texts_session ON texts(session_id);
CREATE INDEX IF NOT EXISTS texts_leaf ON texts(leaf_uuid) WHERE kind = 'foreign_label';
-- uuids a `summary` line in another file may name (the last line of each turn): its labels' owner
CREATE TABLE IF NOT EXISTS leaves (uuid TEXT PRIMARY KEY, session_id TEXT);
CREATE INDEX IF NOT EXISTS leaves_session ON leaves(session_id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER);
-- WITHOUT ROWID: a search looks ~150 points up by id; in one B-tree each is one lookup, not two
CREATE TABLE IF NOT EXISTS index_points (
    point_id TEXT PRIMARY KEY, session_id TEXT, content_type TEXT, content_hash TEXT, user_name TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS index_points_session ON index_points(session_id);
CREATE TABLE IF NOT EXISTS index_sessions (
    session_id TEXT, user_name TEXT, indexed_seq INTEGER, dirty INTEGER, PRIMARY KEY (session_id, user_name)
);
CREATE TABLE IF NOT EXISTS embed_cache (key TEXT PRIMARY KEY, vector BLOB);
-- sessions the user had jacked forget (`jacked forget`, `exclude`, `#nomem`): never written again.
-- Kept across rebuilds (not derived); `slug` names the plan file not to archive again.
CREATE TABLE IF NOT EXISTS forgotten (session_id TEXT PRIMARY KEY, reason TEXT, forgotten_at REAL, slug TEXT);
"""

# Tables rebuilt from the transcripts when the schema changes. The index bookkeeping
# (`index_points`, `index_sessions`, `embed_cache`, the `meta` sequence) and `summaries` stay:
# they are keyed by content hashes, so an upgrade re-embeds only texts that really changed.
DERIVED_TABLES = ("files", "sessions", "turns", "invocations", "subagents", "texts", "llm_calls", "turn_events",
                  "file_backups", "leaves", "turn_texts")
# Rows a session rewrite replaces (summaries are kept: each records the hash of what it
# summarised, so an unchanged turn keeps its — possibly costly — summary across rescans).
SESSION_TABLES = ("sessions", "turns", "invocations", "subagents", "texts", "llm_calls", "turn_events",
                  "file_backups", "leaves", "turn_texts")


@dataclass(slots=True)
class FileState:
    """What the catalog remembers of one transcript file."""

    path: str
    session_id: str | None
    kind: str  # "main" | "subagent"
    layout: str | None
    size: int
    mtime_ns: int
    offset: int
    head_hash: str
    tail_hash: str
    lines: int
    malformed: int
    pending_malformed: int
    parent_id: str | None
    state: bytes | None
    parser_version: int


#: File states by path: all of them, or read as looked up (`Catalog.lazy_file_states`).
FileStates = dict[str, FileState] | Lookup[str, FileState]


def dump_state(obj: Any) -> bytes:
    """A builder's state for the catalog: pickled (our own trusted objects).

    Not compressed: compressing cost more scan time than the disk it saved.
    """
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def repo_match(alias: str = "") -> str:
    """SQL for "the session is of repo ?": its repo name or its cwd (two `?`, both the repo)."""
    return f"({alias}repo_name = ? OR {alias}cwd = ?)"


def load_state(blob: bytes | None) -> Any:
    if not blob:
        return None
    try:
        return pickle.loads(blob)
    except Exception:  # any unpickling problem means: re-read the file whole
        return None


def rows_in(db: sqlite3.Connection, sql: str, values: Sequence[Any], size: int = 500,
            after: Sequence[Any] = (), tuples: bool = False) -> Iterator[Any]:
    """The rows of `sql` for all of `values`, its `(?*)` filled with one placeholder per value,
    asked `size` values at a time (SQLite caps the number of parameters); `after`: the values of
    the placeholders that follow `(?*)`; `tuples`: plain tuples rather than `sqlite3.Row`s (for
    hot reads: a search reads ~400 rows so)."""
    for i in range(0, len(values), size):
        part = list(values[i:i + size])
        cur = db.cursor()
        if tuples:
            cur.row_factory = None
        yield from cur.execute(sql.replace("(?*)", "(" + ",".join("?" * len(part)) + ")"), [*part, *after])


#: The session fields of a point whose session has no row (yet).
_NO_SESSION_KEYS: dict[str, Any] = {"repo_name": None, "session_started_at": None, "session_ended_at": None,
                                     "agent": None}


def connect_read_only(path: Path) -> sqlite3.Connection:
    """`path` opened read-only. WAL mode needs the -shm file: where it is missing and cannot be
    made, `immutable=1` opens it (then nothing can be in a -wal either: the last close removes both)."""
    uri = "file:" + urllib.parse.quote(str(path))
    db = sqlite3.connect(uri + "?mode=ro", uri=True, timeout=60, isolation_level=None)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError:
        db.close()
        return sqlite3.connect(uri + "?immutable=1", uri=True, timeout=60, isolation_level=None)


# How `list_sessions` orders sessions: newest first, ties by id.
LISTED_ORDER = "ORDER BY COALESCE(started_at, '') DESC, session_id"


class Catalog:
    """The SQLite catalog. One instance per process; use `transaction()` for writes."""

    def __init__(self, path: Path, migrate: bool = True) -> None:
        """Open (and, unless `migrate=False` for a process that knows it is current, migrate)."""
        in_memory = str(path) == ":memory:"
        self.path = path
        #: A read-only JACKED_HOME: the catalog is read as it is, never written (nor migrated).
        self.read_only = not in_memory and read_only_dir(path.parent)
        if self.read_only:
            self.db = connect_read_only(path)
            self.db.row_factory = sqlite3.Row
            return
        if not in_memory:
            make_private(path.parent)  # the catalog's folder is JACKED_HOME: everything in it is private
        self.db = sqlite3.connect(str(path), timeout=60, isolation_level=None)
        if not in_memory:
            make_private(path.parent)  # the database file, just created
        self.db.row_factory = sqlite3.Row
        # Before anything is created (a no-op on an existing file): tool calls' briefs and
        # diffs make rows of a few KiB, which spill into chains of 4 KiB overflow pages.
        self.db.execute("PRAGMA page_size=16384")
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA busy_timeout=60000")
        if migrate:
            self._migrate()

    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        fresh = not self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'sessions'").fetchone()
        if BASELINE_VERSION <= version < SCHEMA_VERSION and not fresh:
            # Numbered steps (jacked.catalog.migrations), each in its own transaction with its number.
            for number, statements in MIGRATIONS:
                if number > version:
                    with self.transaction():
                        for sql in statements:
                            self.db.execute(sql)
                        self.db.execute(f"PRAGMA user_version={number}")
        elif version != SCHEMA_VERSION:
            # Older than the first numbered step (or newer than this jacked): the catalog is derived
            # data, so its layout is dropped and rebuilt by the next scan.
            with self.transaction():
                for table in DERIVED_TABLES:
                    self.db.execute(f"DROP TABLE IF EXISTS {table}")
                for table in ("index_points", "index_sessions", "embed_cache", "meta", "summaries"):
                    if not self._columns_match(table):  # a table whose own layout changed goes too
                        self.db.execute(f"DROP TABLE IF EXISTS {table}")
            self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        self.db.executescript(SCHEMA)

    def _columns_match(self, table: str) -> bool:
        """Whether `table` exists with the columns SCHEMA gives it (or does not exist)."""
        have = [r[1] for r in self.db.execute(f"PRAGMA table_info({table})")]
        if not have:
            return True
        probe = sqlite3.connect(":memory:")
        try:
            probe.executescript(SCHEMA)
            want = [r[1] for r in probe.execute(f"PRAGMA table_info({table})")]
        finally:
            probe.close()
        return have == want

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------------ file state
    _FILE_STATE_SQL = ("SELECT path, session_id, kind, layout, size, mtime_ns, offset, head_hash, tail_hash, lines, "
                       "malformed, pending_malformed, parent_id, NULL AS state, parser_version FROM files")

    def file_states(self, paths: Sequence[str] | None = None) -> dict[str, FileState]:
        """Every known file's state (or those of `paths`), without the (large) builder blobs."""
        if paths is None:
            rows: Iterable[Any] = self.db.execute(self._FILE_STATE_SQL)
        else:
            rows = rows_in(self.db, self._FILE_STATE_SQL + " WHERE path IN (?*)", paths)
        return {r[0]: FileState(*r) for r in rows}  # columns in field order

    def lazy_file_states(self) -> Lookup[str, FileState]:
        """`file_states`, read a few paths at a time, or whole once many were asked (`Lookup`)."""
        return Lookup(self.file_states, self.file_states)

    def file_blob(self, path: str) -> bytes | None:
        row = self.db.execute("SELECT state FROM files WHERE path = ?", (path,)).fetchone()
        return row["state"] if row else None

    def save_file_states(self, states: Iterable[FileState]) -> None:
        now = time.time()
        self.db.executemany(
            "INSERT OR REPLACE INTO files (path, session_id, kind, layout, size, mtime_ns, offset, head_hash, "
            "tail_hash, lines, malformed, pending_malformed, parent_id, state, parser_version, scanned_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(st.path, st.session_id, st.kind, st.layout, st.size, st.mtime_ns, st.offset, st.head_hash,
              st.tail_hash, st.lines, st.malformed, st.pending_malformed, st.parent_id, st.state,
              st.parser_version, now) for st in states])

    # ------------------------------------------------------------------ sessions
    def next_seq(self, count: int = 1) -> int:
        """A catalog-wide increasing number: marks each rewrite of a session's rows.
        With `count`, reserves that many and returns the last (the first is `last - count + 1`)."""
        self.db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('seq', 0)")
        self.db.execute("UPDATE meta SET value = value + ? WHERE key = 'seq'", (count,))
        return int(self.db.execute("SELECT value FROM meta WHERE key = 'seq'").fetchone()[0])

    def replace_sessions(self, entries: Sequence[tuple[Session, int, bool]], source: str = "transcript") -> set[str]:
        """Write sessions' rows, replacing what was there (call inside a transaction); each entry
        is (session, lines skipped, known). `known=False` promises the session has no rows yet,
        which saves the deletes. Rows are inserted with one statement per table for the batch.
        Forgotten sessions are left out: returns their ids."""
        if not entries:
            return set()
        # Forgotten sessions (tombstones, jacked.catalog.forget_queries) are never written again,
        # whichever road brings them back (a rescan, another agent, history.jsonl, the archive).
        skipped = self.forgotten_among([s.session_id for s, _, _ in entries])
        if skipped:
            entries = [e for e in entries if e[0].session_id not in skipped]
            if not entries:
                return skipped
        db = self.db
        for s, _, known in entries:
            if known:
                for table in SESSION_TABLES:
                    db.execute(f"DELETE FROM {table} WHERE session_id = ?", (s.session_id,))
        seq = self.next_seq(len(entries)) - len(entries)
        rows = _SessionRows()
        now = time.time()
        for s, lines_skipped, _ in entries:
            seq += 1
            rows.add_session(s, lines_skipped, seq, now, source)
        rows.write(db)
        written = [s.session_id for s, _, _ in entries]
        self._resolve_labels(written)
        self._mark_repeats(written)
        return skipped

    def forgotten_among(self, session_ids: Sequence[str]) -> set[str]:
        """Those of `session_ids` that were forgotten (have a tombstone)."""
        return {r[0] for r in rows_in(self.db, "SELECT session_id FROM forgotten WHERE session_id IN (?*)",
                                      session_ids)}

    def _mark_repeats(self, written: Sequence[str]) -> None:
        """Turns that a resumed or forked session repeats from another (the same prompt line
        uuid) count once: in the session that started first. The copies keep their rows (they
        are shown) but are marked `repeat_of`, left out of the session's totals, of stats
        and of the index."""
        db = self.db
        groups: dict[str, list[tuple[str, str, int, str | None]]] = {}
        for i in range(0, len(written), 500):
            part = list(written[i:i + 500])
            for r in db.execute(
                    "SELECT t.prompt_uuid, COALESCE(s.started_at, ''), t.session_id, t.turn_index, t.repeat_of "
                    "FROM turns t JOIN sessions s ON s.session_id = t.session_id "
                    "WHERE t.prompt_uuid IN (SELECT prompt_uuid FROM turns WHERE prompt_uuid IS NOT NULL AND "
                    f"session_id IN ({','.join('?' * len(part))}))", part):
                groups.setdefault(r[0], []).append((r[1], r[2], r[3], r[4]))
        changes: list[tuple[str | None, str, int]] = []
        for copies in groups.values():
            if len({sid for _, sid, _, _ in copies}) < 2:
                continue
            original = min(copies)[1]
            for _, sid, turn, was in copies:
                now = None if sid == original else original
                if now != was:
                    changes.append((now, sid, turn))
        if not changes:
            return
        db.executemany("UPDATE turns SET repeat_of = ? WHERE session_id = ? AND turn_index = ?", changes)
        touched = sorted({sid for _, sid, _ in changes})
        for table in ("invocations", "llm_calls"):
            db.executemany(
                f"UPDATE {table} SET repeated = (SELECT t.repeat_of IS NOT NULL FROM turns t WHERE "
                f"t.session_id = {table}.session_id AND t.turn_index = {table}.turn_index) "
                "WHERE session_id = ? AND owner = ''", [(sid,) for sid in touched])
        db.executemany(
            "UPDATE sessions SET (tool_call_count, tool_error_count, input_tokens, output_tokens) = "
            "(SELECT COALESCE(SUM(tool_call_count), 0), COALESCE(SUM(tool_error_count), 0), "
            "COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0) FROM turns t "
            "WHERE t.session_id = sessions.session_id AND t.repeat_of IS NULL) WHERE session_id = ?",
            [(sid,) for sid in touched])
        db.executemany(
            "UPDATE sessions SET (decision_count, feedback_count) = "
            "(SELECT COALESCE(SUM(e.type = 'decision'), 0), COALESCE(SUM(e.type = 'feedback'), 0) "
            "FROM turn_events e JOIN turns t ON t.session_id = e.session_id AND t.turn_index = e.turn_index "
            "WHERE e.session_id = sessions.session_id AND t.repeat_of IS NULL) WHERE session_id = ?",
            [(sid,) for sid in touched])
        stale = [sid for sid in touched if sid not in set(written)]
        if stale:  # their points change: the next index run brings them up to date
            seq = self.next_seq(len(stale)) - len(stale)
            db.executemany("UPDATE sessions SET content_seq = ? WHERE session_id = ?",
                           [(seq + i + 1, sid) for i, sid in enumerate(stale)])

    def _resolve_labels(self, written: Sequence[str]) -> None:
        """Give labels written in one file for another session (`foreign_label`, by their
        leaf uuid) to that session: its title when it has none of its own, and a new content
        sequence so that its points are brought up to date. Runs for the sessions just written
        and every session their labels name."""
        db = self.db
        affected: set[str] = set(written)
        for i in range(0, len(written), 500):
            part = list(written[i:i + 500])
            marks = ",".join("?" * len(part))
            affected.update(r[0] for r in db.execute(
                f"SELECT l.session_id FROM texts t JOIN leaves l ON l.uuid = t.leaf_uuid "
                f"WHERE t.kind = 'foreign_label' AND t.session_id IN ({marks})", part))
        owners = sorted(affected - set(written))
        if owners:
            seq = self.next_seq(len(owners)) - len(owners)
            db.executemany("UPDATE sessions SET content_seq = ? WHERE session_id = ?",
                           [(seq + i + 1, sid) for i, sid in enumerate(owners)])
        ids = sorted(affected)
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            db.execute(
                "UPDATE sessions SET title = COALESCE(own_title, (SELECT t.text FROM texts t JOIN leaves l "
                "ON l.uuid = t.leaf_uuid WHERE t.kind = 'foreign_label' AND l.session_id = sessions.session_id "
                "ORDER BY t.timestamp, t.session_id, t.ord LIMIT 1)) "
                f"WHERE session_id IN ({','.join('?' * len(part))})", part)

    # ------------------------------------------------------------------ queries
    # ------------------------------------------------------------------ queries
    def session_ids(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT session_id FROM sessions WHERE has_main = 1 ORDER BY session_id")]

    def list_sessions(self, repo: str | None = None, limit: int | None = None,
                      offset: int = 0, since: str | None = None, until: str | None = None) -> list[dict[str, Any]]:
        """Sessions with a main file, newest first (`limit` rows from `offset`); `since` / `until`
        (ISO, `...Z`): only sessions active at or after `since` and started at or before `until`."""
        where, args = self._listed(repo, since, until)
        sql = f"SELECT * FROM sessions WHERE {where} {LISTED_ORDER}"
        if limit is not None or offset:
            sql += " LIMIT ? OFFSET ?"
            args += [-1 if limit is None else limit, offset]
        return [dict(r) for r in self.db.execute(sql, args)]

    def listed_session_ids(self) -> list[str]:
        """The ids of the sessions `list_sessions` lists, in its order (not their wide rows)."""
        where, args = self._listed(None)
        return [r[0] for r in self.db.execute(
            f"SELECT session_id FROM sessions WHERE {where} {LISTED_ORDER}", args)]

    def count_sessions(self, repo: str | None = None, since: str | None = None, until: str | None = None) -> int:
        """How many sessions `list_sessions` lists in all."""
        where, args = self._listed(repo, since, until)
        return int(self.db.execute(f"SELECT COUNT(*) FROM sessions WHERE {where}", args).fetchone()[0])

    @staticmethod
    def _listed(repo: str | None, since: str | None = None, until: str | None = None) -> tuple[str, list[Any]]:
        where, args = ["has_main = 1"], []
        if repo:
            where.append(repo_match())
            args += [repo, repo]
        if since:  # the web view's list keeps the same bounds (catalog.ui_queries.sessions_page)
            where.append("COALESCE(ended_at, started_at) >= ?")
            args.append(since)
        if until:
            where.append("started_at <= ?")
            args.append(until)
        return " AND ".join(where), args

    def get_session_row(self, session_id: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT * FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
        return dict(row) if row else None

    def session_titles(self, session_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """session id -> its title, first prompt and source, for those of `session_ids` with a row
        (what a search result shows; not the whole wide row)."""
        return {r[0]: {"title": r[1], "first_prompt": r[2], "source": r[3]} for r in rows_in(
            self.db, "SELECT session_id, title, first_prompt, source FROM sessions WHERE session_id IN (?*)",
            session_ids)}

    def existing_session_ids(self, session_ids: Sequence[str]) -> set[str]:
        """Those of `session_ids` that have a row in `sessions`."""
        return {r[0] for r in rows_in(self.db, "SELECT session_id FROM sessions WHERE session_id IN (?*)",
                                      session_ids)}

    def neighbour_session_ids(self, session_id: str) -> list[str]:
        """The ids next to `session_id` in sorted order, before and after it (itself left out): the
        ones sharing the longest prefix with it (two indexed reads)."""
        before = self.db.execute("SELECT session_id FROM sessions WHERE session_id < ? ORDER BY session_id DESC "
                                 "LIMIT 1", (session_id,)).fetchone()
        after = self.db.execute("SELECT session_id FROM sessions WHERE session_id > ? ORDER BY session_id LIMIT 1",
                                (session_id,)).fetchone()
        return [r[0] for r in (before, after) if r]

    def find_session_ids(self, prefix: str) -> list[str]:
        """Sessions whose id starts with `prefix` (LIKE wildcards in the prefix are escaped)."""
        esc = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return [r[0] for r in self.db.execute(
            "SELECT session_id FROM sessions WHERE session_id LIKE ? ESCAPE '\\' ORDER BY session_id LIMIT 50",
            (esc + "%",))]

    def session_for_file(self, path: str) -> str | None:
        row = self.db.execute("SELECT session_id FROM files WHERE path = ?", (path,)).fetchone()
        return row[0] if row else None

    def turn_rows(self, session_id: str) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute(
            "SELECT * FROM turns WHERE session_id = ? ORDER BY turn_index", (session_id,))]

    def invocation_rows(self, session_id: str, owner: str = "") -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute(
            "SELECT * FROM invocations WHERE session_id = ? AND owner = ? ORDER BY turn_index, ord",
            (session_id, owner))]

    def subagent_files_written(self, session_id: str) -> list[str]:
        """Files the session's subagents wrote or edited (successful calls), in call order."""
        return [r[0] for r in self.db.execute(
            "SELECT file_path FROM invocations WHERE session_id = ? AND owner != '' AND is_error = 0 "
            "AND tool_name IN ('Write', 'Edit', 'MultiEdit', 'NotebookEdit') AND file_path IS NOT NULL "
            "ORDER BY owner, turn_index, ord", (session_id,))]

    def indexed_session_count(self, user_name: str) -> int:
        """Listed sessions whose points `user_name` has, complete (not left dirty by a crash)."""
        return int(self.db.execute(
            "SELECT COUNT(*) FROM index_sessions i JOIN sessions s ON s.session_id = i.session_id "
            "WHERE i.user_name = ? AND i.dirty = 0 AND s.has_main = 1", (user_name,)).fetchone()[0])

    def work_rows(self, session_id: str) -> list[dict[str, Any]]:
        """Every tool call of a session (main chain and subagents), by owner, turn and order."""
        return [dict(r) for r in self.db.execute(
            "SELECT owner, turn_index, tool_name, file_path, command, description, input_brief, result_brief, "
            "is_error, timestamp FROM invocations WHERE session_id = ? ORDER BY owner, turn_index, ord", (session_id,))]

    def event_texts(self, session_id: str) -> dict[int, list[str]]:
        """turn index → the texts of its events (command outputs, notification summaries, the file
        or selection open in the IDE as the prompt was sent)."""
        out: dict[int, list[str]] = {}
        for turn_index, data in self.db.execute(
                "SELECT turn_index, data FROM turn_events WHERE session_id = ? AND (type IN ('command_output', "
                "'notification') OR (type = 'snapshot' AND data LIKE '%\"ide_context\"%')) ORDER BY turn_index, ord",
                (session_id,)):
            d = orjson.loads(data or "{}")
            texts = [c["text"] for c in d.get("ide_context") or [] if c.get("text")]
            text = d.get("output") or d.get("summary")
            for t in [text] + texts if text else texts:
                out.setdefault(turn_index, []).append(t)
        return out

    def turn_texts(self, session_id: str) -> dict[int, str]:
        """turn index → the turn's raw text (`Turn.raw_text`)."""
        return dict(self.db.execute("SELECT turn_index, text FROM turn_texts WHERE session_id = ?", (session_id,)))

    def raw_texts_of(self, session_ids: Sequence[str], containing: str,
                     before: str | None = None) -> list[tuple[str, int, str]]:
        """(session, turn index, text) of those sessions' own turns (not the ones a resume or fork
        repeats from another session) whose prompt or raw text holds `containing` (ASCII letters
        in any case): SQLite finds them without handing every text over. Prompts first (they are
        short); a prompt counts too, since a traceback the user pasted names what they search for.
        `before` (an ISO time): only turns started before it (the index as it stood then)."""
        like = "%" + containing.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        own = "t.session_id IN (?*) AND t.repeat_of IS NULL" + (" AND t.started_at < ?" if before else "")
        after = [before, like] if before else [like]
        prompts = rows_in(self.db, f"SELECT t.session_id, t.turn_index, t.prompt FROM turns t WHERE {own} "
                                   "AND t.prompt LIKE ? ESCAPE '\\'", session_ids, after=after, tuples=True)
        raw = rows_in(self.db, "SELECT x.session_id, x.turn_index, x.text FROM turn_texts x JOIN turns t "
                               f"ON t.session_id = x.session_id AND t.turn_index = x.turn_index WHERE {own} "
                               "AND x.text LIKE ? ESCAPE '\\'", session_ids, after=after, tuples=True)
        return [(r[0], r[1], r[2]) for rows in (prompts, raw) for r in rows]

    def subagent_rows(self, session_id: str) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute(
            "SELECT * FROM subagents WHERE session_id = ? ORDER BY ord", (session_id,))]

    def text_rows(self, session_id: str) -> list[dict[str, Any]]:
        """The session's distilled texts, with the labels other files wrote for it (as
        `summary_label`, after its own) and without the ones it holds for others."""
        own = [dict(r) for r in self.db.execute(
            "SELECT * FROM texts WHERE session_id = ? AND kind != 'foreign_label' ORDER BY ord", (session_id,))]
        given = [dict(r) for r in self.db.execute(
            "SELECT t.* FROM texts t JOIN leaves l ON l.uuid = t.leaf_uuid "
            "WHERE t.kind = 'foreign_label' AND l.session_id = ? ORDER BY t.timestamp, t.session_id, t.ord",
            (session_id,))]
        for i, row in enumerate(given):
            row["kind"], row["session_id"], row["ord"] = "summary_label", session_id, len(own) + i
        return own + given

    def point_rows(self, point_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """What this catalog indexed of `point_ids`: id → session_id, content_hash, user_name and
        the session's repo_name, started and ended times (what search ranks a point by)."""
        found = {r[0]: r[1:] for r in rows_in(
            self.db, "SELECT point_id, session_id, content_hash, user_name FROM index_points WHERE point_id IN (?*)",
            point_ids, tuples=True)}
        # The sessions apart, once each: a search's ~150 points come from a few dozen sessions
        # (a join looked each session up once per point: ~35 % slower at 10,000 sessions).
        sessions = {r[0]: {"repo_name": r[1], "session_started_at": r[2], "session_ended_at": r[3], "agent": r[4]}
                    for r in rows_in(self.db, "SELECT session_id, repo_name, started_at, ended_at, agent "
                                              "FROM sessions INDEXED BY sessions_rank_keys WHERE session_id IN (?*)",
                                     list({sid for sid, _, _ in found.values()}), tuples=True)}
        return {point_id: {"session_id": sid, "content_hash": content_hash, "user_name": user,
                           **sessions.get(sid, _NO_SESSION_KEYS)}
                for point_id, (sid, content_hash, user) in found.items()}

    def copies_of(self, session_ids: Sequence[str]) -> dict[str, str]:
        """Of `session_ids`, those whose every turn repeats turns of one other session (a
        fork or a resume that added nothing yet): session id -> that session's id."""
        return {r[0]: r[1] for r in rows_in(
            self.db, "SELECT session_id, MIN(repeat_of) FROM turns WHERE session_id IN (?*) GROUP BY session_id "
                     "HAVING COUNT(*) = COUNT(repeat_of) AND MIN(repeat_of) = MAX(repeat_of)", session_ids)}

    def totals(self) -> dict[str, int]:
        row = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(turn_count),0), COALESCE(SUM(lines_skipped),0) "
            "FROM sessions WHERE has_main = 1").fetchone()
        return {"sessions": row[0], "turns": row[1], "lines_skipped": row[2]}


class _SessionRows:
    """The rows of a batch of sessions, table by table, written with one `executemany` each."""

    def __init__(self) -> None:
        self.sessions: list[tuple[Any, ...]] = []
        self.turns: list[tuple[Any, ...]] = []
        self.turn_texts: list[tuple[Any, ...]] = []
        self.invocations: list[tuple[Any, ...]] = []
        self.llm_calls: list[tuple[Any, ...]] = []
        self.events: list[tuple[Any, ...]] = []
        self.backups: list[tuple[Any, ...]] = []
        self.subagents: list[tuple[Any, ...]] = []
        self.texts: list[tuple[Any, ...]] = []
        self.leaves: list[tuple[Any, ...]] = []

    def add_session(self, s: Session, lines_skipped: int, seq: int, now: float, source: str = "transcript") -> None:
        sid = s.session_id
        ms = [t.metrics for t in s.turns]
        self.sessions.append(
            (sid, s.file, s.project_dir, s.cwd, s.repo_name, s.git_branch, s.slug, s.version_first,
             s.version_last, s.started_at, s.ended_at, len(s.turns), s.title, s.first_prompt, s.plan,
             s.plan_source, orjson.dumps(s.models).decode(), sum(m.tool_call_count for m in ms),
             sum(m.tool_error_count for m in ms),
             sum(m.input_tokens + m.cache_read_tokens + m.cache_creation_tokens for m in ms),
             sum(m.output_tokens for m in ms), s.lines, lines_skipped,
             sum(1 for a in s.subagents if not a.is_warmup),
             # listed: a file with messages (one of summaries or snapshots only is not a session),
             # or turns without a file (prompt-only sessions, from history.jsonl)
             1 if (s.file and s.message_lines) or s.turns else 0, now, seq, s.title, source,
             s.tool_results_missing, s.agent,
             sum(1 for t in s.turns for e in t.events if e.type == "decision"),
             sum(1 for t in s.turns for e in t.events if e.type == "feedback")))
        self.leaves.extend((u, sid) for u in s.leaf_uuids)
        self._add_turns(sid, s.turns)
        for i, a in enumerate(s.subagents):
            self.subagents.append(
                (sid, i, a.agent_id, a.layout, a.file, a.agent_type, a.description, a.tool_use_id, a.turn_index,
                 a.prompt, a.summary_text, a.started_at, a.ended_at, a.tool_call_count, a.tool_error_count,
                 orjson.dumps(a.tool_usage).decode(), int(a.is_warmup), a.role, a.team_name, a.member_name,
                 a.workflow_run))
            self._add_invocations(sid, a.agent_id or f"inline-{i}", a.turns, a.role, a.turn_index)
        for c in s.compactions:
            self.llm_calls.extend(self._call_rows(sid, c.owner, c.turn_index or 0, c.llm_calls, "compaction",
                                                  c.turn_index))
        self.texts.extend((sid, t.kind, i, t.text, t.timestamp, t.turn_index, t.leaf_uuid)
                          for i, t in enumerate(s.texts))

    def _add_turns(self, sid: str, turns: list[Turn]) -> None:
        for t in turns:
            m = t.metrics
            self.turns.append(
                (sid, t.index, t.prompt, t.started_at, t.ended_at, t.duration_ms, t.duration_source,
                 int(t.is_slash_command), int(t.compacted), int(t.interrupted), t.assistant_text,
                 orjson.dumps(t.models).decode(), orjson.dumps(m.to_json()).decode(), m.tool_call_count,
                 m.tool_error_count, m.lines_added, m.lines_removed,
                 m.input_tokens + m.cache_read_tokens + m.cache_creation_tokens, m.output_tokens, t.started_by,
                 t.prompt_uuid, None))
            if t.raw_text:
                self.turn_texts.append((sid, t.index, t.raw_text))
            for i, e in enumerate(t.events):
                self.events.append((sid, t.index, i, e.type, e.timestamp, orjson.dumps(e.data).decode()))
            for b in t.backups:
                self.backups.append((sid, t.index, b.path, b.version, b.backup_file, b.backup_time))
        self._add_invocations(sid, "", turns, "main", None)

    def _add_invocations(self, sid: str, owner: str, turns: list[Turn], role: str,
                         parent_turn: int | None) -> None:
        """The calls and API responses of the main chain (`owner` "", `parent_turn` each turn's
        own) or of one subagent (all caused by the turn of its Task call, `parent_turn`)."""
        for t in turns:
            for i, v in enumerate(t.invocations):
                self.invocations.append(
                    (sid, owner, t.index, i, v.tool_name, v.tool_use_id, v.sequence, v.parallel_group,
                     int(v.is_error), v.file_path, v.command, v.description, v.input_brief, v.result_brief,
                     v.timestamp, v.result_timestamp, v.lines_added, v.lines_removed, int(v.file_created),
                     v.agent_id, v.diff, v.before_hash, v.after_hash, 0))
            self.llm_calls.extend(self._call_rows(sid, owner, t.index, t.llm_calls, role,
                                                  t.index if owner == "" else parent_turn))

    @staticmethod
    def _call_rows(sid: str, owner: str, turn_index: int, calls: list[LlmCall], role: str,
                   parent_turn: int | None) -> Iterator[tuple[Any, ...]]:
        return ((sid, owner, turn_index, i, c.message_id, c.model, c.timestamp, c.input_tokens, c.output_tokens,
                 c.cache_read_tokens, c.cache_creation_tokens, c.tool_calls, 0, role, parent_turn, c.agent_cost_usd,
                 c.cache_creation_1h_tokens)
                for i, c in enumerate(calls))

    def write(self, db: sqlite3.Connection) -> None:
        for table, rows in (("sessions", self.sessions), ("turns", self.turns), ("turn_texts", self.turn_texts),
                            ("invocations", self.invocations),
                            ("llm_calls", self.llm_calls), ("turn_events", self.events),
                            ("file_backups", self.backups), ("subagents", self.subagents), ("texts", self.texts)):
            if rows:
                db.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(rows[0]))})", rows)
        if self.leaves:  # a resumed session repeats its parent's last lines: the first owner keeps them
            db.executemany("INSERT OR IGNORE INTO leaves VALUES (?, ?)", self.leaves)
