"""Goose as a transcript source (`jacked.sources.goose`): its `sessions.db` and older `.jsonl`
sessions read against an independent count of the same fixtures (`agents/count_goose.py`),
hand-checked details, a scan into the catalog (incremental, never writing to Goose's files, also
while Goose holds the database locked), bad input and `status --json`."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "agents"))
import count_goose
import write_goose

from jacked.catalog import Catalog
from kit import feedback_counts, file_snapshot
from jacked.ingest.agents import source_status
from jacked.ingest.scan import Scanner
from jacked.query.history import turns_json
from jacked.sources.goose.source import GooseSource
from jacked.sources.model import Session

HAND = Path(__file__).parent / "fixtures" / "goose" / "hand"
REAL = Path(__file__).parent / "fixtures" / "goose" / "real"  # a real database, schema 5, one empty session
SOURCE = GooseSource()
AGENT, EMPTY, BROKEN, LEGACY, CUT = "20260101_1", "20260101_2", "20260101_3", "20250301_094500", "20250302_101500"
STOPPED = "20250303_080000"
SPECS = [
    {"session_id": "20260202_1", "cwd": "/work/billing", "started_at": "2026-02-02T09:00:00Z",
     "model": "gpt-5", "title": "Invoice totals", "turns": [
         {"prompt": "Why are invoice totals off by a cent?", "at": "2026-02-02T09:00:00Z",
          "assistant": "Rounding per line; now rounded once.", "input_tokens": 3000, "output_tokens": 120, "calls": [
              {"batch": 0, "kind": "read", "path": "/work/billing/invoice.py", "output": "def total(lines): ..."},
              {"batch": 0, "kind": "search", "command": "rg round", "output": "invoice.py:3"},
              {"batch": 1, "kind": "edit", "path": "/work/billing/invoice.py", "old": "a", "new": "b", "output": "ok"},
              {"batch": 2, "kind": "shell", "command": "pytest", "output": "1 failed", "error": True}]},
         {"prompt": "Run it again", "at": "2026-02-02T09:05:00Z", "assistant": "Green.",
          "input_tokens": 900, "output_tokens": 30, "calls": [
              {"batch": 0, "kind": "shell", "command": "pytest", "output": "3 passed"}]}]},
]


def read_all(root: Path) -> tuple[dict[str, Session], list[str]]:
    errors: list[str] = []
    out = {}
    for found in SOURCE.discover(root, errors):
        try:
            out[found.session_id] = SOURCE.read(found)
        except (OSError, ValueError) as e:
            errors.append(str(e))
    return out, errors


def figures(s: Session) -> dict[str, Any]:
    invs = [i for t in s.turns for i in t.invocations]
    m = [t.metrics for t in s.turns]
    rejected, interrupted = feedback_counts(s)
    return {"turns": sum(t.index >= 1 for t in s.turns), "tool_calls": len(invs),
            "errors": sum(i.is_error for i in invs), "input_tokens": sum(x.input_tokens for x in m),
            "output_tokens": sum(x.output_tokens for x in m),
            "approved": sum(e.data["kind"] == "approval" for t in s.turns for e in t.events if e.type == "decision"),
            "rejected": rejected, "interrupted": interrupted}


@pytest.fixture(scope="module")
def hand() -> dict[str, Session]:
    sessions, errors = read_all(HAND)
    assert errors == []
    return sessions


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("goose") / "data"
    for spec in SPECS:
        write_goose.write_session(root, spec)
        write_goose.write_session(root, spec | {"session_id": "20250505_120000"}, legacy=True)
    return root


@pytest.mark.parametrize("which", ["hand", "written"])
def test_reading_matches_the_independent_count(which: str, hand: dict[str, Session], written: Path) -> None:
    root = HAND if which == "hand" else written
    counted = count_goose.count_dir(root)["sessions"]
    sessions = hand if which == "hand" else read_all(root)[0]
    with_messages = {sid: s for sid, s in sessions.items() if s.message_lines}
    assert sorted(with_messages) == sorted(counted)
    for sid, s in with_messages.items():
        assert figures(s) == counted[sid], sid
        assert s.agent == "goose"


def test_independent_totals_are_the_hand_checked_ones(written: Path) -> None:
    assert count_goose.count_dir(HAND)["totals"] == {"turns": 7, "tool_calls": 10, "errors": 5, "input_tokens": 20700,
                                                     "output_tokens": 585, "approved": 1, "rejected": 1,
                                                     "interrupted": 1, "sessions": 5}
    # the spec twice (database and .jsonl): 2 turns, 5 calls of which 1 failed, 3900 / 150 tokens each
    assert count_goose.count_dir(written)["totals"] == {"turns": 4, "tool_calls": 10, "errors": 2,
                                                        "input_tokens": 7800, "output_tokens": 300, "approved": 0,
                                                        "rejected": 0, "interrupted": 0, "sessions": 2}


def test_prompts_batches_errors_and_rejection(hand: dict[str, Session]) -> None:
    s = hand[AGENT]
    assert [t.prompt for t in s.turns] == ["Discounts can push the cart total below zero; clamp them",
                                           "Clean the build output too", "No, just delete dist/"]
    assert (s.title, s.cwd, s.repo_name, s.models, s.started_at, s.ended_at) == (
        "Clamp cart discounts", "/work/shop-api", "shop-api", ["claude-sonnet-4-5"], "2026-01-01T10:00:00.000Z",
        "2026-01-01T10:01:35.000Z")
    t1 = s.turns[0]
    assert [(i.tool_name, i.sequence, i.parallel_group, i.is_error) for i in t1.invocations] == [
        ("view", 0, 1, False), ("shell", 0, 2, False), ("edit", 1, 0, False), ("shell", 2, 0, True)]
    assert t1.metrics.files_read == ["/work/shop-api/src/cart.py"] == t1.metrics.files_modified
    assert t1.metrics.bash_commands == ["rg -n discount src", "pytest -q tests/test_cart.py"]
    assert "src/cart.py:1:discount" in t1.invocations[1].result_brief  # the older result shape
    assert "expected 0, got -5" in t1.invocations[3].result_brief and t1.metrics.bash_error_count == 1
    assert t1.assistant_text == "Clamped; the failing test expected the old behaviour."
    t2 = s.turns[1]  # a prompt with an image part: its text counts
    (rejected,) = t2.events
    assert (rejected.type, rejected.data["kind"], rejected.data["target"]) == ("feedback", "tool_rejected",
                                                                                "git clean -fdx")
    assert t2.invocations[0].is_error and t2.started_at == "2026-01-01T10:01:00.000Z"
    t3 = s.turns[2]  # the model-only summary before it is no prompt; a frontend tool that failed
    assert [(i.tool_name, i.is_error, i.result_brief) for i in t3.invocations] == [
        ("rm_dist", True, "-32603: frontend closed")]
    # tokens are the session's: on its last turn
    assert [(t.metrics.input_tokens, t.metrics.output_tokens) for t in s.turns] == [(0, 0), (0, 0), (19500, 455)]


def test_legacy_jsonl_and_the_copy_goose_made(hand: dict[str, Session]) -> None:
    s = hand[LEGACY]
    assert (s.title, s.cwd, s.started_at) == ("Read the notes TODO", "/home/me/notes", "2025-03-07T10:00:00.000Z")
    ok, missing = s.turns[0].invocations
    assert (ok.file_path, ok.is_error, ok.result_brief, missing.is_error) == (
        "/home/me/notes/notes.md", False, "TODO: ship the docs", True)
    assert s.turns[0].metrics.input_tokens == 1200  # no accumulated totals in older metadata
    assert hand[AGENT].file.endswith("sessions.db")  # its leftover .jsonl is not read again


def test_bad_input_is_counted_and_the_rest_read(hand: dict[str, Session]) -> None:
    cut = hand[CUT]
    assert [t.prompt for t in cut.turns] == ["Why is the build slow?"] and cut.lines_malformed == 1
    broken = hand[BROKEN]  # a row whose JSON is cut
    assert (broken.lines_malformed, [t.assistant_text for t in broken.turns]) == (1, ["All clean."])
    assert hand[EMPTY].message_lines == 0


def test_a_real_database_of_schema_5_is_read() -> None:
    """Goose's own file, without the columns later releases added (`provider_name`, `model_config_json`):
    its one session, started and left without a message, is found and not listed."""
    db = sqlite3.connect(f"file:{REAL / 'sessions' / 'sessions.db'}?mode=ro", uri=True)
    try:
        assert db.execute("SELECT version FROM schema_version").fetchall() == [(5,)]
        assert "provider_name" not in {row[1] for row in db.execute("PRAGMA table_info(sessions)")}
    finally:
        db.close()
    sessions, errors = read_all(REAL)
    assert errors == [] and list(sessions) == ["20251202_1"]
    s = sessions["20251202_1"]
    assert (s.message_lines, s.turns, s.cwd, s.title) == (0, [], "/Users/jpresley/workspace/tmp/vsl", "CLI Session")
    assert count_goose.count_dir(REAL)["totals"]["sessions"] == 0


def test_written_sessions_read_back(written: Path) -> None:
    sessions, errors = read_all(written)
    assert errors == []
    for s in sessions.values():
        assert [t.prompt for t in s.turns] == ["Why are invoice totals off by a cent?", "Run it again"]
        assert [len({i.message_id for i in t.invocations}) for t in s.turns] == [3, 1]
    assert sessions["20260202_1"].models == ["gpt-5"]


def test_default_folders_per_platform(tmp_path: Path) -> None:
    from jacked.sources.goose.source import default_data_dir
    assert default_data_dir({"HOME": "/home/u"}, "linux") == Path("/home/u/.local/share/goose")
    assert default_data_dir({"HOME": "/home/u", "XDG_DATA_HOME": "/x"}, "linux") == Path("/x/goose")
    assert default_data_dir({"HOME": "/Users/u"}, "darwin") == Path("/Users/u/.local/share/goose")
    native = tmp_path / "Library" / "Application Support" / "Block" / "goose"
    native.mkdir(parents=True)
    assert default_data_dir({"HOME": str(tmp_path)}, "darwin") == native  # only it exists
    assert default_data_dir({"APPDATA": "C:/Users/u/AppData/Roaming"}, "win32") == Path(
        "C:/Users/u/AppData/Roaming/Block/goose/data")
    assert default_data_dir({"GOOSE_PATH_ROOT": "/opt/g", "HOME": "/home/u"}, "linux") == Path("/opt/g/data")
    assert default_data_dir({"GOOSE_PATH_ROOT": "rel", "HOME": "/home/u"}, "linux") == Path(
        "/home/u/.local/share/goose")  # goose ignores a relative root
    assert SOURCE.default_root({"JACKED_GOOSE_DIR": "/t/g", "HOME": "/home/u"}) == Path("/t/g")


def _scan(tmp_path: Path, root: Path) -> tuple[Catalog, Any]:
    claude = tmp_path / "claude"
    claude.mkdir(exist_ok=True)
    cat = Catalog(tmp_path / "catalog.db")
    return cat, Scanner(cat, claude, agents={"goose": root}).scan()


def test_confirmed_and_interrupted_calls(hand: dict[str, Session]) -> None:
    # a call Goose asked about and the user let run; one stopped with Ctrl-C (Goose's own answer)
    (turn,) = hand[STOPPED].turns
    assert [(i.command, i.is_error) for i in turn.invocations] == [("npm update", False), ("npm test", True)]
    assert [(e.type, e.data["kind"], e.data["tool_name"], e.data.get("target")) for e in turn.events] == [
        ("decision", "approval", "shell", "npm update"), ("feedback", "interrupted", "shell", None)]
    assert turn.interrupted


def test_scan_is_incremental_and_never_writes_to_goose_files(tmp_path: Path) -> None:
    root = tmp_path / "goose"
    shutil.copytree(HAND, root)
    before = file_snapshot(root)
    cat, first = _scan(tmp_path, root)
    assert first.sessions_scanned == 6 and first.errors == [] and first.lines_malformed == 2
    assert [t["prompt"] for t in turns_json(cat, AGENT)["turns"]][0].startswith("Discounts can push")
    assert file_snapshot(root) == before
    again = Scanner(cat, tmp_path / "claude", agents={"goose": root}).scan()
    assert (again.sessions_scanned, again.sessions_unchanged) == (0, 6)
    conn = write_goose.create_db(root / "sessions" / "sessions.db")  # Goose adds a message to one session
    conn.execute("INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json) "
                 "VALUES (?, 'user', ?, 1767262000, '{}')", (BROKEN, json.dumps([write_goose.text("And the docs?")])))
    conn.commit()
    conn.close()
    grown = Scanner(cat, tmp_path / "claude", agents={"goose": root}).scan()
    assert (grown.sessions_scanned, grown.changed_session_ids) == (1, [BROKEN])


def test_reads_while_goose_holds_the_database_locked(tmp_path: Path) -> None:
    root = tmp_path / "goose"
    shutil.copytree(HAND, root)
    db = root / "sessions" / "sessions.db"
    holder = sqlite3.connect(db, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")  # Goose in the middle of a write
    try:
        before = file_snapshot(root)
        found = [f for f in SOURCE.discover(root, []) if f.files[0].name == "sessions.db"]
        assert found and all(f.extra["immutable"] is True for f in found)  # read without waiting per session
        sessions, errors = read_all(root)
        assert errors == [] and figures(sessions[AGENT]) == count_goose.count_dir(HAND)["sessions"][AGENT]
        assert file_snapshot(root) == before
    finally:
        holder.rollback()
        holder.close()


def test_a_corrupt_database_is_reported_and_the_jsonl_read(tmp_path: Path) -> None:
    root = tmp_path / "goose"
    shutil.copytree(HAND, root)
    (root / "sessions" / "sessions.db").write_bytes(b"SQLite format 3\x00" + os.urandom(600))  # a torn copy
    sessions, errors = read_all(root)
    assert len(errors) == 1 and "sessions.db" in errors[0] and "skipped" in errors[0]
    assert sorted(sessions) == sorted([AGENT, LEGACY, CUT, STOPPED])  # the leftover .jsonl stands in for the db
    (root / "sessions" / "sessions.db").unlink()
    other = sqlite3.connect(root / "sessions" / "sessions.db")
    other.execute("CREATE TABLE notes (x)")
    other.close()
    _, errors = read_all(root)
    assert "not a Goose sessions database" in errors[0]


def test_messages_of_any_shape_never_raise(tmp_path: Path) -> None:
    import random
    rng = random.Random(41)
    shapes: list[Any] = [None, 1, "x", [], {}, {"role": "user", "content": 5}, {"role": "tool", "content": []},
                         {"role": "user", "content": [1, {"type": "text"}, {"type": "toolResponse", "id": 3}]},
                         {"role": "assistant", "content": [{"type": "toolRequest", "toolCall": "x"},
                                                           {"type": "toolRequest", "toolCall": {"status": "success",
                                                                                                "value": {"name": 4}}}]},
                         {"role": "user", "content": [{"type": "toolResponse", "id": "a",
                                                       "toolResult": {"status": "success", "value": 7}}]},
                         {"role": "assistant", "content": [write_goose.request("a", "x__y", {"path": 5})]},
                         {"role": "user", "content": [write_goose.text("go")], "metadata": "v"}]
    root = tmp_path / "goose"
    (root / "sessions").mkdir(parents=True)
    for n in range(20):
        lines = [rng.choice(shapes) for _ in range(rng.randint(0, 8))]
        (root / "sessions" / f"s{n}.jsonl").write_text("\n".join(json.dumps(x) for x in lines))
    sessions, errors = read_all(root)
    assert errors == []
    counted = count_goose.count_dir(root)["sessions"]
    assert sorted(k for k, s in sessions.items() if s.message_lines) == sorted(counted)
    for sid in counted:
        assert figures(sessions[sid]) == counted[sid], sid


def test_status_lists_goose_with_its_folder_and_sessions(tmp_path: Path) -> None:
    root = tmp_path / "goose"
    shutil.copytree(HAND, root)
    cat, _ = _scan(tmp_path, root)
    listed = {s["name"]: s for s in source_status(cat, tmp_path / "claude", environ={"JACKED_GOOSE_DIR": str(root)})}
    assert listed["goose"] == {"name": "goose", "label": "Goose", "root": str(root), "found": True,
                               "enabled": True, "sessions": 5}  # the empty session is kept, not counted
    assert len(listed) >= 14


def test_backfill_cli_and_agent_filter(tmp_path: Path) -> None:
    """`jacked backfill`, `search --agent goose` and `status --json` in subprocesses."""
    import subprocess
    root = tmp_path / "goose"
    shutil.copytree(HAND, root)
    env = {**os.environ, "JACKED_HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "JACKED_GOOSE_DIR": str(root), "HOME": str(tmp_path)}
    (tmp_path / "claude").mkdir()
    jacked = [str(Path(sys.executable).parent / "jacked")]
    before = file_snapshot(root)
    done = subprocess.run([*jacked, "backfill", "--json"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    found = subprocess.run([*jacked, "search", "clamp negative cart discount", "--agent", "goose", "--json"], env=env,
                           capture_output=True, text=True, timeout=300)
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["results"]
    assert results and {r["agent"] for r in results} == {"goose"} and results[0]["session_id"] == AGENT
    status = subprocess.run([*jacked, "status", "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert status.returncode == 0, status.stderr
    sources = json.loads(status.stdout)["sources"]
    goose = next(s for s in sources if s["name"] == "goose")
    assert (goose["root"], goose["found"], goose["sessions"]) == (str(root), True, 5) and len(sources) >= 14
    assert file_snapshot(root) == before


def test_install_for_goose_says_how_to_add_it_by_hand(tmp_path: Path) -> None:
    import subprocess
    config = tmp_path / ".config" / "goose" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("# my providers\nGOOSE_PROVIDER: anthropic\nextensions: {}\n")
    before = file_snapshot(tmp_path)
    env = {**os.environ, "JACKED_HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / ".config")}
    done = subprocess.run([str(Path(sys.executable).parent / "jacked"), "install", "--agent", "goose"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "goose configure" in done.stderr and "jacked mcp" in done.stderr and "Traceback" not in done.stderr
    assert file_snapshot(tmp_path) == before  # the user's YAML and its comments untouched, nothing else written


def test_a_huge_row_is_counted_and_the_rest_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from jacked.sources.goose import db as goose_db
    monkeypatch.setattr(goose_db, "MAX_ROW_BYTES", 400)  # the fixture's rows are 60-700 bytes
    sessions, errors = read_all(HAND)
    s = sessions[AGENT]
    assert errors == [] and 0 < s.lines_malformed < s.lines
    assert s.turns and s.turns[0].prompt == "Discounts can push the cart total below zero; clamp them"


def test_session_times_in_both_forms_goose_writes() -> None:
    from jacked.sources.goose.source import iso_timestamp
    # SQLite's CURRENT_TIMESTAMP / datetime('now'), and chrono's RFC 3339 (sqlx binds) with nanoseconds
    assert iso_timestamp("2025-10-01 12:00:00") == "2025-10-01T12:00:00.000Z"
    assert iso_timestamp("2025-10-01T14:00:00.123456789+02:00") == "2025-10-01T12:00:00.123Z"
    assert iso_timestamp("not a time") is None and iso_timestamp(None) is None
