"""The index's segment optimisation in a child process (`jacked.index.store.optimizer`), as the
daemon runs it: the daemon goes on answering meanwhile, a killed child leaves the shard usable,
and no child outlives the daemon. Real Edge shards throughout."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_daemon import homes, indexed  # noqa: F401 - shared fixtures

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


def _maps(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return ""


def _nearest_is_itself(st: EdgeStore, point: Point) -> bool:
    hits = st._query_leg("dense", point.dense, None, 1, [])
    return [h.id for h in hits] == [point.id]


def test_the_child_optimises_while_this_process_keeps_running(store: EdgeStore, points: list[Point]) -> None:
    assert _indexed(store) == POINTS
    gaps: list[float] = []
    done = threading.Event()

    def tick() -> None:  # what the daemon's other threads do while the child runs: run Python
        last = time.perf_counter()
        while not done.is_set():
            running = store.optimizing
            time.sleep(0.01)
            now = time.perf_counter()
            if running and store.optimizing:
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
    assert len(gaps) > 10 and max(gaps) < 1.0, max(gaps)
    assert store.count() == POINTS and _nearest_is_itself(store, points[7])
    assert not store.upkeep_due()


def _kill_mid_run(store: EdgeStore, pids: list[int]) -> None:
    """Kill the store's optimising child once it runs (its pid into `pids`)."""
    assert _wait(lambda: store.optimizing)
    pid = store.optimizing["pid"]  # type: ignore[index]
    pids.append(pid)
    # Stopped at once, so that it cannot finish first however fast the machine, then killed
    # a second later: the optimisation did not complete, wherever the child was.
    os.kill(pid, signal.SIGSTOP)
    time.sleep(1.0)
    os.kill(pid, signal.SIGKILL)


def test_a_child_killed_mid_run_leaves_the_shard_usable(store: EdgeStore, points: list[Point]) -> None:
    pids: list[int] = []
    store._upkeep["reoptimize"] = True  # what a writer finds due
    killer = threading.Thread(target=_kill_mid_run, args=(store, pids))
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
    pids: list[int] = []
    # Killed mid-run, not after: a child that finished first would test nothing (it used to, on a fast run).
    killer = threading.Thread(target=_kill_mid_run, args=(st, pids))
    killer.start()
    st.optimize()
    killer.join()
    assert pids and not _alive(pids[0])
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


# ------------------------------------------------------------------------------ in the daemon
SECOND_LATE = "71c9afe9-d9cc-4583-86b3-e62ba682b83a"


@pytest.fixture()
def daemon_home(homes: tuple[Path, Path, Path]) -> Iterator[tuple[Path, Path, Path]]:  # noqa: F811 - the fixture imported above, asked for by name
    """`homes` (test_daemon) with an optimisation owed: the daemon's first write runs it."""
    claude, via_daemon, in_process = homes
    (via_daemon / "index" / "index.upkeep.json").write_text(json.dumps({"reoptimize": True}))
    yield claude, via_daemon, in_process


def _hook(session: Path) -> str:
    return json.dumps({"session_id": session.stem, "transcript_path": str(session), "hook_event_name": "Stop"})


def _optimizer_of(home: Path, timeout: float = 300.0) -> int:
    """The pid of the daemon's optimiser child, as `daemon status` shows it, once it runs."""
    from test_daemon import status_of

    found: list[int] = []

    def check() -> bool:
        optimizing = ((status_of(home) or {}).get("index") or {}).get("optimizing")
        if optimizing:
            found.append(int(optimizing["pid"]))
        return bool(found)

    assert _wait(check, timeout), "no optimisation seen"
    return found[0]


def _optimising_daemon(claude: Path, home: Path) -> tuple[dict[str, str], Path, int, int]:
    """A hook's write to a daemon of `home` that owes an optimisation: (its env, the session, the
    daemon's pid, its optimiser child's pid)."""
    from test_daemon import _copy_session, env_for, jacked, status_of

    late = _copy_session(claude, "29ccd257")
    env = env_for(claude, home, True)
    assert jacked(["index", "--hook"], env, stdin=_hook(late)).returncode == 0  # starts the daemon: it optimises
    return env, late, status_of(home)["pid"], _optimizer_of(home)  # type: ignore[index]


