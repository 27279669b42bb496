"""The embedded backend: one Qdrant Edge shard (``qdrant-edge-py``) in a local directory.

Layout of the index directory (``JACKED_HOME/index/``)::

    shard/               the Edge shard (segments, WAL, edge_config.json)
    jacked-index.json    which dense model / dims built it (the model record)
    index.lock           exclusive lock, held for as long as a process has the shard open
    index.owner.json     who holds the lock (pid, command, since), for StoreBusy messages

Why the lock: an Edge shard is single-process (a second open fails at once on its WAL
lock), and jacked runs as hooks, CLI and MCP at the same time. Every open takes
``index.lock`` and waits up to ``lock_timeout`` seconds, then raises :class:`StoreBusy`.

Durability: the shard's write-ahead log records every update before ``update()`` returns,
so a process killed with SIGKILL mid-write loses at most the update in flight and the shard
reopens by replaying the log. ``close()`` flushes segments to disk (which also bounds the
replay work on the next open). A new shard is created under a temporary name and renamed
into place, so a crash during creation never leaves a half-made index. Segment
optimisation (HNSW build, vacuum) is *not* run on close: it costs minutes on large indexes
(~160 s for 100k 384-d points on 2 cores) and filtered queries are fast without it; the
indexer may call :meth:`EdgeStore.optimize` after a large backfill.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from jacked.util.fs import atomic_write
from jacked.index.embed import SparseVector
from jacked.index.store.base import (
    DENSE_VECTOR,
    FLOAT_INDEXES,
    KEYWORD_INDEXES,
    RRF_K,
    SPARSE_VECTOR,
    Hit,
    Point,
    SearchFilter,
    StoreBusy,
    StoreError,
    StoreNotFound,
    VectorStore,
    as_list,
    canonical_id,
    check_model,
    count_values,
    point_vectors,
    prepare_payload,
    where_conditions,
)

#: Version of the on-disk layout / model record.
_SCHEMA = 1
_META = "jacked-index.json"
_SHARD = "shard"
_LOCK = "index.lock"
_OWNER = "index.owner.json"
#: Points per update call: bounds one WAL record and the Python->Rust conversion.
_UPSERT_BATCH = 512
#: Flush segments after this many written points, so a crash never leaves a long WAL to replay.
_FLUSH_EVERY = 5_000
_SCROLL_PAGE = 512
#: Facet values returned at most by count_by (more than any sane number of users / types).
_FACET_LIMIT = 100_000


class EdgeStore(VectorStore):
    """jacked's index in an embedded Qdrant Edge shard under ``path``.

    Args:
        path: The index directory (e.g. ``JACKED_HOME/index``); created if missing.
        lock_timeout: Seconds to wait for another process to release the index before
            raising :class:`StoreBusy` (0 = try once).
    """

    backend = "edge"

    def __init__(self, path: Path, lock_timeout: float = 60) -> None:
        super().__init__()
        self.path = Path(path)
        self.lock_timeout = float(lock_timeout)
        self._shard: Any = None  # qdrant_edge.EdgeShard while open
        self._lock: Any = None  # filelock.FileLock while held
        # Serialises calls into the shard: one EdgeStore may be shared by threads (MCP).
        self._mutex = threading.RLock()
        self._unflushed = 0

    # -- lifecycle ---------------------------------------------------------

    @property
    def shard_path(self) -> Path:
        """Directory of the Edge shard itself."""
        return self.path / _SHARD

    def open(self, dense_model: str | None, dims: int | None, *, recreate: bool = False) -> EdgeStore:
        """Lock and open the shard, creating it for ``dense_model``/``dims`` if missing.

        See :meth:`VectorStore.open`. Raises :class:`StoreBusy` when another process keeps
        the index longer than ``lock_timeout``.
        """
        if self._shard is not None:
            raise StoreError(f"index {self.path} is already open in this store")
        if (dense_model is None) != (dims is None):
            raise ValueError("give both dense_model and dims, or neither")
        if recreate and dense_model is None:
            raise ValueError("recreate needs the dense model and dims of the new index")
        self.path.mkdir(parents=True, exist_ok=True)
        self._acquire_lock()
        try:
            self._open_locked(dense_model, dims, recreate)
        except BaseException:
            shard, self._shard = self._shard, None
            if shard is not None:
                shard.close()
            self._dense_model = self._dims = None
            self._release_lock()
            raise
        return self

    def _open_locked(self, dense_model: str | None, dims: int | None, recreate: bool) -> None:
        import qdrant_edge as qe

        self._sweep_leftovers()
        if recreate:
            self._drop()
        meta = self._read_meta()
        if self.shard_path.is_dir():
            if meta is None:
                meta = self._recover_meta(dense_model, dims)
            if dense_model is not None and dims is not None:
                check_model(meta["dense_model"], meta["dims"], dense_model, dims)
            with self._errors("open"):
                self._shard = qe.EdgeShard.load(str(self.shard_path))
        else:
            if dense_model is None or dims is None:
                raise StoreNotFound(f"no index at {self.path} yet: run `jacked backfill` first")
            meta = {"dense_model": dense_model, "dims": int(dims)}
            self._create(meta)
            with self._errors("open"):
                self._shard = qe.EdgeShard.load(str(self.shard_path))
        self._dense_model = str(meta["dense_model"])
        self._dims = int(meta["dims"])
        self._ensure_indexes()

    def close(self) -> None:
        """Flush segments, close the shard and release the lock. Idempotent."""
        with self._mutex:
            shard, self._shard = self._shard, None
            try:
                if shard is not None:
                    try:
                        with self._errors("flush"):
                            shard.flush()
                    finally:
                        shard.close()
            finally:
                self._release_lock()
                self._dense_model = None
                self._dims = None

    def __del__(self) -> None:  # a forgotten close() must not keep the lock forever
        try:
            if self._shard is not None or self._lock is not None:
                self.close()
        except Exception:
            pass

    def flush(self) -> None:
        """Write pending changes to the segments now (``close()`` does it too)."""
        with self._mutex, self._errors("flush"):
            self._require().flush()
            self._unflushed = 0

    def optimize(self) -> None:
        """Run Qdrant's segment optimizers (HNSW build, vacuum of deleted points), blocking.

        Costly on large indexes (minutes for ~100k points on 2 cores); worth it once after
        a big backfill, never per hook run.
        """
        with self._mutex, self._errors("optimize"):
            self._require().optimize()

    # -- lock --------------------------------------------------------------

    def _acquire_lock(self) -> None:
        from filelock import FileLock, Timeout

        # thread_local=False: the store may be opened in one thread and closed in another.
        lock = FileLock(str(self.path / _LOCK), thread_local=False)
        try:
            lock.acquire(timeout=max(self.lock_timeout, 0.0))
        except Timeout:
            raise StoreBusy(self._busy_message()) from None
        self._lock = lock
        if self.on_locked is not None:
            self.on_locked()  # e.g. a hook returns now: later readers will wait for this process
        owner = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))[:200],
            "since": time.time(),
        }
        try:
            _atomic_write_json(self.path / _OWNER, owner)
        except OSError:
            pass  # only used for messages

    def _release_lock(self) -> None:
        lock, self._lock = self._lock, None
        if lock is None:
            return
        try:
            (self.path / _OWNER).unlink(missing_ok=True)
        except OSError:
            pass
        lock.release()

    def _busy_message(self) -> str:
        who = "another process"
        try:
            owner = json.loads((self.path / _OWNER).read_text(encoding="utf-8"))
            since = time.strftime("%H:%M:%S", time.localtime(owner["since"]))
            who = f"process {owner['pid']} ({owner.get('command') or '?'}) on {owner.get('host', '?')}, since {since}"
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return (
            f"index {self.path} is busy: {who} holds it; waited {self.lock_timeout:g}s — "
            "try again when it finishes"
        )

    # -- creation / model record ------------------------------------------

    def _read_meta(self) -> dict[str, Any] | None:
        try:
            meta = json.loads((self.path / _META).read_text(encoding="utf-8"))
            return {"dense_model": str(meta["dense_model"]), "dims": int(meta["dims"])}
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"{self.path / _META} is unreadable ({exc}): run `jacked backfill --rebuild`") from exc

    def _write_meta(self, meta: dict[str, Any]) -> None:
        _atomic_write_json(
            self.path / _META,
            {"schema": _SCHEMA, "dense_model": meta["dense_model"], "dims": int(meta["dims"]),
             "dense_vector": DENSE_VECTOR, "sparse_vector": SPARSE_VECTOR, "created_at": time.time()},
        )

    def _recover_meta(self, dense_model: str | None, dims: int | None) -> dict[str, Any]:
        """A shard without a model record: adopt it only if it is empty and dims fit."""
        import qdrant_edge as qe

        try:
            cfg = json.loads((self.shard_path / "edge_config.json").read_text(encoding="utf-8"))
            shard_dims = int(cfg["vectors"][DENSE_VECTOR]["size"])
        except (OSError, ValueError, KeyError, TypeError):
            shard_dims = None
        if dense_model is not None and dims is not None and shard_dims == int(dims):
            with self._errors("open"):
                shard = qe.EdgeShard.load(str(self.shard_path))
                try:
                    empty = shard.count(qe.CountRequest(exact=True)) == 0
                finally:
                    shard.close()
            if empty:
                meta = {"dense_model": dense_model, "dims": int(dims)}
                self._write_meta(meta)
                return meta
        raise StoreError(
            f"index at {self.path} does not record which model built it: run `jacked backfill --rebuild`"
        )

    def _create(self, meta: dict[str, Any]) -> None:
        """Create the shard under a temporary name, then rename it into place."""
        import qdrant_edge as qe

        tmp = self.path / f".shard-tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        config = qe.EdgeConfig(
            vectors={DENSE_VECTOR: qe.EdgeVectorParams(size=int(meta["dims"]), distance=qe.Distance.Cosine)},
            sparse_vectors={SPARSE_VECTOR: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        )
        try:
            with self._errors("create"):
                shard = qe.EdgeShard.create(str(tmp), config)
                try:
                    for name, schema in _index_schemas(qe):
                        shard.update(qe.UpdateOperation.create_field_index(name, schema))
                    shard.flush()
                finally:
                    shard.close()
            # The model record goes first: a crash before the rename leaves a record with no
            # shard, which the next open simply recreates.
            self._write_meta(meta)
            os.rename(tmp, self.shard_path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _drop(self) -> None:
        """Remove the shard and its model record (recreate). Rename first: never half-deleted."""
        if self.shard_path.exists():
            trash = self.path / f".trash-{uuid.uuid4().hex[:8]}"
            os.rename(self.shard_path, trash)
            shutil.rmtree(trash, ignore_errors=True)
        (self.path / _META).unlink(missing_ok=True)

    def _sweep_leftovers(self) -> None:
        """Remove temp shards / trash left by a crashed process (we hold the lock)."""
        for child in self.path.iterdir():
            if child.name.startswith((".shard-tmp-", ".trash-")):
                shutil.rmtree(child, ignore_errors=True)

    def _ensure_indexes(self) -> None:
        """Create any payload index missing from an older shard (idempotent)."""
        import qdrant_edge as qe

        with self._mutex, self._errors("create payload index"):
            have = set(self._shard.info().payload_schema)
            for name, schema in _index_schemas(qe):
                if name not in have:
                    self._shard.update(qe.UpdateOperation.create_field_index(name, schema))

    # -- helpers -----------------------------------------------------------

    def _require(self) -> Any:
        if self._shard is None:
            raise StoreError("store is not open: call open(model, dims) first")
        return self._shard

    def _describe(self) -> str:
        return f"edge index {self.path}"

    def _condition(self, op: str, key: str, operand: Any) -> Any:
        import qdrant_edge as qe

        if op == "value":
            return qe.FieldCondition(key=key, match=qe.MatchValue(operand))
        if op == "any":
            return qe.FieldCondition(key=key, match=qe.MatchAny(operand))
        return qe.FieldCondition(key=key, range=qe.RangeFloat(gte=operand))  # "gte"

    def _all_of(self, conditions: list[Any]) -> Any:
        import qdrant_edge as qe

        return qe.Filter(must=conditions)

    # -- writes ------------------------------------------------------------

    def upsert(self, points: Sequence[Point]) -> None:
        """Insert or replace points; each batch is in the WAL when this returns."""
        import qdrant_edge as qe

        shard = self._require()
        for start in range(0, len(points), _UPSERT_BATCH):
            batch = [qe.Point(p.id, point_vectors(p, qe.SparseVector), prepare_payload(p.payload))
                     for p in points[start:start + _UPSERT_BATCH]]
            with self._mutex, self._errors("upsert"):
                shard.update(qe.UpdateOperation.upsert_points(batch))
                self._unflushed += len(batch)
                if self._unflushed >= _FLUSH_EVERY:
                    shard.flush()
                    self._unflushed = 0

    def delete_points(self, ids: Sequence[str]) -> None:
        """Delete points by id."""
        import qdrant_edge as qe

        if not ids:
            return
        with self._mutex, self._errors("delete"):
            self._require().update(qe.UpdateOperation.delete_points(list(ids)))

    def delete_where(self, user_name: str | None = None, session_id: str | None = None) -> int:
        """Delete the points of a user and/or a session; return how many went."""
        import qdrant_edge as qe

        flt = self._filter(None, where_conditions(user_name, session_id))
        with self._mutex, self._errors("delete"):
            shard = self._require()
            n = shard.count(qe.CountRequest(exact=True, filter=flt))
            if n:
                shard.update(qe.UpdateOperation.delete_points_by_filter(flt))
        return int(n)

    def set_payload_where(self, values: dict[str, Any], user_name: str) -> None:
        import qdrant_edge as qe

        flt = self._filter(None, where_conditions(user_name, None))
        with self._mutex, self._errors("update"):
            self._require().update(qe.UpdateOperation.set_payload_by_filter(flt, values))

    # -- reads -------------------------------------------------------------

    def _search(self, dense: list[float] | None, sparse: SparseVector | None, flt: SearchFilter | None,
                limit: int, prefetch: int) -> list[Hit]:
        """Hybrid (RRF over dense + bm25 prefetches) or single-vector search; see base."""
        import qdrant_edge as qe

        f = self._filter(flt)
        queries = []
        if dense is not None:
            queries.append(qe.Query.Nearest(as_list(dense), using=DENSE_VECTOR))
        if sparse is not None:
            queries.append(qe.Query.Nearest(qe.SparseVector(list(sparse.indices), list(sparse.values)), using=SPARSE_VECTOR))
        if len(queries) == 2:
            n = max(prefetch, limit)
            # The filter goes on each prefetch (candidates must already match it) and on
            # the fusion stage too.
            request = qe.QueryRequest(
                limit=limit,
                prefetches=[qe.Prefetch(limit=n, query=q, filter=f) for q in queries],
                query=qe.Fusion.Rrf(k=RRF_K),
                filter=f,
                with_payload=True,
                with_vector=False,
            )
        else:
            request = qe.QueryRequest(limit=limit, query=queries[0], filter=f, with_payload=True, with_vector=False)
        with self._mutex, self._errors("search"):
            points = self._require().query(request)
        return [Hit(id=str(p.id), score=float(p.score), payload=dict(p.payload or {})) for p in points]

    def _query_leg(self, using: str, vector: Any, flt: Any, limit: int, fields: list[str] | None) -> list[Hit]:
        # Plain queries, one per leg: measured on 100k points, a `query_batch` of the same two
        # costs twice as much once payloads are asked for (~19 ms against ~8 ms).
        import qdrant_edge as qe

        if isinstance(vector, SparseVector):
            vector = qe.SparseVector(list(vector.indices), list(vector.values))
        payload: Any = True if fields is None else (qe.PayloadSelector.Include(list(fields)) if fields else False)
        request = qe.QueryRequest(limit=limit, query=qe.Query.Nearest(vector, using=using), filter=flt,
                                  with_payload=payload, with_vector=False)
        with self._mutex, self._errors("search"):
            points = self._require().query(request)
        return [Hit(id=str(p.id), score=float(p.score), payload=dict(p.payload or {})) for p in points]

    def count(self, flt: SearchFilter | None = None) -> int:
        """Exact number of points matching ``flt``."""
        import qdrant_edge as qe

        if flt is not None and flt.matches_nothing():
            return 0
        with self._mutex, self._errors("count"):
            return int(self._require().count(qe.CountRequest(exact=True, filter=self._filter(flt))))

    def count_by(self, field: str) -> dict[str, int]:
        """Points per value of ``field``: exact facet on indexed fields, else a payload scroll."""
        import qdrant_edge as qe

        if field in KEYWORD_INDEXES:
            with self._mutex, self._errors("facet"):
                hits = self._require().facet(qe.FacetRequest(key=field, limit=_FACET_LIMIT, exact=True))
            # The exact facet keeps values whose points were all deleted, with count 0.
            return {str(h.value): int(h.count) for h in hits if h.count > 0}
        # Facets need a keyword index; other fields are counted from their payload alone.
        return count_values(self.scroll(None, [field]), field)

    def scroll(self, flt: SearchFilter | None = None, fields: list[str] | None = None) -> Iterator[Hit]:
        """Stream points matching ``flt`` with the payload ``fields`` (all if None)."""
        import qdrant_edge as qe

        if flt is not None and flt.matches_nothing():
            return
        f = self._filter(flt)
        with_payload: Any = True if fields is None else (qe.PayloadSelector.Include(list(fields)) if fields else False)
        offset: Any = None
        while True:
            with self._mutex, self._errors("scroll"):
                records, offset = self._require().scroll(
                    qe.ScrollRequest(offset=offset, limit=_SCROLL_PAGE, filter=f, with_payload=with_payload, with_vector=False)
                )
            for r in records:
                yield Hit(id=str(r.id), score=0.0, payload=dict(r.payload or {}))
            if offset is None:
                return

    def retrieve(self, ids: Sequence[str], fields: list[str] | None = None) -> list[Hit]:
        """Points by id, in the order given, with the payload ``fields`` (all when None);
        unknown ids are skipped."""
        import qdrant_edge as qe

        if not ids:
            return []
        payload: Any = True if fields is None else qe.PayloadSelector.Include(list(fields))
        with self._mutex, self._errors("retrieve"):
            # retrieve() needs with_payload / with_vector positionally, despite the stub.
            records = self._require().retrieve(list(ids), payload, False)
        by_id = {str(r.id): r for r in records}
        out = []
        for i in ids:
            r = by_id.get(canonical_id(i))
            if r is not None:
                out.append(Hit(id=str(r.id), score=0.0, payload=dict(r.payload or {})))
        return out


def _index_schemas(qe: Any) -> list[tuple[str, Any]]:
    return [(name, qe.PayloadSchemaType.Keyword) for name in KEYWORD_INDEXES] + [
        (name, qe.PayloadSchemaType.Float) for name in FLOAT_INDEXES
    ]


def _atomic_write_json(path: Path, data: Any) -> None:
    """Write JSON whole or not at all, fsynced: readers never see half a file."""
    atomic_write(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"), mode=0o644, fsync=True)
