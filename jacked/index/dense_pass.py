"""A backfill's dense pass: the dense vectors of the points the lexical pass wrote without one.

The points wait in the catalog (`index_state.pending_points`), newest sessions first. They are
filled a round of `DENSE_BATCH_POINTS` at a time: the round's texts are read from the store,
those the vector cache holds are taken from it, the rest are embedded on a thread of the model's
own, and the vectors are written (`update_vectors`, `embedding_model` set in the payload) and
recorded in the catalog. The model runs a round ahead of the writes: while this thread writes a
round, the model embeds the next one (one core sat idle during the writes otherwise: 21 % of two
cores over the pass at 1,000 sessions). The store's optimisations (`upkeep`) run between rounds.

A pass stopped at any moment (even by SIGKILL) redoes at most its round in flight: each chunk of
vectors is cached as it is made, and each round is recorded once written.
"""
from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, Protocol

from jacked.catalog import Catalog, index_state

# Points whose vectors are embedded and written per round; their distinct texts are embedded by
# length, `EMBED_CHUNK` at a time (similar lengths pad little: rounds of ~30 texts embed ~8 % slower
# than whole lists), each chunk's vectors cached at once (a backfill killed mid-round embeds at most
# one chunk again; a chunk is at most a few seconds on 2 cores, the wait of a stop). A chunk's
# batches run two at a time on 2 cores (`_MeanPooledOnnx.run_many`), and one thread waits for the
# other at its end: with 32 texts a chunk the dense pass took 104.1 / 106.9 s at 1,000 sessions,
# with 128 99.1 / 96.8 s.
DENSE_BATCH_POINTS = 512
EMBED_CHUNK = 128
#: How often the pass, waiting for the model's thread, writes its progress.
POLL_SECONDS = 0.25
# Sessions whose waiting points are read from the catalog at a time.
SESSIONS_READ = 200

PendingPoint = tuple[str, str, str]  # (point id, session id, content hash)
Progress = Callable[[str, int, int], None]  # (phase, done, total): a backfill's progress callback


class _Indexer(Protocol):
    """What the pass uses of `jacked.index.indexer.Indexer` (which imports this module)."""

    catalog: Catalog
    user: str

    @property
    def dense(self) -> Any: ...

    def cached_vectors(self, texts: list[str]) -> dict[str, list[float]]: ...

    def remember_embedded(self, embedded: Sequence[tuple[str, Sequence[float]]], report: Any) -> None: ...


class _Report(Protocol):
    """The backfill's `IndexReport`, as far as the pass counts in it."""

    points_written: int
    texts_embedded: int
    points_dense_filled: int


class _Log(Protocol):
    """The backfill's progress file (`BackfillLog`), as far as the pass writes it."""

    def dense_start(self, total: int) -> None: ...

    def dense(self, done: int, texts: int) -> None: ...


@dataclass
class _Round:
    """A round: its waiting points, their payloads as read from the store, and the vectors of
    their texts once embedded."""

    part: list[PendingPoint]
    held: dict[str, dict[str, Any]]
    ok: list[PendingPoint] = field(default_factory=list)  # points whose text was read as recorded
    vectors: dict[str, array[float]] = field(default_factory=dict)
    # The texts the vector cache did not hold, being embedded on the model's thread: (text, vector) pairs.
    embedding: Future[list[tuple[str, Sequence[float]]]] | None = None
    prepared: bool = False
    embedded_so_far: int = 0  # of those, embedded (set by the model's thread after each chunk, for progress)
    borrowed: list[str] = field(default_factory=list)  # texts the round before was embedding: cached by now


