"""jacked.index.store: the same tests against the Edge shard and qdrant-client's in-process mode.

Real components only: the offline model embeds a small corpus once per module; the edge
backend is a real shard in a temp dir, the server backend runs its query code against
``QdrantClient(":memory:")``.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from jacked.index.embed import DEFAULT_MODEL, DenseEmbedder, SparseEmbedder
from jacked.index.store import (
    Hit,
    ModelMismatch,
    Point,
    SearchFilter,
    StoreBusy,
    StoreError,
    StoreNotFound,
    VectorStore,
    open_store,
)
from jacked.index.store.edge import EdgeStore
from jacked.index.store.server import ServerStore
from datetime import UTC

REPO = Path(__file__).resolve().parents[1]
DIMS = 384


def pid(n: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"jacked-test:{n}"))


# (text, payload, dense?) — "chunk" units are sparse-only, as the extractor makes them.
CORPUS: list[tuple[str, dict, bool]] = [
    ("Plan: migrate the SQLite catalog schema to version 3 and backfill the turns table.",
     {"session_id": "s1", "content_type": "plan", "user_name": "alice", "repo_name": "jacked", "ts": 1000.0}, True),
    ("Why does the database migration fail on startup?",
     {"session_id": "s1", "content_type": "user_message", "user_name": "alice", "repo_name": "jacked", "ts": 1100.0}, True),
    ("We fixed the flaky pytest fixture that leaked temporary directories.",
     {"session_id": "s1", "content_type": "recap", "user_name": "alice", "repo_name": "jacked", "ts": 1200.0}, True),
    ("Explored the React components: the login form lacks validation for email addresses.",
     {"session_id": "s2", "content_type": "subagent_summary", "user_name": "alice", "repo_name": "webapp",
      "agent_type": "Explore", "ts": 2000.0}, True),
    ("npm ERR! code ELIFECYCLE: the webpack build failed after the config change",
     {"session_id": "s2", "content_type": "chunk", "user_name": "alice", "repo_name": "webapp", "ts": 2100.0}, False),
    ("Traceback: ConnectionRefusedError zxqvmorph-4711 while connecting to 127.0.0.1:6333",
     {"session_id": "s3", "content_type": "chunk", "user_name": "bob", "repo_name": "webapp", "ts": 3000.0}, False),
    ("Add a dark mode toggle to the settings page",
     {"session_id": "s3", "content_type": "user_message", "user_name": "bob", "repo_name": "webapp", "ts": 3100.0}, True),
    ("Reviewed the settings page styles for contrast problems in dark mode.",
     {"session_id": "s3", "content_type": "subagent_summary", "user_name": "bob", "repo_name": "webapp",
      "agent_type": "code-reviewer", "ts": 3200.0}, True),
    ("Plan: speed up the hybrid search by caching query embeddings between calls.",
     {"session_id": "s4", "content_type": "plan", "user_name": "bob", "repo_name": "jacked", "ts": 4000.0}, True),
    ("How should search results be grouped by session and weighted by age?",
     {"session_id": "s4", "content_type": "user_message", "user_name": "bob", "repo_name": "jacked", "ts": 4100.0}, True),
]
KEYWORD_ID = pid(5)  # the zxqvmorph chunk
PARAPHRASE_ID = pid(2)  # the flaky pytest fixture recap


@pytest.fixture(scope="module")
def corpus(dense_embedder: DenseEmbedder, sparse_embedder: SparseEmbedder) -> list[Point]:
    texts = [t for t, _, _ in CORPUS]
    dense = dense_embedder.embed_documents([t for t, _, d in CORPUS if d])
    sparse = sparse_embedder.embed_documents(texts)
    it = iter(dense)
    return [
        Point(id=pid(i), payload={**payload, "text": text}, dense=next(it) if has_dense else None, sparse=sparse[i])
        for i, (text, payload, has_dense) in enumerate(CORPUS)
    ]


@dataclass
class Backend:
    name: str
    make: Callable[[], VectorStore]  # a new, unopened store over the same index


@pytest.fixture(params=["edge", "server"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "edge":
        yield Backend("edge", lambda: EdgeStore(tmp_path / "index", lock_timeout=5))
    else:
        from qdrant_client import QdrantClient

        client = QdrantClient(":memory:")
        yield Backend("server", lambda: ServerStore(client=client))
        client.close()


@pytest.fixture
def store(backend: Backend, corpus: list[Point]) -> Iterator[VectorStore]:
    with backend.make().open(DEFAULT_MODEL, DIMS) as st:
        st.upsert(corpus)
        yield st


def expected(flt: SearchFilter) -> set[str]:
    """Ids of the corpus points a filter should keep (ground truth from the payloads)."""
    out = set()
    for i, (_, p, _) in enumerate(CORPUS):
        if flt.content_types is not None and p["content_type"] not in flt.content_types:
            continue
        if flt.agent_type is not None and p.get("agent_type") != flt.agent_type:
            continue
        if flt.repo is not None and p["repo_name"] != flt.repo:
            continue
        if flt.user_name is not None and p["user_name"] != flt.user_name:
            continue
        if flt.session_ids is not None and p["session_id"] not in flt.session_ids:
            continue
        if flt.since_ts is not None and p["ts"] < flt.since_ts:
            continue
        out.add(pid(i))
    return out


def ids(hits: list[Hit]) -> list[str]:
    return [h.id for h in hits]


FILTERS = [
    SearchFilter(content_types=["plan", "recap"]),
    SearchFilter(content_types=["chunk"]),
    SearchFilter(agent_type="Explore"),
    SearchFilter(repo="webapp"),
    SearchFilter(user_name="bob"),
    SearchFilter(session_ids=["s1", "s4"]),
    SearchFilter(since_ts=3000.0),
    SearchFilter(user_name="alice", repo="jacked", since_ts=1100.0),
]


def test_count_retrieve_scroll(store: VectorStore, corpus: list[Point]) -> None:
    assert store.count() == len(CORPUS)
    assert store.dense_model == DEFAULT_MODEL and store.dims == DIMS
    assert store.count_by("content_type") == {"plan": 2, "user_message": 3, "recap": 1, "subagent_summary": 2, "chunk": 2}
    assert store.count_by("user_name") == {"alice": 5, "bob": 5}
    assert store.count_by("text")["Add a dark mode toggle to the settings page"] == 1  # unindexed: scroll path
    got = store.retrieve([pid(3), str(uuid.uuid4()), pid(0).upper()])
    assert ids(got) == [pid(3), pid(0)]
    assert got[0].payload["agent_type"] == "Explore" and got[0].payload["text"].startswith("Explored")
    hits = list(store.scroll(SearchFilter(user_name="bob"), fields=["session_id"]))
    assert {h.id for h in hits} == expected(SearchFilter(user_name="bob"))
    assert all(set(h.payload) == {"session_id"} for h in hits)
    assert len(list(store.scroll())) == len(CORPUS)
    # Upserting the same ids again replaces, never duplicates.
    store.upsert(corpus[:3])
    assert store.count() == len(CORPUS)


@pytest.mark.parametrize("flt", FILTERS, ids=lambda f: ",".join(f"{k}={v}" for k, v in vars(f).items() if v is not None))
def test_filters_narrow_results(store: VectorStore, flt: SearchFilter, dense_embedder: DenseEmbedder,
                                sparse_embedder: SparseEmbedder) -> None:
    q = "search plan for the database migration error"
    dense, sparse = dense_embedder.embed_query(q), sparse_embedder.embed_query(q)
    want = expected(flt)
    assert 0 < len(want) < len(CORPUS)
    assert store.count(flt) == len(want)
    dense_all, sparse_all = store.search_each(dense, sparse, None, limit=100)
    dense_hits, sparse_hits = store.search_each(dense, sparse, flt, limit=100)
    got = set(ids(dense_hits + sparse_hits))
    assert got <= want
    assert got < set(ids(dense_all + sparse_all))
    # Every dense point that matches is found by the dense leg.
    with_dense = {pid(i) for i, (_, _, d) in enumerate(CORPUS) if d}
    assert want & with_dense == set(ids(dense_hits))
    # Scores come back best first on each leg.
    for hits in (dense_hits, sparse_hits):
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_empty_filters_and_vectors(store: VectorStore, dense_embedder: DenseEmbedder,
                                   sparse_embedder: SparseEmbedder) -> None:
    dense = dense_embedder.embed_query("anything")
    assert store.search_each(dense, None, SearchFilter(session_ids=[]), limit=10) == ([], [])
    assert store.count(SearchFilter(content_types=[])) == 0
    assert list(store.scroll(SearchFilter(session_ids=[]))) == []
    assert store.search_each(None, None, None, limit=10) == ([], [])
    stop_words = sparse_embedder.embed_query("the of and")
    assert store.search_each(None, stop_words, None, limit=10) == ([], [])
    # Only stopwords on the sparse side: the dense leg still answers.
    dense_hits, sparse_hits = store.search_each(dense, stop_words, None, limit=3)
    assert len(dense_hits) == 3 and sparse_hits == []


def test_legs_find_rare_keyword_and_paraphrase(store: VectorStore, dense_embedder: DenseEmbedder,
                                               sparse_embedder: SparseEmbedder) -> None:
    q = "zxqvmorph-4711"
    dense_hits, sparse_hits = store.search_each(dense_embedder.embed_query(q), sparse_embedder.embed_query(q),
                                                None, limit=100)
    # The point has no dense vector: only the bm25 leg can return it, and it ranks first there.
    assert KEYWORD_ID not in ids(dense_hits)
    assert sparse_hits[0].id == KEYWORD_ID and "zxqvmorph" in sparse_hits[0].payload["text"]
    q = "repaired an unreliable test helper that left temp folders behind"
    sparse = sparse_embedder.embed_query(q)
    target = sparse_embedder.embed_documents([CORPUS[2][0]])[0]
    assert not set(sparse.indices) & set(target.indices)  # no shared word: only the dense leg can find it
    dense_hits, sparse_hits = store.search_each(dense_embedder.embed_query(q), sparse, None, limit=3)
    assert dense_hits[0].id == PARAPHRASE_ID and PARAPHRASE_ID not in ids(sparse_hits)


def test_search_each_gives_both_legs_with_raw_scores(store: VectorStore, dense_embedder: DenseEmbedder,
                                                     sparse_embedder: SparseEmbedder) -> None:
    q = "zxqvmorph-4711 connection refused"
    dense, lexical = store.search_each(dense_embedder.embed_query(q), sparse_embedder.embed_query(q),
                                       SearchFilter(repo="webapp"), limit=4, fields=[])
    # Each leg ranks on its own: cosines in [-1, 1] best first; BM25 above 1 for a rare word.
    assert len(dense) == 3 and all(-1 <= h.score <= 1 for h in dense)  # webapp has 3 dense points
    assert [h.score for h in dense] == sorted((h.score for h in dense), reverse=True)
    assert lexical[0].id == KEYWORD_ID and lexical[0].score > 1 and KEYWORD_ID not in ids(dense)
    assert all(h.payload == {} for h in dense + lexical)  # ids and scores only, as asked
    expected_ids = {pid(i) for i, (_, p, _) in enumerate(CORPUS) if p["repo_name"] == "webapp"}
    assert set(ids(dense + lexical)) <= expected_ids
    # A leg with no vector is an empty list; fields pick the payload, in the order of the ids.
    assert store.search_each(None, sparse_embedder.embed_query(q), None, limit=3)[0] == []
    got = store.retrieve([KEYWORD_ID, pid(0)], ["session_id"])
    assert [(h.id, h.payload) for h in got] == [(KEYWORD_ID, {"session_id": "s3"}), (pid(0), {"session_id": "s1"})]


def test_delete_where_and_delete_points(store: VectorStore) -> None:
    assert store.delete_where(user_name="bob") == 5
    assert store.count(SearchFilter(user_name="bob")) == 0
    assert store.count(SearchFilter(user_name="alice")) == 5
    assert store.delete_where(user_name="alice", session_id="s2") == 2
    assert store.count() == 3
    assert store.delete_where(session_id="no-such-session") == 0
    with pytest.raises(ValueError):
        store.delete_where()
    store.delete_points([pid(0), str(uuid.uuid4())])
    assert store.count() == 2
    assert store.count_by("user_name") == {"alice": 2}


def test_reopen_mismatch_recreate(backend: Backend, store: VectorStore) -> None:
    store.close()
    with backend.make().open(DEFAULT_MODEL, DIMS) as again:
        assert again.count() == len(CORPUS)
    with pytest.raises(ModelMismatch, match=r"index was built with model jacked/all-MiniLM-L6-v2-int8 \(384 dims\); "
                                            r"this run uses BAAI/bge-base-en-v1\.5 \(768 dims\).*jacked backfill --rebuild"):
        backend.make().open("BAAI/bge-base-en-v1.5", 768)
    with pytest.raises(ModelMismatch):  # same dims, other model
        backend.make().open("sentence-transformers/all-MiniLM-L6-v2", DIMS)
    # Opened without a model: whatever the index records (status, stats, deletes).
    with backend.make().open(None, None) as peek:
        assert (peek.dense_model, peek.dims) == (DEFAULT_MODEL, DIMS)
        assert peek.count() == len(CORPUS)
    with backend.make().open("BAAI/bge-base-en-v1.5", 768, recreate=True) as fresh:
        assert fresh.count() == 0 and fresh.dims == 768
    with pytest.raises(ModelMismatch):
        backend.make().open(DEFAULT_MODEL, DIMS)


def test_open_without_model_needs_an_index(backend: Backend) -> None:
    with pytest.raises(StoreNotFound):
        backend.make().open(None, None)
    with pytest.raises(StoreError, match="not open"):
        backend.make().count()


def test_ts_derived_from_iso_timestamp(store: VectorStore) -> None:
    from datetime import datetime

    stamp = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    new = [
        Point(id=pid(100), payload={"user_name": "carol", "timestamp": "2030-01-02T03:04:05.000Z"}, dense=[0.1] * DIMS),
        Point(id=pid(101), payload={"user_name": "carol", "ts": 5000}, dense=[0.1] * DIMS),  # int: stored as float
    ]
    store.upsert(new)
    assert store.retrieve([pid(100)])[0].payload["ts"] == stamp.timestamp()
    assert store.count(SearchFilter(since_ts=stamp.timestamp())) == 1
    assert store.count(SearchFilter(since_ts=4500.0, user_name="carol")) == 2
    assert new[0].payload == {"user_name": "carol", "timestamp": "2030-01-02T03:04:05.000Z"}  # caller's dict untouched


def test_wrong_dims_vector_is_a_store_error(store: VectorStore) -> None:
    with pytest.raises(StoreError):
        store.upsert([Point(id=str(uuid.uuid4()), payload={}, dense=[0.1] * 3)])


# --- edge-only: files, lock, crash safety ----------------------------------------------


def test_edge_layout_and_factory(tmp_path: Path) -> None:
    st = open_store("edge", tmp_path, lock_timeout=1)
    assert isinstance(st, EdgeStore) and st.path == tmp_path / "index"
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / ".shard-tmp-999-dead").mkdir()  # left by a crashed creator
    with st.open(DEFAULT_MODEL, DIMS):
        meta = json.loads((tmp_path / "index" / "jacked-index.json").read_text())
        assert (meta["dense_model"], meta["dims"]) == (DEFAULT_MODEL, DIMS)
        assert json.loads((tmp_path / "index" / "index.owner.json").read_text())["pid"] == os.getpid()
    assert not (tmp_path / "index" / "index.owner.json").exists()
    assert sorted(p.name for p in (tmp_path / "index").iterdir()) == ["index.lock", "jacked-index.json", "shard"]
    with pytest.raises(StoreError, match="unknown backend"):
        open_store("sqlite", tmp_path)
    with pytest.raises(StoreError, match="Qdrant URL"):
        open_store("server", tmp_path)
    assert isinstance(open_store("server", tmp_path, qdrant_url="http://localhost:6333"), ServerStore)


def test_edge_lock_in_process(tmp_path: Path) -> None:
    with EdgeStore(tmp_path / "index").open(DEFAULT_MODEL, DIMS):
        t = time.monotonic()
        with pytest.raises(StoreBusy, match=rf"busy: process {os.getpid()} .*try again"):
            EdgeStore(tmp_path / "index", lock_timeout=0.3).open(DEFAULT_MODEL, DIMS)
        assert 0.25 < time.monotonic() - t < 3
    with EdgeStore(tmp_path / "index", lock_timeout=0).open(DEFAULT_MODEL, DIMS) as st:  # released
        assert st.count() == 0


HOLDER = textwrap.dedent("""
    import sys
    from jacked.index.store.edge import EdgeStore
    st = EdgeStore(sys.argv[1]).open(sys.argv[2], 384)
    print("ready", flush=True)
    sys.stdin.read()  # hold the index until the parent closes our stdin
    st.close()
