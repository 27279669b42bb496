"""Indexing: cataloged sessions → type-tagged points in Qdrant, incrementally.

For every session whose catalog rows changed since it was last indexed (by this user), the
documents are extracted again and compared, by content hash, with what the index holds:
only new or changed units are embedded (each distinct text once, with a persistent cache of
vectors), vanished units are deleted. The store is written before the catalog records it,
and a session is marked dirty while in flight, so a crash at any point is repaired by the
next run: no point is lost, duplicated or orphaned.

A backfill makes search useful long before it ends. It first glances at every Claude session not
indexed yet (its prompts only, a BM25 point each: findable by them within seconds; see
jacked.index.glance), then reads the sessions newest first, a
chunk at a time, and writes each chunk's points at once with their BM25 vectors only (the
lexical pass: no embedding, so every session is findable by its words within minutes); the
dense vectors are filled in afterwards, newest sessions first (the dense pass), and the points
gain semantic search as they get them. Both passes record what they did per batch, so a
backfill stopped at any moment (even by SIGKILL) resumes where it was: nothing already
written is embedded or written again. `JACKED_HOME/backfill.json` says how far each pass
is (`jacked status` reads it, with an ETA).
"""
from __future__ import annotations

import hashlib
import os
import socket
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jacked.catalog import Catalog, index_state
from jacked.index.ahead import EmbedAhead
from jacked.index.dense_pass import DensePass, Progress
from jacked.index.labels import searchable
from jacked.config import Settings
from jacked.util.time import epoch

if TYPE_CHECKING:  # imported where used: a search needs none of the readers (~60 ms of its start)
    from jacked.schema.answers import IndexAnswer
    from jacked.index.embed import DenseEmbedder, SparseEmbedder
    from jacked.index.extract import Document
    from jacked.index.glance import Glance, GlanceReport
    from jacked.ingest.privacy import Privacy
    from jacked.ingest.scan import ScanReport, Scanner

BATCH_DOCS = 256  # documents embedded and written per store round trip: bounds memory
# The lexical pass embeds nothing: larger round trips, still bounded.
LEXICAL_BATCH_DOCS = 1024
# A backfill that wrote at least this many points builds the store's search graph for the last
# ones before it ends (writers optimise every `OPTIMIZE_EVERY` points along the way).
OPTIMIZE_AFTER_POINTS = 1_000
#: How far a running (or stopped) backfill is, for `jacked status`: JACKED_HOME/backfill.json.
PROGRESS_FILE = "backfill.json"
PAYLOAD_VERSION = 1  # see Indexer._upgrade_payloads


@dataclass
class IndexReport:
    """What a backfill or index run did; `to_json` is the `backfill --json` shape."""

    sessions_indexed: int = 0
    sessions_unchanged: int = 0
    # passed over, not counted above: files that hold no session (empty, summaries only)
    files_without_session: int = 0
    points_written: int = 0
    points_unchanged: int = 0
    points_deleted: int = 0
    texts_embedded: int = 0
    points_dense_filled: int = 0  # points given their dense vector by the dense pass
    glance: GlanceReport | None = None  # the glance a backfill starts with
    optimize_seconds: float = 0.0  # of `seconds`, spent waiting for the store to build its segments and graphs
    lines_skipped: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    scan: ScanReport | None = None

    def to_json(self) -> IndexAnswer:
        return {
            "sessions_indexed": self.sessions_indexed, "sessions_unchanged": self.sessions_unchanged,
            "sessions_forgotten": self.scan.sessions_forgotten if self.scan else 0,
            "files_without_session": self.files_without_session,
            "points_written": self.points_written, "points_unchanged": self.points_unchanged,
            "points_deleted": self.points_deleted, "texts_embedded": self.texts_embedded,
            "points_dense_filled": self.points_dense_filled, "optimize_seconds": round(self.optimize_seconds, 3),
            "lines_skipped": self.lines_skipped, "errors": self.errors, "seconds": round(self.seconds, 3),
            "sessions_scanned": self.scan.sessions_scanned if self.scan else 0,
            "tool_results_missing": self.scan.tool_results_missing if self.scan else 0,
            "glance_sessions": self.glance.sessions if self.glance else 0,
            "glance_points": self.glance.points if self.glance else 0,
            "glance_seconds": round(self.glance.seconds, 3) if self.glance else 0.0,
        }


