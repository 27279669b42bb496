"""Looking up a few files' scan states or archive entries reads those rows only: a hook indexing
one session must not read every file of a 10,000-session catalog (it did: ~0.9 s and ~20 MB)."""
from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from kit import REAL

from jacked.catalog import Catalog
from jacked.ingest.reading import ScanReport
from jacked.ingest.scan import Scanner
from jacked.sources.claude.discover import discover
from jacked.util.lookup import Lookup


def test_a_lookup_reads_a_few_keys_then_the_whole_table_and_keeps_what_was_set() -> None:
    table = {f"k{i}": i for i in range(200)}
    reads: list[object] = []

    def some(keys: list[str]) -> dict[str, int]:
        reads.append(list(keys))
        return {k: table[k] for k in keys if k in table}

    def every() -> dict[str, int]:
        reads.append("all")
        return dict(table)

    found = Lookup(some, every, whole_after=5)
    assert found.get("k1") == 1 and "k2" in found and "nope" not in found and found.get("k1") == 1
    assert reads == [["k1"], ["k2"], ["nope"]]  # each key read once
    found["k3"] = -3  # set here before it was read: stands
    assert found.pop("k2") == 2  # dropped here: stays dropped
    found.fetch(["k4", "k5", "k6"])  # past 5 keys: the whole table, once
    assert reads[-1] == "all" and len(reads) == 4
    assert found.get("k3") == -3 and "k2" not in found and found.get("k150") == 150 and len(reads) == 4


def _traced(db: sqlite3.Connection, into: list[str]) -> None:
    db.set_trace_callback(lambda sql: into.append(" ".join(sql.split())))


def test_rescanning_one_changed_session_reads_only_its_files_rows(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    shutil.copytree(REAL, claude)
    Scanner(Catalog(tmp_path / "home" / "catalog.db"), claude).scan()
    groups = discover(claude / "projects")
    group = max((g for g in groups if g.main is not None), key=lambda g: len(g.all_paths()))  # the most files
    with group.main.open("a") as fh:  # a new turn, as a hook sees it
        fh.write(json.dumps({"type": "user", "uuid": "lookup-test-turn", "sessionId": group.session_id,
                             "timestamp": "2026-12-01T00:00:00.000Z",
                             "message": {"role": "user", "content": "one more question"}}) + "\n")

    catalog = Catalog(tmp_path / "home" / "catalog.db")  # a new process: nothing read yet
    files_total = catalog.db.execute("SELECT COUNT(*) FROM files").fetchone()[0]
    assert files_total > len(group.all_paths())
    sql: list[str] = []
    _traced(catalog.db, sql)
    scanner = Scanner(catalog, claude)
    _traced(scanner.archive.db, sql)
    session = scanner.scan_group(group, ScanReport())
    assert session is not None and session.session_id == group.session_id
    assert any(t["prompt"] == "one more question" for t in catalog.turn_rows(group.session_id))
    whole = [s for s in sql if ("FROM files" in s or "FROM entries" in s) and "WHERE" not in s]
    assert whole == [], whole
    assert any("FROM files WHERE path IN" in s for s in sql) and any("FROM entries WHERE source IN" in s for s in sql)


def test_a_scans_archive_is_freed_with_it_not_left_to_the_cycle_collector(tmp_path: Path) -> None:
    """`jacked mcp` scans every 30 s: an archive kept alive by a reference cycle held its manifest
    (24,000 entries at 10,000 sessions) in the server until Python's cycle collector ran."""
    import gc
    import weakref

    claude = tmp_path / "claude"
    shutil.copytree(REAL, claude)
    catalog = Catalog(tmp_path / "home" / "catalog.db")
    Scanner(catalog, claude).scan()
    gc.disable()
    try:
        scanner = Scanner(catalog, claude)
        scanner.scan()  # unchanged: every file looked up in the archive's manifest
        assert scanner.archive is not None
        archive = weakref.ref(scanner.archive)
        del scanner
        assert archive() is None
    finally:
        gc.enable()
