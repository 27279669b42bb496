"""Incremental scanning: unchanged files are not opened, grown files resume, rewritten files re-read."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kit import REAL, SID, assistant, claude_dir_with, prompt, result, text, tool_use

from jacked.catalog import Catalog
from jacked.query.history import export_rows, turns_json
from jacked.ingest import workers as scan_workers
from jacked.ingest import reading as reading_mod
from jacked.ingest import scan as scanner_mod
from jacked.ingest.scan import Scanner


@pytest.fixture(autouse=True)
def live_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The records here are dated 2026-03: treat them as live sessions whose state is kept."""
    monkeypatch.setattr(reading_mod, "RESUME_STATE_DAYS", 10**6)


def _scan(cat: Catalog, claude: Path):
    return Scanner(cat, claude).scan()


def _session_file(claude: Path) -> Path:
    return next((claude / "projects").rglob(f"{SID}.jsonl"))


def test_rescan_opens_nothing_when_unchanged(tmp_path: Path) -> None:
    claude = claude_dir_with(tmp_path / "c", [prompt("one"), assistant("m1", text("a"))])
    cat = Catalog(tmp_path / "h" / "catalog.db")
    first = _scan(cat, claude)
    assert (first.sessions_scanned, first.files_opened) == (1, 1)
    second = _scan(Catalog(tmp_path / "h" / "catalog.db"), claude)
    assert (second.sessions_scanned, second.sessions_unchanged, second.files_opened, second.bytes_read) == (0, 1, 0, 0)
    assert second.turns == 1


def test_grown_file_is_resumed_from_last_complete_line(tmp_path: Path) -> None:
    claude = claude_dir_with(tmp_path / "c", [prompt("one"), assistant("m1", tool_use("t1", "Bash", command="ls"))])
    f = _session_file(claude)
    cat = Catalog(tmp_path / "catalog.db")
    _scan(cat, claude)
    size_before = f.stat().st_size
    with f.open("a") as fh:  # the result of the earlier call arrives, then a new turn
        fh.write(json.dumps(result("t1", "Exit code 1", is_error=True)) + "\n")
        fh.write(json.dumps(prompt("two")) + "\n")
    report = _scan(cat, claude)
    assert report.files_resumed == 1
    assert report.bytes_read == f.stat().st_size - size_before
    turns = turns_json(cat, SID)["turns"]
    assert [t["prompt"] for t in turns] == ["one", "two"]
    assert turns[0]["invocations"][0]["is_error"] is True  # joined across the two reads


def test_partial_last_line_is_completed_later(tmp_path: Path) -> None:
    claude = claude_dir_with(tmp_path / "c", [prompt("one")])
    f = _session_file(claude)
    line = json.dumps(prompt("two"))
    with f.open("a") as fh:
        fh.write(line[:20])
    cat = Catalog(tmp_path / "catalog.db")
    r1 = _scan(cat, claude)
    assert r1.lines_skipped == 1 and cat.get_session_row(SID)["turn_count"] == 1
    with f.open("a") as fh:
        fh.write(line[20:] + "\n")
    r2 = _scan(cat, claude)
    assert r2.files_resumed == 1 and r2.lines_skipped == 0
    assert cat.get_session_row(SID)["turn_count"] == 2


def test_shrunk_or_rewritten_file_is_read_whole(tmp_path: Path) -> None:
    claude = claude_dir_with(tmp_path / "c", [prompt("one"), prompt("two"), prompt("three")])
    f = _session_file(claude)
    cat = Catalog(tmp_path / "catalog.db")
    _scan(cat, claude)
    f.write_text(json.dumps(prompt("only")) + "\n")
    r = _scan(cat, claude)
    assert r.files_opened == 1 and r.files_resumed == 0
    assert [t["prompt"] for t in turns_json(cat, SID)["turns"]] == ["only"]
    # same size, earlier bytes changed: must be re-read whole, not resumed
    data = f.read_bytes().replace(b"only", b"ONLY")
    f.write_bytes(data)
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10_000_000))
    f.write_bytes(data + json.dumps(prompt("more")).encode() + b"\n")
    r = _scan(cat, claude)
    assert r.files_resumed == 0
    assert [t["prompt"] for t in turns_json(cat, SID)["turns"]] == ["ONLY", "more"]


def test_resumed_scan_equals_fresh_scan(tmp_path: Path) -> None:
    """Appending line by line and rescanning each time ends where one whole read ends."""
    records = [prompt("one", t=1), assistant("m1", text("x"), t=2), assistant("m1", tool_use("a", "Read", file_path="/a"), t=3),
               assistant("m1", tool_use("b", "Read", file_path="/b"), t=4), result("a", t=5), result("b", t=6),
               prompt("two", t=7), assistant("m2", tool_use("c", "Edit", file_path="/a"), t=8),
               result("c", t=9, tur={"structuredPatch": [{"lines": ["+x", "-y"]}]})]
    claude = claude_dir_with(tmp_path / "c", records[:1])
    f = _session_file(claude)
    cat = Catalog(tmp_path / "inc.db")
    _scan(cat, claude)
    for rec in records[1:]:
        with f.open("a") as fh:
            fh.write(json.dumps(rec) + "\n")
        _scan(cat, claude)
    fresh = Catalog(tmp_path / "fresh.db")
    _scan(fresh, claude)
    assert turns_json(cat, SID) == turns_json(fresh, SID)


