"""Cline, Roo Code and Kilo Code (one reader, three sources): task folders read against an
independent count and hand-checked details; editors and platforms, the scanner, `status` and
bad input."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from jacked.catalog import Catalog
from jacked.ingest.agents import source_status
from jacked.ingest.scan import Scanner
from jacked.query.history import turns_json
from jacked.sources.cline import source as cline_source
from jacked.sources.cline.source import CLINE, KILO, ROO, ClineFamilySource, editor_config_dir
from jacked.sources.cline.turns import edit_counts
from jacked.sources.model import Session
from jacked.sources.registry import SOURCES
from kit import agent_module, assert_agrees_with_count, file_snapshot, suite_mode

HERE = Path(__file__).parent
CONFIG = HERE / "fixtures" / "cline" / "hand" / "config"
STORAGE = CONFIG / "Code" / "User" / "globalStorage"
HEALTH, BROKEN, OLD, HALF, CURSOR = "1760000000000", "1760000100000", "1720000000000", "1760000900000", "1760000500000"
ROO_TASK = "0d1f2c3b-4a5e-4f60-8a7b-9c8d7e6f5a4b"


counter = agent_module("count_cline")


def _read_all(source: ClineFamilySource, root: Path) -> dict[str, Session]:
    errors: list[str] = []
    out = {f.session_id: source.read(f) for f in source.discover(root, errors)}
    assert errors == []
    return out


@pytest.fixture(scope="module")
def cline() -> dict[str, Session]:
    return _read_all(CLINE, STORAGE / CLINE.extension_id)


@pytest.mark.parametrize("source", [CLINE, ROO, KILO], ids=lambda s: s.name)
def test_counts_match_the_independent_count(source: ClineFamilySource) -> None:
    expected = counter.count(CONFIG, source.extension_id)
    assert_agrees_with_count(_read_all(source, STORAGE / source.extension_id), expected["by_session"])
    summary = {k: expected[k] for k in ("sessions", "turns", "tool_calls", "errors", "rejected", "interrupted")}
    assert summary == {"cline": {"sessions": 5, "turns": 7, "tool_calls": 8, "errors": 3, "rejected": 1, "interrupted": 1},
                       "roo": {"sessions": 1, "turns": 2, "tool_calls": 4, "errors": 1, "rejected": 0, "interrupted": 0},
                       "kilo": {"sessions": 1, "turns": 1, "tool_calls": 1, "errors": 0, "rejected": 0,
                                "interrupted": 0}}[source.name]


def test_approvals_refusal_question_and_command(cline: dict[str, Session]) -> None:
    s = cline[HEALTH]
    assert (s.cwd, s.repo_name, s.version_first, s.models) == ("/home/dev/api", "api", "3.32.0", ["claude-sonnet-4-5"])
    assert [t.prompt for t in s.turns] == ["Add a /health endpoint to server.js", "Use express.Router instead", "Yes"]
    t1, t2, t3 = s.turns
    read, refused = t1.invocations
    assert read.tool_name == "read_file" and read.file_path == "server.js" and not read.is_error
    assert refused.tool_name == "replace_in_file" and refused.is_error and refused.result_brief.startswith("The user denied")
    assert [(e.type, e.data) for e in t1.events] == [
        ("feedback", {"kind": "tool_rejected", "tool_name": "replace_in_file", "tool_use_id": refused.tool_use_id,
                      "target": "server.js", "reason": None})]
    assert t1.assistant_text == "I'll read server.js first."  # the partial "Adding the route." is left out
    # 1200 + 1500 + 1700 in, 150 + 90 + 120 out, cache reads 800 + 1500, writes 800
    assert (t1.metrics.input_tokens, t1.metrics.output_tokens, t1.metrics.cache_read_tokens) == (4400, 360, 2300)
    edit, command = t2.invocations
    assert (edit.lines_added, edit.lines_removed, edit.is_error) == (3, 0, False) and edit.sequence == 0
    assert command.command == "npm test" and "# pass 3" in command.result_brief and command.sequence == 1
    (decision,) = [e for e in t2.events if e.type == "decision"]
    assert decision.data == {"kind": "question", "question": "Should /health also report the git sha?",
                             "options": ["Yes", "No"], "answer": "Yes"}
    assert [e.data["level"] for e in t3.events] == ["error"]
    assert t3.assistant_text.startswith("Added /health (with the git sha)")
    assert s.started_at == "2025-10-09T08:53:20.000Z" and s.ended_at == "2025-10-09T08:53:40.000Z"


def test_failures_mcp_and_cancelled_request(cline: dict[str, Session]) -> None:
    s = cline[BROKEN]
    assert s.models == ["qwen/qwen3-coder"]  # from the request's modelInfo (no task_metadata.json)
    (turn,) = s.turns
    write, edit, command, mcp = turn.invocations
    assert write.tool_name == "write_to_file" and write.file_created and write.lines_added == 3
    assert (write.parallel_group, edit.parallel_group) == (1, 2)  # one request's calls: a batch
    assert edit.is_error and (edit.lines_added, edit.lines_removed) == (1, 1)
    assert command.command == "npx eslint ." and command.is_error
    assert mcp.tool_name == "mcp__github__search_issues" and mcp.result_brief.startswith("2 issues") and not mcp.is_error
    assert turn.interrupted and ("feedback", {"kind": "interrupted", "tool_name": None, "tool_use_id": None}) in [(e.type, e.data) for e in turn.events]


def test_older_name_half_written_file_and_other_editors(cline: dict[str, Session]) -> None:
    old = cline[OLD]
    assert old.cwd == "/home/dev/old" and [t.prompt for t in old.turns] == ["List the TODOs"]  # cwd from the API history
    half = cline[HALF]
    assert half.lines_malformed == 1 and [t.prompt for t in half.turns] == ["Bump the version"]
    assert cline[CURSOR].turns[0].prompt == "Rename the server port variable"  # Cursor's storage, beside VS Code's
    assert "1760000950000" not in cline  # a folder with no chat


def test_roo_and_kilo_tool_names() -> None:
    (roo,) = _read_all(ROO, STORAGE / ROO.extension_id).values()
    assert roo.cwd == "/home/dev/site" and roo.session_id == ROO_TASK
    search, diff, new_task = roo.turns[0].invocations
    assert (search.tool_name, diff.tool_name, new_task.tool_name) == ("codebase_search", "apply_diff", "new_task")
    assert (diff.lines_added, diff.lines_removed) == (1, 1)  # the `:start_line:` header is not a line of the file
    assert roo.turns[0].prompt == "Make the header sticky"  # Roo Code opens a task with `say: "text"`
    assert new_task.result_brief == "The header stays on top on mobile too."  # its `subtask_result`
    (decision,) = roo.turns[0].events
    assert decision.data["options"] == ["Yes, the footer too", "No"] and decision.data["answer"] == "No"
    second = roo.turns[1]
    assert second.compacted and any(t.text == "The header was made sticky in style.css." for t in roo.texts)
    assert second.invocations[0].is_error  # refused by .rooignore
    (kilo,) = _read_all(KILO, STORAGE / KILO.extension_id).values()
    assert kilo.cwd == "/home/dev/cli" and kilo.turns[0].invocations[0].command == "go vet ./..."


def test_edit_counts_of_both_diff_forms() -> None:
    assert edit_counts("------- SEARCH\na\nb\n=======\na\nc\nd\n+++++++ REPLACE") == (2, 1)
    assert edit_counts("<<<<<<< SEARCH\n:start_line:3\n:end_line:3\n-------\nx\n=======\ny\n>>>>>>> REPLACE") == (1, 1)
    assert edit_counts("--- a\n+++ b\n@@ -1 +1,2 @@\n-x\n+y\n+z") == (2, 1)


def test_roots_by_platform_editor_and_variable(tmp_path: Path) -> None:
    assert {SOURCES[n].label for n in ("cline", "roo", "kilo")} == {"Cline", "Roo Code", "Kilo Code"}
    env = {"HOME": str(tmp_path)}
    assert editor_config_dir(env, "linux") == tmp_path / ".config"
    assert editor_config_dir({**env, "XDG_CONFIG_HOME": "/x"}, "linux") == Path("/x")
    assert editor_config_dir(env, "darwin") == tmp_path / "Library" / "Application Support"
    assert editor_config_dir({**env, "APPDATA": "C:/Users/u/AppData/Roaming"}, "win32") == Path("C:/Users/u/AppData/Roaming")
    assert CLINE.default_root({"JACKED_CLINE_DIR": "/d/cline", **env}) == Path("/d/cline")
    # nothing there: VS Code's place; then the first editor that has the extension's tasks
    code = tmp_path / ".config" / "Code" / "User" / "globalStorage" / ROO.extension_id
    assert ROO.default_root({**env, "XDG_CONFIG_HOME": str(tmp_path / ".config")}) == code
    cursor = tmp_path / ".config" / "Cursor" / "User" / "globalStorage" / ROO.extension_id
    (cursor / "tasks").mkdir(parents=True)
    assert ROO.default_root({**env, "XDG_CONFIG_HOME": str(tmp_path / ".config")}) == cursor
    (tmp_path / ".cline" / "data" / "tasks").mkdir(parents=True)  # Cline's CLI
    assert CLINE.default_root({**env, "XDG_CONFIG_HOME": str(tmp_path / ".config")}) == tmp_path / ".cline" / "data"
    (tmp_path / "cd" / "tasks").mkdir(parents=True)
    assert CLINE.default_root({**env, "XDG_CONFIG_HOME": str(tmp_path / ".config"),
                               "CLINE_DATA_DIR": str(tmp_path / "cd")}) == tmp_path / "cd"


def test_scan_is_incremental_never_writes_and_status(tmp_path: Path) -> None:
    config = tmp_path / "config"
    shutil.copytree(CONFIG, config)
    before = file_snapshot(config)
    root = config / "Code" / "User" / "globalStorage" / CLINE.extension_id
    roots = {"cline": root, "roo": config / "Code" / "User" / "globalStorage" / ROO.extension_id}
    claude = tmp_path / "claude"
    claude.mkdir()
    cat = Catalog(tmp_path / "catalog.db")
    first = Scanner(cat, claude, agents=roots).scan()
    assert first.errors == [] and first.sessions_scanned == 6
    rows = {r["session_id"]: r for r in cat.list_sessions()}
    assert rows[HEALTH]["agent"] == "cline" and rows[ROO_TASK]["agent"] == "roo" and rows[HEALTH]["repo_name"] == "api"
    assert len(turns_json(cat, HEALTH)["turns"]) == 3
    assert file_snapshot(config) == before  # bytes and times of the extensions' files unchanged
    again = Scanner(cat, claude, agents=roots).scan()
    assert (again.sessions_scanned, again.sessions_unchanged) == (0, 6)
    ui = root / "tasks" / HEALTH / "ui_messages.json"
    messages = json.loads(ui.read_text())
    messages.append({"ts": 1760000030000, "type": "say", "say": "user_feedback", "text": "Now add a test for /health"})
    ui.write_text(json.dumps(messages))  # the extension rewrites the whole file
    grown = Scanner(cat, claude, agents=roots).scan()
    assert (grown.sessions_scanned, grown.sessions_unchanged) == (1, 5)
    assert turns_json(cat, HEALTH)["turns"][-1]["prompt"] == "Now add a test for /health"
    listed = {s["name"]: s for s in source_status(cat, claude, environ={"JACKED_CLINE_DIR": str(root)})}
    assert listed["cline"] == {"name": "cline", "label": "Cline", "root": str(root), "found": True, "enabled": True,
                               "sessions": 5}


def test_a_huge_or_unreadable_task_is_skipped_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    storage = tmp_path / "cline"
    shutil.copytree(STORAGE / CLINE.extension_id, storage)
    (storage / "tasks" / "big").mkdir()
    (storage / "tasks" / "big" / "ui_messages.json").write_text(json.dumps([{"type": "say", "say": "text",
                                                                             "text": "x" * 200_000}]))
    (storage / "tasks" / "odd").mkdir()
    (storage / "tasks" / "odd" / "ui_messages.json").write_text('{"not": "a list"}')
    monkeypatch.setattr(cline_source, "MAX_FILE_BYTES", 100_000)
    claude = tmp_path / "claude"
    claude.mkdir()
    cat = Catalog(tmp_path / "catalog.db")
    report = Scanner(cat, claude, agents={"cline": storage}).scan()
    assert len(report.errors) == 2 and "big" in report.errors[0] and "odd" in report.errors[1]
    assert report.agents["cline"]["skipped"] == 1 and report.sessions_scanned == 4  # the others read


def test_writer_round_trip(tmp_path: Path) -> None:
    from tests.test_source_qwen import SPEC  # the neutral spec the agents' writers share

    writer = agent_module("write_cline")
    root = tmp_path / "storage"
    (path,) = writer.write_session(root, SPEC)
    (s,) = _read_all(CLINE, root).values()
    assert s.session_id == SPEC["session_id"] and s.cwd == SPEC["cwd"] and s.models == [SPEC["model"]]
    assert [t.prompt for t in s.turns] == [t["prompt"] for t in SPEC["turns"]]
    for turn, want in zip(s.turns, SPEC["turns"]):
        assert (len(turn.invocations), sum(i.is_error for i in turn.invocations)) == writer.expected_calls(want)
        assert (turn.metrics.input_tokens, turn.metrics.output_tokens) == (want["input_tokens"], want["output_tokens"])
        assert turn.assistant_text == want["assistant"]
    assert (s.turns[0].metrics.lines_added, s.turns[0].metrics.lines_removed) == (4, 0)
    counted = counter.count_messages(json.loads(path.read_text()))
    assert (counted["turns"], counted["tool_calls"], counted["errors"]) == (2, 4, 0)


def test_backfill_search_agent_filter_and_status_in_the_cli(tmp_path: Path) -> None:
    """`jacked backfill`, `search --agent roo` and `status --json` in subprocesses: exit 0, JSON out."""
    import os
    import subprocess

    config = tmp_path / "config"
    shutil.copytree(CONFIG, config)
    storage = config / "Code" / "User" / "globalStorage"
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKED_")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(config), JACKED_HOME=str(tmp_path / "home"),
               CLAUDE_CONFIG_DIR=str(tmp_path / "claude"), NO_COLOR="1", **suite_mode())
    (tmp_path / "claude").mkdir()
    jacked = [str(Path(sys.executable).parent / "jacked")]
    before = file_snapshot(config)
    done = subprocess.run([*jacked, "backfill", "--json"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    found = subprocess.run([*jacked, "search", "sticky header", "--agent", "roo", "--json"], env=env,
                           capture_output=True, text=True, timeout=300)
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["results"]
    assert results and {r["agent"] for r in results} == {"roo"} and results[0]["repo_name"] == "site"
    status = subprocess.run([*jacked, "status", "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert status.returncode == 0, status.stderr
    listed = {s["name"]: s for s in json.loads(status.stdout)["sources"]}
    assert {n: (listed[n]["root"], listed[n]["sessions"]) for n in ("cline", "roo", "kilo")} == {
        "cline": (str(storage / CLINE.extension_id), 5), "roo": (str(storage / ROO.extension_id), 1),
        "kilo": (str(storage / KILO.extension_id), 1)}
    assert file_snapshot(config) == before
