"""Sessions jacked must never keep (issue 14, privacy): the `exclude` globs of jacked.json and the
`#nomem` marker typed in a prompt keep a session out from the first scan — nothing of it in the
catalog, the archive or the index, a tombstone so no later scan writes it — and catch a session
already kept when the marker or the glob comes later."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from kit import DEEP, SID, assistant, claude_dir_with, prompt, text, write_jsonl
from test_forget import FORGOTTEN, KEPT, WORKTREES, copy_claude, grep_home
from test_history_prompts import GONE, T0, line, write_history

from jacked.catalog import Catalog, forget_queries
from jacked.config import load_settings
from jacked.index.indexer import Indexer
from jacked.index.store import SearchFilter
from jacked.ingest.privacy import Privacy, has_nomem
from jacked.ingest.scan import Scanner
from jacked.service import Jacked


# --------------------------------------------------------------------------- the rules
@pytest.mark.parametrize(("prompt_text", "caught"), [
    ("#nomem", True), ("please keep this one out #NoMem", True), ("(#nomem) secret stuff", True),
    ("#nomem.", True), ("first line\n#NOMEM\nlast", True),
    ("x#nomem", False), ("#nomemory of it", False), ("##nomem", False), ("#nomem-ish", False), ("nomem", False),
])
def test_the_nomem_marker_is_a_word_of_its_own_in_any_case(prompt_text: str, caught: bool) -> None:
    assert has_nomem([None, "an ordinary prompt", prompt_text]) is caught


def test_exclude_globs_match_paths_below_a_folder_and_project_names(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    p = Privacy(("~/work/client-*", "/srv/secret", "private-*"))
    assert p.where_excluded(None, str(tmp_path / "work" / "client-acme"), None)
    assert p.where_excluded(None, str(tmp_path / "work" / "client-acme" / "sub" / "dir"), None)
    assert p.where_excluded(None, "/srv/secret", "secret") and p.where_excluded(None, "/srv/secret/app", "app")
    assert p.where_excluded(None, "/home/x/private-notes", None)  # a glob without / names the project
    assert p.where_excluded(None, None, "private-tools")
    assert p.where_excluded("/srv/secret/.claude/x.jsonl", None, None)  # the transcript path too
    assert not p.where_excluded(None, "/srv/secrets", "secrets")
    assert not p.where_excluded(None, str(tmp_path / "work" / "other"), "other")
    assert not Privacy().where_excluded("/srv/secret/x.jsonl", "/srv/secret", "secret")
    assert p.where_excluded(None, "C:\\srv\\secret\\app".replace("C:", ""), None)  # Windows separators
    # a file naming no working directory (an old summary-only file): its project folder's name
    assert p.where_excluded(None, None, None, "-srv-secret") and p.where_excluded(None, None, None, "-srv-secret-app")
    assert p.where_excluded(None, None, None, "-home-x-private-notes")
    assert not p.where_excluded(None, None, None, "-srv-public")
    assert not p.where_excluded(None, "/srv/public", None, "-srv-secret")  # a cwd, when there is one, decides


# --------------------------------------------------------------------------- exclude
def test_an_excluded_project_is_kept_out_from_the_first_scan(tmp_path: Path) -> None:
    claude = copy_claude(tmp_path / "claude", ("-src-deep-manifest", "-experiments-worktrees"))
    home = tmp_path / "home"
    (claude / "jacked.json").write_text(json.dumps({"exclude": ["/src/deep-*"]}))
    os.chmod(claude / "jacked.json", 0o600)
    settings = load_settings(claude, jacked_home=str(home), user_name="ada")
    assert settings.exclude == ["/src/deep-*"]
    jk = Jacked(settings)
    report = jk.scan()
    assert report.sessions_excluded == 1 and report.errors == []
    assert {r["session_id"] for r in jk.sessions()} == {WORKTREES}
    catalog = jk.catalog
    assert catalog.get_session_row(DEEP) is None
    assert [(r["session_id"], r["reason"]) for r in forget_queries.forgotten_rows(catalog)] == [(DEEP, "excluded")]
    listing = jk.archive()
    assert not [f for f in listing["files"] if f["session_id"] == DEEP or "humble-doodling-wolf" in f["path"]]
    assert listing["files"]  # the other session is archived
    jk.close()
    found = grep_home(home, FORGOTTEN + KEPT)
    assert {n: found[n] for n in FORGOTTEN} == {n: [] for n in FORGOTTEN}, found
    assert found[KEPT[0]]
    # the next scan does not read it at all
    again = Jacked(settings).scan()
    assert again.sessions_forgotten == 1 and again.sessions_excluded == 0 and again.files_opened == 0


def test_an_excluded_folder_goes_whole_also_through_worker_processes(tmp_path: Path) -> None:
    """The whole real fixture set: a cold scan big enough to use worker processes (which keep no
    archive: what the parent archived of the excluded sessions goes after them)."""
    import shutil

    from kit import REAL

    claude = tmp_path / "claude"
    shutil.copytree(REAL, claude)
    settings = load_settings(claude, jacked_home=str(tmp_path / "home"), user_name="ada",
                             exclude=["/Users/dain/workspace/claude-code-log"])
    jk = Jacked(settings)
    report = jk.scan()
    assert report.sessions_excluded >= 16 and report.errors == []
    assert not jk.catalog.db.execute(
        "SELECT COUNT(*) FROM sessions WHERE project_dir LIKE '%claude-code-log%'").fetchone()[0]
    files = jk.archive()["files"]
    assert files and not [f for f in files if "claude-code-log" in f["path"]]
    assert not list((tmp_path / "home" / "archive" / "projects").glob("*claude-code-log*"))
    assert len(jk.sessions()) == 27 - 12


def test_a_glob_added_later_forgets_what_was_kept(tmp_path: Path) -> None:
    claude = copy_claude(tmp_path / "claude", ("-src-deep-manifest", "-experiments-worktrees"))
    home = tmp_path / "home"
    jk = Jacked(load_settings(claude, jacked_home=str(home), user_name="ada"))
    jk.scan()
    assert jk.catalog.get_session_row(DEEP) is not None
    jk.close()
    settings = load_settings(claude, jacked_home=str(home), user_name="ada", exclude=["deep-manifest"])
    jk = Jacked(settings)
    report = jk.scan()
    assert report.sessions_excluded == 1
    catalog = jk.catalog
    assert catalog.get_session_row(DEEP) is None and not catalog.turn_rows(DEEP)
    assert forget_queries.meta_flag(catalog, forget_queries.COMPACT_KEY) == 1  # the next index run compacts
    assert not [f for f in jk.archive()["files"] if f["session_id"] == DEEP]


# --------------------------------------------------------------------------- #nomem
def _session(claude: Path, prompts: list[str], sid: str = SID) -> Path:
    records = []
    for i, p in enumerate(prompts):
        records += [prompt(p, t=10 * i), assistant(f"msg_{sid[:4]}_{i}", text(f"answer number {i} about quokkas"),
                                                  t=10 * i + 1)]
    for r in records:
        r["sessionId"] = sid
    claude_dir_with(claude, records, sid=sid)
    return claude / "projects" / "-home-dev-projects-demo" / f"{sid}.jsonl"


def test_nomem_keeps_a_session_out_and_scanning_without_rules_keeps_it(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    _session(claude, ["wire the zanzibar exporter", "and keep this one private #NoMem please"])
    catalog = Catalog(tmp_path / "home" / "catalog.db")
    report = Scanner(catalog, claude, privacy=Privacy()).scan()
    assert report.sessions_excluded == 1 and catalog.get_session_row(SID) is None
    assert [r["reason"] for r in forget_queries.forgotten_rows(catalog)] == ["nomem"]
    assert grep_home(tmp_path / "home", ("zanzibar",))["zanzibar"] == []
    # the tombstone holds for a scanner without rules too (one place: Catalog.replace_sessions)
    other = Catalog(tmp_path / "home2" / "catalog.db")
    assert Scanner(other, claude).scan().sessions_scanned == 1  # no rules, nothing forgotten: kept
    assert Scanner(catalog, claude).scan().sessions_forgotten == 1 and catalog.get_session_row(SID) is None


def test_nomem_typed_later_forgets_the_session_and_its_points(tmp_path: Path, dense_embedder: Any) -> None:
    claude = tmp_path / "claude"
    path = _session(claude, ["wire the zanzibar quokka exporter"])
    other = "22222222-3333-4444-8555-666666666666"
    _session(claude, ["tune the marmoset telemetry"], sid=other)
    home = tmp_path / "home"
    settings = load_settings(claude, jacked_home=str(home), user_name="ada")
    assert Indexer(settings).backfill().points_written > 0
    with Indexer(settings).open_store() as store:
        assert store.count(SearchFilter(session_ids=[SID])) > 0
    assert grep_home(home, ("zanzibar quokka",))["zanzibar quokka"]
    # the user types #nomem in the same session; the hook's index run sees it
    records = [prompt("actually, #nomem: forget all of this", t=100), assistant("msg_late", text("ok"), t=101)]
    for r in records:
        r["sessionId"] = SID
    with path.open("a") as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
    from jacked.query.history import session_files_for_path

    report = Indexer(settings).index_paths([session_files_for_path(path)])
    assert report.scan is not None and report.scan.sessions_excluded == 1
    with Indexer(settings).open_store() as store:
        assert store.count(SearchFilter(session_ids=[SID])) == 0
        assert store.count(SearchFilter(session_ids=[other])) > 0
    found = grep_home(home, ("zanzibar quokka", "forget all of this", "marmoset telemetry"))
    assert found["zanzibar quokka"] == [] and found["forget all of this"] == [] and found["marmoset telemetry"]
    catalog = Catalog(settings.catalog_path)
    try:
        assert catalog.get_session_row(SID) is None
        assert forget_queries.meta_flag(catalog, forget_queries.COMPACT_KEY) == 0  # compacted
    finally:
        catalog.close()
    assert Indexer(settings).backfill().points_written == 0  # and it stays out


def test_nomem_in_history_keeps_a_prompt_only_session_out(tmp_path: Path) -> None:
    claude, home = tmp_path / "claude", tmp_path / "home"
    write_history(claude, [line("plan the quarterly numbers", GONE, T0),
                           line("#nomem this one is about salaries", GONE, T0 + 1000)])
    catalog = Catalog(home / "catalog.db")
    report = Scanner(catalog, claude, privacy=Privacy()).scan()
    assert report.sessions_excluded == 1 and catalog.get_session_row(GONE) is None
    write_history(claude, [line("one more prompt", GONE, T0 + 2000)], mode="a")
    Scanner(catalog, claude, privacy=Privacy()).scan()
    assert catalog.get_session_row(GONE) is None  # later prompts do not bring it back
    catalog.close()
    assert grep_home(home, ("quarterly numbers", "salaries")) == {"quarterly numbers": [], "salaries": []}


def test_a_session_written_again_after_being_forgotten_stays_out(tmp_path: Path) -> None:
    """Whatever road brings a forgotten session back (here: its file rewritten, a prompt added)."""
    claude = tmp_path / "claude"
    path = _session(claude, ["wire the zanzibar exporter"])
    catalog = Catalog(tmp_path / "home" / "catalog.db")
    Scanner(catalog, claude).scan()
    with catalog.transaction():
        forget_queries.tombstone(catalog, [(SID, "forget", None)])
    write_jsonl(path, [prompt("something new entirely", t=500)])
    report = Scanner(catalog, claude).scan()
    assert report.sessions_forgotten == 1 and catalog.get_session_row(SID) is None
    assert not catalog.db.execute("SELECT COUNT(*) FROM files").fetchone()[0]


# --------------------------------------------------------------------------- <private> spans
def test_private_spans_never_reach_the_catalog_or_the_index(tmp_path: Path, dense_embedder: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`<private>…</private>` in a prompt, a tool output and another agent's session: dropped before
    storage (the archive keeps the raw transcript, by design: it is left out of the grep)."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "agents"))
    import write_gemini

    claude = tmp_path / "claude"
    records = [prompt("plan the ocelot rollout <private>my salary is ninety quetzals</private> for tomorrow", t=0),
               assistant("msg_p1", {"type": "tool_use", "id": "toolu_p1", "name": "Bash",
                                    "input": {"command": "cat notes.txt"}}, t=1),
               {"type": "user", "timestamp": "2025-01-01T00:00:02Z", "sessionId": SID, "uuid": "u-res",
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_p1",
                            "content": "notes\n<PRIVATE>door code 4711-zebu</PRIVATE>\nend"}]}},
               assistant("msg_p2", text("done with the ocelot rollout"), t=3)]
    for r in records:
        r["sessionId"] = SID
    claude_dir_with(claude, records, sid=SID)
    gemini_home = tmp_path / "gemini-home"
    spec = {"session_id": "9f1c2d3e-0000-4000-8000-00000000abcd", "cwd": "/home/dev/projects/demo",
            "started_at": "2025-01-02T00:00:00.000Z", "model": "gemini-2.5-pro", "title": None,
            "turns": [{"prompt": "tune the lynx cache <private>the launch date is the ides of march</private>",
                       "at": "2025-01-02T00:00:00.000Z", "assistant": "tuned the lynx cache", "input_tokens": 10,
                       "output_tokens": 5, "calls": []}]}
    write_gemini.write_session(gemini_home / ".gemini", spec)
    home = tmp_path / "home"
    monkeypatch.setenv("GEMINI_CLI_HOME", str(gemini_home))
    settings = load_settings(claude, jacked_home=str(home), user_name="ada")
    Indexer(settings).backfill()
    catalog = Catalog(settings.catalog_path)
    try:
        prompts = [r[0] for r in catalog.db.execute("SELECT prompt FROM turns WHERE prompt IS NOT NULL")]
    finally:
        catalog.close()
    assert any("ocelot rollout [private] for tomorrow" in p for p in prompts)
    assert any("lynx cache [private]" in p for p in prompts)
    hidden = ("ninety quetzals", "4711-zebu", "ides of march")
    found = grep_home(home, hidden + ("ocelot rollout", "lynx cache"))
    for needle in hidden:
        assert [f for f in found[needle] if not f.startswith("archive")] == [], needle
    assert found["ocelot rollout"] and found["lynx cache"]  # the rest of both sessions is kept


# --------------------------------------------------------------------------- the glance
def test_the_glance_keeps_privacy_like_the_scan(tmp_path: Path) -> None:
    """The glance a cold backfill starts with (jacked.index.glance) writes prompts before the scan
    reads anything: a `<private>` span, a secret, an excluded path, a `#nomem` (even past the
    prompts it keeps) and a forgotten session never reach its points, nor any file of the home."""
    from jacked.index.glance import MARK
    from jacked.sources.claude.glance import HEAD_PROMPTS, TAIL_PROMPTS

    claude = tmp_path / "claude"
    secret = "AKIA" + "QWERTYUIOPASDFGH"
    ids = {name: f"{i:08d}-2222-4333-8444-555555555555" for i, name in enumerate(
        ("kept", "private", "nomem", "excluded", "forgotten"))}

    def session(name: str, prompts: list[str], cwd: str = "/home/dev/projects/demo") -> None:
        sid = ids[name]
        records = []
        for i, p in enumerate(prompts):
            records += [prompt(p, t=i, cwd=cwd), assistant(f"msg_{name}_{i}", text(f"answer {i}"), t=i, cwd=cwd)]
        for r in records:
            r["sessionId"] = sid
        claude_dir_with(claude, records, sid=sid)

    session("kept", ["tune the marmoset telemetry"])
    session("private", ["plan the ocelot rollout <private>my salary is ninety quetzals</private> for tomorrow",
                        f"deploy the ocelot build with the key {secret} tonight"])
    many = [f"step {i} of the pangolin migration" for i in range(HEAD_PROMPTS + TAIL_PROMPTS + 20)]
    many[HEAD_PROMPTS + 10] = "and this pangolin part stays out #nomem"  # kept neither at the head nor the tail
    session("nomem", many)
    session("excluded", ["refactor the wombat billing"], cwd="/srv/secret/app")
    session("forgotten", ["feed the capybara"])
    (claude / "jacked.json").write_text(json.dumps({"exclude": ["/srv/secret"]}))
    os.chmod(claude / "jacked.json", 0o600)
    home = tmp_path / "home"
    settings = load_settings(claude, jacked_home=str(home), user_name="ada")
    catalog = Catalog(settings.catalog_path)
    with catalog.transaction():
        forget_queries.tombstone(catalog, [(ids["forgotten"], "forget", None)])
    catalog.close()

    class Stop(Exception):
        pass

    def stop_after_glance(phase: str, done: int, total: int) -> None:
        if phase != "glance":
            raise Stop

    with pytest.raises(Stop):
        Indexer(settings).backfill(progress=stop_after_glance)
    with Indexer(settings).open_store() as store:
        points = list(store.scroll(None, None))
    assert points and all(h.payload[MARK] for h in points)
    assert {h.payload["session_id"] for h in points} == {ids["kept"], ids["private"]}
    texts = sorted(h.payload["text"] for h in points if h.payload["session_id"] == ids["private"])
    assert texts == ["deploy the ocelot build with the key [REDACTED:aws_access_key] tonight",
                     "plan the ocelot rollout [private] for tomorrow"]
    hidden = ("ninety quetzals", secret, "wombat", "capybara", "pangolin")
    found = grep_home(home, hidden + ("ocelot rollout", "marmoset"))
    assert {n: found[n] for n in hidden} == {n: [] for n in hidden}, found
    assert found["ocelot rollout"] and found["marmoset"]  # what is kept is there to be found

    report = Indexer(settings).backfill()  # run to its end: the lexical pass replaces the glance
    assert report.glance is not None and report.glance.swept == len(points)
    with Indexer(settings).open_store() as store:
        assert not [h for h in store.scroll(None, [MARK]) if h.payload.get(MARK)]
        assert {h.payload["session_id"] for h in store.scroll(None, ["session_id"])} == {ids["kept"], ids["private"]}
