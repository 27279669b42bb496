"""Indexing: cataloged sessions → type-tagged points in Qdrant, incrementally.

For every session whose catalog rows changed since it was last indexed (by this user), the
documents are extracted again and compared, by content hash, with what the index holds:
only new or changed units are embedded (each distinct text once, with a persistent cache of
vectors), vanished units are deleted. The store is written before the catalog records it,
and a session is marked dirty while in flight, so a crash at any point is repaired by the
next run: no point is lost, duplicated or orphaned.
"""
from __future__ import annotations

import hashlib
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jacked.catalog import Catalog, index_state
from jacked.config import Settings
from jacked.index.extract import Document, Extractor
from jacked.ingest.agents import source_roots
from jacked.ingest.scan import ScanReport, Scanner
from jacked.util.time import parse_ts

BATCH_DOCS = 256  # documents embedded and written per store round trip: bounds memory
Progress = Callable[[str, int, int], None]
# A backfill that wrote at least this many points builds the store's search graph afterwards.
OPTIMIZE_AFTER_POINTS = 10_000
PAYLOAD_VERSION = 1  # see Indexer._upgrade_payloads


@dataclass
class IndexReport:
    """What a backfill or index run did; `to_json` is the `backfill --json` shape."""

    sessions_indexed: int = 0
    sessions_unchanged: int = 0
    points_written: int = 0
    points_unchanged: int = 0
    points_deleted: int = 0
    texts_embedded: int = 0
    lines_skipped: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    scan: ScanReport | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "sessions_indexed": self.sessions_indexed, "sessions_unchanged": self.sessions_unchanged,
            "points_written": self.points_written, "points_unchanged": self.points_unchanged,
            "points_deleted": self.points_deleted, "texts_embedded": self.texts_embedded,
            "lines_skipped": self.lines_skipped, "errors": self.errors, "seconds": round(self.seconds, 3),
            "sessions_scanned": self.scan.sessions_scanned if self.scan else 0,
            "tool_results_missing": self.scan.tool_results_missing if self.scan else 0,
        }


def repo_id_of(cwd: str | None) -> str | None:
    """A stable id for a working directory (the real cwd, never the lossy folder name)."""
    if not cwd:
        return None
    return hashlib.blake2b(cwd.replace("\\", "/").rstrip("/").encode(), digest_size=8).hexdigest()


def epoch(ts: str | None) -> float | None:
    dt = parse_ts(ts)
    return dt.timestamp() if dt else None


