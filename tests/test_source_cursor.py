"""Cursor as a transcript source (`jacked.sources.cursor`): its SQLite state read against an
independent count of the same fixtures (`agents/count_cursor.py`), hand-checked details, chats
written by the spec writer read back, a scan into the catalog (incremental, never writing to
Cursor's files, also while Cursor holds the database locked), bad input and `status --json`."""
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
import count_cursor
import write_cursor

from jacked.catalog import Catalog
from kit import feedback_counts, file_snapshot
from jacked.ingest.agents import source_status
from jacked.ingest.scan import Scanner
from jacked.query.history import turns_json
from jacked.sources.cursor import db as cursor_db
from jacked.sources.cursor.source import CursorSource, default_user_dir
from jacked.sources.model import Session
from jacked.sources.registry import SOURCES

HAND = Path(__file__).parent / "fixtures" / "cursor" / "hand" / "User"
REAL = Path(__file__).parent / "fixtures" / "cursor" / "real" / "User"  # a real Cursor 0.4x workspace database
SOURCE = CursorSource()
A, B, C, F = ("aaaaaaaa-0000-4000-8000-00000000000a", "bbbbbbbb-0000-4000-8000-00000000000b",
              "cccccccc-0000-4000-8000-00000000000c", "ffffffff-0000-4000-8000-00000000000f")


def read_all(root: Path) -> tuple[dict[str, Session], list[str]]:
    errors: list[str] = []
    return {f.session_id: SOURCE.read(f) for f in SOURCE.discover(root, errors)}, errors


def figures(s: Session) -> dict[str, Any]:
    """jacked's reading in the independent count's terms."""
    invs = [i for t in s.turns for i in t.invocations]
    m = [t.metrics for t in s.turns]
    return {"turns": sum(t.index >= 1 for t in s.turns), "tool_calls": len(invs),
            "errors": sum(i.is_error for i in invs), "input_tokens": sum(x.input_tokens for x in m),
            "output_tokens": sum(x.output_tokens for x in m), "subagents": len(s.subagents),
            "subagent_tool_calls": sum(a.tool_call_count for a in s.subagents),
            "approved": sum(e.data["kind"] == "approval" for t in s.turns for e in t.events if e.type == "decision"),
            **dict(zip(("rejected", "interrupted"), feedback_counts(s)))}


def turn(s: Session, index: int):
    return next(t for t in s.turns if t.index == index)


@pytest.fixture(scope="module")
def real() -> dict[str, Session]:
    sessions, errors = read_all(REAL)
    assert errors == []
    return sessions


@pytest.fixture(scope="module")
def hand() -> dict[str, Session]:
    sessions, errors = read_all(HAND)
    assert len(errors) == 1 and "eeeeeeee" in errors[0] and "skipped" in errors[0]  # the row cut mid-write
    return sessions


SPECS = [
    {"session_id": "11111111-2222-4333-8444-555555555555", "cwd": "/work/billing", "started_at": "2026-02-01T09:00:00Z",
     "model": "gpt-5", "title": "Invoice rounding", "turns": [
         {"prompt": "Why are invoice totals off by a cent?", "at": "2026-02-01T09:00:00Z",
          "assistant": "Rounding happens per line; I changed it to round the total.", "input_tokens": 4000,
          "output_tokens": 200, "calls": [
              {"batch": 0, "kind": "read", "path": "/work/billing/invoice.py", "output": "def total(lines): ..."},
              {"batch": 0, "kind": "search", "path": "/work/billing", "command": "round(", "output": "invoice.py:8"},
              {"batch": 1, "kind": "edit", "path": "/work/billing/invoice.py", "old": "a\nb", "new": "a\nc\nd"},
              {"batch": 2, "kind": "shell", "command": "pytest -q", "output": "1 failed", "error": True,
               "exit_code": 1}]},
         {"prompt": "Write a changelog entry", "at": "2026-02-01T09:05:00Z", "assistant": "Added.",
          "input_tokens": 900, "output_tokens": 40, "calls": [
              {"batch": 0, "kind": "write", "path": "/work/billing/CHANGELOG.md", "content": "- fix rounding\n"},
              {"batch": 1, "kind": "read", "path": "/work/billing/missing.md", "output": "File not found",
               "error": True}]}]},
    {"session_id": "66666666-7777-4888-8999-000000000000", "cwd": "/work/web", "started_at": "2026-02-02T12:00:00Z",
     "model": "claude-4-sonnet", "title": None, "turns": [
         {"prompt": "Hello", "at": "2026-02-02T12:00:00Z", "assistant": "Hi! What shall we build?",
          "input_tokens": 10, "output_tokens": 8, "calls": []}]},
]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cursor") / "User"
    for spec in SPECS:
        write_cursor.write_session(root, spec)
    return root