def _idle(home: Path) -> bool:
    from test_daemon import status_of

    status = status_of(home) or {}
    return status.get("queued_writes") == 0 and not status.get("job")


def test_the_daemon_answers_and_keeps_hooks_while_it_optimises(daemon_home: tuple[Path, Path, Path]) -> None:
    from test_daemon import JACKED, _copy_session, jacked, status_of

    claude, via_daemon, _ = daemon_home
    env, late, _, child = _optimising_daemon(claude, via_daemon)
    second = _copy_session(claude, SECOND_LATE)
    os.kill(child, signal.SIGSTOP)  # hold the optimisation where it is, however fast this machine is
    try:
        for _ in range(5):
            t0 = time.monotonic()
            status = status_of(via_daemon)
            assert status is not None and time.monotonic() - t0 < 1.0
            assert status["index"]["optimizing"]["pid"] == child and status["job"]["method"] == "index"
        shown = jacked(["daemon", "status"], env)
        assert "optimising the index for" in shown.stdout and f"(pid {child})" in shown.stdout
        t0 = time.monotonic()
        hooked = jacked(["index", "--hook"], env, stdin=_hook(second))
        assert hooked.returncode == 0 and hooked.stderr == "" and time.monotonic() - t0 < 10
        assert status_of(via_daemon)["queued_writes"] >= 1  # type: ignore[index]
        search = subprocess.Popen([str(JACKED), "search", "sound recorder", "--json"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        assert search.poll() is None  # it waits for the index ...
    finally:
        os.kill(child, signal.SIGCONT)
    out, err = search.communicate(timeout=300)
    assert search.returncode == 0 and "the index is being optimised" in err  # ... and says why
    assert _wait(lambda: _idle(via_daemon), 300)
    sessions = jacked(["sessions", "--json"], env).stdout
    assert late.stem in sessions and second.stem in sessions
    assert not _alive(child)
    assert json.loads((via_daemon / "index" / "index.upkeep.json").read_text()).get("reoptimize") is None


def test_a_killed_optimiser_costs_the_daemon_nothing(daemon_home: tuple[Path, Path, Path]) -> None:
    from test_daemon import env_for, jacked, status_of

    claude, via_daemon, in_process = daemon_home
    env, late, pid, child = _optimising_daemon(claude, via_daemon)
    os.kill(child, signal.SIGKILL)
    assert _wait(lambda: _idle(via_daemon), 300)
    assert status_of(via_daemon)["pid"] == pid  # type: ignore[index]
    local = env_for(claude, in_process, False)
    assert jacked(["index", str(late)], local).returncode == 0
    for args in (["sessions", "--json"], ["search", "sound recorder", "--json"]):
        assert jacked(args, env).stdout.replace(str(via_daemon), "HOME") == \
            jacked(args, local).stdout.replace(str(in_process), "HOME"), args


def test_no_optimiser_outlives_the_daemon(daemon_home: tuple[Path, Path, Path]) -> None:
    from test_daemon import _copy_session, daemon_pids, jacked, status_of

    claude, via_daemon, _ = daemon_home
    env, _, pid, child = _optimising_daemon(claude, via_daemon)
    # once it has loaded Qdrant it has asked to die with its parent (before that, it checks the
    # parent is still there): stopped there, only that request can end it
    assert _wait(lambda: "qdrant_edge" in _maps(child), 60)
    os.kill(child, signal.SIGSTOP)
    os.kill(pid, signal.SIGKILL)
    assert _wait(lambda: not daemon_pids(via_daemon) and not _alive(child), 30)
    # the next daemon still owes the optimisation: its next write runs it, and a SIGTERM stops it
    # at once, optimiser and all
    second = _copy_session(claude, SECOND_LATE)
    assert jacked(["index", "--hook"], env, stdin=_hook(second)).returncode == 0
    child = _optimizer_of(via_daemon)
    os.kill(child, signal.SIGSTOP)
    os.kill(status_of(via_daemon)["pid"], signal.SIGTERM)  # type: ignore[index]
    assert _wait(lambda: not daemon_pids(via_daemon) and not _alive(child), 30)
