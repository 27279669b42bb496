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
into place, so a crash during creation never leaves a half-made index.

The daemon (`jacked.surfaces.daemon`) opens the shard once and keeps it for its whole life; with
``JACKED_DAEMON=off`` each process opens and closes it around its work, waiting on the lock. Segment
optimisation (HNSW build, vacuum) is *not* run on close: it costs minutes on large indexes
(~160 s for 100k 384-d points on 2 cores) and filtered queries are fast without it; the
indexer may call :meth:`EdgeStore.optimize` after a large backfill. The daemon's store runs it in
a child process (`optimize_in_child`, `jacked.index.store.optimizer`) so that it goes on answering.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from jacked.util.fs import atomic_write, copy_tree_sparse, read_only_dir
from jacked.util.memory import trim_heap
from jacked.index.embed import SparseVector
from jacked.index.store.base import (
    DENSE_VECTOR,
    FLOAT_INDEXES,
    KEYWORD_INDEXES,
    OBSOLETE_INDEXES,
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

_log = logging.getLogger("jacked.index")

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
#: Writes since the optimizers last ran, kept across processes (hooks write a few points each).
_UPKEEP = "index.upkeep.json"
#: Points written (upserts, vector updates) after which a writer runs the optimizers: they turn
#: the appendable segment — whose indexes live in RAM and whose pages a writer keeps mapped —
#: into memory-mapped, indexed segments, so neither grows with the corpus.
OPTIMIZE_EVERY = 20_000
#: Largest segment the optimizers build by default (the `max_segment_mb` setting), in KB of dense
#: vectors (~85k points of 384 dims): a merge reads at most this much at once, however large the
#: index grows. Every
#: segment costs each load its flag files (15 of 1 MB) and each query one
#: more graph walk: with 32 MB, 11 segments at 10,000 sessions and a cold search mapping up to
#: 320 MB at 3,000; with this, 4 at 3,000 sessions and 255 MB, the backfill no slower.
MAX_SEGMENT_KB = 128 * 1024
#: A segment with fewer vectors than this many KB is searched by reading every vector rather
#: than through its HNSW graph (Qdrant's default, 10 MB, is ~6,600 vectors of 384 dims). Read
#: from memory-mapped files a full scan maps the whole matrix: a segment of 11,000 vectors that a
#: backfill's second pass left half empty cost a cold search 35 MB that way. ~650 vectors here.
FULL_SCAN_KB = 1_000
#: Segments with more than this many KB of vectors get their indexes built when the optimizers
#: run (Qdrant's default: 10 MB). Points written by a backfill's lexical pass have no dense vector
#: yet, so their segments stayed under the default, counted as not optimised: every optimisation
#: merged them again with the newest points, past `MAX_SEGMENT_KB` — one 357 MB segment at 10,000
#: sessions, the optimisation mapping 600 MB at 3,000. With a low threshold they are indexed,
#: and so capped, once: 280 MB at 3,000 sessions.
INDEXING_KB = 100
#: Segments the merge optimizer aims for before it merges small ones (Edge merges everything
#: into one or two by default: every optimisation then re-reads and re-indexes the whole index).
SEGMENTS = 4
#: Segments the optimizers keep apart during a bulk load (`EdgeStore.bulk`: a backfill). With
#: `SEGMENTS`, each optimisation merged the segment it had just built into the others: the
#: lexical pass's segments (no dense vectors, so not capped by `MAX_SEGMENT_KB`) grew into one
#: rewritten whole at every turn, and the dense pass, emptying it point by point, vacuumed it
#: again and again. Measured at 10,000 sessions (random vectors standing in for the model): the
#: optimisations took 402 s that way, 186 s with the segments kept apart plus 87 s for the one
#: merge down to `SEGMENTS` at the end.
BULK_SEGMENTS = 64
#: Where the shard's parts live. Every part is memory-mapped and read on demand ("cold"), never
#: loaded whole: a process maps the pages a query touches (the HNSW path, a few posting lists,
#: the payloads shown), not the index. The OS page cache keeps the hot ones for everyone.
#: Payload fields whose values get HNSW links of their own in the dense graph (Qdrant's "payload
#: links"), so that a filter on one of them finds the nearest points among those that match
#: however few and scattered they are. Building them is most of a graph build after the graph
#: itself, so only filters that pick scattered points and are searched by the dense leg get
#: them: content type, repo, coding agent and time. `session_id`'s values hold too few points to
#: be searched through the graph anyway; a laptop's points have one `user_name` (a filter on it
#: keeps everything); a subagent type's texts sit together in the graph. Those three are searched
#: with ACORN instead (`_UNLINKED`). On the generated bank's vectors (85,000 points, one segment,
#: the size `MAX_SEGMENT_KB` caps): the optimisation took 40 s of CPU against 79 s with links on
#: every field and `EF_CONSTRUCT` 100, and the dense leg's recall@150 under 22 filters did not move
#: (0.86 unfiltered in both; the same within ±0.03 per filter, over 30 queries).
LINKED_FIELDS = frozenset({"content_type", "repo_name", "agent", "ts"})
_UNLINKED = frozenset(KEYWORD_INDEXES) - LINKED_FIELDS
#: Candidates the HNSW build keeps per insertion (Qdrant's default is 100). The dense leg asks for
#: 150 points, so its searches walk with ef 150 either way; what 100 added to the graph was not
#: measurable there (recall@150 0.868 against 0.862 with all payload links on), for ~38 % more CPU.
EF_CONSTRUCT = 64
#: After an optimiser child failed or was killed, `upkeep` leaves the index unoptimised this long.
_RETRY_AFTER_S = 300.0
_CONFIG_VERSION = 3  # 3: TurboQuant 4-bit codes of the dense vectors (2: int8)


class EdgeStore(VectorStore):
    """jacked's index in an embedded Qdrant Edge shard under ``path``.

    Args:
        path: The index directory (e.g. ``JACKED_HOME/index``); created if missing.
        lock_timeout: Seconds to wait for another process to release the index before
            raising :class:`StoreBusy` (0 = try once).
        max_segment_kb: Largest segment the optimizers build (see `MAX_SEGMENT_KB`).
        optimize_in_child: Run the optimizers in a child process (`jacked.index.store.optimizer`)
            while this one waits without the interpreter lock: for a process that keeps the shard
            open and must go on answering (the daemon).
    """

    backend = "edge"

    def __init__(self, path: Path, lock_timeout: float = 60, *, max_segment_kb: int = MAX_SEGMENT_KB,
                 optimize_in_child: bool = False) -> None:
        super().__init__()
        self.path = Path(path)
        self.lock_timeout = float(lock_timeout)
        self.max_segment_kb = int(max_segment_kb)
        self.optimize_in_child = optimize_in_child
        self._optimizer: Any = None  # the child optimising the shard now (a subprocess.Popen)
        self._optimizer_started = 0.0  # time.time() it started
        self._optimizer_stopped = False  # stop_optimizer() was called: no more children
        self._optimize_retry_at = 0.0  # after a failed child: not before this time.monotonic()
        self._shard: Any = None  # qdrant_edge.EdgeShard while open
        self._lock: Any = None  # jacked.util.flock.FileLock while held
        # Serialises calls into the shard: one EdgeStore may be shared by threads (MCP).
        self._mutex = threading.RLock()
        self._unflushed = 0
        self._written = 0  # points written by this process since the optimizers last ran
        self.optimize_seconds = 0.0  # spent in the optimizers (a backfill reports it)
        self._upkeep: dict[str, Any] = {}  # the index.upkeep.json read at open
        self._bulk = False  # inside `bulk()`: optimisations keep segments apart
        self._copy: Path | None = None  # the temp copy open of a read-only index (`_open_copy`)

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
        if read_only_dir(self.path):
            self._open_copy()
            return self
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
            self._upkeep = self._read_upkeep()
            with self._errors("open"):
                if _config_is_current(self.shard_path, self.max_segment_kb):
                    self._shard = load_shard(self.shard_path)
                else:
                    # A shard made by an older jacked: its configuration becomes this one (persisted
                    # by the load); its segments take it when the optimizers next rewrite them,
                    # which the next writer does (`upkeep`).
                    self._shard = load_shard(self.shard_path, self._config(qe, int(meta["dims"])))
                    self._upkeep["reoptimize"] = True
                    self._write_upkeep()
        else:
            if dense_model is None or dims is None:
                raise StoreNotFound(f"no index at {self.path} yet: run `jacked backfill` first")
            meta = {"dense_model": dense_model, "dims": int(dims)}
            self._create(meta)
            self._upkeep = {}
            with self._errors("open"):
                self._shard = load_shard(self.shard_path)
        self._dense_model = str(meta["dense_model"])
        self._dims = int(meta["dims"])
        self._ensure_indexes()

    def _open_copy(self) -> None:
        """Open a read-only index (a read-only JACKED_HOME): Edge has no read-only open (a load
        maps its files writable), so a sparse copy in a temp folder is loaded, and dropped at close."""
        meta = self._read_meta()
        if meta is None or not self.shard_path.is_dir():
            raise StoreNotFound(f"no index at {self.path} yet: run `jacked backfill` first")
        self._copy = Path(tempfile.mkdtemp(prefix="jacked-read-only-index-"))
        try:
            copy_tree_sparse(self.shard_path, self._copy / _SHARD)
            with self._errors("open"):
                self._shard = load_shard(self._copy / _SHARD)
        except BaseException:
            shutil.rmtree(self._copy, ignore_errors=True)
            self._copy = None
            raise
        self._dense_model, self._dims = str(meta["dense_model"]), int(meta["dims"])

    def close(self) -> None:
        """Flush segments, close the shard and release the lock. Idempotent."""
        with self._mutex:
            if self._copy is not None:  # a read-only index's copy: nothing to save
                shard, self._shard, copy, self._copy = self._shard, None, self._copy, None
                if shard is not None:
                    shard.close()
                shutil.rmtree(copy, ignore_errors=True)
                self._dense_model = self._dims = None
                return
            shard, self._shard = self._shard, None
            try:
                if shard is not None:
                    try:
                        with self._errors("flush"):
                            shard.flush()
                    finally:
                        shard.close()
                        self._save_written()
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
        """Run Qdrant's segment optimizers (HNSW build, merges, vacuum of deleted points).

        Each optimisation reads at most one segment's worth (`max_segment_kb`) of vectors; about
        1.5 s per 1,000 new dense points on 2 cores. Writers run it every `OPTIMIZE_EVERY`
        points (:meth:`upkeep`). It returns when done. Qdrant Edge's `optimize()` keeps the GIL, so
        in this process no other thread runs meanwhile; with `optimize_in_child` a child process
        runs it and this one only waits (other threads run). A child that fails or is killed
        leaves the shard as it was: it is loaded again, and the optimisation retried by a later
        `upkeep` (not within `_RETRY_AFTER_S`).
        """
        import qdrant_edge as qe

        if self.optimize_in_child and self._optimizer_stopped:
            return
        bulk = self._bulk
        segments = BULK_SEGMENTS if bulk else SEGMENTS
        t0 = time.perf_counter()
        with self._mutex, self._errors("optimize"):
            shard = self._require()
            # Payload indexes made by an older jacked (held in RAM): rebuilt memory-mapped, or dropped.
            for name, info in shard.info().payload_schema.items():
                memory = getattr(info.params, "memory", None) if info.params is not None else None
                if name in OBSOLETE_INDEXES:
                    shard.update(qe.UpdateOperation.delete_field_index(name))
                elif name in KEYWORD_INDEXES + FLOAT_INDEXES and memory != qe.Memory.Cold:
                    schema = dict(_index_schemas(qe))[name]
                    shard.update(qe.UpdateOperation.delete_field_index(name))
                    shard.update(qe.UpdateOperation.create_field_index(name, schema))
            # The number of segments to aim at is part of the configuration a load gives the shard.
            self._shard = None
            try:
                shard.flush()
            finally:
                shard.close()
            done = True
            if self.optimize_in_child:
                done = self._optimize_elsewhere(segments)
                self._shard = load_shard(self.shard_path)  # with the configuration the child gave it
            else:
                self._shard = load_shard(self.shard_path, self._config(qe, self.dims, segments))
                self._shard.optimize()
                self._shard.flush()
            self._unflushed = 0
            if done:
                self._written = 0
                # After a bulk optimisation the segments still want merging: the next optimisation
                # outside bulk mode does it, even if a crash ends the bulk load first.
                left: dict[str, Any] = {"merge": True} if bulk else {}
                if self._upkeep != left:
                    self._upkeep = left
                    self._write_upkeep()
        self.optimize_seconds += time.perf_counter() - t0
        trim_heap()  # what the closed shard held before it was loaded again

    def _optimize_elsewhere(self, segments: int) -> bool:
        """Optimise the closed shard in a child process (see `jacked.index.store.optimizer`);
        False, logged, when the child failed or was stopped."""
        from jacked.index.store.optimizer import optimize_in_child

        def started(proc: Any) -> None:
            self._optimizer_started = time.time()
            self._optimizer = proc
            if self._optimizer_stopped:  # stopped while the child was being started
                proc.kill()

        try:
            run = optimize_in_child(self.shard_path, self.dims, segments, self.max_segment_kb, started)
        finally:
            self._optimizer = None
        if not run.ok:
            self._optimize_retry_at = time.monotonic() + _RETRY_AFTER_S
            _log.warning("index optimisation did not finish (%s): the index is unchanged; retried later", run.error)
        return run.ok

    @property
    def optimizing(self) -> dict[str, Any] | None:
        """The child optimising the shard now: {"pid", "started"} (epoch seconds), else None."""
        proc = self._optimizer
        return None if proc is None else {"pid": proc.pid, "started": self._optimizer_started}

    def stop_optimizer(self) -> None:
        """Kill the child optimising the shard, if any, and start no other (the owner is
        stopping). Safe from any thread; the shard stays as it was before the optimisation."""
        self._optimizer_stopped = True
        proc = self._optimizer
        if proc is not None:
            proc.kill()

    def _config(self, qe: Any, dims: int, segments: int = SEGMENTS) -> Any:
        return _edge_config(qe, dims, segments, max_segment_kb=self.max_segment_kb)

    def upkeep(self) -> bool:
        """For a writer between batches: run the optimizers once `OPTIMIZE_EVERY` points were
        written since they last ran (counting other processes' writes: hooks add a few points
        each), or when the shard still has an older jacked's layout. True if they ran."""
        with self._mutex:
            due = self.upkeep_due()
            if due:
                self.optimize()
        return due

    def upkeep_due(self) -> bool:
        """Whether `upkeep` would run the optimizers now."""
        if self._optimize_retry_at and time.monotonic() < self._optimize_retry_at:
            return False
        return (self._written + int(self._upkeep.get("writes") or 0) >= OPTIMIZE_EVERY
                or bool(self._upkeep.get("reoptimize")) or (bool(self._upkeep.get("merge")) and not self._bulk))

    @contextmanager
    def bulk(self) -> Iterator[EdgeStore]:
        """A bulk load (a backfill): its optimisations keep up to `BULK_SEGMENTS` segments apart
        instead of merging each new one into the others; the first optimisation after it merges
        them down to `SEGMENTS` (a writer's `upkeep` runs it)."""
        self._bulk = True
        try:
            yield self
        finally:
            self._bulk = False

    @property
    def writes_pending(self) -> int:
        """Points written since the optimizers last ran (by any process, this one included)."""
        return self._written + int(self._upkeep.get("writes") or 0)

    # -- upkeep record -------------------------------------------------------

    def _read_upkeep(self) -> dict[str, Any]:
        try:
            data = json.loads((self.path / _UPKEEP).read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _write_upkeep(self) -> None:
        try:
            _atomic_write_json(self.path / _UPKEEP, self._upkeep)
        except OSError:
            pass  # only a hint for when to optimise

    def _save_written(self) -> None:
        """At close: add this process's writes to the count the next writer reads."""
        if self._written:
            self._upkeep["writes"] = int(self._upkeep.get("writes") or 0) + self._written
            self._written = 0
            self._write_upkeep()

    # -- lock --------------------------------------------------------------

    def _acquire_lock(self) -> None:
        from jacked.util.flock import FileLock, LockTimeout

        lock = FileLock(self.path / _LOCK)  # the store may be opened in one thread and closed in another
        try:
            lock.acquire(timeout=max(self.lock_timeout, 0.0))
        except LockTimeout:
            raise StoreBusy(self._busy_message()) from None
        self._lock = lock
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
        who, daemon = "another process", False
        try:
            owner = json.loads((self.path / _OWNER).read_text(encoding="utf-8"))
            since = time.strftime("%H:%M:%S", time.localtime(owner["since"]))
            who = f"process {owner['pid']} ({owner.get('command') or '?'}) on {owner.get('host', '?')}, since {since}"
            daemon = "run --spawned" in str(owner.get("command")) or "daemon run" in str(owner.get("command"))
        except (OSError, ValueError, KeyError, TypeError):
            pass
        if daemon:  # it keeps the index for its whole life: waiting longer would not help
            return (f"index {self.path} is held by the jacked daemon ({who}): ask it (unset JACKED_DAEMON=off) "
                    "or stop it first (`jacked daemon stop`)")
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
                shard = load_shard(self.shard_path)
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
        config = self._config(qe, int(meta["dims"]))
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
        self._recover_compaction()
        for child in self.path.iterdir():
            if child.name.startswith((".shard-tmp-", ".trash-", ".compact-old-")):
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
        if op == "set":
            return qe.FieldCondition(key=key, is_empty=False)
        if op == "lt":
            return qe.FieldCondition(key=key, range=qe.RangeFloat(lt=operand))
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
                self._wrote(shard, len(batch))

    def _wrote(self, shard: Any, n: int) -> None:
        self._written += n
        self._unflushed += n
        if self._unflushed >= _FLUSH_EVERY:
            shard.flush()
            self._unflushed = 0

    def update_vectors(self, vectors: Sequence[tuple[str, list[float]]]) -> None:
        """Set the dense vector of existing points (their bm25 vector and payload stay)."""
        import qdrant_edge as qe

        shard = self._require()
        for start in range(0, len(vectors), _UPSERT_BATCH):
            batch = [qe.PointVectors(pid, {DENSE_VECTOR: as_list(vec)}) for pid, vec in vectors[start:start + _UPSERT_BATCH]]
            with self._mutex, self._errors("update vectors"):
                shard.update(qe.UpdateOperation.update_vectors(batch))
                self._wrote(shard, len(batch))

    def set_payload(self, ids: Sequence[str], values: dict[str, Any]) -> None:
        """Set payload fields on these points (others keep theirs)."""
        import qdrant_edge as qe

        if not ids:
            return
        with self._mutex, self._errors("update"):
            self._require().update(qe.UpdateOperation.set_payload(list(ids), values))

    def delete_points(self, ids: Sequence[str]) -> None:
        """Delete points by id."""
        import qdrant_edge as qe

        if not ids:
            return
        with self._mutex, self._errors("delete"):
            self._require().update(qe.UpdateOperation.delete_points(list(ids)))

    def delete_where(self, user_name: str | None = None, session_id: str | None = None) -> int:
        """Delete the points of a user and/or a session; return how many went."""
        return self._delete_filtered(self._filter(None, where_conditions(user_name, session_id)))

    def _delete_filtered(self, flt: Any) -> int:
        import qdrant_edge as qe

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

    def _query_leg(self, using: str, vector: Any, flt: Any, limit: int, fields: list[str] | None) -> list[Hit]:
        # Plain queries, one per leg: measured on 100k points, a `query_batch` of the same two
        # costs twice as much once payloads are asked for (~19 ms against ~8 ms).
        import qdrant_edge as qe

        if isinstance(vector, SparseVector):
            vector = qe.SparseVector(list(vector.indices), list(vector.values))
        payload: Any = True if fields is None else (qe.PayloadSelector.Include(list(fields)) if fields else False)
        request = qe.QueryRequest(limit=limit, query=qe.Query.Nearest(vector, using=using), filter=flt,
                                  with_payload=payload, with_vector=False, params=_graph_params(qe, using, flt))
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

    # -- compaction (jacked forget) ----------------------------------------

    def compact(self) -> dict[str, Any]:
        """Rewrite the shard without the data of deleted points, under the lock this store holds.

        A deleted point's payload stays in its segment's files and in the shard's WAL until the
        segment is rewritten, and Qdrant's vacuum only runs past a share of deleted points. So
        every remaining point (vectors and payload) is copied into a fresh shard beside it (same
        config, same payload indexes), which then takes the old one's place: the old folder is
        renamed away, the new one renamed in, the old one removed. A crash before the swap leaves
        the old shard in place (the copy is swept on the next open); a crash between the two
        renames puts the old one back on the next open (`_recover_compaction`). Costs about as much as
        upserting every point again; the HNSW graph is not rebuilt here: the next writer's `upkeep`
        runs the optimizers (or call `optimize`).
        Returns {"points": kept, "seconds": ...}."""
        import qdrant_edge as qe

        t0 = time.perf_counter()
        with self._mutex:
            old = self._require()
            tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
            tmp = self.path / f".shard-tmp-{tag}"
            kept = 0
            try:
                with self._errors("compact"):
                    old.flush()
                    indexes = {name: (info.params if info.params is not None else info.data_type)
                               for name, info in old.info().payload_schema.items()}
                    tmp.mkdir(mode=0o700)
                    # The shard's own config (whatever it was created with) makes the empty copy.
                    shutil.copyfile(self.shard_path / "edge_config.json", tmp / "edge_config.json")
                    new = qe.EdgeShard.load(str(tmp))
                    try:
                        for name, schema in indexes.items():
                            new.update(qe.UpdateOperation.create_field_index(name, schema))
                        offset: Any = None
                        while True:
                            records, offset = old.scroll(qe.ScrollRequest(
                                offset=offset, limit=_SCROLL_PAGE, with_payload=True, with_vector=True))
                            if records:
                                new.update(qe.UpdateOperation.upsert_points(
                                    [qe.Point(r.id, r.vector or {}, r.payload or {}) for r in records]))
                                kept += len(records)
                            if offset is None:
                                break
                        new.flush()
                    finally:
                        new.close()
                self._shard = None
                old.close()
                os.rename(self.shard_path, self.path / f".compact-old-{tag}")
                os.rename(tmp, self.shard_path)
            finally:
                self._recover_compaction()  # a failed swap: the old shard goes back in place
                for leftover in (tmp, self.path / f".compact-old-{tag}"):
                    shutil.rmtree(leftover, ignore_errors=True)
                if self._shard is None:
                    with self._errors("open"):
                        self._shard = load_shard(self.shard_path)
            self._unflushed = 0
            if kept:  # every point now sits in the copy's appendable segment: the next writer optimizes
                self._upkeep["reoptimize"] = True
                self._write_upkeep()
        trim_heap()  # what the closed shard held before it was loaded again
        return {"points": kept, "seconds": round(time.perf_counter() - t0, 3)}

    def _recover_compaction(self) -> None:
        """A compaction that stopped between its two renames left no shard but the old one set
        aside (or the complete copy): put it back in place."""
        if self.shard_path.exists():
            return
        for child in sorted(self.path.glob(".compact-old-*")):
            os.rename(child, self.shard_path)
            return


def _index_schemas(qe: Any, linked: frozenset[str] = LINKED_FIELDS) -> list[tuple[str, Any]]:
    """The payload indexes, memory-mapped (cold) in the optimised segments like everything else;
    those in `linked` get payload links in the graph."""
    cold = qe.Memory.Cold
    return [(name, qe.KeywordIndexParams(memory=cold, enable_hnsw=name in linked)) for name in KEYWORD_INDEXES] + [
        (name, qe.FloatIndexParams(memory=cold, enable_hnsw=name in linked)) for name in FLOAT_INDEXES
    ]


def _graph_params(qe: Any, using: str, flt: Any) -> Any:
    """ACORN for a dense search filtered on a field without payload links (`LINKED_FIELDS`): the
    walk then looks two hops out past points the filter rejects, instead of stopping among them
    (Qdrant uses it only when the filter keeps under 40 % of a segment). Without links or ACORN,
    a filter keeping a scattered tenth of the points found 8 % of its 150 nearest."""
    if using != DENSE_VECTOR or flt is None or not any(getattr(c, "key", None) in _UNLINKED for c in flt.must or []):
        return None
    return qe.SearchParams(acorn=qe.AcornSearchParams(enable=True))


def _edge_config(qe: Any, dims: int, segments: int = SEGMENTS, ef_construct: int = EF_CONSTRUCT,
                 max_segment_kb: int = MAX_SEGMENT_KB) -> Any:
    """The shard's configuration: every part cold (see `_CONFIG_VERSION`), segments bounded.

    Vectors, HNSW graph, sparse index, payloads and id tracker are memory-mapped without being
    read in at load; a query touches the pages on its path. Measured on a 10,000-session-sized
    shard (235k points): a cold process that loads it and runs one query maps ~10 MB of it,
    against the whole dense matrix and sparse index with the defaults ("cached": read in at load).
    """
    cold = qe.Memory.Cold
    # 4-bit TurboQuant codes of the dense vectors (an eighth of the bytes) are what the HNSW walk
    # reads. A walk visits much of a segment's vectors, and the kernel maps 64 KB around each page
    # it reads from a cached file, so a query maps most of the codes: half as much as int8 codes
    # (98 MB at 10,000 sessions). On the generated bank's vectors the walk found as many of the
    # exact nearest ones as with int8 (recall@150 0.633 against 0.643), and the session-level MRR
    # at 1,000 sessions rose 0.959 -> 0.979 (scripts/bench.py --only scale).
    codes = qe.TurboQuantQuantizationConfig(bits=qe.TurboQuantBitSize.Bits4, memory=cold)
    return qe.EdgeConfig(
        vectors={DENSE_VECTOR: qe.EdgeVectorParams(size=int(dims), distance=qe.Distance.Cosine, memory=cold,
                                                   quantization_config=codes)},
        sparse_vectors={SPARSE_VECTOR: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf, memory=cold)},
        hnsw_config=qe.HnswIndexConfig(m=16, ef_construct=ef_construct, full_scan_threshold=FULL_SCAN_KB, memory=cold),
        payload_memory=cold,
        id_tracker_memory=cold,
        optimizers=qe.EdgeOptimizersConfig(max_segment_size=max_segment_kb, default_segment_number=segments,
                                           indexing_threshold=INDEXING_KB),
    )


def _config_is_current(shard_path: Path, max_segment_kb: int = MAX_SEGMENT_KB) -> bool:
    """Whether the shard on disk was made (or last loaded) with this version's configuration."""
    try:
        cfg = json.loads((shard_path / "edge_config.json").read_text(encoding="utf-8"))
        optimizers = cfg.get("optimizers") or {}
        dense = cfg["vectors"][DENSE_VECTOR]
        turbo = (dense.get("quantization_config") or {}).get("turbo") or {}
        return (dense.get("memory") == "cold" and turbo.get("bits") == "bits4"
                and (cfg.get("hnsw_config") or {}).get("full_scan_threshold") == FULL_SCAN_KB
                and optimizers.get("max_segment_size") == max_segment_kb
                and optimizers.get("default_segment_number") in (SEGMENTS, BULK_SEGMENTS)  # mid-backfill
                and optimizers.get("indexing_threshold") == INDEXING_KB)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def load_shard(shard_path: Path, config: Any = None) -> Any:
    """Load the Edge shard at `shard_path` (with `config`: made the shard's configuration)."""
    import qdrant_edge as qe

    return qe.EdgeShard.load(str(shard_path)) if config is None else qe.EdgeShard.load(str(shard_path), config)


def _atomic_write_json(path: Path, data: Any) -> None:
    """Write JSON whole or not at all, fsynced: readers never see half a file."""
    atomic_write(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"), mode=0o600, fsync=True)
