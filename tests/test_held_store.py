"""Keeping the index warm: a process that ends soon leaves its shard to its exit (closing a Qdrant
Edge shard drops its files from the OS page cache), and a long-lived reader (`jacked mcp`) holds
the store open between calls and hands it over when another process waits for it.

Real parts: a real fixture session indexed with the offline model into an Edge shard; the page
cache is read with mincore(2)."""
from __future__ import annotations

import ctypes
import mmap
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from kit import DEEP, REAL

from jacked.config import load_settings
from jacked.query.search import SearchOptions
from jacked.service import Jacked

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mincore and the page cache: Linux")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> tuple[Path, Path]:
    from jacked.index.indexer import Indexer

    claude = tmp_path_factory.mktemp("held-claude")
    src = next(REAL.rglob(f"{DEEP}.jsonl"))
    dst = claude / "projects" / src.parent.name / src.name
    dst.parent.mkdir(parents=True)
    shutil.copy(src, dst)
    home = tmp_path_factory.mktemp("held-home")
    assert Indexer(load_settings(claude, jacked_home=str(home), user_name="ada")).backfill().errors == []
    return claude, home


def _resident_bytes(root: Path) -> tuple[int, int]:
    """(bytes of the files under `root` in the OS page cache, their total size)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
    page = mmap.PAGESIZE
    resident = total = 0
    for f in root.rglob("*"):
        size = f.stat().st_size if f.is_file() else 0
        if not size:
            continue
        total += size
        with f.open("rb") as fh:
            m = mmap.mmap(fh.fileno(), size, access=mmap.ACCESS_COPY)  # copy-on-write: nothing is changed
        buf = (ctypes.c_char * size).from_buffer(m)
        vec = (ctypes.c_ubyte * ((size + page - 1) // page))()
        assert libc.mincore(ctypes.addressof(buf), size, vec) == 0, os.strerror(ctypes.get_errno())
        resident += sum(v & 1 for v in vec) * page
        del buf
        m.close()
    return min(resident, total), total


def _cache(root: Path) -> None:
    for f in root.rglob("*"):
        if f.is_file():
            f.read_bytes()


_SEARCH = textwrap.dedent("""
    import sys
    from jacked.config import load_settings
    from jacked.query.search import SearchOptions
    from jacked.service import Jacked
    from jacked.util.lifetime import set_ends_soon
    set_ends_soon(sys.argv[1] == "ends-soon")
    jk = Jacked(load_settings(None), scan=False)
    first = jk.search("tar archive manifest", SearchOptions(limit=2))["results"]
    again = jk.search("tar archive manifest", SearchOptions(limit=2))["results"]  # the store taken back
    assert first and [r["session_id"] for r in first] == [r["session_id"] for r in again]
    print(len(first))
""")


def _run_search(claude: Path, home: Path, mode: str) -> None:
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(claude), "JACKED_HOME": str(home), "JACKED_USER_NAME": "ada"}
    out = subprocess.run([sys.executable, "-c", _SEARCH, mode], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


@linux_only
def test_a_process_that_ends_soon_leaves_the_index_in_the_page_cache(indexed: tuple[Path, Path]) -> None:
    claude, home = indexed
    shard = home / "index" / "shard"
    _cache(shard)
    cached, total = _resident_bytes(shard)
    assert cached > 0.9 * total
    _run_search(claude, home, "ends-soon")
    kept, _ = _resident_bytes(shard)
    assert kept > 0.9 * cached, (kept, cached)
    # What it avoids: a process that closes the shard drops it from the page cache.
    _run_search(claude, home, "long-lived")
    dropped, _ = _resident_bytes(shard)
    assert dropped < 0.5 * cached, (dropped, cached)


def test_a_process_that_ends_soon_still_hands_the_index_over_at_exit(indexed: tuple[Path, Path]) -> None:
    """The lock it kept goes with the process: the next one opens the index at once."""
    claude, home = indexed
    _run_search(claude, home, "ends-soon")
    from jacked.index.store.edge import EdgeStore

    store = EdgeStore(home / "index", lock_timeout=0).open(None, None)
    try:
        assert store.count() > 0
    finally:
        store.close()


def _hold_in_child(claude: Path, home: Path) -> subprocess.Popen[str]:
    """A process that opens the index (waiting for it if held) and reports how many points it has."""
    code = ("from jacked.index.store.edge import EdgeStore; import sys; "
            "s = EdgeStore(sys.argv[1], lock_timeout=20).open(None, None); print(s.count()); s.close()")
    return subprocess.Popen([sys.executable, "-c", code, str(home / "index")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_a_held_store_stays_open_between_searches_and_is_handed_over(indexed: tuple[Path, Path]) -> None:
    claude, home = indexed
    jk = Jacked(load_settings(claude, jacked_home=str(home), user_name="ada"), scan=False, hold_index=True)
    held = jk.indexer._held
    try:
        first = jk.search("tar archive manifest", SearchOptions(limit=3))
        assert first["results"] and held.is_open
        jk.search("manifest checksum", SearchOptions(limit=3))
        assert held.is_open and held.handovers == 0  # kept between calls
        t0 = time.monotonic()
        child = _hold_in_child(claude, home)
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err[-2000:]
        assert int(out) > 0 and time.monotonic() - t0 < 15  # not the 20 s lock timeout
        assert held.handovers == 1 and not held.is_open
        again = jk.search("tar archive manifest", SearchOptions(limit=3))  # opened again
        assert [r["session_id"] for r in again["results"]] == [r["session_id"] for r in first["results"]]
        assert held.is_open
        # A writer in the same process gets the index too (the held store is closed for it).
        with jk.indexer.open_store() as store:
            assert store.count() == int(out)
        assert not held.is_open
    finally:
        jk.close()
    assert not held.is_open


@linux_only
def test_what_a_writer_wrote_leaves_the_page_cache_and_what_searches_read_comes_back(tmp_path: Path) -> None:
    """`settle_written`: the segment files written since the writer opened the shard are dropped
    (they sat in the cache in large blocks); those every search reads are read back; the
    write-ahead log and the files written before stay as they were."""
    from jacked.index.store.edge import SEARCH_FILES, settle_written

    shard = tmp_path / "shard"
    old = shard / "segments" / "old" / "quantized.data"
    wal = shard / "wal" / "open-1"
    codes = shard / "segments" / "new" / "vector_storage-dense" / "quantized.data"
    payload = shard / "segments" / "new" / "payload_storage" / "page_0.dat"
    assert codes.name in SEARCH_FILES and payload.name not in SEARCH_FILES
    for f in (old, wal, codes, payload):
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(os.urandom(256 * 1024))
    os.utime(old, ns=(1, 1))  # written before the writer opened the shard
    os.sync()
    for f in (old, wal, codes, payload):
        f.read_bytes()
    since = time.time_ns() - 60 * 10**9
    assert settle_written(shard, since) == 2  # the codes and the payload: written since
    deadline = time.monotonic() + 5
    while _resident_bytes(codes.parent)[0] < 256 * 1024 and time.monotonic() < deadline:
        time.sleep(0.05)  # the read-back runs in the background
    assert _resident_bytes(codes.parent) == (256 * 1024, 256 * 1024)
    assert _resident_bytes(payload.parent)[0] == 0
    assert _resident_bytes(wal.parent)[0] == 256 * 1024 and _resident_bytes(old.parent)[0] == 256 * 1024
