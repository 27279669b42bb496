"""Embedding ahead: the dense pass's first texts embedded on a thread during a backfill's lexical pass.

The lexical pass is Python on one core (reading, splitting, BM25, writing) and embeds nothing;
the model sits idle while the second core does little. Texts the lexical pass leaves waiting for
their dense vector are handed to this thread, which embeds them in the order given (newest
sessions first, the dense pass's order; a window at a time, shortest first) while the pass goes
on; the pass puts the vectors in the persistent vector cache between its chunks, where the dense
pass then finds them. ONNX Runtime runs without the interpreter lock, so both proceed at once.

Nothing depends on it: a text not embedded ahead (the queue was full, the thread was stopped,
the model failed) is embedded by the dense pass as before, and a vector embedded ahead is the
one the dense pass would have made (same model, same text).
"""
from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence

from jacked.util.cpus import usable_cpus

#: Texts waiting for the thread at most: the lexical pass finds them ~3x faster than 2 cores embed
#: them, so the queue would otherwise hold most of a large corpus's texts in memory at once.
QUEUE_LIMIT = 2048
#: Texts per model call: a chunk is at most a few seconds, the wait of `stop`; large enough that the
#: model's batches run at once on all cores most of the chunk (see `jacked.index.dense_pass.EMBED_CHUNK`).
CHUNK = 128
#: Texts taken from the queue at once and embedded shortest first, a chunk at a time, so that the
#: texts of a chunk are of like size: taken 32 at a time in the order given, 9.6 % of what the
#: model ran on the generated corpus's texts was padding, against ~2 % so (0.1 % all at once).
WINDOW = 256


class EmbedAhead:
    """A thread embedding offered texts with `embed` (a list of texts → a vector per text)."""

    def __init__(self, embed: Callable[[list[str]], Sequence[Sequence[float]]],
                 sizes: Callable[[list[str]], Sequence[int]] | None = None, queue_limit: int = QUEUE_LIMIT) -> None:
        """`sizes`: what the model counts of each text (word-pieces), to order a window by; by
        default, characters."""
        self._embed = embed
        self._sizes = sizes or (lambda texts: [len(t) for t in texts])
        self._limit = queue_limit
        self._queue: deque[str] = deque()
        # Hashes, not the texts, of those offered: a collision only leaves a text to the dense pass.
        self._offered: set[int] = set()
        self._done: list[tuple[str, Sequence[float]]] = []
        self._cv = threading.Condition()
        self._stopping = False
        self.failed: BaseException | None = None  # the model's error, if any: the dense pass meets it again
        # Not a daemon: stopped by the backfill (a process ending while ONNX Runtime builds its
        # session on another thread aborts).
        self._thread = threading.Thread(target=self._run, name="jacked-embed-ahead")
        self._thread.start()

    @staticmethod
    def worthwhile() -> bool:
        """Whether a second CPU is there for the model while the lexical pass uses one."""
        return usable_cpus() >= 2

    def offer(self, texts: Iterable[str]) -> None:
        """Queue texts not offered before, as far as the queue has room (the rest: the dense pass)."""
        with self._cv:
            if self._stopping or self.failed is not None:
                return
            for text in texts:
                if len(self._queue) >= self._limit:
                    break
                key = hash(text)
                if key not in self._offered:
                    self._offered.add(key)
                    self._queue.append(text)
            self._cv.notify()

    def take(self) -> list[tuple[str, Sequence[float]]]:
        """The (text, vector) pairs embedded since the last call."""
        with self._cv:
            done, self._done = self._done, []
        return done

    def stop(self) -> list[tuple[str, Sequence[float]]]:
        """Stop after the chunk being embedded (texts still queued are dropped); what was embedded
        and not yet taken."""
        with self._cv:
            self._stopping = True
            self._queue.clear()
            self._cv.notify()
        self._thread.join()
        return self.take()

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._queue and not self._stopping:
                    self._cv.wait()
                if self._stopping:
                    return
                window = [self._queue.popleft() for _ in range(min(WINDOW, len(self._queue)))]
            try:
                window = [t for _, t in sorted(zip(self._sizes(window), window), key=lambda st: st[0])]
            except Exception as exc:
                self._fail(exc)
                return
            for start in range(0, len(window), CHUNK):
                chunk = window[start:start + CHUNK]
                try:
                    vectors = self._embed(chunk)
                except Exception as exc:
                    self._fail(exc)
                    return
                with self._cv:
                    self._done.extend(zip(chunk, vectors))
                    if self._stopping:
                        return

    def _fail(self, exc: BaseException) -> None:
        with self._cv:
            self.failed = exc
            self._queue.clear()