def _new_report() -> IndexReport:
    from jacked.ingest.scan import ScanReport

    return IndexReport(scan=ScanReport())


def repo_id_of(cwd: str | None) -> str | None:
    """A stable id for a working directory (the real cwd, never the lossy folder name)."""
    if not cwd:
        return None
    return hashlib.blake2b(cwd.replace("\\", "/").rstrip("/").encode(), digest_size=8).hexdigest()


def _vec_key(model: str, text: str) -> str:
    return hashlib.blake2b(f"{model}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class Indexer:
    """Keeps the vector index in step with the catalog for one user."""

    def __init__(self, settings: Settings, catalog: Catalog | None = None, store: Any | None = None,
                 keep_store_open: bool = False) -> None:
        """`store` (an unopened VectorStore) replaces the configured one, e.g. in tests.
        `keep_store_open`: open the store at its first use and keep it (with the index's lock) until
        `close_store()` — for the one process that owns the index (the daemon)."""
        self.settings = settings
        self.catalog = catalog or Catalog(settings.catalog_path)
        self._store = store
        self.user = settings.user_name
        self.machine = getattr(settings, "machine", None) or socket.gethostname()
        self.model_name = getattr(settings, "embedding_model", None) or _default_model()
        self._dense: DenseEmbedder | None = None
        self._sparse: SparseEmbedder | None = None
        # Whether the store may hold points of this user that the catalog never recorded (a new
        # catalog beside an older index): a backfill decides it once, before it writes (what it
        # writes itself is marked in the catalog first); other runs, each time.
        self._store_has_user: bool | None = True
        self._glance: Glance | None = None  # a backfill's, while its glance points may be in the store
        self.keep_store_open = keep_store_open
        self._kept: Any = None  # the open store, when `keep_store_open`
        self._ahead: EmbedAhead | None = None  # a backfill's, during its lexical pass

    # ------------------------------------------------------------------ encoders
    @property
    def dense(self) -> DenseEmbedder:
        if self._dense is None:
            from jacked.index.embed import get_dense_embedder

            self._dense = get_dense_embedder(self.model_name, cache_dir=self.settings.home / "models")
        return self._dense

    def preload_dense(self) -> None:
        """Start loading the dense model on a thread, e.g. while the store loads (see
        `DenseEmbedder.load_in_background`)."""
        self.dense.load_in_background()

    @property
    def sparse(self) -> SparseEmbedder:
        if self._sparse is None:
            from jacked.index.embed import SparseEmbedder

            self._sparse = SparseEmbedder()
        return self._sparse

    def open_store(self, recreate: bool = False, must_exist: bool = False) -> Any:
        """The configured store, open for this model (created unless `must_exist`): a context manager
        that closes it on leaving, or, with `keep_store_open`, one that gives the kept store."""
        if not self.keep_store_open:
            return self._open_store(recreate, must_exist)
        return self._kept_store(recreate, must_exist)

    @contextmanager
    def _kept_store(self, recreate: bool, must_exist: bool) -> Iterator[Any]:
        if recreate:
            self.close_store()
        if self._kept is None:
            self._kept = self._open_store(recreate, must_exist)
        try:
            yield self._kept
        except BaseException:
            self.close_store()  # whatever went wrong, the next call starts from a fresh load
            raise

    def _open_store(self, recreate: bool = False, must_exist: bool = False) -> Any:
        from jacked.index.store import StoreNotFound

        store = self._store if self._store is not None else configured_store(self.settings, self.keep_store_open)
        if must_exist and not store_exists(store):
            raise StoreNotFound(f"no index in {self.settings.home} yet: run `jacked backfill` first")
        return store.open(self.dense.model_name, self.dense.dims, recreate=recreate)

    def reading_store(self) -> Any:
        """The store, open, for the length of a `with` block that only reads it."""
        return self.open_store(must_exist=True)

    @property
    def kept_store(self) -> Any:
        """The kept store while it is open (`keep_store_open`), else None."""
        return self._kept

    def close_store(self) -> None:
        """Close the kept store, if open (the next use opens it again)."""
        kept, self._kept = self._kept, None
        if kept is not None:
            kept.close()

    # ------------------------------------------------------------------ entry points
    def backfill(self, rebuild: bool = False, repo: str | None = None, progress: Progress | None = None) -> IndexReport:
        """Glance at the sessions not indexed yet, scan the Claude directory newest first, writing each
        chunk's lexical points as it goes, then fill in the dense vectors (newest sessions first); see
        the module doc."""
        from jacked.index.glance import Glance
        from jacked.ingest.privacy import Privacy

        t0 = time.perf_counter()
        privacy = Privacy.from_settings(self.settings)
        scanner = self._scanner(privacy)
        only = None
        if repo:
            only = lambda g: self._group_repo(g) == repo  # noqa: E731  # a one-line predicate
        report = _new_report()
        if rebuild:
            index_state.forget_user(self.catalog, self.user)
        log = BackfillLog(self.settings.home)
        self._store_has_user = None  # decided by the first chunk (see __init__)
        with self.open_store(recreate=rebuild) as store:
            # Kept apart while the passes write, the segments are merged once by the optimisation
            # at the end (see `EdgeStore.bulk`).
            with store.bulk():
                self._upgrade_payloads(store)
                glance = self._glance = Glance(self.catalog, self.user, self.machine, self.sparse, privacy,
                                               scanner.projects_dir, repo)

                def glance_progress(d: int, n: int) -> None:
                    log.glance(d, n)
                    if progress:
                        progress("glance", d, n)

                log.glance_start()
                report.glance = glance.run(store, glance_progress)
                log.glance_done()
                done: set[str] = set()
                self._ahead = (EmbedAhead(self.dense.embed_documents, self.dense.count_tokens_batch)
                               if EmbedAhead.worthwhile() else None)

                def scan_progress(d: int, n: int) -> None:
                    log.scan(d, n)
                    if progress:
                        progress("scan", d, n)

                def lexical(session_ids: list[str]) -> None:
                    # Sessions scanned: their lexical points now, before older sessions are read.
                    self._index_sessions(store, session_ids, report, None, lexical=True)
                    if self._ahead is not None:
                        self.remember_embedded(self._ahead.take(), report)
                    glance.drop(store, session_ids)  # their points are written (or they are not to be)
                    done.update(session_ids)
                    log.lexical(len(done))
                    if progress:
                        progress("lexical", len(done), log.total)

                try:
                    scan = scanner.scan(progress=scan_progress, only=only, on_chunk=lexical)
                    report.scan = scan
                    report.lines_skipped, report.errors = scan.lines_skipped, list(scan.errors)
                    # Sessions the chunks did not cover (restored from the archive, other agents', prompt-only).
                    lexical([sid for sid in scan.session_ids if sid not in done])
                except BaseException:
                    self._stop_ahead()  # its vectors are only a head start: dropped
                    raise
                self.remember_embedded(self._stop_ahead(), report)
                glance.finish(store)
                self._glance = None
                self.purge_forgotten(store)
                self._fill_dense(store, report, progress, log)
            if report.points_written + report.points_dense_filled >= OPTIMIZE_AFTER_POINTS:
                # Segments without an HNSW graph are searched point by point: at 100k points a
                # query costs ~18 ms that way, ~5 ms after this (which takes ~1.5 s per 1,000 points).
                log.phase("optimize")
                if progress:
                    progress("optimize", 0, 1)
                store.optimize()
                if progress:
                    progress("optimize", 1, 1)
            else:
                store.upkeep()
            report.optimize_seconds = float(getattr(store, "optimize_seconds", 0.0))
        report.seconds = time.perf_counter() - t0
        log.finish(report)
        return report

    def _stop_ahead(self) -> list[tuple[str, Sequence[float]]]:
        """Stop embedding ahead: the (text, vector) pairs embedded and not yet taken."""
        ahead, self._ahead = self._ahead, None
        return ahead.stop() if ahead is not None else []

    def remember_embedded(self, embedded: Sequence[tuple[str, Sequence[float]]], report: IndexReport) -> None:
        """Put (text, vector) pairs just embedded in the vector cache (where the passes look
        first), counted as embedded."""
        if embedded:
            model = self.dense.model_name
            index_state.cache_vectors(self.catalog, ((_vec_key(model, t), v) for t, v in embedded))
            report.texts_embedded += len(embedded)

    def _fill_dense(self, store: Any, report: IndexReport, progress: Progress | None, log: BackfillLog) -> None:
        """The dense pass (jacked.index.dense_pass): the dense vectors of the points written
        without one, newest sessions first."""
        DensePass(self, store, report, progress, log).run()

    def _upgrade_payloads(self, store: Any) -> None:
        """Give points written by an older jacked the payload fields filters now use, without
        rewriting them: 1 = `agent` (every point before it was Claude Code's); and mark every session
        stale when the extraction changed since its points were written."""
        if index_state.payload_version(self.catalog, self.user) < PAYLOAD_VERSION:
            store.set_payload_where({"agent": "claude"}, self.user)
            index_state.set_payload_version(self.catalog, self.user, PAYLOAD_VERSION)
        # Points extracted by an older version (e.g. with jacked's labels in their BM25 vectors) are
        # rewritten by the next index run: every session is stale once; unchanged texts keep their
        # cached dense vectors, so only the sparse side is computed again.
        from jacked.index.extract import EXTRACT_VERSION

        if index_state.extract_version(self.catalog, self.user) < EXTRACT_VERSION:
            index_state.reextract_all(self.catalog, self.user, EXTRACT_VERSION)

    def index_paths(self, groups: list[Any], progress: Progress | None = None) -> IndexReport:
        """Scan and index just these session groups (the hook's fast path)."""
        t0 = time.perf_counter()
        report = _new_report()
        with self.open_store() as store:
            self.index_groups(store, groups, report, progress)
        report.seconds = time.perf_counter() - t0
        return report

    def index_sessions(self, session_ids: list[str]) -> IndexReport:
        """Index these cataloged sessions (already scanned) when they changed."""
        t0 = time.perf_counter()
        report = _new_report()
        with self.open_store() as store:
            self._upgrade_payloads(store)
            self._index_sessions(store, session_ids, report, None)
            self.purge_forgotten(store)
        report.seconds = time.perf_counter() - t0
        return report

    def index_groups(self, store: Any, groups: list[Any], report: IndexReport,
                     progress: Progress | None = None) -> None:
        """Scan and index session groups into an already open store."""
        from jacked.ingest.privacy import Privacy

        self._upgrade_payloads(store)
        scanner = self._scanner(Privacy.from_settings(self.settings))
        assert report.scan is not None
        for g in groups:
            scanner.scan_group(g, report.scan)
        report.lines_skipped = report.scan.lines_skipped
        self._index_sessions(store, [g.session_id for g in groups], report, progress)
        self.purge_forgotten(store)

    def purge_forgotten(self, store: Any) -> int:
        """Take the points of sessions forgotten since the last run (`exclude` / `#nomem` caught
        them in a scan) out of the open store, and compact; how many points went. Two small
        queries when there is nothing to do (jacked.index.purge)."""
        from jacked.index.purge import purge_forgotten

        return purge_forgotten(self.catalog, store, self.user, _vec_key)[0]

    def _group_repo(self, group: Any) -> str | None:
        for path in group.all_paths():
            from jacked.sources.reader import first_record
            from jacked.sources.claude.discover import repo_name_of

            rec = first_record(path)
            if rec and rec.get("cwd"):
                return repo_name_of(rec["cwd"])
        return None

    # ------------------------------------------------------------------ core
    def _stale_sessions(self, session_ids: Iterable[str]) -> tuple[list[str], int, int]:
        """(sessions whose rows changed since this user indexed them (or left dirty by a crash), in
        the order given; how many others are unchanged; how many of `session_ids` are files that
        hold no session). A session whose points are written and wait only for dense vectors
        (`LEXICAL`) is not stale: the dense pass fills them in."""
        wanted = list(dict.fromkeys(session_ids))
        where = {sid: i for i, sid in enumerate(wanted)}
        stale, fresh, unlisted = [], 0, 0
        for sid, content_seq, indexed_seq, dirty, listed in index_state.index_progress(self.catalog, self.user):
            if sid not in where:
                continue
            if not listed:
                unlisted += 1
            if indexed_seq is None or dirty not in (0, index_state.LEXICAL) or content_seq != indexed_seq:
                stale.append(sid)  # one without a session too: its earlier points, if any, go
            elif listed:
                fresh += 1
        stale.sort(key=where.__getitem__)
        return stale, fresh, unlisted

    def _scanner(self, privacy: Privacy) -> Scanner:
        from jacked.ingest.agents import source_roots
        from jacked.ingest.scan import Scanner

        return Scanner(self.catalog, self.settings.claude_dir, source_roots(self.settings.disabled_sources),
                       archive=self.settings.archive, privacy=privacy)

    def _index_sessions(self, store: Any, session_ids: Iterable[str], report: IndexReport,
                        progress: Progress | None, lexical: bool = False) -> None:
        """Index the stale ones of `session_ids`; with `lexical`, dense vectors not in the cache
        are left for the dense pass (the points are written with their BM25 vector only)."""
        from jacked.index.extract import Extractor

        extractor = Extractor(self.catalog, self._count_tokens, self.dense.max_tokens, self.dense.count_tokens_batch)
        stale, fresh, unlisted = self._stale_sessions(session_ids)
        report.sessions_unchanged += fresh
        report.files_without_session += unlisted
        from jacked.index.store import SearchFilter

        # A user with no points at all needs no per-session look into the store (glance points do
        # not count: the backfill replaces them itself). Asked again on each of a backfill's
        # chunks, the sessions of every chunk after the first were looked up in the store one
        # scroll per batch, finding nothing (3.6 of 25 s of the lexical pass at 1,000 sessions, profiled).
        if stale and (self._glance is None or self._store_has_user is None):
            held = store.count(SearchFilter(user_name=self.user))
            if held and self._glance is not None and self._glance.live:
                held -= self._glance.count(store)
            self._store_has_user = held > 0
        pending: list[tuple[str, int, list[Document]]] = []
        pending_docs = 0
        for i, sid in enumerate(stale):
            row = self.catalog.get_session_row(sid)
            docs = extractor.documents(sid)
            pending.append((sid, row["content_seq"] if row else 0, docs))
            pending_docs += len(docs)
            if pending_docs >= (LEXICAL_BATCH_DOCS if lexical else BATCH_DOCS):
                self._write_batch(store, pending, report, lexical)
                pending, pending_docs = [], 0
                if lexical:
                    store.upkeep()
            if progress:
                progress("index", i + 1, len(stale))
        if pending:
            self._write_batch(store, pending, report, lexical)
        if stale and not lexical:
            store.upkeep()

    def _known_points(self, session_ids: list[str], store: Any) -> tuple[dict[str, dict[str, str]], set[str]]:
        """session id → point id → content hash of what the index holds for each session (by this
        user): from the catalog, or, where its last run was interrupted (or, if the store may hold
        points the catalog does not know of, never recorded), from the store itself (one scroll for
        all of those sessions); and the ids of the sessions asked there."""
        known: dict[str, dict[str, str]] = {}
        ask: list[str] = []
        for sid in session_ids:
            known[sid], complete = index_state.indexed_points(self.catalog, sid, self.user)
            if complete is False or (complete is None and self._store_has_user):
                ask.append(sid)
                known[sid] = {}
        if ask:
            from jacked.index.content_types import DENSE_TYPES
            from jacked.index.store import SearchFilter

            for h in store.scroll(SearchFilter(session_ids=ask, user_name=self.user),
                                  fields=["session_id", "content_hash", "content_type", "embedding_model"]):
                # a point of a dense type with no embedding model has no dense vector yet
                waits = h.payload.get("content_type") in DENSE_TYPES and not h.payload.get("embedding_model")
                held = known.get(str(h.payload.get("session_id")))
                if held is not None:
                    held[h.id] = (index_state.PENDING if waits else "") + str(h.payload.get("content_hash", ""))
        return known, set(ask)

    def _write_batch(self, store: Any, batch: list[tuple[str, int, list[Document]]],
                     report: IndexReport, lexical: bool = False) -> None:
        """Write what changed in these sessions. With `lexical`, a dense document whose vector is
        not cached is written with its BM25 vector only and recorded as waiting (`PENDING`);
        a point already written that way, with the same text, is left as it is."""
        from jacked.index.store import Point

        model = self.dense.model_name
        pending_mark = index_state.PENDING
        to_write: list[tuple[Document, str, str]] = []  # (document, content hash, point id)
        to_delete: list[str] = []
        waiting: set[str] = set()  # sessions left with points that wait for their dense vector
        recorded: list[tuple[str, str, str, str]] = []  # (point id, session id, content type, hash)
        known_by_session, asked = self._known_points([sid for sid, _, _ in batch], store)
        for sid, _, docs in batch:
            known = known_by_session[sid]
            want = {}
            for d in docs:
                h = d.content_hash(model)
                pid = d.point_id  # a uuid5 of its key: computed once
                want[pid] = h
                was = known.get(pid)
                if was == h or (lexical and was == pending_mark + h):
                    report.points_unchanged += 1
                    if was != h:
                        waiting.add(sid)
                    if sid in asked:  # found in the store, not in the catalog: recorded now
                        recorded.append((pid, sid, d.content_type, was))
                else:
                    to_write.append((d, h, pid))
            to_delete += [pid for pid in known if pid not in want]
        index_state.mark_dirty(self.catalog, [sid for sid, _, _ in batch], self.user)
        dense_texts = [d.text for d, _, _ in to_write if d.dense]
        if lexical:
            dense_vecs = self.cached_vectors(dense_texts)
            if self._ahead is not None:
                self._ahead.offer(t for t in dense_texts if t not in dense_vecs)
        else:
            dense_vecs = self._dense_vectors(dense_texts, report)
        sparse_vecs = self.sparse.embed_documents([searchable(d.content_type, d.text) for d, _, _ in to_write])
        rows_by_sid = {sid: self.catalog.get_session_row(sid) or {} for sid, _, _ in batch}
        points = []
        for (d, h, pid), sv in zip(to_write, sparse_vecs):
            dense = dense_vecs.get(d.text) if d.dense else None
            payload = self._payload(d, h, rows_by_sid[d.session_id])
            if d.dense and dense is None:
                payload["embedding_model"] = None  # set by the dense pass with the vector
                waiting.add(d.session_id)
                recorded.append((pid, d.session_id, d.content_type, pending_mark + h))
            else:
                recorded.append((pid, d.session_id, d.content_type, h))
            points.append(Point(id=pid, payload=payload, dense=dense, sparse=sv))
        if points:
            store.upsert(points)
        if to_delete:
            store.delete_points(to_delete)
        index_state.record_indexed(
            self.catalog, self.user, to_delete, recorded,
            [(sid, seq) for sid, seq, _ in batch], lexical=sorted(waiting))
        report.points_written += len(points)
        report.points_deleted += len(to_delete)
        report.sessions_indexed += sum(1 for _, _, docs in batch if docs)  # listed sessions only

    def cached_vectors(self, texts: list[str]) -> dict[str, list[float]]:
        """Vectors of those distinct texts the cache holds (nothing is embedded)."""
        model = self.dense.model_name
        keys = {_vec_key(model, t): t for t in dict.fromkeys(texts)}
        return {keys[k]: v for k, v in index_state.cached_vectors(self.catalog, list(keys)).items()}

    def _dense_vectors(self, texts: list[str], report: IndexReport) -> dict[str, list[float]]:
        """Vectors for distinct texts: from the cache, else embedded (and cached)."""
        found = self.cached_vectors(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            embedded = list(zip(missing, self.dense.embed_documents(missing)))
            self.remember_embedded(embedded, report)
            found.update(embedded)
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


def configured_store(settings: Settings, optimize_in_child: bool = False) -> Any:
    """The (not yet opened) store the settings name: edge shard in JACKED_HOME, or a server.
    `optimize_in_child`: for the process that keeps the store open (see `EdgeStore`)."""
    from jacked.index.store import open_store

    segment_mb = getattr(settings, "max_segment_mb", None)
    return open_store(getattr(settings, "backend", "edge") or "edge", settings.home,
                      getattr(settings, "qdrant_url", None), getattr(settings, "qdrant_api_key", None),
                      lock_timeout=float(getattr(settings, "lock_timeout_s", 60)),
                      max_segment_kb=None if segment_mb is None else int(segment_mb) * 1024,
                      optimize_in_child=optimize_in_child)


def store_exists(store: Any) -> bool:
    """Whether an edge shard exists on disk (a server collection is assumed to)."""
    shard = getattr(store, "shard_path", None)
    return shard is None or Path(shard).exists()


class BackfillLog:
    """`JACKED_HOME/backfill.json`: how far a backfill is, rewritten (atomically, at most once a
    second) as it goes, for `jacked status`. The catalog holds the lasting facts (which sessions
    and points are done); this file adds who is working, since when and how fast."""

    def __init__(self, home: Path) -> None:
        self.path = Path(home) / PROGRESS_FILE
        now = time.time()
        self.data: dict[str, Any] = {
            "pid": os.getpid(), "started_at": now, "updated_at": now, "phase": "scan",
            "glance": {"sessions_done": 0, "sessions_total": 0, "started_at": None, "finished_at": None},
            "scan": {"done": 0, "total": 0},
            "lexical": {"sessions_done": 0, "sessions_total": 0, "started_at": now, "finished_at": None},
            "dense": {"points_done": 0, "points_total": 0, "texts_embedded": 0, "started_at": None,
                      "finished_at": None},
        }
        self._written = 0.0
        self._write(force=True)

    @property
    def total(self) -> int:
        return int(self.data["scan"]["total"])

    def glance_start(self) -> None:
        self.data["phase"] = "glance"
        self.data["glance"]["started_at"] = time.time()
        self._write(force=True)

    def glance(self, done: int, total: int) -> None:
        self.data["glance"].update(sessions_done=done, sessions_total=total)
        self._write(force=done == 0)

    def glance_done(self) -> None:
        self.data["glance"]["finished_at"] = self.data["lexical"]["started_at"] = time.time()  # its ETA starts now
        self.phase("scan")

    def scan(self, done: int, total: int) -> None:
        self.data["scan"] = {"done": done, "total": total}
        self.data["lexical"]["sessions_total"] = total
        self._write()

    def lexical(self, done: int) -> None:
        self.data["phase"] = "lexical"
        lex = self.data["lexical"]
        lex["sessions_done"] = done
        lex["sessions_total"] = max(lex["sessions_total"], done)
        self._write()

    def dense_start(self, total: int) -> None:
        self.data["lexical"]["finished_at"] = time.time()
        self.data["phase"] = "dense"
        self.data["dense"].update(points_total=total, started_at=time.time())
        self._write(force=True)

    def dense(self, done: int, texts: int) -> None:
        self.data["dense"].update(points_done=done, texts_embedded=texts)
        self._write()

    def phase(self, name: str) -> None:
        self.data["phase"] = name
        self._write(force=True)

    def finish(self, report: IndexReport) -> None:
        now = time.time()
        self.data["phase"] = "done"
        self.data["lexical"]["finished_at"] = self.data["lexical"]["finished_at"] or now
        if self.data["dense"]["started_at"]:
            self.data["dense"]["finished_at"] = now
        self.data["seconds"] = round(report.seconds, 3)
        self._write(force=True)

    def _write(self, force: bool = False) -> None:
        now = time.time()
        if not force and now - self._written < 1.0:
            return
        self._written = now
        self.data["updated_at"] = now
        try:
            from jacked.util.fs import atomic_write

            import json

            atomic_write(self.path, json.dumps(self.data).encode(), mode=0o600)
        except OSError:
            pass  # progress is a courtesy; the catalog has the facts


def backfill_state(home: Path) -> dict[str, Any] | None:
    """The last backfill's progress record, with `running` (its process is alive) and, for a pass
    under way, `eta_seconds` from its pace so far; None if no backfill ever ran here."""
    import json

    try:
        data = json.loads((Path(home) / PROGRESS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    pid = int(data.get("pid") or 0)
    running = data.get("phase") != "done" and pid > 0 and _alive(pid)
    data["running"] = running
    now = time.time()
    for name, done_key, total_key in (("glance", "sessions_done", "sessions_total"),
                                      ("lexical", "sessions_done", "sessions_total"),
                                      ("dense", "points_done", "points_total")):
        part = data.get(name) or {}
        done, total, since = part.get(done_key) or 0, part.get(total_key) or 0, part.get("started_at")
        part["eta_seconds"] = None
        if running and since and not part.get("finished_at") and 0 < done < total:
            part["eta_seconds"] = round((total - done) * (now - since) / done)
    return data


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True

