"""`Jacked(settings)`, the service every surface calls: real fixtures, real model and Edge shard."""
from __future__ import annotations

import shutil
from typing import Any

import pytest
from kit import REAL

from jacked.config import load_settings
from jacked.errors import JackedError
from jacked.query.search import SearchOptions
from jacked.query.stats import StatsQuery
from jacked.query.timeline import TimelineQuery
from jacked.service import Jacked

PROJECT = "-src-experiments-claude_p"


@pytest.fixture(scope="module")
def jacked(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> Jacked:
    claude = tmp_path_factory.mktemp("service-claude")
    shutil.copytree(REAL / "projects" / PROJECT, claude / "projects" / PROJECT)
    return Jacked(load_settings(claude, jacked_home=str(tmp_path_factory.mktemp("service-home")), user_name="ada"))


def test_answers_from_a_fresh_catalog_and_index(jacked: Jacked) -> None:
    sessions = jacked.sessions()  # scans first: the catalog was empty
    listed = sorted(p.stem for p in (jacked.settings.claude_dir / "projects" / PROJECT).glob("*.jsonl")
                    if p.stat().st_size and not p.name.startswith("agent-"))
    assert sorted(s["session_id"] for s in sessions) == [s for s in listed if s in {x["session_id"] for x in sessions}]
    assert len(sessions) >= 3
    report = jacked.backfill()
    assert report.errors == [] and report.sessions_indexed == len(sessions)
    answer = jacked.search('"claude -p"', SearchOptions(limit=3))
    assert answer["results"] and answer["results"][0]["exact"] and answer["confidence"] == "high"


def test_views_take_a_prefix(jacked: Jacked) -> None:
    sid = jacked.sessions()[0]["session_id"]
    assert jacked.turns(sid[:8])["session_id"] == sid
    ctx = jacked.retrieve([sid[:8]], budget=2000)
    assert 0 < ctx.used <= 2000 and ctx.sessions[0]["session_id"] == sid
    brief = jacked.restore(sid[:8], 800)
    assert brief.used <= 800 and brief.text
    got, by_turn, session = jacked.summaries(sid[:8])
    assert got == sid and session is not None
    assert jacked.stats(StatsQuery())["sessions"] >= 1
    assert list(jacked.timeline(TimelineQuery(session_id=sid)))


def test_an_unknown_session_is_a_user_error(jacked: Jacked) -> None:
    with pytest.raises(JackedError, match="no session"):
        jacked.turns("ffffffff")


def test_a_service_that_keeps_the_index_open_holds_it_until_closed(jacked: Jacked) -> None:
    """`keep_index_open` (the daemon's service): the index is loaded once and kept, with its lock,
    across calls — writes, searches and `status` alike — and let go by `close()`."""
    from jacked.index.store import StoreBusy
    from jacked.index.store.edge import EdgeStore

    settings = load_settings(jacked.settings.claude_dir, jacked_home=str(jacked.settings.home), user_name="ada",
                             lock_timeout_s=1)
    index = settings.home / "index"
    kept = Jacked(settings, scan=False, keep_index_open=True)
    try:
        assert kept.backfill().errors == []
        store = kept.indexer.kept_store
        assert store is not None
        first = kept.search('"claude -p"', SearchOptions(limit=3))
        assert first["results"] and kept.indexer.kept_store is store  # the same open store
        with pytest.raises(StoreBusy):  # held by this service between calls
            EdgeStore(index, lock_timeout=0).open(None, None)
        status = kept.status()  # from the kept store: a second open would wait for its own lock
        assert status["points"] == store.count() > 0 and kept.indexer.kept_store is store
        assert kept.search('"claude -p"', SearchOptions(limit=3)) == first
    finally:
        kept.close()
    again = EdgeStore(index, lock_timeout=0).open(None, None)  # let go
    try:
        assert again.count() == status["points"]
    finally:
        again.close()


def test_rescan_before_next_call_sees_a_transcript_written_since_the_last_scan(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """A long-lived service (the daemon's) scans again at the next call when told to, however recent
    its last scan; otherwise it answers from the catalog for `rescan_seconds`."""
    claude = tmp_path_factory.mktemp("rescan-claude")
    sources = sorted(p for p in (REAL / "projects" / PROJECT).glob("*.jsonl")
                     if p.stat().st_size and not p.name.startswith("agent-"))
    (claude / "projects" / PROJECT).mkdir(parents=True)
    shutil.copy(sources[0], claude / "projects" / PROJECT / sources[0].name)
    jk = Jacked(load_settings(claude, jacked_home=str(tmp_path_factory.mktemp("rescan-home"))))
    first = {s["session_id"] for s in jk.sessions(limit=100)}
    assert first == {sources[0].stem}
    shutil.copy(sources[1], claude / "projects" / PROJECT / sources[1].name)
    assert {s["session_id"] for s in jk.sessions(limit=100)} == first  # scanned a moment ago
    jk.rescan_before_next_call()
    assert {s["session_id"] for s in jk.sessions(limit=100)} == {sources[0].stem, sources[1].stem}
