"""The archive: compressed copies (appended when a file grows), private modes, and sessions that
stay retrievable and searchable after Claude Code deleted their transcript."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import stat
import zlib
from pathlib import Path

import pytest
from kit import REAL

from jacked.ingest import archive as archive_mod
from jacked.ingest.archive import Archive, archive_listing
from jacked.catalog import Catalog
from jacked.ingest.scan import Scanner

SID = "ef958aa1-0e93-49f0-bb71-150f63befcd1"  # has a plan-less main file and 2.1.x subagents
PLAN_SID = "a7da6a22-facc-4fcd-8bab-f83c87862004"  # has a plan file


@pytest.mark.parametrize("deflate", ["default", "zlib"])  # ISA-L when installed, and the fallback
def test_growth_is_appended_and_changes_rewrite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                deflate: str) -> None:
    if deflate == "zlib":
        monkeypatch.setattr(archive_mod, "_deflate", zlib)
    claude = tmp_path / "claude"
    f = claude / "projects" / "p" / "s.jsonl"
    f.parent.mkdir(parents=True)
    f.write_bytes(b'{"a": 1}\n')
    arch = Archive(tmp_path / "home", claude)
    assert arch.capture(f, "main", "s") and not arch.capture(f, "main", "s")  # unchanged: nothing to do
    with f.open("ab") as fh:
        fh.write(b'{"b": 2}\n')
    assert arch.capture(f, "main", "s")
    (e,) = arch.entries()
    assert e.members == 2 and arch.read_bytes(e) == f.read_bytes()
    gz = arch.gz_path(e.rel)
    assert gzip.decompress(gz.read_bytes()) == f.read_bytes()
    f.write_bytes(b'{"c": 3}\n')  # rewritten (same size, other bytes)
    os.utime(f, ns=(1, 1))
    assert arch.capture(f, "main", "s")
    (e,) = arch.entries()
    assert e.members == 1 and arch.read_bytes(e) == b'{"c": 3}\n'
    # owner-only: directories 0700, files 0600
    for p in [arch.root, *arch.root.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), (p, oct(mode))


def test_a_copy_cut_short_by_a_crash_is_rewritten(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    f = claude / "projects" / "p" / "s.jsonl"
    f.parent.mkdir(parents=True)
    f.write_bytes(b'{"a": 1}\n' * 100)
    Archive(tmp_path / "home", claude).capture(f, "main", "s")
    arch = Archive(tmp_path / "home", claude)
    gz = arch.gz_path(arch.entries()[0].rel)
    gz.write_bytes(gz.read_bytes()[:10])
    assert arch.capture(f, "main", "s")
    assert arch.read_bytes(arch.entries()[0]) == f.read_bytes()


@pytest.fixture(scope="module")
def claude_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Claude dir with a few real sessions (one with subagents, one with a plan)."""
    root = tmp_path_factory.mktemp("arch") / "claude"
    for sid in (SID, PLAN_SID):
        for main in REAL.glob(f"projects/*/{sid}.jsonl"):
            dest = root / main.relative_to(REAL)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(main, dest)
            sub = main.parent / sid
            if sub.is_dir():
                shutil.copytree(sub, dest.parent / sid)
    shutil.copytree(REAL / "plans", root / "plans")
    return root


def test_deleted_transcript_is_retrieved_and_searched_after_rebuild(claude_copy: Path, tmp_path: Path,
                                                                  dense_embedder) -> None:
    from jacked.config import Settings
    from jacked.index.indexer import Indexer
    from jacked.query.retrieve import retrieve
    from jacked.query.search import SearchOptions, search_many

    home = tmp_path / "home"
    s = Settings(claude_dir=claude_copy, home=home, user_name="tester")
    Indexer(s).backfill()
    before = retrieve(Catalog(s.catalog_path), [SID, PLAN_SID], "smart", 20000, check_git=False)
    # Claude Code's cleanup deletes the transcripts (and the plan), and the catalog is lost too
    for sid in (SID, PLAN_SID):
        for p in claude_copy.glob(f"projects/*/{sid}*"):
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    slug = Catalog(s.catalog_path).get_session_row(PLAN_SID)["slug"]
    (claude_copy / "plans" / f"{slug}.md").unlink()
    for p in home.glob("catalog.db*"):
        p.unlink()
    report = Indexer(s).backfill(rebuild=True)
    assert report.sessions_indexed == 2 and not report.errors
    catalog = Catalog(s.catalog_path)
    after = retrieve(catalog, [SID, PLAN_SID], "smart", 20000, check_git=False)
    strip = lambda r: [[(x["content_type"], x["text"]) for x in ss["sections"]] for ss in r.sessions]  # noqa: E731  # a one-line projection
    assert strip(after) == strip(before) and any(x["content_type"] == "plan" for x in after.sessions[1]["sections"])
    assert catalog.get_session_row(SID)["file"].startswith(str(claude_copy))  # recorded under the original path
    assert after.sessions[0]["resume"] is None  # the transcript is gone: no resume hint
    plan_words = " ".join(catalog.get_session_row(PLAN_SID)["plan"].split()[:12])
    res = search_many(s, [plan_words, "teammates research plan mode alice bob"], SearchOptions(limit=3))
    assert res[0]["results"][0]["session_id"] == PLAN_SID
    assert res[1]["results"][0]["session_id"] == SID
    listing = archive_listing(home, claude_copy)
    assert listing["totals"]["sessions_only_in_archive"] == 2 and listing["totals"]["originals_gone"] >= 3
    # a second rebuild-free backfill finds nothing to do, and the sessions stay
    again = Indexer(s).backfill()
    assert again.points_written == 0 and {SID, PLAN_SID} <= set(Catalog(s.catalog_path).session_ids())


def test_scanner_without_catalog_on_disk_does_not_archive(tmp_path: Path) -> None:
    cat = Catalog(Path(":memory:"))
    assert Scanner(cat, REAL).archive is None


def test_cli_archive_json(tmp_path: Path) -> None:
    from test_cli_history import run

    claude = tmp_path / "claude"
    main = next(REAL.glob(f"projects/*/{PLAN_SID}.jsonl"))
    (claude / main.relative_to(REAL)).parent.mkdir(parents=True)
    shutil.copy2(main, claude / main.relative_to(REAL))
    p = run(["archive", "--json"], tmp_path / "home", claude=claude)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["totals"]["files"] >= 1 and all(f["original_present"] for f in data["files"])
    assert {"path", "kind", "bytes", "stored_bytes", "original_present"} <= set(data["files"][0])
