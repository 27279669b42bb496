"""A backfill at scale (issue 15): two passes, resumable at any moment, readers let in, memory flat.

* the lexical pass writes every session's points with their BM25 vector only, and search finds
  them by their words before any dense vector exists; the dense pass fills the vectors in;
* `kill -9` at any moment of the two passes, then a re-run: the same points as a clean run, and
  nothing embedded twice (but for the one round in flight);
* a process waiting for the index (a search, a hook) is let in between the backfill's batches;
* a store opened to answer queries keeps none of the shard mapped (the pages a load reads
  leave the resident set); a shard made by an older jacked takes the cold layout;
* the glance a cold backfill starts with makes every session findable by its prompts before the
  lexical pass reads it; no glance point outlives the backfill, killed during the glance or not.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from kit import generated_corpus

from jacked.config import load_settings
from jacked.index.content_types import DENSE_TYPES
from jacked.index.indexer import Indexer, backfill_state
from jacked.query.search import SearchOptions, search_many

JACKED = [sys.executable, "-m", "jacked.surfaces.cli.entry"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("corpus") / "claude"
    return out, generated_corpus(out, 30, 5)


@pytest.fixture(scope="module")
def clean_run(corpus: tuple[Path, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path,
                                                                                                     dict[str, Any]]:
    """A clean backfill of the corpus: (its JACKED_HOME, its report). Tests copy the home to change it."""
    home = tmp_path_factory.mktemp("clean") / "home"
    return home, _backfill_json(corpus[0], home)


@pytest.fixture(scope="module")
def clean(clean_run: tuple[Path, dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A clean backfill of the corpus: (its report, its points)."""
    home, report = clean_run
    return report, _points(home)


