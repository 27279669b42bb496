"""`jacked forget` and `uninstall --purge` (issue 14, privacy): a forgotten session leaves no byte of
itself in any file under JACKED_HOME — catalog.db and its WAL, the Edge shard's segments and WAL,
the archive (also decompressed) and its manifest, the hook log and queue — the next backfill does
not bring it back, and the store's compaction rewrites a shard without deleted points."""
from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from kit import DEEP, REAL
from test_cli_history import run
from test_defaults import jacked_cmd

from jacked.catalog import Catalog, forget_queries
from jacked.config import load_settings
from jacked.index.forget import select_sessions
from jacked.index.indexer import Indexer
from jacked.index.store import SearchFilter
from jacked.index.store.base import Point
from jacked.index.store.edge import EdgeStore
from jacked.service import Jacked
from jacked.surfaces.hook import log_problem

PROJECTS = ("-src-deep-manifest", "-experiments-worktrees", "-src-experiments-claude_p", "-experiments-ideas")
# Distinctive strings of the session forgotten below (a7da6a22, deep-manifest): two prompts, a tool's
# output (a file it read), its subagent's output, its plan (plans/humble-doodling-wolf.md).
FORGOTTEN = ("I saw in passing that in case of BadZipFile",
             "we support .zip, but I've seen an archive that contains embedded tar.gz",
             "Thank you for your interest in contributing to Deep Manifest",
             "Report Corrupted Archives in Manifest")
KEPT = ("OK, we're going to make a little experiment",)  # ef958aa1 (worktrees): stays
WORKTREES = "ef958aa1-0e93-49f0-bb71-150f63befcd1"
CLAUDE_P = {"2b4ed4c0-b905-41de-9238-273db3ec737a", "256ba646-2c15-437a-98e9-4171aafd030e",
            "94604a7b-062f-4369-bdf0-da948381c3e5", "29ccd257-68b1-427f-ae5f-6524b7cb6f20"}


def copy_claude(dest: Path, projects: tuple[str, ...] = PROJECTS) -> Path:
    for project in projects:
        shutil.copytree(REAL / "projects" / project, dest / "projects" / project)
    shutil.copytree(REAL / "plans", dest / "plans")
    for p in [dest, *dest.rglob("*")]:  # the fixtures are read-only
        os.chmod(p, 0o700 if p.is_dir() else 0o600)
    return dest


def grep_home(home: Path, needles: tuple[str, ...]) -> dict[str, list[str]]:
    """needle -> the files under `home` holding it, in their raw bytes or (for .gz) decompressed."""
    found: dict[str, list[str]] = {n: [] for n in needles}
    for p in sorted(home.rglob("*")):
        if not p.is_file() or p.is_symlink():
            continue
        blobs = [p.read_bytes()]
        if p.suffix == ".gz":
            blobs.append(gzip.decompress(blobs[0]))
        for n in needles:
            if any(n.encode() in b for b in blobs):
                found[n].append(str(p.relative_to(home)))
    return found


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> dict[str, Any]:
    """The real fixtures' deep-manifest, worktrees, claude_p and ideas projects, backfilled by two
    users into one home (one Edge shard holds both users' points)."""
    root = tmp_path_factory.mktemp("forget")
    claude = copy_claude(root / "claude")
    home = root / "home"
    ada = load_settings(claude, jacked_home=str(home), user_name="ada")
    bob = load_settings(claude, jacked_home=str(home), user_name="bob")
    for s in (ada, bob):
        assert Indexer(s).backfill().errors == []
    transcript = claude / "projects" / "-src-deep-manifest" / f"{DEEP}.jsonl"
    log_problem(home, f"hook: transcript {transcript} not found; nothing indexed")
    log_problem(home, "hook: another line that stays")
    queued = home / "daemon" / "queue"  # a hook's request the daemon has not done yet
    queued.mkdir(parents=True)
    (queued / "00000000000000000001-000001.json").write_text(json.dumps({"target": str(transcript)}))
    return {"claude": claude, "home": home, "ada": ada, "bob": bob, "transcript": transcript}


def _points(settings: Any, flt: SearchFilter | None = None) -> int:
    with Indexer(settings).open_store() as store:
        return store.count(flt)