# --------------------------------------------------------------------------- against the independent count
@pytest.mark.parametrize("which", ["real", "hand", "written"])
def test_reading_matches_the_independent_count(which: str, written: Path) -> None:
    root = {"real": REAL, "hand": HAND}.get(which, written)
    counted = count_cursor.count_dir(root)["sessions"]
    sessions, _ = read_all(root)
    assert sorted(sessions) == sorted(counted)
    for sid, s in sessions.items():
        assert figures(s) == counted[sid], sid
        assert s.message_lines > 0 and s.agent == "cursor"


def test_independent_totals_are_the_hand_checked_ones(written: Path) -> None:
    # real: 26 composers with 41 prompts and 5 chat tabs with 22 (SQLite's json_each over the rows)
    assert count_cursor.count_dir(REAL)["totals"] == {
        "turns": 63, "tool_calls": 0, "errors": 0, "input_tokens": 0, "output_tokens": 0, "subagents": 0,
        "approved": 0, "rejected": 0, "interrupted": 0, "sessions": 31}
    assert count_cursor.count_dir(HAND)["totals"] == {
        "turns": 7, "tool_calls": 7, "errors": 2, "input_tokens": 7500, "output_tokens": 430, "subagents": 1,
        "approved": 1, "rejected": 1, "interrupted": 1, "sessions": 4}
    # what the specs say: 3 turns, 6 calls of which 2 failed, their tokens
    assert count_cursor.count_dir(written)["totals"] == {
        "turns": 3, "tool_calls": 6, "errors": 2, "input_tokens": 4910, "output_tokens": 248, "subagents": 0,
        "approved": 0, "rejected": 0, "interrupted": 0, "sessions": 2}


# --------------------------------------------------------------------------- hand-checked details
def test_composer_chat_prompts_repo_and_title(hand: dict[str, Session]) -> None:
    s = hand[A]
    assert [t.prompt for t in s.turns] == ["Add input validation to the signup handler",
                                           "Now run the migrations and have a subagent review the change",
                                           "Fix the empty body case"]  # the image-only bubble is no prompt
    assert (s.title, s.cwd, s.repo_name, s.git_branch, s.models) == (
        "Signup validation", "/work/shop-api", "shop-api", "feature/validation", ["claude-4-sonnet"])
    assert (s.started_at, s.ended_at) == ("2026-01-01T09:59:59.000Z", "2026-01-01T10:02:05.000Z")
    assert len(s.project_dir) == 32  # the workspace's folder under workspaceStorage
    # a bubble that is not JSON; a bubble of an unknown type; the composer, 16 bubble rows and the subagent's 4
    assert (s.lines_malformed, s.lines_unknown, s.lines) == (1, 1, 21)


