"""Continue as a transcript source (`jacked.sources.continue_dev`): its session files read against
an independent count of the same fixtures (`agents/count_continue.py`), hand-checked details, a
scan into the catalog (incremental, never writing to Continue's files), bad input and status."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "agents"))
import count_continue

from jacked.catalog import Catalog
from kit import feedback_counts, file_snapshot, read_each
from jacked.ingest.agents import source_status
from jacked.ingest.scan import Scanner
from jacked.query.history import turns_json
from jacked.sources.continue_dev.source import ContinueSource
from jacked.sources.model import Session

HAND = Path(__file__).parent / "fixtures" / "continue" / "hand"
REAL = Path(__file__).parent / "fixtures" / "continue" / "real"  # real sessions of December 2024
SOURCE = ContinueSource()
AGENT, OLDER, EMPTY, CUT = (f"0d7c1a52-{n}-4aaa-8bbb-00000000000{k}" for n, k in
                            (("1111", 1), ("2222", 2), ("3333", 3), ("4444", 4)))


def read_all(root: Path) -> tuple[dict[str, Session], list[str]]:
    return read_each(SOURCE, root)


def figures(s: Session) -> dict[str, Any]:
    invs = [i for t in s.turns for i in t.invocations]
    m = [t.metrics for t in s.turns]
    return {"turns": sum(t.index >= 1 for t in s.turns), "tool_calls": len(invs),
            "errors": sum(i.is_error for i in invs), "input_tokens": sum(x.input_tokens for x in m),
            "output_tokens": sum(x.output_tokens for x in m), "rejected": feedback_counts(s)[0]}


@pytest.fixture(scope="module")
def hand() -> dict[str, Session]:
    sessions, errors = read_all(HAND)
    assert len(errors) == 1 and CUT in errors[0] and "not JSON" in errors[0]  # cut mid-write
    return sessions


def test_reading_matches_the_independent_count(hand: dict[str, Session]) -> None:
    counted = count_continue.count_dir(HAND)
    with_messages = {sid: s for sid, s in hand.items() if s.message_lines}
    assert sorted(with_messages) == sorted(counted["sessions"]) and EMPTY in hand  # an empty session: not listed
    for sid, s in with_messages.items():
        assert figures(s) == counted["sessions"][sid], sid
    assert counted["totals"] == {"turns": 4, "tool_calls": 6, "errors": 2, "input_tokens": 19500,
                                 "output_tokens": 455, "rejected": 1, "sessions": 2}


def test_real_sessions_match_the_independent_count() -> None:
    counted = count_continue.count_dir(REAL)
    sessions, errors = read_all(REAL)
    assert errors == [] and sorted(sessions) == sorted(counted["sessions"])
    for sid, s in sessions.items():
        assert figures(s) == counted["sessions"][sid], sid
    assert counted["totals"] == {"turns": 6, "tool_calls": 0, "errors": 0, "input_tokens": 0, "output_tokens": 0,
                                 "rejected": 0, "sessions": 4}


def test_real_chat_sessions_of_december_2024() -> None:
    sessions, _ = read_all(REAL)
    s = sessions["67733f7c-959d-4521-b326-779efe1967e7"]  # a pasted install log, then "carry on" in Ukrainian
    assert (s.title, s.cwd, s.started_at, s.models) == (
        "Fixing SQL syntax error in", "/workspace", "2024-12-20T19:51:09.299Z", ["Mistral Large"])
    assert s.turns[0].prompt.startswith("install_pgai.sh \ncopying build/lib/ai/secrets.py")
    assert s.turns[1].prompt == "продовжи з місця де закінчив"
    assert s.turns[0].assistant_text.startswith("It appears that the installation script for `pgai`")
    e = sessions["e67044fc-0564-442d-b747-50127063ff40"]  # another folder, another model
    assert (e.title, e.cwd, e.models) == ("Вирішення помил", "/workspaces/EVOLUTION",
                                          ["Autodetect - llama-3.2-90b-vision-preview"])


def test_prompts_batches_errors_and_rejection(hand: dict[str, Session]) -> None:
    s = hand[AGENT]
    assert [t.prompt for t in s.turns] == ["Discounts can push the cart total below zero; clamp them",
                                           "Clean the build output too", "No, just delete dist/"]
    assert (s.title, s.cwd, s.repo_name, s.models, s.started_at) == (
        "Clamp cart discounts", "/work/shop-web", "shop-web", ["Claude 4 Sonnet"], "2026-01-01T10:00:00.000Z")
    t1 = s.turns[0]
    assert [(i.tool_name, i.sequence, i.parallel_group, i.is_error) for i in t1.invocations] == [
        ("read_file", 0, 1, False), ("grep_search", 0, 2, False), ("edit_existing_file", 1, 0, False),
        ("run_terminal_command", 2, 0, True)]  # read + grep: one response's calls
    assert t1.metrics.files_read == ["/work/shop-web/src/cart.ts"] == t1.metrics.files_modified
    assert "expected 0, got -5" in t1.invocations[3].result_brief and t1.metrics.bash_error_count == 1
    m = t1.metrics
    assert (m.api_calls, m.input_tokens, m.output_tokens, m.cache_read_tokens, m.cache_creation_tokens) == (
        4, 14600, 400, 2000, 600)
    t2 = s.turns[1]  # a prompt with an image part: its text counts
    (rejected,) = t2.events
    assert (rejected.type, rejected.data["kind"], rejected.data["target"]) == ("feedback", "tool_rejected",
                                                                                "git clean -fdx")
    assert t2.invocations[0].is_error
    (summary,) = [x for x in s.texts if x.kind == "compact_summary"]
    assert summary.turn_index == 3 and s.turns[2].compacted
    assert (s.lines, s.lines_malformed, s.lines_unknown) == (14, 1, 1)  # a non-item; an unknown role


def test_older_session_single_state_and_placeholder_title(hand: dict[str, Session]) -> None:
    s = hand[OLDER]
    assert s.title is None  # "New Session" is Continue's placeholder
    (call,) = s.turns[0].invocations  # a call only its (single) state holds
    assert (call.tool_name, call.file_path, call.has_result) == ("read_file", "/home/me/notes/todo.md", True)
    assert s.models == ["Claude 4 Sonnet", "GPT-4o"] and s.cwd == "/home/me/notes"



def test_scan_is_incremental_and_never_writes_to_continue_files(tmp_path: Path) -> None:
    root = tmp_path / ".continue"
    shutil.copytree(HAND, root)
    before = file_snapshot(root)
    claude = tmp_path / "claude"
    claude.mkdir()
    cat = Catalog(tmp_path / "catalog.db")
    first = Scanner(cat, claude, agents={"continue": root}).scan()
    assert first.sessions_scanned == 3 and len(first.errors) == 1 and CUT in first.errors[0]
    assert [t["prompt"] for t in turns_json(cat, AGENT)["turns"]][0].startswith("Discounts can push")
    assert file_snapshot(root) == before
    again = Scanner(cat, claude, agents={"continue": root}).scan()
    assert (again.sessions_scanned, again.sessions_unchanged) == (0, 3)
    path = root / "sessions" / f"{OLDER}.json"
    data = json.loads(path.read_text())
    data["history"].append({"message": {"role": "user", "content": "And the docs?"}, "contextItems": []})
    path.write_text(json.dumps(data, indent=2))
    grown = Scanner(cat, claude, agents={"continue": root}).scan()
    assert (grown.sessions_scanned, grown.changed_session_ids) == (1, [OLDER])
    listed = {s["name"]: s for s in source_status(cat, claude, environ={"CONTINUE_GLOBAL_DIR": str(root)})}
    assert listed["continue"] == {"name": "continue", "label": "Continue", "root": str(root), "found": True,
                                  "enabled": True, "sessions": 2}  # the empty session is kept, not counted


def test_default_folder_and_override() -> None:
    assert SOURCE.default_root({"HOME": "/home/u"}) == Path("/home/u/.continue")
    assert SOURCE.default_root({"USERPROFILE": "C:/Users/u"}) == Path("C:/Users/u/.continue")
    assert SOURCE.default_root({"CONTINUE_GLOBAL_DIR": "/t/c", "HOME": "/home/u"}) == Path("/t/c")


def test_items_of_any_shape_never_raise(tmp_path: Path) -> None:
    import random
    rng = random.Random(41)
    shapes: list[Any] = [None, 1, "x", [], {}, {"message": None}, {"message": {"role": "user", "content": 5}},
                         {"message": {"role": "assistant", "toolCalls": "x", "usage": {"promptTokens": "a"}}},
                         {"message": {"role": "assistant", "toolCalls": [None, {"function": {"name": 3}}]},
                          "toolCallStates": [{"toolCallId": 1}, {"toolCallId": "z", "toolCall": "q"}]},
                         {"message": {"role": "tool", "toolCallId": None}}, {"message": {"role": "user",
                                                                                          "content": [1, {"type": "text"}]}}]
    root = tmp_path / ".continue"
    (root / "sessions").mkdir(parents=True)
    for n in range(20):
        history = [rng.choice(shapes) for _ in range(rng.randint(0, 8))]
        (root / "sessions" / f"s{n}.json").write_text(json.dumps({"sessionId": f"s{n}", "history": history}))
    sessions, errors = read_all(root)
    assert errors == []
    counted = count_continue.count_dir(root)["sessions"]
    assert sorted(k for k, s in sessions.items() if s.message_lines) == sorted(counted)
    for sid in counted:
        assert figures(sessions[sid]) == counted[sid], sid


def test_written_sessions_read_back_as_the_spec_says(tmp_path: Path) -> None:
    import write_continue
    spec = {"session_id": "spec-1", "cwd": "/work/api", "started_at": "2026-03-01T08:00:00Z", "model": "gpt-5",
            "title": "Rate limits", "turns": [
                {"prompt": "Add a rate limit", "assistant": "Added a token bucket.", "input_tokens": 900,
                 "output_tokens": 70, "calls": [
                     {"batch": 0, "kind": "read", "path": "/work/api/app.py", "output": "app = Flask()"},
                     {"batch": 0, "kind": "search", "command": "limit", "output": ""},
                     {"batch": 1, "kind": "shell", "command": "pytest", "output": "1 failed", "error": True}]},
                {"prompt": "Thanks", "assistant": "You're welcome.", "input_tokens": 100, "output_tokens": 5,
                 "calls": []}]}
    root = tmp_path / ".continue"
    write_continue.write_session(root, spec)
    sessions, errors = read_all(root)
    assert errors == []
    s = sessions["spec-1"]
    assert [t.prompt for t in s.turns] == ["Add a rate limit", "Thanks"]
    assert [(i.tool_name, i.parallel_group, i.is_error) for i in s.turns[0].invocations] == [
        ("read_file", 1, False), ("grep_search", 2, False), ("run_terminal_command", 0, True)]
    assert (s.title, s.repo_name, s.started_at) == ("Rate limits", "api", "2026-03-01T08:00:00.000Z")
    assert figures(s) == count_continue.count_dir(root)["sessions"]["spec-1"]