""")


def test_edge_lock_held_by_other_process(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "index"), DEFAULT_MODEL],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert child.stdout.readline().strip() == "ready"
        with pytest.raises(StoreBusy, match=rf"process {child.pid} "):
            EdgeStore(tmp_path / "index", lock_timeout=0.5).open(DEFAULT_MODEL, DIMS)
        child.stdin.close()
        assert child.wait(timeout=20) == 0
        # The waiting side gets in once the holder is done.
        with EdgeStore(tmp_path / "index", lock_timeout=5).open(DEFAULT_MODEL, DIMS) as st:
            assert st.count() == 0
    finally:
        child.kill()
        child.wait()
        child.stdout.close()


WRITER = textwrap.dedent("""
    import random, sys, uuid
    from jacked.index.embed import SparseVector
    from jacked.index.store import Point
    from jacked.index.store.edge import EdgeStore
    st = EdgeStore(sys.argv[1]).open(sys.argv[2], 384)
    rnd = random.Random(7)
    written = 0
    while True:
        pts = [Point(id=str(uuid.uuid4()), payload={"user_name": "u", "ts": float(written + j)},
                     dense=[rnd.random() for _ in range(384)],
                     sparse=SparseVector([rnd.randrange(1 << 30) for _ in range(8)], [1.0] * 8))
               for j in range(100)]
        st.upsert(pts)
        written += len(pts)
        print(written, flush=True)