def test_parallel_batch_edit_and_failed_command(hand: dict[str, Session]) -> None:
    t1 = turn(hand[A], 1)
    assert [(i.tool_name, i.sequence, i.parallel_group) for i in t1.invocations] == [
        ("read_file_v2", 0, 1), ("ripgrep_raw_search", 0, 2), ("edit_file_v2", 1, 0),
        ("run_terminal_command_v2", 2, 0)]  # read + search: one model call
    read, _, edit, test = t1.invocations
    assert read.file_path == "/work/shop-api/app/signup.py" and t1.metrics.files_read == [read.file_path]
    assert (edit.lines_added, edit.lines_removed) == (4, 1) and "+        raise BadRequest('email')" in edit.diff
    assert t1.metrics.files_modified == ["/work/shop-api/app/signup.py"]
    assert (test.command, test.is_error) == ("pytest -q tests/test_signup.py", True)  # exit code 1
    assert "AssertionError: 400 != 422" in test.result_brief
    assert (t1.metrics.bash_commands, t1.metrics.bash_error_count) == (["pytest -q tests/test_signup.py"], 1)
    assert (t1.metrics.api_calls, t1.metrics.input_tokens, t1.metrics.output_tokens) == (2, 6600, 390)
    assert t1.assistant_text.startswith("Validation is in place")


def test_decisions_rejection_and_interruption(hand: dict[str, Session]) -> None:
    s = hand[A]
    assert [(e.type, e.data["kind"], e.data["outcome"]) for e in turn(s, 1).events] == [
        ("decision", "approval", "approved")]
    (rejected,) = turn(s, 2).events
    assert (rejected.type, rejected.data["kind"], rejected.data["target"]) == (
        "feedback", "tool_rejected", "rm -rf migrations && alembic init")
    assert turn(s, 2).invocations[0].is_error
    t3 = turn(s, 3)  # the chat was left aborted while an edit was running
    assert t3.interrupted and not turn(s, 2).interrupted
    assert [(e.type, e.data["kind"], e.data["tool_name"]) for e in t3.events] == [
        ("feedback", "interrupted", "edit_file_v2")]
    assert not t3.invocations[0].has_result


def test_subagent_chat_is_linked_to_its_task_call(hand: dict[str, Session]) -> None:
    s = hand[A]
    assert B not in hand  # a subagent's chat is no session of its own
    (sub,) = s.subagents
    assert (sub.agent_id, sub.tool_use_id, sub.turn_index, sub.agent_type, sub.layout) == (
        B, "toolu_a10", 2, "generalPurpose", "child_session")
    assert (sub.prompt, sub.summary_text, sub.tool_usage) == (
        "Review app/signup.py for missed cases", "An empty JSON body raises a TypeError.", {"read_file_v2": 1})
    assert turn(s, 2).invocations[1].agent_id == B
    assert sub.turns[0].invocations[0].file_path == "/work/shop-api/app/signup.py"  # the parent's folder


def test_older_generations_inline_composer_and_chat_pane(hand: dict[str, Session]) -> None:
    c = hand[C]  # bubbles kept in the composer's own row; its folder from the prompt's workspaceUris
    assert ([t.prompt for t in c.turns], c.cwd, c.title) == (["Explain this regex: ^\\d{3}-\\d{4}$"], "/home/me/notes",
                                                            None)
    assert c.turns[0].assistant_text.startswith("Three digits")
    tab = hand["tab-0001"]  # the chat pane before the composer
    assert [t.prompt for t in tab.turns] == ["How do I paginate a SQLAlchemy query?", "Show keyset pagination"]
    assert (tab.title, tab.cwd, tab.models) == ("Paginate a query", "/work/shop-api", ["gpt-4"])
    assert "tab-0002" not in hand  # a tab with no prompt
    assert hand[F].title == "Orphan subagent"  # a subagent chat whose parent is gone stands alone


