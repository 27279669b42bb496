"""OpenHands as a transcript source (`jacked.sources.openhands`): its event streams read against an
independent count of the same fixtures (`agents/count_openhands.py`), real trajectories from
OpenHands' own repository, hand-checked details, a scan (incremental, never writing to the file
store), bad input and status."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "agents"))
import count_openhands

from jacked.catalog import Catalog
from kit import feedback_counts, file_snapshot
from jacked.ingest.agents import source_status
from jacked.ingest.scan import Scanner
from jacked.sources.model import Session
from jacked.sources.openhands.source import OpenHandsSource

FIXTURES = Path(__file__).parent / "fixtures" / "openhands"
REAL, HAND = FIXTURES / "real", FIXTURES / "hand"
SOURCE = OpenHandsSource()
MAIN, CACHED, CONFIRM = "a1b2c3d4e5f6", "f0e1d2c3", "c0ffee01"


def read_all(root: Path) -> dict[str, Session]:
    errors: list[str] = []
    out = {f.session_id: SOURCE.read(f) for f in SOURCE.discover(root, errors)}
    assert errors == []
    return out


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
    return read_all(HAND)


@pytest.fixture(scope="module")
def real() -> dict[str, Session]:
    return read_all(REAL)


@pytest.mark.parametrize("root", [REAL, HAND], ids=["real", "hand"])
def test_reading_matches_the_independent_count(root: Path) -> None:
    counted = count_openhands.count_dir(root)["sessions"]
    sessions = read_all(root)
    assert sorted(sessions) == sorted(counted)
    for sid, s in sessions.items():
        assert figures(s) == counted[sid], sid
        assert s.agent == "openhands" and s.message_lines > 0


def test_independent_totals_are_the_hand_checked_ones() -> None:
    assert count_openhands.count_dir(REAL)["totals"] == {
        "turns": 6, "tool_calls": 8, "errors": 0, "input_tokens": 42730, "output_tokens": 3704, "approved": 0,
        "rejected": 0, "interrupted": 0, "sessions": 4}
    assert count_openhands.count_dir(HAND)["totals"] == {
        "turns": 5, "tool_calls": 10, "errors": 4, "input_tokens": 48000, "output_tokens": 730, "approved": 1,
        "rejected": 2, "interrupted": 2, "sessions": 3}


def test_real_trajectories(real: dict[str, Session]) -> None:
    s = real["wrong_initial_state"]
    assert [t.prompt for t in s.turns] == ["Please rename game_2048.py to 2048.py"]
    assert [(i.tool_name, i.command or i.file_path) for i in s.turns[0].invocations] == [
        ("read", "/workspace"), ("execute_bash", "mv /workspace/game_2048.py /workspace/2048.py"), ("read", "/workspace")]
    assert s.models == ["claude-3-5-sonnet-20241022"] and s.started_at == "2025-01-27T23:16:50.239Z"
    assert s.turns[0].assistant_text.startswith("The file has been successfully renamed")
    created = real["basic"].turns[0].invocations[0]  # the editor's `create`: a file written
    assert (created.tool_name, created.file_created, created.lines_added) == ("write", True, 117)
    gui = real["basic_gui_mode"]
    assert [t.index for t in gui.turns] == [1]  # the environment starting up is no turn
    server = gui.turns[0].invocations[-1]  # still running when OpenHands stopped waiting: exit code -1
    assert (server.command, server.is_error) == ("cd /workspace/todo-app && python3 -m http.server 8000", False)
    chat = real["basic_interactions"]
    assert [t.prompt for t in chat.turns] == ["what's 1+1?", "No, I mean by Goldbach's conjecture!", "Finish please"]


def test_batch_errors_rejection_and_interruption(hand: dict[str, Session]) -> None:
    s = hand[MAIN]
    assert (s.title, s.repo_name, s.git_branch, s.cwd) == ("Git sha in /health", "api", "main", "/workspace/api")
    assert [t.index for t in s.turns] == [1, 2]  # the system prompt before it is no turn 0
    t1 = s.turns[0]
    assert [(i.tool_name, i.sequence, i.parallel_group, i.is_error) for i in t1.invocations] == [
        ("execute_bash", 0, 1, False), ("read", 0, 2, False), ("edit", 1, 0, False), ("execute_bash", 2, 0, True),
        ("execute_bash", 3, 0, True)]
    edit = t1.invocations[2]
    assert (edit.lines_added, edit.lines_removed) == (2, 1) and edit.before_hash and edit.after_hash
    assert "NameError" in t1.invocations[3].result_brief
    m = t1.metrics
    assert (m.api_calls, m.input_tokens, m.output_tokens, m.cache_read_tokens, m.cache_creation_tokens) == (
        4, 24100, 470, 4000, 300)
    assert [(e.type, e.data["kind"]) for e in t1.events] == [("feedback", "tool_rejected"), ("feedback", "interrupted")]
    assert t1.events[0].data["target"] == "rm -rf .git" and t1.interrupted


def test_confirmation_mode(hand: dict[str, Session]) -> None:
    # an action waiting for the user is one call with the one written once answered
    t1, t2 = hand[CONFIRM].turns
    assert [(i.command, i.is_error) for i in t1.invocations] == [("npm ci", False), ("git push --force", True)]
    assert [(e.type, e.data["kind"], e.data["target"]) for e in t1.events] == [
        ("decision", "approval", "npm ci"), ("feedback", "tool_rejected", "git push --force")]
    assert not t1.interrupted  # rejecting a call waits for the user; it stops nothing
    # paused, then stopped: one interruption, naming the call left running
    assert [(e.data["kind"], e.data["tool_name"]) for e in t2.events] == [("interrupted", "execute_bash")]


def test_compaction_delegate_and_finish(hand: dict[str, Session]) -> None:
    t2 = hand[MAIN].turns[1]
    assert t2.compacted and [x.turn_index for x in hand[MAIN].texts if x.kind == "compact_summary"] == [2]
    (delegate,) = t2.invocations
    assert (delegate.subagent_type, delegate.result_brief) == ("BrowsingAgent", "The docs page lists GET /health.")
    assert t2.assistant_text == "os is imported, the tests pass and the docs page lists /health."
    assert hand[MAIN].lines_malformed == 1  # an event file cut mid-write


def test_conversation_only_in_the_cache_pages(hand: dict[str, Session]) -> None:
    s = hand[CACHED]  # a signed-in user's conversation
    (call,) = s.turns[0].invocations
    assert (call.tool_name, call.is_error, s.project_dir) == ("read", True, "conversations")
    assert "00empty" not in hand



def test_scan_is_incremental_and_never_writes(tmp_path: Path) -> None:
    root = tmp_path / ".openhands"
    shutil.copytree(HAND, root)
    before = file_snapshot(root)
    claude = tmp_path / "claude"
    claude.mkdir()
    cat = Catalog(tmp_path / "catalog.db")
    first = Scanner(cat, claude, agents={"openhands": root}).scan()
    assert (first.sessions_scanned, first.errors) == (3, [])
    assert file_snapshot(root) == before
    again = Scanner(cat, claude, agents={"openhands": root}).scan()
    assert (again.sessions_scanned, again.sessions_unchanged) == (0, 3)
    (root / "sessions" / MAIN / "events" / "22.json").write_text(json.dumps(
        {"id": 22, "timestamp": "2026-01-01T10:05:00", "source": "user", "action": "message",
         "args": {"content": "Thanks!"}}))
    grown = Scanner(cat, claude, agents={"openhands": root}).scan()
    assert (grown.sessions_scanned, grown.changed_session_ids) == (1, [MAIN])
    listed = {s["name"]: s for s in source_status(cat, claude, environ={"JACKED_OPENHANDS_DIR": str(root)})}
    assert listed["openhands"] == {"name": "openhands", "label": "OpenHands", "root": str(root), "found": True,
                                   "enabled": True, "sessions": 3}


def test_conversations_never_pass_for_copies_of_each_other(tmp_path: Path) -> None:
    # Event ids restart at 0 in every conversation: a turn is not a copy of another
    # conversation's turn that has the same id (copies are left out of totals and the index).
    claude = tmp_path / "claude"
    claude.mkdir()
    cat = Catalog(tmp_path / "catalog.db")
    Scanner(cat, claude, agents={"openhands": REAL}).scan()
    counted = count_openhands.count_dir(REAL)["sessions"]
    for sid, want in counted.items():
        row = cat.get_session_row(sid)
        assert row is not None
        assert (row["tool_call_count"], row["output_tokens"]) == (want["tool_calls"], want["output_tokens"]), sid


def test_default_folder_and_overrides() -> None:
    assert SOURCE.default_root({"HOME": "/home/u"}) == Path("/home/u/.openhands")
    assert SOURCE.default_root({"FILE_STORE_PATH": "/srv/oh", "HOME": "/home/u"}) == Path("/srv/oh")
    assert SOURCE.default_root({"JACKED_OPENHANDS_DIR": "/t", "FILE_STORE_PATH": "/srv/oh"}) == Path("/t")


def test_events_of_any_shape_never_raise(tmp_path: Path) -> None:
    import random
    rng = random.Random(41)
    shapes: list[Any] = [None, [], "x", {}, {"action": 5}, {"observation": "run", "cause": "x"},
                         {"source": "agent", "action": "run", "args": "x", "tool_call_metadata": {"model_response": 3}},
                         {"source": "user", "action": "message", "args": {"content": 7}},
                         {"source": "agent", "action": "edit", "args": {"new_str": 3, "command": "create"}},
                         {"observation": "edit", "cause": 1, "extras": {"new_content": "a", "old_content": 5}},
                         {"source": "agent", "action": "run", "args": {"confirmation_state": "rejected"}}]
    folder = tmp_path / ".openhands" / "sessions" / "fuzz" / "events"
    folder.mkdir(parents=True)
    for n in range(40):
        event = rng.choice(shapes)
        if isinstance(event, dict):
            event = {**event, "id": n}
        (folder / f"{n}.json").write_text(json.dumps(event))
    sessions = read_all(tmp_path / ".openhands")
    assert figures(sessions["fuzz"]) == count_openhands.count_dir(tmp_path / ".openhands")["sessions"]["fuzz"]


def test_written_conversation_reads_back_as_the_spec_says(tmp_path: Path) -> None:
    import write_openhands
    spec = {"session_id": "5f0c-spec", "cwd": "/work/api", "started_at": "2026-03-01T08:00:00Z", "model": "gpt-5",
            "title": "Rate limits", "turns": [
                {"prompt": "Add a rate limit", "assistant": "Added a token bucket.", "input_tokens": 900,
                 "output_tokens": 70, "calls": [
                     {"batch": 0, "kind": "read", "path": "/work/api/app.py", "output": "app = Flask()"},
                     {"batch": 0, "kind": "search", "command": "limit", "output": ""},
                     {"batch": 1, "kind": "write", "path": "/work/api/limits.py", "content": "a\nb\n"},
                     {"batch": 2, "kind": "shell", "command": "pytest", "output": "1 failed", "error": True}]},
                {"prompt": "Thanks", "assistant": "You're welcome.", "input_tokens": 100, "output_tokens": 5,
                 "calls": [{"batch": 0, "kind": "read", "path": "/nope", "output": "File not found", "error": True}]}]}
    root = tmp_path / ".openhands"
    sid = write_openhands.write_session(root, spec)
    s = read_all(root)[sid]
    assert [t.prompt for t in s.turns] == ["Add a rate limit", "Thanks"] and s.title == "Rate limits"
    assert [(i.tool_name, i.parallel_group, i.is_error) for i in s.turns[0].invocations] == [
        ("read", 1, False), ("execute_bash", 2, False), ("write", 0, False), ("execute_bash", 0, True)]
    assert s.turns[0].metrics.files_written == ["/work/api/limits.py"] and s.turns[1].invocations[0].is_error
    assert figures(s) == count_openhands.count_dir(root)["sessions"][sid] == {
        "turns": 2, "tool_calls": 5, "errors": 2, "input_tokens": 1000, "output_tokens": 75, "approved": 0,
        "rejected": 0, "interrupted": 0}
