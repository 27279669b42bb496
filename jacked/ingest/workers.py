"""Cold scans of many sessions, spread over forked worker processes.

This process and `workers - 1` forks each take the next sessions from a shared work queue,
build them, and write them to the catalog through connections of their own. Plain fork +
pipes rather than `concurrent.futures.ProcessPoolExecutor` (kept by measurement): a pool's
start-up cost a fifth of a cold scan, and a pool hands results back to the parent, which would
pickle every built session there and back — 27 % of the build time on 300 generated sessions,
10 % on the real fixtures (measured 2026-11-26) — and leave every catalog write to one process.

* The queue is a pipe pre-filled with 4-byte chunk numbers, biggest sessions first: every
  process takes the next chunk when it is free, so none waits on a slow one.
* Writes are serialised by an flock beside the catalog, which wakes the next writer at once
  where SQLite's busy handler would sleep. They happen every `BATCH_SECONDS`, and early: once
  half, then three quarters of the queued work is taken, as soon as the catalog is free, so
  they overlap the other processes' building instead of queueing at the very end.
* This process retires from the queue early, when what is left would keep the others busy
  about as long as its own last write takes.
* A worker that dies loses nothing: whatever is still unwritten afterwards is scanned here.

The scanner supplies the work: `build_safely`, `write_batch`, `changed_stats`. POSIX only
(fork, flock): the scanner imports this module only where it can fork.
"""
from __future__ import annotations

import copy
import fcntl
import os
import pickle
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from jacked.catalog import Catalog
from jacked.ingest.reading import BATCH_SECONDS, ScanReport, SessionReader
from jacked.sources.claude.discover import SessionFiles
from jacked.util.flock import FileLock

Work = tuple[SessionFiles, dict[Path, os.stat_result]]

MAX_WORKERS = 4
# 4-byte chunk numbers, written before any reader exists: 2 KiB fits any pipe's buffer
# (a Linux pipe may be cut to one page; macOS starts at 16 KiB).
QUEUE_MAX_CHUNKS = 512
WRITE_COST_PER_BUILD = 0.25  # writing a session to the catalog takes about this share of building it


def build_cost(stats: dict[Path, os.stat_result]) -> int:
    """A session's expected build time, in bytes: its size plus a fixed cost per file
    (measured on the fixtures: ~4.8 ms per MB and ~0.1 ms per file)."""
    return sum(st.st_size for st in stats.values()) + 22_000 * len(stats)


