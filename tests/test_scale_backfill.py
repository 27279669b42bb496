"""A backfill at scale (issue 15): two passes, resumable at any moment, memory flat.

* the lexical pass writes every session's points with their BM25 vector only, and search finds
  them by their words before any dense vector exists; the dense pass fills the vectors in;
* `kill -9` at any moment of the two passes, then a re-run: the same points as a clean run, and
  nothing embedded twice (but for the one round in flight);
* a shard made by an older jacked takes the cold layout;
* the glance a cold backfill starts with makes every session findable by its prompts before the
  lexical pass reads it; no glance point outlives the backfill, killed during the glance or not.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kit import copy_home, generated_corpus

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
    # In-process: the tests kill the backfill's own process.
    env.update(CLAUDE_CONFIG_DIR=str(claude), JACKED_HOME=str(home), JACKED_USER_NAME="ada", JACKED_DAEMON="off")
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
        lambda p: p.get("phase") == "optimize",  # while the shard is optimised
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
    copy_home(clean_run[0], home)
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

    # The glance writes 16 points at a time (not 1,024) and says so in a file after each batch (then
    # pauses): the backfill is killed once a batch is written, the glance unfinished.
    backfill = [sys.executable, "-c", (
        "import pathlib, sys, time\n"
        "marker = pathlib.Path(sys.argv[1])\n"
        "import jacked.index.glance as g\n"
        "g.BATCH_POINTS = 16\n"
        "write = g.Glance._write\n"
        "def written(self, store, pending):\n"
        "    write(self, store, pending)\n"
        "    marker.touch()\n"
        "    time.sleep(0.5)\n"
        "g.Glance._write = written\n"
        "sys.argv = ['jacked', 'backfill', '--json']\n"
        "from jacked.surfaces.cli.entry import run\n"
        "run()\n")]
    for attempt in range(3):
        home = tmp_path / f"killed{attempt}"
        marker = tmp_path / f"glance-written{attempt}"
        proc = subprocess.Popen(backfill + [str(marker)], env=_env(claude, home),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        phase = None
        try:
            deadline = time.monotonic() + 120
            while proc.poll() is None and time.monotonic() < deadline:
                if marker.exists():
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait()
                    phase = _progress(home).get("phase")
                    break
                time.sleep(0.01)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if phase != "glance":
            continue
        store = EdgeStore(home / "index").open(None, None)
        try:
            glanced = store.count(SearchFilter(content_types=[CONTENT_TYPE], extra=[("set", MARK, None)]))
        finally:
            store.close()
        if glanced > 0:
            break
    else:
        pytest.fail("never killed during the glance with glance points written")
    last = _backfill_json(claude, home)
    assert not last["errors"] and last["glance_points"] == report["glance_points"]  # glanced again, then replaced
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


def test_the_dense_pass_optimises_between_rounds_and_ends_with_a_clean_runs_points(
        corpus: tuple[Path, dict[str, Any]], clean: tuple[dict[str, Any], dict[str, Any]], dense_embedder: Any,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With optimisations due every few rounds, the dense pass runs them between its rounds (in
    this process) and the index ends with a clean run's points."""
    import jacked.index.dense_pass as dense_pass
    import jacked.index.store.edge as edge
    from jacked.index.store.edge import EdgeStore

    monkeypatch.setattr(edge, "OPTIMIZE_EVERY", 120)
    monkeypatch.setattr(dense_pass, "DENSE_BATCH_POINTS", 8)
    phases: list[str] = []  # the backfill's phase at each optimisation
    optimize = EdgeStore.optimize
    log_phase: list[str] = ["?"]

    def watched(self: EdgeStore) -> None:
        phases.append(log_phase[0])
        optimize(self)

    def progress(phase: str, done: int, total: int) -> None:
        log_phase[0] = phase

    monkeypatch.setattr(EdgeStore, "optimize", watched)
    settings = load_settings(corpus[0], jacked_home=str(tmp_path / "home"), user_name="ada")
    report = Indexer(settings).backfill(progress=progress)
    assert report.points_dense_filled == clean[0]["points_dense_filled"] > 0
    assert phases.count("dense") >= 2  # due every 120 points, the pass writes more than that
    assert _points(tmp_path / "home") == clean[1]


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