""")


def test_edge_survives_sigkill_mid_write(tmp_path: Path) -> None:
    path = tmp_path / "index"
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(path), DEFAULT_MODEL],
                             stdout=subprocess.PIPE, text=True, cwd=REPO)
    acknowledged = 0
    try:
        while acknowledged < 3000:
            line = child.stdout.readline()
            assert line, "writer died"
            acknowledged = int(line)
    finally:
        os.kill(child.pid, signal.SIGKILL)  # mid-upsert: it writes continuously
        child.wait()
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    with EdgeStore(path, lock_timeout=5).open(DEFAULT_MODEL, DIMS) as st:
        n = st.count()
        assert n >= acknowledged  # every acknowledged upsert survived
        assert st.count(SearchFilter(since_ts=0.0)) == n
        assert len(st.search_each([0.5] * DIMS, None, None, limit=5)[0]) == 5
        st.upsert([Point(id=str(uuid.uuid4()), payload={"user_name": "after"}, dense=[0.1] * DIMS)])
        assert st.count() == n + 1


def test_server_model_record_persists(tmp_path: Path, corpus: list[Point]) -> None:
    from qdrant_client import QdrantClient

    client = QdrantClient(path=str(tmp_path / "qdrant"))
    with ServerStore(client=client, collection="mine").open(DEFAULT_MODEL, DIMS) as st:
        st.upsert(corpus)
    client.close()
    client = QdrantClient(path=str(tmp_path / "qdrant"))
    try:
        with pytest.raises(ModelMismatch):
            ServerStore(client=client, collection="mine").open("BAAI/bge-base-en-v1.5", 768)
        with ServerStore(client=client, collection="mine").open(DEFAULT_MODEL, DIMS) as st:
            assert st.count() == len(CORPUS)
    finally:
        client.close()


def test_sparse_copy_keeps_holes_and_leaves_out_sockets_and_pipes(tmp_path: Path) -> None:
    """A read-only home's index is opened from a sparse copy (`copy_tree_sparse`): its files keep their
    bytes and holes, and a socket or named pipe in the folder (which cannot be copied) is left out
    instead of failing the open."""
    import socket
    import stat

    from jacked.util.fs import copy_tree_sparse

    src = tmp_path / "shard"
    (src / "segments").mkdir(parents=True)
    data = src / "segments" / "data.bin"
    with data.open("wb") as fh:  # 64 MiB spanned, two 4 KiB pieces written: the rest is a hole
        fh.write(b"a" * 4096)
        fh.seek(64 << 20)
        fh.write(b"z" * 4096)
    os.mkfifo(src / "pipe")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    cwd = os.getcwd()
    os.chdir(src)  # a relative address: the temp path may be longer than a socket address allows
    try:
        listener.bind("daemon.sock")
    finally:
        os.chdir(cwd)
    try:
        assert stat.S_ISSOCK(os.lstat(src / "daemon.sock").st_mode)
        copy_tree_sparse(src, tmp_path / "copy")
    finally:
        listener.close()
    copied = tmp_path / "copy" / "segments" / "data.bin"
    assert copied.read_bytes() == data.read_bytes()
    assert copied.stat().st_blocks * 512 < (1 << 20)  # the hole stayed a hole
    assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == ["segments"]