def scan_in_workers(scanner: SessionReader, todo: list[Work],
                    progress: Callable[[int], None] | None = None) -> Iterator[ScanReport]:
    """Build and write the `todo` sessions here and in forked workers; yields each process's
    counters. `progress(done)` is called from this process with the number of sessions taken."""
    items = sorted(todo, key=lambda it: -build_cost(it[1]))
    size = -(-len(items) // QUEUE_MAX_CHUNKS)  # sessions per chunk: the queue fits the pipe
    chunks = [items[i:i + size] for i in range(0, len(items), size)]
    queue_read, queue_write = os.pipe()
    os.write(queue_write, b"".join(i.to_bytes(4, "little") for i in range(len(chunks))))
    lock_path = Path(str(scanner.catalog.path) + "-scan.lock")
    children = []
    for _ in range(min(os.cpu_count() or 2, MAX_WORKERS) - 1):
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # e.g. a process limit: fewer workers, same result
            os.close(read_end)
            os.close(write_end)
            break
        if pid == 0:  # worker: scan from the queue, send back the counters, leave without cleanup
            code = 0
            try:
                os.close(read_end)
                os.close(queue_write)
                counters = scan_from_queue(_worker_scanner(scanner), chunks, queue_read, lock_path)
                counters.changed_session_ids = []  # only the counts travel back
                with os.fdopen(write_end, "wb") as out:
                    pickle.dump(counters, out)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        os.close(write_end)
        children.append((pid, read_end))
    os.close(queue_write)  # the queue ends (EOF) once every chunk is taken

    def taken() -> None:
        if progress is not None:
            left = pipe_bytes(queue_read) // 4
            progress(min(len(items), (len(chunks) - left) * size))

    failed = False
    try:
        try:
            yield scan_from_queue(scanner, chunks, queue_read, lock_path, taken, retire_early=bool(children))
        finally:
            os.close(queue_read)
        while children:
            pid, read_end = children[0]
            with os.fdopen(read_end, "rb") as fh:
                data = fh.read()
            _, status = os.waitpid(pid, 0)
            children.pop(0)
            if status == 0 and data:
                yield pickle.loads(data)
            else:
                failed = True
    finally:  # interrupted: no worker is left behind unreaped
        for pid, read_end in children:
            os.close(read_end)
            os.waitpid(pid, 0)
    if failed:  # a worker died: what it did not write is scanned here (writes are idempotent)
        scanner.known = None  # what the workers wrote: read again
        counters, left = ScanReport(), []
        for group, stats in items:
            try:
                still = scanner.changed_stats(group, ScanReport())
            except OSError:
                still = stats  # build_safely reports it
            if still is not None:
                left.append(scanner.build_safely(group, still))
        scanner.write_batch(left, counters)
        yield counters


def scan_from_queue(scanner: SessionReader, chunks: list[list[Work]], queue: int, lock_path: Path,
                taken: Callable[[], None] | None = None, retire_early: bool = False) -> ScanReport:
    """Build the chunks named on the `queue` pipe until it ends (or, with `retire_early`, until
    retiring pays: one process only, another must drain the queue) and write them under the
    `lock_path` flock, several sessions per transaction (see the module's notes)."""
    counters = ScanReport()
    sizes = [sum(build_cost(stats) for _, stats in chunk) for chunk in chunks]
    left = [0] * (len(chunks) + 1)  # left[i]: the cost of chunks[i:], the work still queued
    for i in range(len(chunks) - 1, -1, -1):
        left[i] = left[i + 1] + sizes[i]
    marks = [left[0] // 2, left[0] // 4]
    pending: list[Any] = []
    pending_cost = 0
    batch_start = time.perf_counter()
    lock = FileLock(lock_path)  # around a worker's write transactions; the kernel frees it if the worker dies
    while True:
        queued = left[len(chunks) - pipe_bytes(queue) // 4]
        if retire_early and pending and queued <= pending_cost * WRITE_COST_PER_BUILD:
            break
        token = os.read(queue, 4)
        if len(token) < 4:
            break
        i = int.from_bytes(token, "little")
        pending += [scanner.build_safely(group, stats) for group, stats in chunks[i]]
        pending_cost += sizes[i]
        if taken is not None:
            taken()
        due = time.perf_counter() - batch_start >= BATCH_SECONDS
        early = bool(marks) and left[len(chunks) - pipe_bytes(queue) // 4] <= marks[0]
        if due:
            lock.acquire()
        if due or (early and lock.try_acquire()):
            try:
                scanner.write_batch(pending, counters)
            finally:
                lock.release()
            pending, pending_cost, batch_start = [], 0, time.perf_counter()
            if early:
                marks.pop(0)
    lock.acquire()
    try:
        scanner.write_batch(pending, counters)
    finally:
        lock.release()
    return counters


def _worker_scanner(parent: SessionReader) -> SessionReader:
    """In a forked worker: the parent's scanner, with a connection of its own to the catalog
    (a SQLite connection must not cross a fork) and no archive (the parent keeps it)."""
    worker = copy.copy(parent)  # everything the parent read already (known files, settings), shallow
    worker.catalog = Catalog(parent.catalog.path, migrate=False)  # the parent just did
    worker.archive = None
    return worker


def pipe_bytes(fd: int) -> int:
    """How many bytes wait unread in a pipe."""
    buf = bytearray(4)
    fcntl.ioctl(fd, termios.FIONREAD, buf)
    return int.from_bytes(buf, "little")
