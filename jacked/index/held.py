"""A store held open between the calls of a long-lived reader (`jacked mcp`).

Opening the store per call costs a shard load (~0.3 s at 3,000 sessions) and, because closing
a shard drops its files from the OS page cache, every call read the index from disk again: a
median MCP search took ~0.7 s at 3,000 sessions, ~1.1 s at 10,000. Held open, a call costs
its queries. The index's lock stays with this process meanwhile, so other processes that want
it (a hook after each turn, a backfill, a CLI search) say so by waiting on the lock (a marker
in `index.waiting`, see `EdgeStore.waiters`): a watcher thread then closes the store within
`POLL_SECONDS`, and the next call opens it again. After `IDLE_SECONDS` without a call it is
closed as well.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

POLL_SECONDS = 0.1
IDLE_SECONDS = 300.0


class HeldStore:
    """`use()` gives the open store (opened by `open_store` at the first call, and again after
    it was handed over); calls are serialised."""

    def __init__(self, open_store: Callable[[], Any], poll_seconds: float = POLL_SECONDS,
                 idle_seconds: float = IDLE_SECONDS) -> None:
        self._open_store = open_store
        self.poll_seconds = poll_seconds
        self.idle_seconds = idle_seconds
        self._store: Any = None
        self._lock = threading.Lock()
        self._used = 0.0
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self.handovers = 0  # times the store was closed for another process (tests, status)

    @property
    def is_open(self) -> bool:
        return self._store is not None

    @contextmanager
    def use(self) -> Iterator[Any]:
        with self._lock:
            if self._store is None:
                self._store = self._open_store()
                self._start_watcher()
            try:
                yield self._store
            except BaseException:
                self._close_locked()  # whatever went wrong, the next call starts from a fresh load
                raise
            finally:
                self._used = time.monotonic()
                if self._store is not None:
                    release = getattr(self._store, "release_memory", None)
                    if release is not None:
                        release()  # the pages this call mapped (they stay in the page cache)

    def close(self) -> None:
        """Close the store and stop the watcher."""
        self._stop.set()
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            store.close()

    def _start_watcher(self) -> None:
        if self._watcher is None or not self._watcher.is_alive():
            self._stop.clear()
            self._watcher = threading.Thread(target=self._watch, name="jacked-held-store", daemon=True)
            self._watcher.start()

    def _watch(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            with self._lock:
                store = self._store
                if store is None:
                    continue
                waiters = getattr(store, "waiters", None)
                if waiters is not None and waiters():
                    self.handovers += 1
                    self._close_locked()
                elif time.monotonic() - self._used > self.idle_seconds:
                    self._close_locked()
