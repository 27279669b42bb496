"""An exclusive lock on a file (`flock`), waited for up to a timeout.

The kernel frees an flock when its holder dies, so a crashed process never leaves a lock behind.
Why not the `filelock` package: importing it took ~40 ms of every command (a cold search is
~0.75 s) and each acquire and release ~180 µs (5 µs here); jacked runs on POSIX systems only.
"""
from __future__ import annotations

import fcntl
import os
import time

#: How often a waiter tries again.
POLL_S = 0.05


class LockTimeout(TimeoutError):
    """The lock stayed held by another for the whole timeout."""


class FileLock:
    """An exclusive flock on `path` (created owner-only when missing). Any thread may release it;
    two locks on the same file exclude each other even within one process. Not re-entrant."""

    def __init__(self, path: str | os.PathLike[str], timeout: float = -1) -> None:
        self.path = os.fspath(path)
        self.timeout = timeout
        self._fd: int | None = None

    @property
    def is_locked(self) -> bool:
        return self._fd is not None

    def acquire(self, timeout: float | None = None) -> None:
        """Take the lock, waiting up to `timeout` seconds (this lock's own when None; a negative
        one waits for ever); raises `LockTimeout` when it stays held."""
        if self._fd is not None:
            raise RuntimeError(f"{self.path}: this lock is held already")
        wait = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if wait < 0:
                fcntl.flock(fd, fcntl.LOCK_EX)  # for ever: woken as soon as the holder lets go
            while wait >= 0:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockTimeout(f"{self.path} is locked by another process") from None
                    time.sleep(POLL_S)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def try_acquire(self) -> bool:
        """Take the lock only if it is free now; whether it was taken."""
        try:
            self.acquire(timeout=0)
        except LockTimeout:
            return False
        return True

    def release(self) -> None:
        """Let the lock go (closing the file drops the flock); nothing when it is not held."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