def test_real_composer_chats_kept_in_the_workspace_list(real: dict[str, Session]) -> None:
    """Cursor 0.4x (2024-11) kept each composer chat whole in its workspace's `composer.composerData`."""
    s = real["a76419da-5045-4dcb-a1d4-307eab526a30"]
    assert s.title == "create settings page that enables to enter OpenAI API key,"
    assert s.started_at.startswith("2024-11-17T03:55:37")
    assert s.turns[0].prompt == "create settings page that enables to enter OpenAI API key, and switch from light to dark mode"
    assert s.turns[0].assistant_text.startswith("I'll help you create a settings page with OpenAI API key input")
    assert [t.prompt for t in s.turns][4] == "change menu name parameters to settings"
    opened = real["090e988a-b2e3-4fcc-84e0-62a9401ae6ea"]  # the composer's first chat, no name given
    assert len(opened.turns) == 1 and opened.title is None
    tab = real["33d81a85-badb-4f6e-99b9-96da6038cde9"]  # beside them, the chat pane's tabs
    assert (tab.title, tab.models) == ("Android SDK Not Found Error Fix", ["claude-3.5-sonnet"])
    assert tab.turns[0].prompt.startswith("Unable to find any devices: [fatal] native-run failed")


def test_a_composer_row_wins_over_its_entry_in_the_workspace_list(tmp_path: Path) -> None:
    """Both kept for one chat (an upgrade half done): the `composerData` row is read, once."""
    root = tmp_path / "User"
    shutil.copytree(HAND, root)
    ws_db = next((root / "workspaceStorage").glob("*/state.vscdb"))
    conn = sqlite3.connect(ws_db)
    listed = json.loads(conn.execute("SELECT value FROM ItemTable WHERE key = 'composer.composerData'").fetchone()[0])
    listed["allComposers"].append({"composerId": A, "conversation": [{"type": 1, "bubbleId": "x", "text": "stale"}]})
    listed["allComposers"].append({"composerId": "0.4x-only", "createdAt": 1731815737024,
                                   "conversation": [{"type": 1, "bubbleId": "y", "text": "Kept in the list only"}]})
    conn.execute("UPDATE ItemTable SET value = ? WHERE key = 'composer.composerData'", (json.dumps(listed),))
    conn.commit()
    conn.close()
    sessions, _ = read_all(root)
    assert sessions[A].turns[0].prompt == "Add input validation to the signup handler"
    assert [t.prompt for t in sessions["0.4x-only"].turns] == ["Kept in the list only"]
    assert sorted(sessions) == sorted(count_cursor.count_dir(root)["sessions"])


def test_written_chat_reads_back(written: Path) -> None:
    sessions, errors = read_all(written)
    assert errors == []
    s = sessions[SPECS[0]["session_id"]]
    assert (s.title, s.cwd, s.repo_name, s.models) == ("Invoice rounding", "/work/billing", "billing", ["gpt-5"])
    t1, t2 = s.turns
    assert [i.parallel_group for i in t1.invocations] == [1, 2, 0, 0]
    assert (t1.metrics.lines_added, t1.metrics.lines_removed) == (3, 2)
    assert t2.invocations[0].file_created and [i.is_error for i in t2.invocations] == [False, True]


# --------------------------------------------------------------------------- locations
def test_default_folders_per_platform() -> None:
    env = {"HOME": "/home/u"}
    assert default_user_dir(env, platform="linux") == Path("/home/u/.config/Cursor/User")
    assert default_user_dir({**env, "XDG_CONFIG_HOME": "/cfg"}, platform="linux") == Path("/cfg/Cursor/User")
    assert default_user_dir(env, platform="darwin") == Path("/home/u/Library/Application Support/Cursor/User")
    assert default_user_dir({**env, "APPDATA": "C:/Users/u/AppData/Roaming"}, platform="win32") == \
        Path("C:/Users/u/AppData/Roaming/Cursor/User")
    assert SOURCE.default_root({"JACKED_CURSOR_DIR": "/t/User", "HOME": "/home/u"}) == Path("/t/User")
    assert SOURCES["cursor"].label == "Cursor"


# --------------------------------------------------------------------------- scans: read-only, incremental
def _scan(tmp_path: Path, root: Path) -> tuple[Catalog, Any]:
    claude = tmp_path / "claude"
    claude.mkdir(exist_ok=True)
    cat = Catalog(tmp_path / "catalog.db")
    return cat, Scanner(cat, claude, agents={"cursor": root}).scan()