def _vec_key(model: str, text: str) -> str:
    return hashlib.blake2b(f"{model}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class Indexer:
    """Keeps the vector index in step with the catalog for one user."""

    def __init__(self, settings: Settings, catalog: Catalog | None = None, store: Any | None = None) -> None:
        """`store` (an unopened VectorStore) replaces the configured one, e.g. in tests."""
        self.settings = settings
        self.catalog = catalog or Catalog(settings.catalog_path)
        self._store = store
        self.user = settings.user_name
        self.machine = getattr(settings, "machine", None) or socket.gethostname()
        self.model_name = getattr(settings, "embedding_model", None) or _default_model()
        self._dense = None
        self._sparse = None
        self._store_has_user = True

    # ------------------------------------------------------------------ encoders
    @property
    def dense(self):  # type: ignore[no-untyped-def]
        if self._dense is None:
            from jacked.index.embed import get_dense_embedder

            self._dense = get_dense_embedder(self.model_name, cache_dir=self.settings.home / "models")
        return self._dense

    @property
    def sparse(self):  # type: ignore[no-untyped-def]
        if self._sparse is None:
            from jacked.index.embed import SparseEmbedder

            self._sparse = SparseEmbedder()
        return self._sparse

    def open_store(self, recreate: bool = False, must_exist: bool = False,
                   on_locked: Callable[[], None] | None = None):  # type: ignore[no-untyped-def]
        """The configured store, opened for this model (created unless `must_exist`).

        `on_locked` runs once this process holds the store (before a slow shard load).
        """
        from jacked.index.store import StoreNotFound

        store = self._store if self._store is not None else configured_store(self.settings)
        if must_exist and not store_exists(store):
            raise StoreNotFound(f"no index in {self.settings.home} yet: run `jacked backfill` first")
        done: list[bool] = []

        def locked() -> None:
            if on_locked is not None and not done:
                done.append(True)
                on_locked()

        store.on_locked = locked
        opened = store.open(self.dense.model_name, self.dense.dims, recreate=recreate)
        locked()  # backends without a lock: now
        return opened

    # ------------------------------------------------------------------ entry points
    def backfill(self, rebuild: bool = False, repo: str | None = None, progress: Progress | None = None) -> IndexReport:
        """Scan the Claude directory, then index every session that changed."""
        t0 = time.perf_counter()
        scanner = Scanner(self.catalog, self.settings.claude_dir, source_roots(self.settings.disabled_sources),
                         archive=self.settings.archive)
        only = None
        if repo:
            only = lambda g: self._group_repo(g) == repo  # noqa: E731 - tiny predicate
        scan = scanner.scan(progress=(lambda d, n: progress("scan", d, n)) if progress else None, only=only)
        report = IndexReport(scan=scan, lines_skipped=scan.lines_skipped, errors=list(scan.errors))
        if rebuild:
            index_state.forget_user(self.catalog, self.user)
        with self.open_store(recreate=rebuild) as store:
            self._upgrade_payloads(store)
            self._index_sessions(store, scan.session_ids, report, progress)
            if report.points_written >= OPTIMIZE_AFTER_POINTS:
                # Segments without an HNSW graph are searched point by point: at 100k points a
                # query costs ~18 ms that way, ~5 ms after this (which takes ~1.5 s per 1,000 points).
                if progress:
                    progress("optimize", 0, 1)
                store.optimize()
                if progress:
                    progress("optimize", 1, 1)
        report.seconds = time.perf_counter() - t0
        return report

    def _upgrade_payloads(self, store: Any) -> None:
        """Give points written by an older jacked the payload fields filters now use, without
        rewriting them: 1 = `agent` (every point before it was Claude Code's)."""
        if index_state.payload_version(self.catalog, self.user) < PAYLOAD_VERSION:
            store.set_payload_where({"agent": "claude"}, self.user)
            index_state.set_payload_version(self.catalog, self.user, PAYLOAD_VERSION)

    def index_paths(self, groups: list[Any], progress: Progress | None = None,
                    on_open: Callable[[], None] | None = None) -> IndexReport:
        """Scan and index just these session groups (the hook's fast path).

        `on_open` is called once the store is open (and, for the edge shard, locked): from
        then on, any other jacked process waits for this one and sees its work.
        """
        t0 = time.perf_counter()
        report = IndexReport(scan=ScanReport())
        with self.open_store(on_locked=on_open) as store:
            self.index_groups(store, groups, report, progress)
        report.seconds = time.perf_counter() - t0
        return report

    def index_sessions(self, session_ids: list[str]) -> IndexReport:
        """Index these cataloged sessions (already scanned) when they changed."""
        t0 = time.perf_counter()
        report = IndexReport(scan=ScanReport())
        with self.open_store() as store:
            self._upgrade_payloads(store)
            self._index_sessions(store, session_ids, report, None)
        report.seconds = time.perf_counter() - t0
        return report

    def index_groups(self, store: Any, groups: list[Any], report: IndexReport,
                     progress: Progress | None = None) -> None:
        """Scan and index session groups into an already open store."""
        self._upgrade_payloads(store)
        scanner = Scanner(self.catalog, self.settings.claude_dir, source_roots(self.settings.disabled_sources),
                         archive=self.settings.archive)
        assert report.scan is not None
        for g in groups:
            scanner.scan_group(g, report.scan)
        report.lines_skipped = report.scan.lines_skipped
        self._index_sessions(store, [g.session_id for g in groups], report, progress)

    def _group_repo(self, group: Any) -> str | None:
        for path in group.all_paths():
            from jacked.sources.reader import first_record
            from jacked.sources.claude.discover import repo_name_of

            rec = first_record(path)
            if rec and rec.get("cwd"):
                return repo_name_of(rec["cwd"])
        return None

    # ------------------------------------------------------------------ core
    def _stale_sessions(self, session_ids: Iterable[str]) -> tuple[list[str], int]:
        """Sessions whose rows changed since this user indexed them (or left dirty by a crash)."""
        wanted = set(session_ids)
        stale, fresh = [], 0
        for sid, content_seq, indexed_seq, dirty in index_state.index_progress(self.catalog, self.user):
            if sid not in wanted:
                continue
            if indexed_seq is None or dirty or content_seq != indexed_seq:
                stale.append(sid)
            else:
                fresh += 1
        return sorted(stale), fresh

    def _index_sessions(self, store: Any, session_ids: Iterable[str], report: IndexReport,
                        progress: Progress | None) -> None:
        extractor = Extractor(self.catalog, self._count_tokens, self.dense.max_tokens)
        stale, fresh = self._stale_sessions(session_ids)
        report.sessions_unchanged += fresh
        from jacked.index.store import SearchFilter

        # A user with no points at all needs no per-session look into the store.
        self._store_has_user = bool(stale) and store.count(SearchFilter(user_name=self.user)) > 0
        pending: list[tuple[str, int, list[Document], dict[str, str]]] = []
        pending_docs = 0
        for i, sid in enumerate(stale):
            row = self.catalog.get_session_row(sid)
            docs = extractor.documents(sid)
            pending.append((sid, row["content_seq"] if row else 0, docs, self._known_points(sid, store)))
            pending_docs += len(docs)
            if pending_docs >= BATCH_DOCS:
                self._write_batch(store, pending, report)
                pending, pending_docs = [], 0
            if progress:
                progress("index", i + 1, len(stale))
        if pending:
            self._write_batch(store, pending, report)

    def _known_points(self, sid: str, store: Any) -> dict[str, str]:
        """point id → content hash of what the index holds for a session (by this user)."""
        points, complete = index_state.indexed_points(self.catalog, sid, self.user)
        if not complete and self._store_has_user:
            # Unknown or interrupted: ask the store itself what it holds for this session.
            from jacked.index.store import SearchFilter

            return {h.id: h.payload.get("content_hash", "") for h in
                    store.scroll(SearchFilter(session_ids=[sid], user_name=self.user), fields=["content_hash"])}
        return points

    def _write_batch(self, store: Any, batch: list[tuple[str, int, list[Document], dict[str, str]]],
                     report: IndexReport) -> None:
        from jacked.index.store import Point

        model = self.dense.model_name
        to_write: list[tuple[Document, str]] = []
        to_delete: list[str] = []
        for sid, _, docs, known in batch:
            want = {}
            for d in docs:
                h = d.content_hash(model)
                want[d.point_id] = h
                if known.get(d.point_id) != h:
                    to_write.append((d, h))
                else:
                    report.points_unchanged += 1
            to_delete += [pid for pid in known if pid not in want]
        index_state.mark_dirty(self.catalog, [sid for sid, _, _, _ in batch], self.user)
        dense_vecs = self._dense_vectors([d.text for d, _ in to_write if d.dense], report)
        sparse_vecs = self.sparse.embed_documents([d.text for d, _ in to_write])
        rows_by_sid = {sid: self.catalog.get_session_row(sid) or {} for sid, _, _, _ in batch}
        points = []
        for (d, h), sv in zip(to_write, sparse_vecs):
            points.append(Point(id=d.point_id, payload=self._payload(d, h, rows_by_sid[d.session_id]),
                                dense=dense_vecs.get(d.text) if d.dense else None, sparse=sv))
        if points:
            store.upsert(points)
        if to_delete:
            store.delete_points(to_delete)
        index_state.record_indexed(
            self.catalog, self.user, to_delete,
            [(d.point_id, d.session_id, d.content_type, h) for d, h in to_write],
            [(sid, seq) for sid, seq, _, _ in batch])
        report.points_written += len(points)
        report.points_deleted += len(to_delete)
        report.sessions_indexed += sum(1 for _, _, docs, _ in batch if docs)  # listed sessions only

    def _dense_vectors(self, texts: list[str], report: IndexReport) -> dict[str, list[float]]:
        """Vectors for distinct texts: from the cache, else embedded (and cached)."""
        model = self.dense.model_name
        distinct = list(dict.fromkeys(texts))
        keys = {t: _vec_key(model, t) for t in distinct}
        out = index_state.cached_vectors(self.catalog, [keys[t] for t in distinct])
        by_key = {keys[t]: t for t in distinct}
        found = {by_key[k]: v for k, v in out.items()}
        missing = [t for t in distinct if t not in found]
        if missing:
            vecs = self.dense.embed_documents(missing)
            report.texts_embedded += len(missing)
            index_state.cache_vectors(self.catalog, ((keys[t], v) for t, v in zip(missing, vecs)))
            found.update(zip(missing, vecs))
        return found

    def _count_tokens(self, text: str) -> int:
        return self.dense.count_tokens(text)

    def _payload(self, d: Document, content_hash: str, row: dict[str, Any]) -> dict[str, Any]:
        ts = d.timestamp or row.get("started_at")
        return {
            "session_id": d.session_id, "content_type": d.content_type, "text": d.text,
            "content_hash": content_hash, "repo_name": row.get("repo_name"), "repo_id": repo_id_of(row.get("cwd")),
            "cwd": row.get("cwd"), "git_branch": row.get("git_branch"), "user_name": self.user,
            "machine": self.machine, "timestamp": ts, "ts": epoch(ts) or 0.0,
            "session_started_at": row.get("started_at"), "session_ended_at": row.get("ended_at"),
            "slug": row.get("slug"), "agent_id": d.agent_id, "agent_type": d.agent_type,
            "turn_index": d.turn_index, "chunk_index": d.chunk_index, "leaf_uuid": d.leaf_uuid,
            "embedding_model": self.dense.model_name if d.dense else None, "title": row.get("title"),
            "agent": row.get("agent") or "claude",
        }

    # ------------------------------------------------------------------ maintenance
    def cleardb(self) -> int:
        """Delete this user's points and index state; the next backfill re-indexes them."""
        with self.open_store() as store:
            deleted = store.delete_where(user_name=self.user)
        index_state.forget_user(self.catalog, self.user)
        return deleted


def _default_model() -> str:
    from jacked.index.embed import DEFAULT_MODEL

    return DEFAULT_MODEL


def configured_store(settings: Settings) -> Any:
    """The (not yet opened) store the settings name: edge shard in JACKED_HOME, or a server."""
    from jacked.index.store import open_store

    return open_store(getattr(settings, "backend", "edge") or "edge", settings.home,
                      getattr(settings, "qdrant_url", None), getattr(settings, "qdrant_api_key", None),
                      lock_timeout=float(getattr(settings, "lock_timeout_s", 60)))


def store_exists(store: Any) -> bool:
    """Whether an edge shard exists on disk (a server collection is assumed to)."""
    shard = getattr(store, "shard_path", None)
    return shard is None or Path(shard).exists()