def _env(claude: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKED_")}
    env.update(CLAUDE_CONFIG_DIR=str(claude), JACKED_HOME=str(home), JACKED_USER_NAME="ada")
    return env


def _points(home: Path) -> dict[str, tuple[Any, ...]]:
    """Every point: (content hash, has a dense vector, its dense vector rounded, bm25 indices, payload
    without what depends on the run) — what two backfills of the same corpus must agree on."""
    import qdrant_edge as qe

    from jacked.index.store.edge import EdgeStore

    store = EdgeStore(home / "index").open(None, None)
    out: dict[str, tuple[Any, ...]] = {}
    try:
        offset = None
        while True:
            records, offset = store._shard.scroll(qe.ScrollRequest(offset=offset, limit=256, with_payload=True,
                                                                   with_vector=True))
            for r in records:
                vec = r.vector or {}
                dense = vec.get("dense")
                payload = {k: v for k, v in (r.payload or {}).items() if k not in ("machine",)}
                out[str(r.id)] = (payload.get("content_hash"), dense is not None,
                                  tuple(round(x, 5) for x in dense) if dense else None,
                                  tuple(vec["bm25"].indices) if "bm25" in vec else None,
                                  json.dumps(payload, sort_keys=True))
            if offset is None:
                return out
    finally:
        store.close()


def _progress(home: Path) -> dict[str, Any]:
    try:
        return json.loads((home / "backfill.json").read_text())
    except (OSError, ValueError):
        return {}


def _run_until(claude: Path, home: Path, ready: Any, timeout: float = 300) -> bool:
    """Start `jacked backfill`; SIGKILL it once `ready(progress)` holds. False if it ended first."""
    proc = subprocess.Popen(JACKED + ["backfill", "--json"], env=_env(claude, home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            p = _progress(home)
            if p.get("pid") == proc.pid and ready(p):
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                return True
            time.sleep(0.02)
        return False
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _glance_points(home: Path) -> list[str]:
    return [pid for pid, point in _points(home).items() if json.loads(point[4]).get("glance")]


def _backfill_json(claude: Path, home: Path) -> dict[str, Any]:
    out = subprocess.run(JACKED + ["backfill", "--json"], env=_env(claude, home), capture_output=True, text=True,
                         check=True, timeout=600)
    return json.loads(out.stdout)


def test_kill9_at_any_moment_then_rerun_gives_the_points_of_a_clean_run(
        corpus: tuple[Path, dict[str, Any]], clean: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path) -> None:
    claude, _ = corpus
    report, want = clean
    assert report["points_dense_filled"] > 0 and not report["errors"]

    home = tmp_path / "killed"
    moments = [
        lambda p: p.get("phase") in ("scan", "lexical"),  # reading, or writing the lexical points
        # while texts are embedded (a round's vectors not written yet), twice
        lambda p: p.get("phase") == "dense" and (p.get("dense") or {}).get("texts_embedded", 0) > 0,
        lambda p: p.get("phase") == "dense" and (p.get("dense") or {}).get("texts_embedded", 0) > 64,
        lambda p: p.get("phase") == "optimize",  # while a child process optimises the shard
    ]
    kills = sum(_run_until(claude, home, moment) for moment in moments)
    assert kills >= 3, "the backfill ended before it could be killed three times: make the corpus larger"
    status = subprocess.run(JACKED + ["status", "--json"], env=_env(claude, home), capture_output=True, text=True,
                            check=True).stdout
    assert json.loads(status)["backfill"]["running"] is False
    last = _backfill_json(claude, home)
    assert not last["errors"]
    assert _points(home) == want
    again = _backfill_json(claude, home)  # and then nothing is left to do
    assert (again["points_written"], again["texts_embedded"], again["points_dense_filled"]) == (0, 0, 0)
    assert again["glance_points"] == 0  # every session is indexed: nothing to glance at


def test_a_catalog_that_lost_its_index_records_is_brought_back_from_the_store(
        corpus: tuple[Path, dict[str, Any]], clean_run: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """The index kept, the catalog made anew, one session shorter:
    a backfill asks the store what each session holds, so the points of the turn that is gone are
    deleted, not left behind unrecorded. (A backfill decides once, before it writes, whether the
    store may hold such points: its own writes are recorded first.)"""
    import shutil

    from jacked.catalog import Catalog

    claude, truth = corpus
    home = tmp_path / "home"
    shutil.copytree(clean_run[0], home)
    shutil.copytree(claude, tmp_path / "claude")
    session = max((s for s in truth["sessions"] if not s["malformed_lines"] and len(s["turns"]) > 2),
                  key=lambda s: len(s["turns"]))
    main = tmp_path / "claude" / session["file"]
    lines = main.read_text().splitlines()
    prompts = [i for i, ln in enumerate(lines) if _is_prompt(ln)]
    main.write_text("\n".join(lines[:prompts[-1]]) + "\n")  # its last prompt and all after it, gone
    settings = load_settings(tmp_path / "claude", jacked_home=str(home), user_name="ada")
    catalog = Catalog(settings.catalog_path)
    try:  # a catalog made anew (but for its cache of vectors: nothing is embedded again)
        tables = [r[0] for r in catalog.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        with catalog.transaction():
            for table in set(tables) - {"embed_cache", "meta"}:
                catalog.db.execute(f"DELETE FROM {table}")
    finally:
        catalog.close()
    held_before = set(_points(home))
    report = Indexer(settings).backfill()
    assert not report.errors and report.points_deleted > 0
    catalog = Catalog(settings.catalog_path)
    try:
        recorded = {r[0] for r in catalog.db.execute("SELECT point_id FROM index_points")}
    finally:
        catalog.close()
    held = set(_points(home))
    assert held == recorded and held < held_before


def _is_prompt(line: str) -> bool:
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return record.get("type") == "user" and isinstance((record.get("message") or {}).get("content"), str)


PLANTED = "the ultramarine quokka tessellation broke the zephyrine 7431 build"


def _planted_copy(corpus: tuple[Path, dict[str, Any]], dest: Path) -> tuple[Path, str]:
    """A copy of the corpus with `PLANTED` appended as the last prompt of its oldest session."""
    import shutil

    claude, truth = corpus
    shutil.copytree(claude, dest)
    oldest = min((s for s in truth["sessions"] if not s["malformed_lines"] and s.get("ended_at")),
                 key=lambda s: s["started_at"])
    main = dest / oldest["file"]
    records = [json.loads(ln) for ln in main.read_text().splitlines() if ln.strip().startswith("{")]
    user = next(r for r in records
                if r.get("type") == "user" and isinstance((r.get("message") or {}).get("content"), str))
    planted = dict(user, uuid="00000000-0000-4000-8000-0000000a11ce", timestamp=oldest["ended_at"],
                   message={"role": "user", "content": PLANTED})
    with main.open("a") as fh:
        fh.write(json.dumps(planted) + "\n")
    return dest, oldest["session_id"]


class _Stop(Exception):
    pass


def test_the_glance_alone_makes_the_oldest_session_findable_and_the_backfill_replaces_it(
        corpus: tuple[Path, dict[str, Any]], dense_embedder: Any, tmp_path: Path) -> None:
    claude, oldest = _planted_copy(corpus, tmp_path / "claude")
    settings = load_settings(claude, jacked_home=str(tmp_path / "home"), user_name="ada")
    seen: list[tuple[str, int, int]] = []

    def stop_after_glance(phase: str, done: int, total: int) -> None:
        seen.append((phase, done, total))
        if phase != "glance":
            raise _Stop  # the glance is done: stop before the scan reads anything

    with pytest.raises(_Stop):
        Indexer(settings).backfill(progress=stop_after_glance)
    glanced = [s for s in seen if s[0] == "glance"]
    assert glanced[-1][1] == glanced[-1][2] == len(corpus[1]["sessions"])
    state = backfill_state(settings.home)
    assert state is not None and state["glance"]["sessions_done"] == state["glance"]["sessions_total"] > 0
    found = search_many(settings, [f'"{PLANTED}"'], SearchOptions(limit=3))[0]
    assert found["results"][0]["session_id"] == oldest and found["results"][0]["exact"]
    assert found["results"][0]["matches"][0]["text"] == PLANTED
    # words of a prompt, unquoted: the sessions rank by their words alone (no dense vector yet)
    found = search_many(settings, ["zephyrine tessellation quokka"], SearchOptions(limit=3))[0]
    assert found["results"][0]["session_id"] == oldest
    home = settings.home
    glance = _glance_points(home)
    assert len(glance) >= len(corpus[1]["sessions"])
    for point in _points(home).values():  # nothing but glance points: the lexical pass wrote none yet
        payload = json.loads(point[4])
        assert payload["glance"] and payload["content_type"] == "user_message" and point[1] is False
        assert payload["content_hash"].startswith("-") and payload["agent"] == "claude"

    report = Indexer(settings).backfill()  # the same backfill, run to its end
    assert not report.errors and report.glance is not None and report.glance.swept == len(glance)
    assert _glance_points(home) == []
    from jacked.catalog import Catalog

    catalog = Catalog(settings.catalog_path)
    try:  # what the store holds is what the catalog recorded (kill -9 parity: the next test)
        assert catalog.db.execute("SELECT COUNT(*) FROM index_points").fetchone()[0] == len(_points(home))
    finally:
        catalog.close()
    found = search_many(settings, [f'"{PLANTED}"'], SearchOptions(limit=3))[0]
    assert found["results"][0]["session_id"] == oldest


def test_kill9_during_the_glance_then_rerun_gives_the_points_of_a_clean_run(
        corpus: tuple[Path, dict[str, Any]], clean: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path) -> None:
    from jacked.index.glance import CONTENT_TYPE, MARK
    from jacked.index.store import SearchFilter
    from jacked.index.store.edge import EdgeStore

    claude, _ = corpus
    report, want = clean
    assert report["glance_points"] > 0
    assert not [p for p in want.values() if json.loads(p[4]).get("glance")]  # none outlives a backfill

    for attempt in range(3):
        home = tmp_path / f"killed{attempt}"
        proc = subprocess.Popen(JACKED + ["backfill", "--json"], env=_env(claude, home),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while not (home / "index" / "shard").exists() and time.monotonic() < deadline:
                time.sleep(0.005)
            # Queue for the index: the backfill lets waiters in after each batch of glance points;
            # holding it, kill the backfill where it stands.
            store = EdgeStore(home / "index", lock_timeout=120).open(None, None)
            try:
                phase = _progress(home).get("phase")
                glanced = store.count(SearchFilter(content_types=[CONTENT_TYPE], extra=[("set", MARK, None)]))
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
            finally:
                store.close()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if phase == "glance" and glanced > 0:
            break
    else:
        pytest.fail("never let in during the glance")
    last = _backfill_json(claude, home)
    assert not last["errors"] and last["glance_points"] == glanced  # glanced again, then replaced
    assert _points(home) == want


def test_lexical_pass_first_search_finds_by_words_then_dense_pass_fills_in(
        corpus: tuple[Path, dict[str, Any]], dense_embedder: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    claude, truth = corpus
    settings = load_settings(claude, jacked_home=str(tmp_path / "home"), user_name="ada")
    indexer = Indexer(settings)
    # The first backfill stops after its lexical pass (as if killed before the dense one).
    monkeypatch.setattr(Indexer, "_fill_dense", lambda self, *a, **k: None)
    first = indexer.backfill()
    # It may have embedded texts ahead, beside its lexical work: cached, none written yet.
    assert first.points_written > 0
    from jacked.query.status import status

    st = status(settings)
    assert st["sessions_lexical"] == st["sessions"] > 0
    assert st["points_pending_dense"] > 0 and st["sessions_indexed"] == 0
    # Every point is written; only dense-type points wait for their vector.
    from jacked.index.store.edge import EdgeStore

    store = EdgeStore(settings.home / "index").open(None, None)
    try:
        waiting = [h for h in store.scroll(None, ["content_type", "embedding_model"])
                   if h.payload["content_type"] in DENSE_TYPES and not h.payload.get("embedding_model")]
        assert len(waiting) == st["points_pending_dense"]
    finally:
        store.close()
    detail = next(q for q in truth["queries"] if q["kind"] == "detail")
    found = search_many(settings, [detail["detail_text"]], SearchOptions(limit=5), indexer=indexer)[0]
    assert found["results"] and found["results"][0]["session_id"] in detail["detail_session_ids"]

    monkeypatch.undo()
    second = Indexer(settings).backfill()
    assert second.points_written == 0 and second.points_dense_filled == st["points_pending_dense"]
    st2 = status(settings)
    assert st2["points_pending_dense"] == 0 and st2["sessions_indexed"] == st2["sessions"]
    store = EdgeStore(settings.home / "index").open(None, None)
    try:
        texts = {h.payload["text"] for h in store.scroll(None, ["content_type", "text"])
                 if h.payload["content_type"] in DENSE_TYPES}
    finally:
        store.close()
    assert first.texts_embedded + second.texts_embedded == len(texts)  # each text once, over both runs
    para = next(q for q in truth["queries"] if q["kind"] == "para")
    assert search_many(settings, [para["query"]], SearchOptions(limit=5))[0]["results"]
    state = backfill_state(settings.home)
    assert state is not None and state["phase"] == "done" and state["running"] is False


_HOLDER = textwrap.dedent("""
    import sys, time
    from jacked.index.store import Point
    from jacked.index.store.edge import EdgeStore
    store = EdgeStore(sys.argv[1], lock_timeout=30).open("m", 4)
    print("held", flush=True)
    end = time.monotonic() + float(sys.argv[2])
    n = 0
    while time.monotonic() < end:  # a long writer: a point per round, waiters let in between rounds
        store.upsert([Point(id=f"00000000-0000-4000-8000-{n:012d}", payload={"n": n}, dense=[1.0, 0, 0, 0])])
        n += 1
        store.let_waiters_in()
        time.sleep(0.05)
    store.close()
    print("done", n, flush=True)
""")


def test_a_waiting_reader_is_let_in_between_batches(tmp_path: Path) -> None:
    from jacked.index.store.edge import EdgeStore

    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(tmp_path / "index"), "20"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        time.sleep(0.3)
        t = time.monotonic()
        store = EdgeStore(tmp_path / "index", lock_timeout=15).open(None, None)
        try:
            waited = time.monotonic() - t
            assert store.count() > 0  # sees what the writer wrote so far
        finally:
            store.close()
        assert waited < 10, f"waited {waited:.1f}s for a writer that lets waiters in every round"
        assert holder.poll() is None  # the writer goes on afterwards
        out, _ = holder.communicate(timeout=60)
        assert out.startswith("done")
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert not list((tmp_path / "index" / "index.waiting").iterdir())


def _mapped_kb(root: Path) -> int:
    total, inside = 0, False
    prefix = str(root.resolve())
    with open("/proc/self/smaps", encoding="utf-8") as fh:
        for line in fh:
            first = line.split(None, 1)[0]
            if not first.endswith(":") or "-" in first:
                parts = line.split()
                inside = len(parts) > 5 and parts[5].startswith(prefix)
            elif inside and first == "Rss:":
                total += int(line.split()[1])
    return total


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="resident pages are read from /proc")
def test_an_opened_store_keeps_none_of_the_shard_resident(tmp_path: Path) -> None:
    import random

    from jacked.index.embed import SparseVector
    from jacked.index.store import Point
    from jacked.index.store.edge import EdgeStore

    rng = random.Random(3)
    store = EdgeStore(tmp_path / "index").open("m", 64)
    store.upsert([Point(id=f"00000000-0000-4000-8000-{i:012d}",
                        payload={"session_id": f"s{i % 50}", "content_type": "plan", "text": "x" * 500},
                        dense=[rng.random() for _ in range(64)], sparse=SparseVector([i % 97, 1000 + i], [1.0, 1.0]))
                  for i in range(6000)])
    store.close()
    store = EdgeStore(tmp_path / "index").open(None, None)
    try:
        # A load reads the WAL and the appendable segment's files: they leave the resident set.
        assert _mapped_kb(tmp_path / "index") < 2048
        hits = store.search([rng.random() for _ in range(64)], SparseVector([5], [1.0]), limit=10)
        assert hits
        store.release_memory()
        assert _mapped_kb(tmp_path / "index") < 2048
    finally:
        store.close()


def test_a_shard_of_an_older_jacked_takes_the_cold_layout(tmp_path: Path) -> None:
    import qdrant_edge as qe

    from jacked.index.store import Point
    from jacked.index.store.edge import EdgeStore

    # The layout before issue 15: defaults (vectors and sparse index read into RAM at load).
    store = EdgeStore(tmp_path / "index").open("m", 4)
    store.close()
    shard = tmp_path / "index" / "shard"
    import shutil

    shutil.rmtree(shard)
    old = qe.EdgeShard.create(str(shard), qe.EdgeConfig(
        vectors={"dense": qe.EdgeVectorParams(size=4, distance=qe.Distance.Cosine)},
        sparse_vectors={"bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)}))
    old.update(qe.UpdateOperation.create_field_index("session_id", qe.PayloadSchemaType.Keyword))
    old.update(qe.UpdateOperation.upsert_points([qe.Point(f"00000000-0000-4000-8000-{i:012d}",
                                                          {"dense": [1.0, float(i), 0.0, 0.0]}, {"session_id": "s"})
                                                 for i in range(100)]))
    old.close()
    store = EdgeStore(tmp_path / "index").open("m", 4)
    try:
        cfg = json.loads((shard / "edge_config.json").read_text())
        assert cfg["vectors"]["dense"]["memory"] == "cold" and cfg["payload_memory"] == "cold"
        assert store.upkeep() is True  # the next writer rewrites the old segments
        assert store.count() == 100
        store.upsert([Point(id="00000000-0000-4000-8000-000000009999", payload={"session_id": "t"},
                            dense=[0.0, 1.0, 0.0, 0.0])])
        params = store._shard.info().payload_schema["session_id"].params
        assert params is not None and params.memory == qe.Memory.Cold
    finally:
        store.close()
    store = EdgeStore(tmp_path / "index").open(None, None)
    try:
        assert store.count() == 101 and store.upkeep() is False
    finally:
        store.close()


def test_a_shard_with_int8_codes_takes_turboquant_codes(tmp_path: Path) -> None:
    import qdrant_edge as qe

    from jacked.index.store.edge import FULL_SCAN_KB, INDEXING_KB, MAX_SEGMENT_KB, SEGMENTS, EdgeStore

    dims = 16
    store = EdgeStore(tmp_path / "index").open("m", dims)
    store.close()
    shard = tmp_path / "index" / "shard"
    import shutil

    shutil.rmtree(shard)
    # The layout before (configuration version 2): the same, with int8 codes of the dense vectors.
    cold = qe.Memory.Cold
    int8 = qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=0.99, memory=cold)
    old = qe.EdgeShard.create(str(shard), qe.EdgeConfig(
        vectors={"dense": qe.EdgeVectorParams(size=dims, distance=qe.Distance.Cosine, memory=cold,
                                              quantization_config=int8)},
        sparse_vectors={"bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf, memory=cold)},
        hnsw_config=qe.HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=FULL_SCAN_KB, memory=cold),
        payload_memory=cold, id_tracker_memory=cold,
        optimizers=qe.EdgeOptimizersConfig(max_segment_size=MAX_SEGMENT_KB, default_segment_number=SEGMENTS,
                                           indexing_threshold=INDEXING_KB)))
    old.update(qe.UpdateOperation.upsert_points([
        qe.Point(f"00000000-0000-4000-8000-{i:012d}", {"dense": [float((i * 7 + j) % 11) + 1.0 for j in range(dims)]},
                 {"session_id": "s"}) for i in range(3000)]))
    old.optimize()
    old.close()

    def codes() -> set[str]:
        found = set()
        for f in shard.glob("segments/*/vector_storage-dense/quantized.config.json"):
            found |= set(json.loads(f.read_text())["quantization_config"])
        return found

    assert codes() == {"scalar"}
    store = EdgeStore(tmp_path / "index").open("m", dims)
    try:
        cfg = json.loads((shard / "edge_config.json").read_text())
        assert set(cfg["vectors"]["dense"]["quantization_config"]) == {"turbo"}
        assert store.upkeep() is True  # the next writer rewrites the segments with the new codes
        assert codes() == {"turbo"} and store.count() == 3000
        query = [float((5 * 7 + j) % 11) + 1.0 for j in range(dims)]
        dense, _ = store.search_each(query, None, limit=3, fields=[])
        assert dense[0].score > 0.999  # point 5 (and its equals) found, by its own vector
    finally:
        store.close()


def test_a_bulk_load_keeps_segments_apart_and_the_next_optimisation_merges_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    import jacked.index.store.edge as edge
    from jacked.index.store import Point
    from jacked.index.store.edge import SEGMENTS, EdgeStore

    monkeypatch.setattr(edge, "OPTIMIZE_EVERY", 600)  # a backfill's 20,000, scaled down
    dims, rounds, per_round = 64, SEGMENTS + 3, 600  # 600 x 256 B of vectors: past INDEXING_KB
    rng = random.Random(7)
    shard = tmp_path / "index" / "shard"

    def segments() -> int:
        return sum(1 for d in (shard / "segments").iterdir() if d.is_dir())

    def upkeep_record() -> dict[str, Any]:
        return json.loads((tmp_path / "index" / "index.upkeep.json").read_text())

    store = EdgeStore(tmp_path / "index").open("m", dims)
    try:
        with store.bulk():
            for r in range(rounds):
                store.upsert([Point(id=f"00000000-0000-4000-8000-{r * per_round + i:012d}", payload={"session_id": "s"},
                                    dense=[rng.uniform(-1, 1) for _ in range(dims)]) for i in range(per_round)])
                assert store.upkeep() is True
        # Each round's segment stayed apart (merging would have left SEGMENTS and an appendable one).
        assert segments() > SEGMENTS + 1 + 1
        assert upkeep_record() == {"merge": True}
        assert store.count() == rounds * per_round
    finally:
        store.close()  # as a backfill killed before its final optimisation leaves it
    store = EdgeStore(tmp_path / "index").open(None, None)
    try:
        assert store.upkeep() is True  # the next writer merges them
        assert segments() <= SEGMENTS + 1 and upkeep_record() == {}
        assert store.count() == rounds * per_round
        assert store.upkeep() is False
        config = json.loads((shard / "edge_config.json").read_text())
        assert config["optimizers"]["default_segment_number"] == SEGMENTS
    finally:
        store.close()


def test_a_bulk_loads_merge_can_run_before_its_last_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`merge_bulk` merges the bulk load's segments in the background while the load goes on; the
    writes after it only add a segment, which the closing optimisation builds and merges."""
    import random

    import jacked.index.store.edge as edge
    from jacked.index.store import Point
    from jacked.index.store.edge import SEGMENTS, EdgeStore

    monkeypatch.setattr(edge, "OPTIMIZE_EVERY", 600)
    dims, rounds, per_round = 64, SEGMENTS + 3, 600
    rng = random.Random(5)
    shard = tmp_path / "index" / "shard"

    def segments() -> int:
        return sum(1 for d in (shard / "segments").iterdir() if d.is_dir())

    def points(r: int) -> list[Any]:
        return [Point(id=f"00000000-0000-4000-8000-{r * per_round + i:012d}", payload={"session_id": f"s{r}"},
                      dense=[rng.uniform(-1, 1) for _ in range(dims)]) for i in range(per_round)]

    store = EdgeStore(tmp_path / "index").open("m", dims)
    try:
        with store.bulk():
            for r in range(rounds):
                store.upsert(points(r))
                store.upkeep()
            before = segments()
            assert before > SEGMENTS + 2
            store.merge_bulk(wait=False)
            assert store.optimizing and store._shard is None  # the child merges; this process goes on
            store.upsert(points(rounds))  # the load's last writes wait for it
            assert store._optimizing is None and segments() <= SEGMENTS + 1 < before
            record = json.loads((tmp_path / "index" / "index.upkeep.json").read_text())
            assert "merge" not in record  # merged already: the next writer need not
        store.optimize()
        assert segments() <= SEGMENTS + 1 and store.count() == (rounds + 1) * per_round
        found = store.retrieve([f"00000000-0000-4000-8000-{rounds * per_round + 3:012d}"], ["session_id"])
        assert [h.payload["session_id"] for h in found] == [f"s{rounds}"]
    finally:
        store.close()


def test_a_writer_let_in_during_another_process_bulk_load_leaves_the_optimisations_to_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While a live process is in a bulk load (a backfill that let a hook in), the upkeep record
    names it and other writers do not optimise, not even the merge it left due; once it is gone
    (killed), the next writer does."""
    import jacked.index.store.edge as edge
    from jacked.index.store import Point
    from jacked.index.store.edge import EdgeStore

    monkeypatch.setattr(edge, "OPTIMIZE_EVERY", 50)
    record = tmp_path / "index" / "index.upkeep.json"
    store = EdgeStore(tmp_path / "index").open("m", 4)
    try:
        with store.bulk():
            assert json.loads(record.read_text())["bulk_pid"] == os.getpid()
        assert "bulk_pid" not in json.loads(record.read_text())
    finally:
        store.close()
    backfill = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        record.write_text(json.dumps({"merge": True, "bulk_pid": backfill.pid}))
        hook = EdgeStore(tmp_path / "index").open("m", 4)
        try:
            hook.upsert([Point(id=f"00000000-0000-4000-8000-{i:012d}", payload={}, dense=[1.0, 0, 0, float(i)])
                         for i in range(60)])
            assert not hook.upkeep_due() and not hook.upkeep()
        finally:
            hook.close()
    finally:
        backfill.kill()
        backfill.wait()
    hook = EdgeStore(tmp_path / "index").open("m", 4)
    try:
        assert hook.upkeep_due() and hook.upkeep()
        assert json.loads(record.read_text()) == {}
    finally:
        hook.close()


def test_an_optimisation_runs_in_the_background_until_the_store_is_next_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`upkeep(wait=False)` starts the optimizer child and returns with the shard closed; the next
    use of the store waits for the child, loads the optimised shard and finds every point; a close
    during the optimisation waits for it too, and the index opens again whole."""
    import random

    import jacked.index.store.edge as edge
    from jacked.index.store import Point
    from jacked.index.store.edge import EdgeStore

    monkeypatch.setattr(edge, "OPTIMIZE_EVERY", 600)
    dims, per_round = 64, 600
    rng = random.Random(11)

    def points(r: int) -> list[Any]:
        return [Point(id=f"00000000-0000-4000-8000-{r * per_round + i:012d}", payload={"session_id": f"s{r}"},
                      dense=[rng.uniform(-1, 1) for _ in range(dims)]) for i in range(per_round)]

    store = EdgeStore(tmp_path / "index").open("m", dims)
    try:
        store.upsert(points(0))
        assert store.upkeep(wait=False) is True
        child = store._optimizing.child  # type: ignore[union-attr]
        assert child is not None and store._shard is None  # closed in this process while the child works
        assert store.upkeep(wait=False) is False  # one at a time
        assert store.count() == per_round  # waits for the child, then reads the optimised shard
        assert child.returncode == 0 and store._optimizing is None and store._shard is not None
        assert store.writes_pending == 0  # counted as optimised
        store.upsert(points(1))
        assert store.upkeep(wait=False) is True
        child = store._optimizing.child  # type: ignore[union-attr]
    finally:
        store.close()  # mid-optimisation: waits for it, then closes
    assert child.returncode == 0
    store = EdgeStore(tmp_path / "index").open(None, None)
    try:
        assert store.count() == 2 * per_round and store.writes_pending == 0
        found = store.retrieve([f"00000000-0000-4000-8000-{per_round + 5:012d}"], ["session_id"])
        assert [h.payload["session_id"] for h in found] == ["s1"]
    finally:
        store.close()


def test_the_dense_pass_embeds_while_an_optimisation_runs_and_ends_with_a_clean_runs_points(
        corpus: tuple[Path, dict[str, Any]], clean: tuple[dict[str, Any], dict[str, Any]], dense_embedder: Any,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With optimisations due every few rounds, rounds read ahead are embedded while the optimizer
    child works, their vectors written after it: the index ends with a clean run's points."""
    import jacked.index.dense_pass as dense_pass
    import jacked.index.store.edge as edge

    monkeypatch.setattr(edge, "OPTIMIZE_EVERY", 120)
    monkeypatch.setattr(dense_pass, "DENSE_BATCH_POINTS", 8)
    monkeypatch.setattr(dense_pass, "AHEAD_ROUNDS", 6)
    import threading

    from jacked.index.embed import DenseEmbedder

    stores: list[Any] = []
    seen: list[bool] = []  # for each model call of the dense pass (its own thread): the child was at work
    open_store, embed_documents = Indexer.open_store, DenseEmbedder.embed_documents

    def remember(self: Indexer, *a: Any, **k: Any) -> Any:
        stores.append(open_store(self, *a, **k))
        return stores[-1]

    def watched(self: DenseEmbedder, texts: Any, *a: Any, **k: Any) -> Any:
        if threading.current_thread().name.startswith("jacked-dense"):
            seen.append(stores[-1].optimizing)
        return embed_documents(self, texts, *a, **k)

    monkeypatch.setattr(Indexer, "open_store", remember)
    monkeypatch.setattr(DenseEmbedder, "embed_documents", watched)
    settings = load_settings(corpus[0], jacked_home=str(tmp_path / "home"), user_name="ada")
    report = Indexer(settings).backfill()
    assert report.points_dense_filled == clean[0]["points_dense_filled"] > 0
    assert any(seen) and not all(seen)  # some rounds embedded beside the child, others not
    assert _points(tmp_path / "home") == clean[1]


def test_the_dense_pass_starts_the_closing_merge_before_its_last_rounds(
        corpus: tuple[Path, dict[str, Any]], clean: tuple[dict[str, Any], dict[str, Any]], dense_embedder: Any,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once every round is read and few are left to write (one per MERGE_POINTS_PER_ROUND points of
    the index), the merge that ends the bulk load starts; the rounds left are written after it, and
    the index has a clean run's points."""
    import jacked.index.dense_pass as dense_pass
    from jacked.index.store.edge import EdgeStore

    monkeypatch.setattr(dense_pass, "DENSE_BATCH_POINTS", 16)
    monkeypatch.setattr(dense_pass, "MERGE_POINTS_PER_ROUND", 200)
    merges: list[int] = []  # dense points still to write when the merge started
    reports: list[Any] = []
    merge_bulk, fill_dense = EdgeStore.merge_bulk, Indexer._fill_dense

    def watched_fill(self: Indexer, store: Any, report: Any, *a: Any, **k: Any) -> Any:
        reports.append(report)
        return fill_dense(self, store, report, *a, **k)

    def watched_merge(self: EdgeStore, *a: Any, **k: Any) -> Any:
        merges.append(clean[0]["points_dense_filled"] - reports[-1].points_dense_filled)
        return merge_bulk(self, *a, **k)

    monkeypatch.setattr(Indexer, "_fill_dense", watched_fill)
    monkeypatch.setattr(EdgeStore, "merge_bulk", watched_merge)
    settings = load_settings(corpus[0], jacked_home=str(tmp_path / "home"), user_name="ada")
    report = Indexer(settings).backfill()
    assert report.points_dense_filled == clean[0]["points_dense_filled"] > 0
    rounds_left = max(1, report.points_written // 200)  # the index holds the points written, glance points gone
    assert len(merges) == 1 and 0 < merges[0] <= rounds_left * 16
    assert _points(tmp_path / "home") == clean[1]


def test_points_rewritten_while_others_were_let_in_are_left_for_the_next_run(tmp_path: Path) -> None:
    """`still_held` keeps only the points the store still holds with the content hash read."""
    from jacked.index.dense_pass import still_held
    from jacked.index.store import Point
    from jacked.index.store.edge import EdgeStore

    ids = [f"00000000-0000-4000-8000-{i:012d}" for i in range(3)]
    store = EdgeStore(tmp_path / "index").open("m", 4)
    try:
        store.upsert([Point(id=pid, payload={"content_hash": f"h{i}"}, dense=[1.0, 0, 0, 0]) for i, pid in enumerate(ids)])
        store.set_payload([ids[1]], {"content_hash": "rewritten"})  # as a hook let in would
        store.delete_points([ids[2]])
        kept = still_held(store, [(ids[0], "s", "h0"), (ids[1], "s", "h1"), (ids[2], "t", "h2")])
        assert kept == [(ids[0], "s", "h0")]
    finally:
        store.close()


def test_a_filter_on_a_field_without_payload_links_still_finds_its_nearest_points(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only `LINKED_FIELDS` get payload links in the graph (they cost most of a build after the
    graph itself); a dense search filtered on another field walks with ACORN instead. A
    teammate's scattered points (15 %, too many to be scanned one by one) are found as a brute
    force finds them; the same walk without ACORN would stop among the points it rejects."""
    import random

    import numpy as np

    import jacked.index.store.edge as edge
    from jacked.index.store import Point, SearchFilter
    from jacked.index.store.edge import LINKED_FIELDS, EdgeStore

    dims, n = 384, 6000  # 1,000 of 1.5 KB vectors: above FULL_SCAN_KB, so searched through the graph
    assert "user_name" not in LINKED_FIELDS and "content_type" in LINKED_FIELDS
    rng = random.Random(11)
    vectors = np.array([[rng.gauss(0, 1) for _ in range(dims)] for _ in range(n)], dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    teammate = [i for i in range(n) if rng.random() < 0.15]
    mine = set(range(n)) - set(teammate)
    store = EdgeStore(tmp_path / "index").open("m", dims)
    try:
        store.upsert([Point(id=f"00000000-0000-4000-8000-{i:012d}", dense=vectors[i].tolist(),
                            payload={"session_id": f"s{i % 300}", "content_type": "plan",
                                     "user_name": "me" if i in mine else "teammate"}) for i in range(n)])
        store.optimize()
        shard = tmp_path / "index" / "shard"
        assert any(shard.rglob("links_compressed.bin")), "the points were not indexed into a graph"
        for config in shard.glob("segments/*/payload_index/config.json"):
            schema = json.loads(config.read_text())["indexed_fields"]
            assert {f for f, v in schema.items() if v.get("enable_hnsw", True)} == LINKED_FIELDS, schema

        def recall(flt: SearchFilter, queries: list[np.ndarray]) -> float:
            found = 0
            for q in queries:
                best = sorted(teammate, key=lambda i: -float(vectors[i] @ q))[:50]
                hits, _ = store.search_each(q.tolist(), None, flt, limit=50, fields=[])
                found += len({int(h.id[-12:]) for h in hits} & set(best))
            return found / (50 * len(queries))

        queries = [vectors[rng.randrange(n)] for _ in range(20)]
        with_acorn = recall(SearchFilter(user_name="teammate"), queries)
        monkeypatch.setattr(edge, "_graph_params", lambda *a: None)
        without = recall(SearchFilter(user_name="teammate"), queries)
    finally:
        store.close()
    assert with_acorn >= 0.85, (with_acorn, without)  # 0.91 measured; 0.41 without ACORN
    assert without < with_acorn - 0.2, (with_acorn, without)