def test_scan_is_incremental_and_never_writes_to_cursor_files(tmp_path: Path) -> None:
    root = tmp_path / "User"
    shutil.copytree(HAND, root)
    before = file_snapshot(root)
    cat, first = _scan(tmp_path, root)
    assert first.sessions_scanned == 4 and len(first.errors) == 1
    assert {r["agent"] for r in cat.list_sessions()} == {"cursor"}
    assert [t["prompt"] for t in turns_json(cat, A)["turns"]][:1] == ["Add input validation to the signup handler"]
    assert file_snapshot(root) == before  # bytes and times unchanged, no journal or WAL left beside them
    again = Scanner(cat, tmp_path / "claude", agents={"cursor": root}).scan()
    assert (again.sessions_scanned, again.sessions_unchanged) == (0, 4)
    # Cursor adds a bubble to one chat: only that chat is read again
    write_cursor.put_rows(root / "globalStorage" / "state.vscdb", [
        ("cursorDiskKV", f"bubbleId:{C}:c03", {"type": 1, "bubbleId": "c03", "text": "And for 7 digits?"})])
    grown = Scanner(cat, tmp_path / "claude", agents={"cursor": root}).scan()
    assert (grown.sessions_scanned, grown.sessions_unchanged, grown.changed_session_ids) == (1, 3, [C])