def test_forget_leaves_no_byte_of_the_session_and_backfill_does_not_bring_it_back(indexed: dict[str, Any]) -> None:
    home, ada, bob = indexed["home"], indexed["ada"], indexed["bob"]
    before = grep_home(home, FORGOTTEN + KEPT)
    assert all(before[n] for n in FORGOTTEN + KEPT), before
    # the transcript, the catalog and the index hold it (catalog.db may hold it in its WAL)
    assert any(f.endswith(f"{DEEP}.jsonl.gz") for f in before[FORGOTTEN[0]])
    assert any(f.startswith("catalog.db") for f in before[FORGOTTEN[0]])
    assert any(f.startswith("index/") for f in before[FORGOTTEN[0]])
    assert "archive/plans/humble-doodling-wolf.md.gz" in before[FORGOTTEN[3]]
    of_session = SearchFilter(session_ids=[DEEP])
    points = _points(ada, of_session)
    # (point ids are per session, so both users' runs wrote the same points: the last one, bob's, owns them)
    assert points > 0 and _points(ada, SearchFilter(session_ids=[DEEP], user_name="bob")) == points
    total = _points(ada)

    report = Jacked(ada).forget([DEEP[:8]])

    assert report.sessions == [DEEP] and report.errors == []
    assert report.points_deleted == points  # bob's: on the local shard every user's points of it go
    assert report.archive_files == 3  # the transcript, its subagent file and its plan
    assert report.log_lines == 2  # the hook log line and the queued entry naming it
    assert report.compaction["index"]["points"] == total - points
    after = grep_home(home, FORGOTTEN + KEPT)
    assert {n: after[n] for n in FORGOTTEN} == {n: [] for n in FORGOTTEN}, after
    assert after[KEPT[0]], "another session's strings must stay"
    assert _points(ada, of_session) == 0 and _points(ada) == total - points
    log = (home / "logs" / "hook.log").read_text()
    assert DEEP not in log and "another line that stays" in log
    assert not list((home / "daemon" / "queue").glob("*.json"))
    catalog = Catalog(ada.catalog_path)
    try:
        assert catalog.get_session_row(DEEP) is None
        assert [r["reason"] for r in forget_queries.forgotten_rows(catalog)] == ["forget"]
        assert not catalog.db.execute("SELECT COUNT(*) FROM index_points WHERE session_id = ?", (DEEP,)).fetchone()[0]
    finally:
        catalog.close()

    # The next backfills (both users) do not bring it back: not from the transcript, still on disk,
    # nor from the plan in plans/.
    for s in (ada, bob):
        again = Indexer(s).backfill()
        assert again.scan is not None and again.scan.sessions_forgotten == 1 and again.points_written == 0
    jk = Jacked(ada)
    assert DEEP not in {r["session_id"] for r in jk.sessions()}
    from jacked.query.search import SearchOptions

    found = jk.search("report corrupted archives BadZipFile in the manifest", SearchOptions(limit=10))
    assert DEEP not in {r["session_id"] for r in found["results"]}
    listing = jk.archive()
    assert not [f for f in listing["files"] if f["session_id"] == DEEP or "humble-doodling-wolf" in f["path"]]
    assert _points(ada, of_session) == 0
    final = grep_home(home, FORGOTTEN + KEPT)
    assert {n: final[n] for n in FORGOTTEN} == {n: [] for n in FORGOTTEN} and final[KEPT[0]]
    # forgetting it again: nothing left to do, said so
    again_report = jk.forget([DEEP[:8]])
    assert again_report.sessions == [] and again_report.already == [DEEP]


def test_repo_and_before_choose_the_right_sessions(tmp_path: Path) -> None:
    claude = copy_claude(tmp_path / "claude")
    settings = load_settings(claude, jacked_home=str(tmp_path / "home"), user_name="ada")
    jk = Jacked(settings)
    catalog = jk.fresh()
    assert set(select_sessions(catalog, repo="claude_p")) == CLAUDE_P
    # last active before 2026-02-01: deep-manifest (Nov 2025) and claude_p (Jan 2026), not ideas or worktrees
    assert set(select_sessions(catalog, before="2026-02-01")) == CLAUDE_P | {DEEP}
    assert set(select_sessions(catalog, repo="claude_p", before="2026-01-23T17:25:00Z")) == {
        "2b4ed4c0-b905-41de-9238-273db3ec737a", "256ba646-2c15-437a-98e9-4171aafd030e"}
    with pytest.raises(Exception, match="--before"):
        select_sessions(catalog, before="someday")
    report = jk.forget(repo="claude_p", before="2026-01-23T17:25:00Z")
    assert set(report.sessions) == {"2b4ed4c0-b905-41de-9238-273db3ec737a", "256ba646-2c15-437a-98e9-4171aafd030e"}
    left = {r["session_id"] for r in jk.sessions()}
    assert left >= {DEEP, WORKTREES, "94604a7b-062f-4369-bdf0-da948381c3e5"} and not left & set(report.sessions)


def test_cli_forget_needs_yes_and_prints_json(tmp_path: Path) -> None:
    claude = copy_claude(tmp_path / "claude", ("-src-experiments-claude_p", "-experiments-worktrees"))
    home = tmp_path / "home"
    assert run(["scan", "--json"], home, claude).returncode == 0
    p = run(["forget", "--repo", "claude_p"], home, claude, stdin="")
    assert p.returncode == 1 and "--yes" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = run(["forget"], home, claude, stdin="")
    assert p.returncode == 1 and "--repo" in p.stderr
    p = run(["forget", "ef958aa1", "--repo", "x", "--yes"], home, claude)
    assert p.returncode == 1 and "not both" in p.stderr
    p = run(["forget", "--repo", "claude_p", "--yes", "--json"], home, claude)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert set(data["forgotten"]) == CLAUDE_P and data["errors"] == [] and data["archive_files_deleted"] >= 4
    sessions = json.loads(run(["sessions", "--json"], home, claude).stdout)
    assert [s["session_id"] for s in sessions] == [WORKTREES]
    listed = json.loads(run(["forget", "--list", "--json"], home, claude).stdout)["forgotten"]
    assert {r["session_id"] for r in listed} == CLAUDE_P and {r["reason"] for r in listed} == {"forget"}
    p = run(["forget", "nosuchsession", "--yes"], home, claude)
    assert p.returncode == 1 and "no session" in p.stderr


