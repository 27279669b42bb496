"""jacked.util.flock: the exclusive file lock the store, the archive and `purge` wait for."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from jacked.util.flock import FileLock, LockTimeout


def test_two_locks_on_one_file_exclude_each_other_and_a_waiter_gets_it_once_released(tmp_path: Path) -> None:
    path = tmp_path / "index.lock"
    first, second = FileLock(path), FileLock(path, timeout=0)
    first.acquire()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    with pytest.raises(LockTimeout):
        second.acquire()
    assert not second.try_acquire() and not second.is_locked
    threading.Timer(0.2, first.release).start()  # released from another thread
    t = time.monotonic()
    second.acquire(timeout=-1)  # for ever: woken by the release
    assert 0.1 < time.monotonic() - t < 5
    assert second.is_locked and not first.is_locked
    with pytest.raises(RuntimeError):
        second.acquire()  # not re-entrant: a second acquire is a bug, not a wait for ever
    second.release()
    second.release()  # nothing held: nothing to do
    with FileLock(path, timeout=0) as third:
        assert third.is_locked
    assert not third.is_locked


def test_a_timeout_waits_that_long_and_a_dead_holder_frees_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "archive.lock"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\n"
        "from jacked.util.flock import FileLock\n"
        f"FileLock({str(path)!r}).acquire()\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n")], stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[1])
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        t = time.monotonic()
        with pytest.raises(LockTimeout, match="locked by another process"):
            FileLock(path, timeout=0.3).acquire()
        assert time.monotonic() - t >= 0.3
        os.kill(holder.pid, signal.SIGKILL)  # as a crash: nothing releases it but the kernel
        holder.wait()
        with FileLock(path, timeout=5):
            pass
    finally:
        holder.kill()
        holder.wait()