class DensePass:
    """One dense pass over `store` for the indexer's user (see the module doc)."""

    def __init__(self, indexer: _Indexer, store: Any, report: _Report, progress: Progress | None,
                 log: _Log) -> None:
        self.indexer = indexer
        self.catalog = indexer.catalog
        self.user = indexer.user
        self.dense = indexer.dense
        self.store = store
        self.report = report
        self.progress = progress
        self.log = log
        self.total = 0  # points waiting when the pass began
        self.filled = 0
        self.ahead: deque[_Round] = deque()
        self.upcoming: Iterator[list[PendingPoint]] = iter(())
        self.stopping = False
        self.in_flight: set[str] = set()  # texts sent to the model's thread and not cached yet
        self.model_thread: ThreadPoolExecutor | None = None

    def run(self) -> None:
        sessions = index_state.dense_pending_sessions(self.catalog, self.user)
        if not sessions:
            return
        self.total = index_state.index_counts(self.catalog, self.user)["points_pending_dense"]
        self.log.dense_start(self.total)
        self.upcoming = self._rounds(sessions)
        self.model_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jacked-dense")
        self._read_ahead(1)
        try:
            while self.ahead:
                r = self.ahead.popleft()
                if not r.prepared:
                    self._prepare(r)
                self._read_ahead(1)
                if self.ahead and not self.ahead[0].prepared:
                    self._prepare(self.ahead[0])  # queued behind this round's texts on the model's thread
                self._await_vectors(r)
                self._write(r)
                self.store.upkeep()
        finally:
            self.stopping = True
            self.model_thread.shutdown(wait=True, cancel_futures=True)

    def _rounds(self, sessions: list[str]) -> Iterator[list[PendingPoint]]:
        for start in range(0, len(sessions), SESSIONS_READ):
            rows = index_state.pending_points(self.catalog, sessions[start:start + SESSIONS_READ], self.user)
            for i in range(0, len(rows), DENSE_BATCH_POINTS):
                yield rows[i:i + DENSE_BATCH_POINTS]

    def _read_ahead(self, n: int) -> None:
        """Read rounds (their points' texts) until `n` wait in `ahead`, or every round is read."""
        while len(self.ahead) < n:
            part = next(self.upcoming, None)
            if not part:
                return
            held = {h.id: h.payload for h in self.store.retrieve([pid for pid, _, _ in part], ["text", "content_hash"])}
            self.ahead.append(_Round(part, held))

    def _embed(self, texts: list[str], r: _Round) -> list[tuple[str, Sequence[float]]]:
        """On the model's thread: the texts' vectors, a chunk at a time."""
        out: list[tuple[str, Sequence[float]]] = []
        for j in range(0, len(texts), EMBED_CHUNK):
            if self.stopping:
                break  # the pass stopped: what is not embedded is never written
            chunk = texts[j:j + EMBED_CHUNK]
            out.extend(zip(chunk, self.dense.embed_documents(chunk)))
            r.embedded_so_far = len(out)
        return out

    def _prepare(self, r: _Round) -> None:
        """The round's texts as read, those the cache holds, and the rest sent to the model's thread."""
        assert self.model_thread is not None
        r.prepared = True
        r.ok = [(pid, sid, h) for pid, sid, h in r.part
                if r.held.get(pid, {}).get("content_hash") == h and isinstance(r.held[pid].get("text"), str)]
        distinct = sorted({r.held[pid]["text"] for pid, _, _ in r.ok})
        # As float32 arrays (what the model made): rounds read ahead wait with theirs.
        r.vectors.update((t, array("f", v)) for t, v in self.indexer.cached_vectors(distinct).items())
        missing = [t for t in distinct if t not in r.vectors and t not in self.in_flight]
        # The same text in the round before (sessions repeat texts): embedded once, found in the cache.
        r.borrowed = [t for t in distinct if t not in r.vectors and t in self.in_flight]
        self.in_flight.update(missing)
        # By size in word-pieces, so that a chunk's texts share the model's batches as a bare run's
        # would (sorted by characters, 3.3 % of what the model ran in this pass was padding).
        missing = [t for _, t in sorted(zip(self.dense.count_tokens_batch(missing), missing))]
        r.embedding = self.model_thread.submit(self._embed, missing, r) if missing else None

    def _await_vectors(self, r: _Round) -> None:
        """Wait for the round's texts from the model's thread (writing progress meanwhile), cache them, and take those the round before embedded from the cache."""
        if r.embedding is not None:
            while True:
                try:
                    embedded = r.embedding.result(timeout=POLL_SECONDS)
                    break
                except FutureTimeout:
                    self.log.dense(self.filled, self.report.texts_embedded + r.embedded_so_far)
            self.indexer.remember_embedded(embedded, self.report)
            r.vectors.update((t, array("f", v)) for t, v in embedded)
            self.in_flight.difference_update(t for t, _ in embedded)
            r.embedding = None
        if r.borrowed:
            r.vectors.update((t, array("f", v)) for t, v in self.indexer.cached_vectors(r.borrowed).items())

    def _write(self, r: _Round) -> None:
        """Write the round's vectors (of the points still as read) and record them."""
        kept = set(r.ok)
        broken = sorted({sid for pid, sid, h in r.part if (pid, sid, h) not in kept})
        if r.ok:
            self.store.update_vectors([(pid, r.vectors[r.held[pid]["text"]]) for pid, _, _ in r.ok])
            self.store.set_payload([pid for pid, _, _ in r.ok], {"embedding_model": self.dense.model_name})
        # A session is clean once none of its points waits any more (checked in the catalog).
        index_state.record_dense(self.catalog, self.user, [(pid, h) for pid, _, h in r.ok],
                                 sorted({sid for _, sid, _ in r.part}), broken)
        self.filled += len(r.ok)
        self.report.points_dense_filled += len(r.ok)
        self.log.dense(self.filled, self.report.texts_embedded)
        if self.progress:
            self.progress("dense", self.filled, self.total)