def test_unreadable_file_is_reported_not_fatal(tmp_path: Path) -> None:
    claude = claude_dir_with(tmp_path / "c", [prompt("one")])
    other = claude / "projects" / "-q" / "22222222-2222-4222-8222-222222222222.jsonl"
    other.parent.mkdir(parents=True)
    other.symlink_to(tmp_path / "missing-target.jsonl")
    cat = Catalog(tmp_path / "catalog.db")
    report = _scan(cat, claude)
    assert len(report.errors) == 1 and cat.get_session_row(SID) is not None


def test_old_sessions_keep_no_resume_state_but_grow_correctly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reading_mod, "RESUME_STATE_DAYS", 7)  # the records are months old
    claude = claude_dir_with(tmp_path / "c", [prompt("one"), assistant("m1", tool_use("t1", "Bash", command="ls"))])
    f = _session_file(claude)
    cat = Catalog(tmp_path / "catalog.db")
    _scan(cat, claude)
    assert cat.file_blob(str(f.absolute())) is None
    with f.open("a") as fh:  # resumed months later: read whole once, same result as a fresh read
        fh.write(json.dumps(result("t1", "done")) + "\n" + json.dumps(prompt("two")) + "\n")
    report = _scan(cat, claude)
    assert report.files_opened == 1 and report.files_resumed == 0
    assert [t["prompt"] for t in turns_json(cat, SID)["turns"]] == ["one", "two"]


# ---------------------------------------------------------------- cold scans in worker processes
def _cold_scan(path: Path, parallel: bool, monkeypatch: pytest.MonkeyPatch, progress=None):
    monkeypatch.setattr(scanner_mod, "PARALLEL_MIN_SESSIONS", 2 if parallel else 10**9)
    cat = Catalog(path)
    report = Scanner(cat, REAL).scan(progress)
    return cat, report


def _catalog_dump(cat: Catalog) -> list[dict]:
    return export_rows(cat)


@pytest.mark.skipif(not hasattr(os, "fork") or (os.cpu_count() or 1) < 2, reason="needs fork and 2 cores")
@pytest.mark.parametrize("max_chunks", [512, 4])  # one session per queue entry, or several
def test_parallel_cold_scan_equals_sequential(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              max_chunks: int) -> None:
    monkeypatch.setattr(scan_workers, "QUEUE_MAX_CHUNKS", max_chunks)
    seen: list[tuple[int, int]] = []
    seq_cat, seq = _cold_scan(tmp_path / "seq.db", False, monkeypatch)
    par_cat, par = _cold_scan(tmp_path / "par.db", True, monkeypatch, lambda d, t: seen.append((d, t)))
    assert par.to_json() | {"seconds": 0} == seq.to_json() | {"seconds": 0}
    assert _catalog_dump(par_cat) == _catalog_dump(seq_cat)
    assert seen and seen[-1] == (len(par.session_ids), len(par.session_ids))
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)  # progress never goes back


@pytest.mark.skipif(not hasattr(os, "fork") or (os.cpu_count() or 1) < 2, reason="needs fork and 2 cores")
def test_a_dying_worker_loses_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seq_cat, seq = _cold_scan(tmp_path / "seq.db", False, monkeypatch)
    parent = os.getpid()
    build = Scanner.build_safely

    def dies_in_worker(self, group, stats):  # type: ignore[no-untyped-def]
        if os.getpid() != parent:
            os._exit(3)  # as if killed: nothing written, no counters sent
        return build(self, group, stats)

    monkeypatch.setattr(Scanner, "build_safely", dies_in_worker)
    par_cat, par = _cold_scan(tmp_path / "par.db", True, monkeypatch)
    assert _catalog_dump(par_cat) == _catalog_dump(seq_cat)
    assert (par.sessions_scanned, par.turns, par.lines_read) == (seq.sessions_scanned, seq.turns, seq.lines_read)


@pytest.mark.skipif(not hasattr(os, "fork") or (os.cpu_count() or 1) < 2, reason="needs fork and 2 cores")
def test_no_fork_possible_scans_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seq_cat, seq = _cold_scan(tmp_path / "seq.db", False, monkeypatch)

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(scan_workers.os, "fork", no_fork)
    par_cat, par = _cold_scan(tmp_path / "par.db", True, monkeypatch)
    assert _catalog_dump(par_cat) == _catalog_dump(seq_cat)
    assert par.to_json() | {"seconds": 0} == seq.to_json() | {"seconds": 0}


def test_scan_restores_the_garbage_collector(tmp_path: Path) -> None:
    import gc

    claude = claude_dir_with(tmp_path / "c", [prompt("one"), assistant("m1", text("a"))])
    assert gc.isenabled()
    _scan(Catalog(tmp_path / "a.db"), claude)
    assert gc.isenabled()  # paused while building, back on after
    gc.disable()
    try:
        _scan(Catalog(tmp_path / "b.db"), claude)
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()
