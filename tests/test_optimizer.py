"""The index's segment optimisation in a child process (`jacked.index.store.optimizer`), as the
daemon runs it: the daemon goes on answering meanwhile, a killed child leaves the shard usable,
and no child outlives the daemon. Real Edge shards throughout."""
from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jacked.index.embed import SparseVector
from jacked.index.store.base import Point
from jacked.index.store.edge import EdgeStore

DIMS = 384
#: Enough points that the optimisation (an HNSW build) takes seconds on 2 shared cores.
POINTS = 2000


def _points(n: int) -> list[Point]:
    rng = random.Random(36)
    return [Point(id=str(uuid.UUID(int=rng.getrandbits(128))),
                  payload={"user_name": "ada", "ts": float(i), "content_type": "chunk", "text": f"text {i}"},
                  dense=[rng.gauss(0, 1) for _ in range(DIMS)], sparse=SparseVector([5, 10 + i % 997], [0.5, 1.0]))
            for i in range(n)]


@pytest.fixture(scope="module")
def points() -> list[Point]:
    return _points(POINTS)


@pytest.fixture()
def store(tmp_path: Path, points: list[Point]) -> Iterator[EdgeStore]:
    st = EdgeStore(tmp_path / "index", optimize_in_child=True).open("test-model", DIMS)
    st.upsert(points)
    yield st
    st.close()


def _indexed(st: EdgeStore) -> int:
    """Vectors in an index: every sparse one from the start, the dense ones once a graph is built."""
    with st._mutex:
        return int(st._require().info().indexed_vectors_count)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait(check: Any, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return bool(check())


def _nearest_is_itself(st: EdgeStore, point: Point) -> bool:
    hits = st._query_leg("dense", point.dense, None, 1, [])
    return [h.id for h in hits] == [point.id]


def test_the_child_optimises_while_this_process_keeps_running(store: EdgeStore, points: list[Point]) -> None:
    assert _indexed(store) == POINTS
    gaps: list[float] = []
    done = threading.Event()

    def tick() -> None:  # what the daemon's other threads do meanwhile: run Python
        last = time.perf_counter()
        while not done.is_set():
            time.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = threading.Thread(target=tick)
    ticker.start()
    seen: list[dict[str, Any] | None] = []
    watcher = threading.Thread(target=lambda: seen.append(store.optimizing if _wait(lambda: store.optimizing) else None))
    watcher.start()
    try:
        store.optimize()
    finally:
        done.set()
        ticker.join()
        watcher.join()
    assert seen and seen[0] is not None and seen[0]["pid"] != os.getpid()
    assert not _alive(seen[0]["pid"]) and store.optimizing is None
    assert _indexed(store) == 2 * POINTS  # the child built the graph the shard now has
    assert max(gaps) < 1.0, max(gaps)
    assert store.count() == POINTS and _nearest_is_itself(store, points[7])
    assert not store.upkeep_due()


def test_a_child_killed_mid_run_leaves_the_shard_usable(store: EdgeStore, points: list[Point]) -> None:
    pids: list[int] = []

    def kill_mid_run() -> None:
        assert _wait(lambda: store.optimizing)
        pid = store.optimizing["pid"]  # type: ignore[index]
        pids.append(pid)
        time.sleep(1.0)  # it has loaded the shard and is building segments
        os.kill(pid, signal.SIGKILL)

    store._upkeep["reoptimize"] = True  # what a writer finds due
    killer = threading.Thread(target=kill_mid_run)
    killer.start()
    store.optimize()  # returns, having loaded the shard again
    killer.join()
    assert pids and not _alive(pids[0])
    assert store.count() == POINTS and _nearest_is_itself(store, points[11])
    assert not store.upkeep_due()  # not retried at once after a failure ...
    store._optimize_retry_at = 0.0
    assert store.upkeep_due()  # ... but later: the optimisation is still owed
    store.upsert([Point(id=str(uuid.uuid4()), payload={"user_name": "ada"}, dense=[0.1] * DIMS)])
    assert store.upkeep()
    assert store.count() == POINTS + 1 and _indexed(store) >= 2 * POINTS
    assert _nearest_is_itself(store, points[11])


def test_a_reopened_shard_after_a_killed_child_holds_every_point(tmp_path: Path, points: list[Point]) -> None:
    st = EdgeStore(tmp_path / "index", optimize_in_child=True).open("test-model", DIMS)
    st.upsert(points)
    killer = threading.Thread(target=lambda: (_wait(lambda: st.optimizing), time.sleep(1.0),
                                              os.kill(st.optimizing["pid"], signal.SIGKILL)))  # type: ignore[index]
    killer.start()
    st.optimize()
    killer.join()
    st.close()
    again = EdgeStore(tmp_path / "index").open("test-model", DIMS)
    try:
        assert again.count() == POINTS and _nearest_is_itself(again, points[3])
        again.optimize()  # in this process this time
        assert _indexed(again) == 2 * POINTS and again.count() == POINTS
    finally:
        again.close()


def test_stop_optimizer_kills_the_child_and_starts_no_other(store: EdgeStore) -> None:
    stopper = threading.Thread(target=lambda: (_wait(lambda: store.optimizing), store.stop_optimizer()))
    stopper.start()
    t0 = time.monotonic()
    store.optimize()
    stopper.join()
    assert time.monotonic() - t0 < 30
    assert _indexed(store) == POINTS and store.count() == POINTS
    store.optimize()  # stopped for good: nothing runs
    assert _indexed(store) == POINTS


def test_the_segment_size_is_the_setting(tmp_path: Path) -> None:
    from jacked.config import load_settings
    from jacked.index.indexer import configured_store

    settings = load_settings(tmp_path / "claude", jacked_home=str(tmp_path / "home"), max_segment_mb=16)
    st = configured_store(settings)
    assert st.max_segment_kb == 16 * 1024
    st.open("test-model", DIMS)
    st.close()
    config = json.loads((st.shard_path / "edge_config.json").read_text())
    assert config["optimizers"]["max_segment_size"] == 16 * 1024
    # another value: the shard takes it at the next open, and its segments at the next optimisation
    bigger = EdgeStore(tmp_path / "home" / "index", max_segment_kb=64 * 1024).open("test-model", DIMS)
    try:
        assert bigger.upkeep_due()
    finally:
        bigger.close()
    config = json.loads((st.shard_path / "edge_config.json").read_text())
    assert config["optimizers"]["max_segment_size"] == 64 * 1024