def test_reads_while_cursor_holds_the_database_locked(tmp_path: Path) -> None:
    root = tmp_path / "User"
    shutil.copytree(HAND, root)
    db = root / "globalStorage" / "state.vscdb"
    holder = sqlite3.connect(db, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")  # Cursor in the middle of a write
    try:
        before = {p: p.read_bytes() for p in root.rglob("*.vscdb")}
        sessions, errors = read_all(root)
        assert sorted(sessions) == sorted(count_cursor.count_dir(HAND)["sessions"])
        assert figures(sessions[A]) == count_cursor.count_dir(HAND)["sessions"][A]
        assert {p: p.read_bytes() for p in before} == before
    finally:
        holder.rollback()
        holder.close()


def test_corrupt_database_and_huge_rows_are_counted_and_the_rest_read(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "User"
    shutil.copytree(HAND, root)
    ws = next((root / "workspaceStorage").iterdir())
    broken = root / "workspaceStorage" / "0badc0de"
    broken.mkdir()
    (broken / "state.vscdb").write_bytes(b"SQLite format 3\x00" + os.urandom(600))  # a torn copy
    sessions, errors = read_all(root)
    assert sorted(sessions) == [A, C, F, "tab-0001"]
    assert any("0badc0de" in e for e in errors)
    # a bubble too large to read is counted, its chat still read; a composer too large is skipped, reported
    big = "x" * 5000
    write_cursor.put_rows(root / "globalStorage" / "state.vscdb", [
        ("cursorDiskKV", f"bubbleId:{F}:f03", {"type": 2, "bubbleId": "f03", "text": big})])
    monkeypatch.setattr(cursor_db, "MAX_VALUE_BYTES", 4000)
    sessions, errors = read_all(root)
    assert sessions[F].lines_malformed == 1 and sessions[F].turns[0].assistant_text.startswith("There are two")
    assert not any(str(F) in e for e in errors)
    assert ws.is_dir()


def test_a_database_that_is_not_cursors_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "User" / "globalStorage"
    root.mkdir(parents=True)
    conn = sqlite3.connect(root / "state.vscdb")
    conn.execute("CREATE TABLE other (x)")
    conn.close()
    sessions, errors = read_all(tmp_path / "User")
    assert sessions == {} and len(errors) == 1 and "not a Cursor state database" in errors[0]


def test_records_of_any_shape_never_raise(tmp_path: Path) -> None:
    import random
    rng = random.Random(41)
    values: list[Any] = [None, 1, "x", [], {}, {"type": 1}, {"type": 2, "toolFormerData": "x"},
                         {"type": 2, "toolFormerData": {"name": 5, "rawArgs": "{", "result": "[1", "status": 3}},
                         {"type": 2, "tokenCount": {"inputTokens": "a"}}, {"type": 1, "text": 7},
                         {"type": 2, "createdAt": 10**20, "toolFormerData": {"name": "task_v2", "result": "{}"}}]
    root = tmp_path / "User"
    rows = []
    for n in range(30):
        cid = f"c{n}"
        headers = rng.choice([None, "x", [1, {"bubbleId": 3}], [{"bubbleId": f"b{n}"}]])
        rows.append(("cursorDiskKV", f"composerData:{cid}", {"composerId": cid, "fullConversationHeadersOnly": headers,
                                                              "subagentInfo": rng.choice([None, "x", {"parentComposerId": f"c{n - 1}"}]),
                                                              "conversation": rng.choice([None, values])}))
        rows.append(("cursorDiskKV", f"bubbleId:{cid}:b{n}", json.dumps(rng.choice(values))))
    write_cursor.put_rows(root / "globalStorage" / "state.vscdb", rows)
    sessions, _ = read_all(root)  # never raises
    counted = count_cursor.count_dir(root)["sessions"]
    assert sorted(sessions) == sorted(counted)


def test_status_lists_cursor_with_its_folder_and_sessions(tmp_path: Path) -> None:
    root = tmp_path / "User"
    shutil.copytree(HAND, root)
    cat, _ = _scan(tmp_path, root)
    listed = {s["name"]: s for s in source_status(cat, tmp_path / "claude", environ={"JACKED_CURSOR_DIR": str(root)})}
    assert listed["cursor"] == {"name": "cursor", "label": "Cursor", "root": str(root), "found": True,
                                "enabled": True, "sessions": 4}


def test_backfill_cli_and_agent_filter(tmp_path: Path) -> None:
    """`jacked backfill`, `search --agent cursor` and `status --json` in subprocesses."""
    import subprocess
    root = tmp_path / "User"
    shutil.copytree(HAND, root)
    env = {**os.environ, "JACKED_HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "JACKED_CURSOR_DIR": str(root), "HOME": str(tmp_path)}
    (tmp_path / "claude").mkdir()
    jacked = [str(Path(sys.executable).parent / "jacked")]
    before = file_snapshot(root)
    done = subprocess.run([*jacked, "backfill", "--json"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    found = subprocess.run([*jacked, "search", "signup email validation", "--agent", "cursor", "--json"], env=env,
                           capture_output=True, text=True, timeout=300)
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["results"]
    assert results and {r["agent"] for r in results} == {"cursor"} and results[0]["session_id"] == A
    status = subprocess.run([*jacked, "status", "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert status.returncode == 0, status.stderr
    cursor = next(s for s in json.loads(status.stdout)["sources"] if s["name"] == "cursor")
    assert (cursor["root"], cursor["found"], cursor["sessions"]) == (str(root), True, 4)
    assert file_snapshot(root) == before


def test_a_locked_database_is_waited_for_once(tmp_path: Path) -> None:
    root = tmp_path / "User"
    shutil.copytree(HAND, root)
    holder = sqlite3.connect(root / "globalStorage" / "state.vscdb")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        found = list(SOURCE.discover(root, []))
        composers = [f for f in found if "db" in f.extra]
        assert composers and all(f.extra["locked"] is True for f in composers)  # each chat read without waiting
    finally:
        holder.rollback()
        holder.close()


def test_workspace_uris_as_paths() -> None:
    from jacked.sources.paths import path_of_uri, resolve_path
    assert path_of_uri("file:///home/me/my%20app") == "/home/me/my app"
    assert path_of_uri("file:///c%3A/Users/me/app") == "c:/Users/me/app"
    assert path_of_uri("vscode-remote://ssh-remote%2Bbox/srv/app") == "/srv/app"
    assert (path_of_uri(""), path_of_uri(None), path_of_uri("/plain")) == (None, None, "/plain")
    assert resolve_path("src/a.py", "/w/app") == "/w/app/src/a.py"
    assert resolve_path("/abs/a.py", "/w/app") == "/abs/a.py" and resolve_path("a.py", None) == "a.py"