# --------------------------------------------------------------------------- uninstall --purge
def test_uninstall_purge_removes_the_home_and_keeps_the_transcripts(tmp_path: Path) -> None:
    claude = copy_claude(tmp_path / "claude", ("-experiments-worktrees",))
    home = tmp_path / "home"
    assert run(["install"], home, claude).returncode == 0
    assert run(["scan"], home, claude).returncode == 0 and (home / "catalog.db").exists()
    p = run(["uninstall", "--purge"], home, claude, stdin="")
    assert p.returncode == 1 and "--yes" in p.stderr and (home / "catalog.db").exists()
    assert "jacked" in (claude / "settings.json").read_text()  # nothing was uninstalled either
    p = run(["uninstall", "--purge", "--yes", "--json"], home, claude)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["purged"]["home"] == str(home)
    assert not home.exists() and not (claude / "settings.json").exists()  # install had created it
    assert (claude / "projects" / "-experiments-worktrees" / f"{WORKTREES}.jsonl").exists()
    p = run(["uninstall", "--purge", "--yes"], home, claude)
    assert p.returncode == 0 and "nothing to purge" in p.stdout


def test_uninstall_purge_refuses_dangerous_homes(tmp_path: Path) -> None:
    claude = copy_claude(tmp_path / "claude", ("-experiments-worktrees",))
    user_home = tmp_path / "user"
    user_home.mkdir()
    (user_home / "catalog.db").write_bytes(b"")  # looks like jacked's, still the user's home
    foreign = tmp_path / "documents"
    foreign.mkdir()
    (foreign / "thesis.txt").write_text("mine")
    for home, why in ((claude, "Claude directory"), (tmp_path, "holds more"), (user_home, "holds more"),
                      (Path("/"), "holds more"), (foreign, "no jacked data")):
        env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude), JACKED_HOME=str(home), HOME=str(user_home),
                   NO_COLOR="1")
        p = subprocess.run(jacked_cmd() + ["uninstall", "--purge", "--yes"], capture_output=True, text=True, env=env,
                           timeout=120)
        assert p.returncode == 1 and why in p.stderr and "refusing" in p.stderr, (home, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1
    assert (foreign / "thesis.txt").read_text() == "mine" and (user_home / "catalog.db").exists()
    assert (claude / "projects" / "-experiments-worktrees" / f"{WORKTREES}.jsonl").exists()


# --------------------------------------------------------------------------- the store's compaction
def test_edge_compaction_rewrites_a_1000_point_shard_without_deleted_points(tmp_path: Path) -> None:
    rng = random.Random(7)
    store = EdgeStore(tmp_path / "index").open("m", 16)
    points = [Point(id=str(uuid.uuid5(uuid.NAMESPACE_URL, str(i))),
                    payload={"session_id": f"s{i % 20}", "user_name": "ada", "text": f"MARKER-s{i % 20}-X point {i}",
                             "content_type": "chunk", "timestamp": "2026-01-01T00:00:00Z"},
                    dense=[rng.random() for _ in range(16)]) for i in range(1000)]
    store.upsert(points)
    store.close()
    store = EdgeStore(tmp_path / "index").open("m", 16)
    assert store.delete_where(session_id="s7") == 50
    assert grep_home(tmp_path, ("MARKER-s7-X",))["MARKER-s7-X"]  # deleted, yet still in the files
    done = store.compact()
    assert done["points"] == 950
    assert grep_home(tmp_path, ("MARKER-s7-X",))["MARKER-s7-X"] == []
    assert grep_home(tmp_path, ("MARKER-s8-X",))["MARKER-s8-X"]
    assert store.count() == 950 and store.count(SearchFilter(session_ids=["s8"])) == 50
    hits, _ = store.search_each([rng.random() for _ in range(16)], None, SearchFilter(session_ids=["s8"]), limit=3)
    assert len(hits) == 3 and hits[0].payload["session_id"] == "s8"
    assert set(store.count_by("session_id")) == {f"s{i}" for i in range(20)} - {"s7"}
    store.close()
    assert sorted(p.name for p in (tmp_path / "index").iterdir() if p.name.startswith(".")) == []
    # a compaction that stopped between its two renames: the next open puts the old shard back
    index = tmp_path / "index"
    os.rename(index / "shard", index / ".compact-old-123-abcd")
    with EdgeStore(index).open("m", 16) as again:
        assert again.count() == 950


def test_server_compaction_is_left_to_the_server() -> None:
    from qdrant_client import QdrantClient

    from jacked.index.store.server import ServerStore

    with ServerStore(client=QdrantClient(":memory:")).open("m", 16) as store:
        assert "server" in store.compact()["note"]
