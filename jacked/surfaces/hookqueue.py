"""A small on-disk queue that lets concurrent hooks hand their work to whoever holds the index.

A hook writes an entry (the transcript to index) and waits until either its own child process
holds the index lock, or the process already holding it has *claimed* the entry — that
process indexes every claimed entry before it lets go of the index, so any command started
after the hook returns still sees the new turn. Claiming is an atomic rename; an entry left
claimed by a process that died is put back for the next holder.
"""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

CLAIM_POLL_SECONDS = 0.02


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class HookQueue:
    """`JACKED_HOME/queue/`: one JSON file per pending hook, `claimed/` for taken ones."""

    def __init__(self, home: Path) -> None:
        self.dir = Path(home) / "queue"
        self.claimed_dir = self.dir / "claimed"

    def put(self, target: str) -> Path:
        """Add an entry; returns its path (gone once claimed)."""
        self.claimed_dir.mkdir(parents=True, exist_ok=True)
        name = f"{time.time_ns()}-{os.getpid()}.json"
        tmp = self.dir / f".{name}.tmp"
        tmp.write_text(json.dumps({"target": target}), encoding="utf-8")
        final = self.dir / name
        tmp.replace(final)
        return final

    def requeue_orphans(self) -> None:
        """Put back entries claimed by processes that are gone (they died mid-work)."""
        if not self.claimed_dir.is_dir():
            return
        for f in self.claimed_dir.glob("*.json.*"):
            try:
                pid = int(f.suffix[1:])
            except ValueError:
                continue
            if not _alive(pid):
                try:
                    f.replace(self.dir / f.name[: -len(f.suffix)])
                except OSError:
                    pass

    def claim_all(self) -> list[tuple[Path, str]]:
        """Atomically take every pending entry: [(claimed path, target)]."""
        out = []
        if not self.dir.is_dir():
            return out
        self.claimed_dir.mkdir(parents=True, exist_ok=True)
        for f in sorted(self.dir.glob("*.json")):
            dest = self.claimed_dir / f"{f.name}.{os.getpid()}"
            try:
                f.replace(dest)
            except OSError:
                continue  # another holder took it first
            try:
                target = json.loads(dest.read_text(encoding="utf-8")).get("target")
            except (OSError, ValueError):
                target = None
            if isinstance(target, str):
                out.append((dest, target))
            else:
                dest.unlink(missing_ok=True)
        return out

    @staticmethod
    def done(claimed: list[tuple[Path, str]]) -> None:
        for path, _ in claimed:
            path.unlink(missing_ok=True)


class Claimer:
    """While the index is held, claims new entries every few milliseconds in a thread."""

    def __init__(self, queue: HookQueue) -> None:
        self.queue = queue
        self._items: list[tuple[Path, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Claimer:
        self.queue.requeue_orphans()
        self._take()
        self._thread.start()
        return self

    def _take(self) -> None:
        items = self.queue.claim_all()
        if items:
            with self._lock:
                self._items.extend(items)

    def _run(self) -> None:
        while not self._stop.wait(CLAIM_POLL_SECONDS):
            self._take()

    def pop_all(self) -> list[tuple[Path, str]]:
        with self._lock:
            items, self._items = self._items, []
        return items

    def stop(self) -> list[tuple[Path, str]]:
        """Stop claiming; returns what was claimed and not yet taken (including a last sweep)."""
        self._stop.set()
        self._thread.join()
        self._take()
        return self.pop_all()
