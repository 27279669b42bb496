"""Timelines and file histories: checked by hand on real sessions, and against the generator's truth."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kit import DEEP, FIXTURES, GEN_CORPUS, REAL, assistant, claude_dir_with, prompt, result, scanned_real, text, tool_use
from independent_count import as_typed

from jacked.catalog import Catalog
from jacked.ingest.scan import Scanner
from jacked.query.timeline import EVENT_TYPES, TimelineError, TimelineQuery, file_history, timeline
from jacked.sources.attempts import command_key
from jacked.sources.briefs import content_hash

SIX_ERRORS = "2b4ed4c0-b905-41de-9238-273db3ec737a"


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    return scanned_real(tmp_path_factory.mktemp("tl-real"))


def _raw_records(sid: str) -> list[dict[str, Any]]:
    path = next(REAL.rglob(f"{sid}.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_event_stream_of_a_real_session(real: Catalog) -> None:
    ev = timeline(real, TimelineQuery(session_id=DEEP))
    by = {t: [e for e in ev if e["type"] == t] for t in EVENT_TYPES}
    assert len(by["intent"]) == 9
    # pinned per-turn figures (test_real_sessions): 12+8+2+55+6+25 calls, errors 1+2+1
    assert len(by["action"]) == 108 and len(by["error"]) == 4
    assert sum(e["lines_added"] for e in by["file"]) == 2 + 763 + 135 + 34
    assert sum(e["lines_removed"] for e in by["file"]) == 1 + 31 + 230 + 17
    assert len(by["subagent"]) == 1 and by["subagent"][0]["agent_type"] == "Explore"
    # every event carries the contract's keys; within a turn the state it started from comes first, then the prompt
    for e in ev:
        assert {"type", "session_id", "turn_index", "timestamp"} <= set(e)
    assert [e["type"] for e in ev[:2]] == ["snapshot", "intent"] and ev[1]["turn_index"] == 1
    assert [e["turn_index"] for e in ev] == sorted(e["turn_index"] for e in ev)
    # one llm event per API response, tokens as in the turns
    out_tokens = sum(r[0] for r in real.db.execute("SELECT output_tokens FROM turns WHERE session_id = ?", (DEEP,)))
    assert sum(e["output_tokens"] for e in by["llm"]) == out_tokens
    assert all(e["model"] for e in by["llm"])


def test_file_event_diff_and_hashes_match_the_raw_record(real: Catalog) -> None:
    gitignore = [e for e in timeline(real, TimelineQuery(session_id=DEEP, types=["file"]))
                 if e["path"].endswith("/.gitignore")]
    assert len(gitignore) == 1
    e = gitignore[0]
    raw = next(r["toolUseResult"] for r in _raw_records(DEEP)
               if isinstance(r.get("toolUseResult"), dict) and str(r["toolUseResult"].get("filePath", "")).endswith(".gitignore"))
    assert e["operation"] == "edit" and (e["lines_added"], e["lines_removed"]) == (2, 1)
    assert "+scratch/" in e["diff"] and e["diff"].startswith("@@ -167,")
    assert e["before_hash"] == content_hash(raw["originalFile"])
    assert e["after_hash"] == content_hash(raw["originalFile"].replace(raw["oldString"], raw["newString"], 1))
    # the snapshot taken just before the edit names backup v1 of .gitignore
    assert e["backup"]["version"] == 1 and e["backup"]["backup_file"] == "ccb8622c63b3d2c2@v1"


def test_errors_and_whether_they_were_fixed(real: Catalog) -> None:
    # 2b4ed4c0: six refused calls, none retried successfully (checked by hand in the raw file)
    errs = timeline(real, TimelineQuery(session_id=SIX_ERRORS, types=["error"]))
    assert [e["tool_name"] for e in errs] == ["WebSearch", "Bash", "Bash", "Bash", "Bash", "Read"]
    assert not any(e["resolved"] for e in errs)
    assert "permissions" in errs[0]["message"]
    # deep-manifest turn 4: `pytest` not found; two calls later `(source .venv/bin/activate && pytest)` ran fine
    deep = timeline(real, TimelineQuery(session_id=DEEP, types=["error"]))
    first = deep[0]
    assert first["turn_index"] == 4 and first["command"] == "pytest" and "command not found" in first["message"]
    fixer = real.db.execute("SELECT tool_use_id, command FROM invocations WHERE session_id = ? AND owner = '' "
                            "AND turn_index = 4 AND ord = 2", (DEEP,)).fetchone()
    assert fixer["command"] == "(source .venv/bin/activate && pytest)"
    assert first["resolved"] and first["resolved_by"]["tool_use_id"] == fixer["tool_use_id"]


def test_command_key() -> None:
    assert command_key("(source .venv/bin/activate && pytest -x)") == "pytest"
    assert command_key("cd /x && FOO=1 npm run build -- --watch") == "npm run build"
    assert command_key("git status | head") == "git status"


def test_cross_session_errors_by_repo_and_unknown_type(real: Catalog) -> None:
    errs = timeline(real, TimelineQuery(types=["error"], repo="claude-code-log"))
    assert errs and {e["type"] for e in errs} == {"error"}
    assert len({e["session_id"] for e in errs}) > 1
    stamps = [e["timestamp"] for e in errs]
    assert stamps == sorted(stamps)
    with pytest.raises(TimelineError):
        timeline(real, TimelineQuery(types=["verdict"]))
    page = timeline(real, TimelineQuery(types=["error"], repo="claude-code-log", offset=1, limit=2))
    assert page == errs[1:3]


def test_compaction_event(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    shutil.copy(FIXTURES / "handwritten" / "claude-code-log-upstream" / "test" / "test_data" /
                "dag_compact_after_rewind.jsonl", (claude / "projects" / "-tmp").mkdir(parents=True) or
                claude / "projects" / "-tmp" / "s1.jsonl")
    cat = Catalog(tmp_path / "catalog.db")
    Scanner(cat, claude).scan()
    ev = timeline(cat, TimelineQuery(types=["compaction"]))
    boundary = [e for e in ev if e.get("kind") == "boundary"]
    assert boundary and boundary[0]["trigger"] == "auto" and boundary[0]["pre_tokens"] == 150000


def _edit_session(tmp: Path) -> tuple[Path, str]:
    """One session: a Write that creates a file, then an Edit of it, with file-history backups."""
    old = "def f():\n    return 1\n"
    records = [
        {"type": "file-history-snapshot", "messageId": "p1", "isSnapshotUpdate": False,
         "snapshot": {"messageId": "p1", "trackedFileBackups": {}, "timestamp": "2026-03-01T10:00:00.000Z"}},
        prompt("create app.py", 0, uuid="p1"),
        assistant("m1", tool_use("t1", "Write", file_path="/home/dev/projects/demo/app.py", content=old), 1),
        result("t1", "File created", t=2, tur={"type": "create", "filePath": "/home/dev/projects/demo/app.py",
                                                "content": old, "structuredPatch": []}),
        assistant("m2", text("Created."), 3),
        {"type": "file-history-snapshot", "messageId": "p2", "isSnapshotUpdate": False,
         "snapshot": {"messageId": "p2", "timestamp": "2026-03-01T10:00:10.000Z", "trackedFileBackups": {
             "app.py": {"backupFileName": "abc@v1", "version": 1, "backupTime": "2026-03-01T10:00:10.000Z"}}}},
        prompt("return 2 instead", 10, uuid="p2"),
        assistant("m3", tool_use("t2", "Edit", file_path="/home/dev/projects/demo/app.py",
                                 old_string="return 1", new_string="return 2"), 11),
        result("t2", "ok", t=12, tur={"filePath": "/home/dev/projects/demo/app.py", "oldString": "return 1",
                                       "newString": "return 2", "originalFile": old, "replaceAll": False,
                                       "structuredPatch": [{"oldStart": 1, "oldLines": 2, "newStart": 1,
                                                            "newLines": 2, "lines": [" def f():", "-    return 1",
                                                                                     "+    return 2"]}]}),
        assistant("m4", text("Done."), 13),
    ]
    claude = claude_dir_with(tmp / "claude", records)
    backup = claude / "file-history" / records[1]["sessionId"] / "abc@v1"
    backup.parent.mkdir(parents=True)
    backup.write_text(old)
    return claude, old


def test_file_history_with_backups(tmp_path: Path) -> None:
    claude, old = _edit_session(tmp_path)
    cat = Catalog(tmp_path / "catalog.db")
    Scanner(cat, claude).scan()
    hist = file_history(cat, "app.py", claude)
    assert [(h["operation"], h["turn_index"], h["lines_added"], h["lines_removed"]) for h in hist] == [
        ("create", 1, 2, 0), ("edit", 2, 1, 1)]
    assert hist[0]["diff"] == "+def f():\n+    return 1" and hist[0]["after_hash"] == content_hash(old)
    edit = hist[1]
    assert edit["before_hash"] == content_hash(old) == edit["backup"]["content_hash"]
    assert edit["backup"]["available"] and edit["backup"]["version"] == 1
    assert edit["after_hash"] == content_hash(old.replace("return 1", "return 2"))
    assert file_history(cat, "/home/dev/projects/demo/app.py", claude) == hist
    assert file_history(cat, "pp.py", claude) == []  # a suffix matches whole path parts only


def test_actions_and_errors_match_generator_truth(tmp_path_factory: pytest.TempPathFactory) -> None:
    out = tmp_path_factory.mktemp("tl-gen") / "claude"
    subprocess.run([sys.executable, str(GEN_CORPUS), "--out", str(out), "--sessions", "25", "--seed", "5"], check=True,
                   capture_output=True)
    truth = json.loads((out / "truth.json").read_text())
    cat = Catalog(out.parent / "catalog.db")
    Scanner(cat, out).scan()
    for s in truth["sessions"]:
        if not s["turns"]:
            continue
        ev = timeline(cat, TimelineQuery(session_id=s["session_id"], types=["action", "error", "intent"]))
        want = [(t["index"], i["tool_use_id"]) for t in s["turns"] for i in t["invocations"]]
        assert [(e["turn_index"], e["tool_use_id"]) for e in ev if e["type"] == "action"] == want
        want_err = [i["tool_use_id"] for t in s["turns"] for i in t["invocations"] if i["is_error"]]
        assert [e["tool_use_id"] for e in ev if e["type"] == "error"] == want_err
        # the generator writes a prompt as Claude Code does; jacked shows it as typed (issue 37)
        assert [e["prompt"] for e in ev if e["type"] == "intent"] == [as_typed(t["prompt"]) for t in s["turns"]
                                                                       if t["index"] >= 1]


def test_cli(tmp_path: Path) -> None:
    claude, _ = _edit_session(tmp_path)
    exe = Path(sys.executable).parent / "jacked"
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude), JACKED_HOME=str(tmp_path / "home"))
    p = subprocess.run([str(exe), "timeline", "11111111", "--json", "--type", "file"], capture_output=True,
                       text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert [e["operation"] for e in json.loads(p.stdout)] == ["create", "edit"]
    p = subprocess.run([str(exe), "file-history", "app.py", "--json"], capture_output=True, text=True, env=env)
    hist = json.loads(p.stdout)
    assert {"session_id", "turn_index", "timestamp", "operation", "lines_added", "lines_removed", "diff"} <= set(hist[0])
    p = subprocess.run([str(exe), "timeline", "11111111"], capture_output=True, text=True, env=env)
    assert p.returncode == 0 and "edit /home/dev/projects/demo/app.py +1/-1" in p.stdout


def test_sessions_that_overlap_in_time_interleave_and_each_keeps_its_order(tmp_path: Path) -> None:
    other = "99999999-2222-4333-8444-555555555555"
    claude = claude_dir_with(tmp_path / "claude", [prompt("a first", 0), assistant("a1", text("ok"), 1),
                                                   prompt("a second", 20), assistant("a2", text("ok"), 21),
                                                   prompt("a third", 40), assistant("a3", text("ok"), 41)])
    claude_dir_with(claude, [prompt("b first", 10, sessionId=other), assistant("b1", text("ok"), 11, sessionId=other),
                             prompt("b second", 30, sessionId=other), assistant("b2", text("ok"), 31, sessionId=other)],
                    sid=other)
    cat = Catalog(tmp_path / "catalog.db")
    Scanner(cat, claude).scan()
    got = [e["prompt"] for e in timeline(cat, TimelineQuery(types=["intent"]))]
    assert got == ["a first", "b first", "a second", "b second", "a third"]
    assert [e["prompt"] for e in timeline(cat, TimelineQuery(types=["intent"], offset=1, limit=3))] == got[1:4]


def test_a_page_across_sessions_reads_only_the_sessions_it_shows(real: Catalog,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import jacked.query.timeline as timeline_module

    read: list[str] = []
    session_events = timeline_module.session_events

    def counted(catalog: Catalog, sid: str, *args: Any) -> list[dict[str, Any]]:
        read.append(sid)
        return session_events(catalog, sid, *args)

    monkeypatch.setattr(timeline_module, "session_events", counted)
    everything = timeline(real, TimelineQuery())
    listed = real.db.execute("SELECT COUNT(*) FROM sessions WHERE has_main = 1").fetchone()[0]
    assert len(read) == len(set(read)) == listed  # the whole timeline reads each session once
    stamps = [e["timestamp"] for e in everything]
    assert None not in stamps and stamps == sorted(stamps)
    for sid in set(read):  # each session's events in its own order
        assert [e for e in everything if e["session_id"] == sid] == session_events(real, sid, set(EVENT_TYPES))
    pages: list[dict[str, Any]] = []
    for offset in range(0, len(everything), 97):
        pages += timeline(real, TimelineQuery(offset=offset, limit=97))
    assert pages == everything
    read.clear()
    first = timeline(real, TimelineQuery(limit=5))
    assert first == everything[:5]
    assert len(read) < listed / 4, read  # the oldest sessions, not all of them


def test_the_mcp_timeline_across_sessions_pages_without_counting(tmp_path: Path) -> None:
    from jacked.config import load_settings
    from jacked.surfaces.mcp import JackedService

    svc = JackedService(load_settings(REAL, jacked_home=str(tmp_path / "home"), user_name="tester"))
    whole = list(svc.jacked.timeline(TimelineQuery(types=["intent", "error"])))
    got: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        page = json.loads(svc.timeline(None, ["intent", "error"], offset=offset, limit=40))
        assert page["total"] is None and page["offset"] == offset and page["items"]
        got += page["items"]
        offset = page["next_offset"]
    assert [(e["session_id"], e["type"], e["turn_index"]) for e in got] == [
        (e["session_id"], e["type"], e["turn_index"]) for e in whole] and len(whole) > 80
    one = json.loads(svc.timeline(DEEP, ["intent"], limit=5))
    assert one["total"] == 9 and one["next_offset"] == 5  # one session is counted


@pytest.mark.parametrize("items", [[], [{"a": 1, "b": [1, {"c": "two\nlines"}]}, None, "s", 3]])
def test_a_json_list_written_item_by_item_is_the_list_written_whole(items: list[Any],
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from jacked.surfaces.cli.common import print_json, print_json_list

    print_json(items)
    whole = capsys.readouterr().out
    print_json_list(iter(items))
    assert capsys.readouterr().out == whole and json.loads(whole) == items
