"""opencode as a transcript source (`jacked.sources.opencode`): its stores (SQLite, 1.x and 2.x
tables, and JSON files), checked against an independent count of the same fixtures
(`agents/count_opencode.py`), hand-checked details, a scan into the catalog, the spec writer read
back, and the MCP entry `jacked install --agent opencode` adds to opencode's configuration."""
from __future__ import annotations

import json
import random
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "agents"))
import count_opencode
import write_opencode
from kit import feedback_counts

from jacked.catalog import Catalog
from jacked.errors import JackedError
from jacked.ingest.scan import Scanner
from jacked.query.history import list_sessions, turns_json
from jacked.sources.model import Session
from jacked.sources.opencode.source import OpencodeSource
from jacked.sources.registry import SOURCES
from jacked.surfaces.agent_install import opencode as oc_install
from jacked.surfaces.agent_install.configfile import strip_jsonc

FIXTURES = Path(__file__).parent / "fixtures" / "opencode"
REAL, HAND, REAL2 = FIXTURES / "real", FIXTURES / "hand", FIXTURES / "real2"
SOURCE = OpencodeSource()


def read_all(root: Path) -> tuple[dict[str, Session], list[str]]:
    errors: list[str] = []
    return {f.session_id: SOURCE.read(f) for f in SOURCE.discover(root, errors)}, errors


def figures(s: Session) -> dict[str, Any]:
    """jacked's reading in the independent count's terms."""
    turns = [t for t in s.turns if t.index >= 1]
    invs = [i for t in s.turns for i in t.invocations]
    m = [t.metrics for t in s.turns]
    return {"turns": len(turns), "tool_calls": len(invs), "errors": sum(i.is_error for i in invs),
            "input_tokens": sum(x.input_tokens for x in m), "output_tokens": sum(x.output_tokens for x in m),
            "cache_read_tokens": sum(x.cache_read_tokens for x in m),
            "cache_creation_tokens": sum(x.cache_creation_tokens for x in m),
            **dict(zip(("rejected", "interrupted"), feedback_counts(s))),
            "subagents": len(s.subagents), "subagent_tool_calls": sum(a.tool_call_count for a in s.subagents)}


def turn(s: Session, index: int):
    return next(t for t in s.turns if t.index == index)


@pytest.fixture(scope="module")
def hand() -> dict[str, Session]:
    sessions, errors = read_all(HAND)
    assert errors == []
    return sessions


@pytest.fixture(scope="module")
def real() -> dict[str, Session]:
    return read_all(REAL)[0]


@pytest.fixture(scope="module")
def real2() -> dict[str, Session]:
    sessions, errors = read_all(REAL2)
    assert errors == []
    return sessions


# --------------------------------------------------------------------------- against the independent count
@pytest.mark.parametrize("root", [REAL, HAND, REAL2], ids=["real", "hand", "real2"])
def test_reading_matches_the_independent_count(root: Path) -> None:
    counted = count_opencode.count_dir(root)["sessions"]
    sessions, _ = read_all(root)
    assert sorted(sessions) == sorted(counted)
    for sid, s in sessions.items():
        assert figures(s) == counted[sid], sid
        assert s.message_lines > 0


def test_independent_totals_are_the_hand_checked_ones() -> None:
    assert count_opencode.count_dir(REAL)["totals"] == {
        "turns": 2, "tool_calls": 1, "errors": 0, "input_tokens": 9, "output_tokens": 123, "subagents": 0,
        "rejected": 0, "interrupted": 0, "sessions": 1}
    assert count_opencode.count_dir(HAND)["totals"] == {
        "turns": 10, "tool_calls": 20, "errors": 6, "input_tokens": 36320, "output_tokens": 1436, "subagents": 2,
        "rejected": 2, "interrupted": 1, "sessions": 4}
    assert count_opencode.count_dir(REAL2)["totals"] == {
        "turns": 9, "tool_calls": 43, "errors": 5, "input_tokens": 79621, "output_tokens": 13712, "subagents": 1,
        "rejected": 0, "interrupted": 0, "sessions": 5}
    # opencode's own running totals (`session_v2.tokens_*`) agree where no title call adds to them
    tools = count_opencode.count_dir(REAL2)["sessions"]["ses_f34a354dbffe8waMGOZgKvK6cK"]
    assert (tools["input_tokens"], tools["output_tokens"], tools["cache_read_tokens"]) == (16046, 6583, 86528)


# --------------------------------------------------------------------------- the real session (opencode 1.1.49)
def test_real_session(real: dict[str, Session]) -> None:
    s = real["ses_3ce42bdb9ffeEIUUu08AuKTJms"]
    assert (s.title, s.cwd, s.repo_name, s.version_first) == (
        "Hello from OpenCode", "/home/nathan/sandbox-agent/research/opencode-compat", "opencode-compat", "1.1.49")
    assert (s.started_at, s.models) == ("2026-02-06T06:56:52.806Z", ["claude-haiku-4-5"])
    t2 = turn(s, 2)
    assert t2.prompt.startswith("List the files in the current directory.")
    (call,) = t2.invocations
    assert (call.tool_name, call.command, call.tool_use_id, call.is_error) == (
        "bash", "ls -la", "toolu_017THj1iZNELroZgmFbqC6Ma", False)
    assert "capture-native.ts" in call.result_brief
    m = t2.metrics  # two responses, each counted once from its step-finish
    assert (m.api_calls, m.input_tokens, m.output_tokens, m.cache_read_tokens, m.cache_creation_tokens) == (
        2, 7, 116, 27125, 238)
    assert t2.assistant_text.startswith("Here are the top-level contents")


# --------------------------------------------------------------------------- hand-written: the JSON store
def test_prompt_skips_what_opencode_added(hand: dict[str, Session]) -> None:
    s = hand["ses_hand_main"]
    assert [t.prompt for t in s.turns] == [
        "Add a health check endpoint to server.py", "Ask a subagent to review the change",
        "Now document the endpoint in the README", "Review the README for typos"]
    assert s.first_prompt == "Add a health check endpoint to server.py"  # synthetic file parts are not typed
    assert turn(s, 1).prompt_uuid == "msg_m001"


def test_parallel_batch_edit_and_failed_shell(hand: dict[str, Session]) -> None:
    t1 = turn(hand["ses_hand_main"], 1)
    read, grep, edit, bash = t1.invocations
    assert [(i.tool_name, i.sequence, i.parallel_group) for i in t1.invocations] == [
        ("read", 0, 1), ("grep", 0, 2), ("edit", 1, 0), ("bash", 2, 0)]  # read+grep: one step
    assert read.file_path == "/work/demo-app/server.py" and t1.metrics.files_read == ["/work/demo-app/server.py"]
    assert (edit.lines_added, edit.lines_removed) == (6, 1)
    assert "+@app.route('/health')" in edit.diff and edit.before_hash and edit.after_hash
    assert t1.metrics.files_modified == ["/work/demo-app/server.py"]
    assert (bash.command, bash.is_error) == ("pytest -q", True)  # completed with exit 1
    assert (t1.metrics.bash_commands, t1.metrics.bash_error_count, t1.metrics.tool_error_count) == (["pytest -q"], 1, 1)


def test_tokens_counted_once_per_step(hand: dict[str, Session]) -> None:
    m = turn(hand["ses_hand_main"], 1).metrics
    # four steps' step-finish; the message's own tokens (its last step's) are not added again
    assert (m.api_calls, m.input_tokens, m.output_tokens, m.cache_read_tokens, m.cache_creation_tokens) == (
        4, 6200, 400, 18100, 500)
    assert turn(hand["ses_hand_main"], 4).metrics.api_calls == 0  # still streaming: no usage yet


def test_title_compaction_recap_and_counts(hand: dict[str, Session]) -> None:
    s = hand["ses_hand_main"]
    assert s.title == "Health check endpoint for the demo app"
    (summary,) = [x for x in s.texts if x.kind == "compact_summary"]
    assert summary.text.startswith("## Goal\nAdd a health check endpoint") and summary.turn_index == 2
    t2 = turn(s, 2)
    assert t2.compacted and [(e.type, e.data["trigger"]) for e in t2.events] == [("compaction", "auto")]
    assert t2.assistant_text == "The reviewer found no problems."  # the summary is not the turn's answer
    (recap,) = [x for x in s.texts if x.kind == "recap"]
    assert (recap.text, recap.turn_index) == ("Wrote a README section documenting GET /health.", 3)
    # a truncated part file and a message that is not an object; an unknown part type and role
    assert (s.lines_malformed, s.lines_unknown, s.message_lines) == (2, 2, 12)
    assert (s.cwd, s.repo_name, s.version_first, s.started_at) == ("/work/demo-app", "demo-app", "0.15.8",
                                                                    "2026-01-01T09:59:59.000Z")


def test_write_error_and_pending_calls(hand: dict[str, Session]) -> None:
    s = hand["ses_hand_main"]
    write, fetch, todo = turn(s, 3).invocations
    assert (write.file_created, write.lines_added, write.file_path) == (True, 3, "/work/demo-app/README.md")
    assert turn(s, 3).metrics.files_written == ["/work/demo-app/README.md"]
    assert fetch.is_error and "404" in fetch.result_brief and not todo.is_error
    (running,) = turn(s, 4).invocations
    assert (running.tool_name, running.has_result, running.is_error) == ("task", False, False)


def test_subagent_session_is_linked_to_its_task_call(hand: dict[str, Session]) -> None:
    s = hand["ses_hand_main"]
    assert "ses_hand_child" not in hand  # a child session is no session of its own
    (sub,) = s.subagents
    assert (sub.agent_id, sub.tool_use_id, sub.turn_index, sub.agent_type, sub.description) == (
        "ses_hand_child", "toolu_05Task", 2, "general", "Review health endpoint")
    assert (sub.prompt, sub.summary_text, sub.tool_usage) == (
        "Review the /health endpoint in server.py", "No problems found.", {"read": 1, "bash": 1})
    assert turn(s, 2).invocations[0].agent_id == "ses_hand_child"
    assert turn(s, 2).metrics.tool_call_count == 1  # the subagent's calls are its own


def test_default_title_and_interrupted_answer(hand: dict[str, Session]) -> None:
    s = hand["ses_hand_plain"]
    assert s.title is None  # "New session - <time>" is opencode's placeholder
    assert turn(s, 1).interrupted and turn(s, 1).assistant_text == "It returns 'hel"
    assert [e.data for e in turn(s, 1).events] == [{"kind": "interrupted", "tool_name": None, "tool_use_id": None}]
    assert s.repo_name == "api"


def test_permission_rejections_are_feedback(hand: dict[str, Session]) -> None:
    t2 = turn(hand["ses_hand_plain"], 2)
    assert [i.is_error for i in t2.invocations] == [True, True, True] and not t2.interrupted
    # a rule in the configuration denying a call is no one's feedback
    assert [(e.data["kind"], e.data["tool_name"], e.data["target"], e.data["reason"]) for e in t2.events] == [
        ("tool_rejected", "bash", "rm -rf dist .cache", "keep dist/, only remove .cache"),
        ("tool_rejected", "edit", "/work/demo-app/api/.gitignore", None)]


def test_session_without_messages_is_not_listed(hand: dict[str, Session]) -> None:
    assert "ses_hand_empty" not in hand


# --------------------------------------------------------------------------- hand-written: the database
def test_database_session(hand: dict[str, Session]) -> None:
    s = hand["ses_db_main"]
    assert s.file == f"{(HAND / 'opencode.db').absolute()}#ses_db_main"
    t1 = turn(s, 1)
    assert [(i.tool_name, i.sequence, i.parallel_group) for i in t1.invocations[:3]] == [
        ("read", 0, 1), ("read", 0, 2), ("glob", 0, 3)]
    multiedit, bash, patch, edit = t1.invocations[3:]
    assert (multiedit.lines_added, multiedit.lines_removed) == (3, 2)
    assert (patch.file_path, patch.lines_added) == ("/work/api-server/CHANGELOG.md", 2)
    assert edit.is_error and "not found" in edit.result_brief
    assert bash.result_brief.startswith("✓ login works")  # terminal colours gone
    assert t1.metrics.files_modified == ["/work/api-server/src/login.ts", "/work/api-server/CHANGELOG.md"]
    assert (t1.metrics.lines_added, t1.metrics.lines_removed) == (5, 2)
    assert s.lines_malformed == 1  # a part row whose JSON was cut
    (sub,) = s.subagents  # an older task call without metadata.sessionId: linked by the child's title
    assert (sub.agent_id, sub.tool_use_id, sub.turn_index, sub.agent_type) == ("ses_db_child", "call_d8", 2, "explore")


def test_database_wins_over_the_migrated_files(hand: dict[str, Session]) -> None:
    s = hand["ses_hand_migrated"]
    assert s.file.endswith("opencode.db#ses_hand_migrated")
    assert [t.prompt for t in s.turns] == ["Rename the helper", "And update the callers"]


def test_database_fixture_is_its_dump_and_reading_leaves_no_files(hand: dict[str, Session]) -> None:
    conn = sqlite3.connect(f"file:{HAND / 'opencode.db'}?mode=ro", uri=True)
    try:
        dump = "".join(line + "\n" for line in conn.iterdump())
    finally:
        conn.close()
    assert dump == (HAND / "opencode.db.sql").read_text(encoding="utf-8")  # the reviewable text is the database
    assert sorted(p.name for p in HAND.iterdir()) == ["opencode.db", "opencode.db.sql", "storage"]



# --------------------------------------------------------------------------- real OpenCode 2.0.14 sessions (2.x tables)
TUI, TOOLS = "ses_f34a1dc63ffe0cCnMWOTpjumbx", "ses_f34a354dbffe8waMGOZgKvK6cK"


def test_real2_sessions_prompts_and_titles(real2: dict[str, Session]) -> None:
    assert sorted(real2) == ["ses_f34687c4effe4c1OUSq8A7KEeN", "ses_f34859f9affeumHNfv8TfefDkV", TUI, TOOLS,
                             "ses_f34addb6fffeca2UK7PpveGIW3"]
    s = real2[TUI]
    assert (s.title, s.cwd, s.repo_name, s.version_first, s.models) == (
        "Magic passphrase PURPLE-ELEPHANT-42", "/Users/dev/oc-tools", "oc-tools", "2.0.14", ["big-pickle"])
    assert (s.started_at, s.ended_at) == ("2026-09-22T23:05:39.533Z", "2026-09-22T23:07:04.015Z")
    prompts = [t.prompt for t in s.turns]
    assert prompts[0] == "The magic passphrase is PURPLE-ELEPHANT-42. Just acknowledge it briefly."
    assert prompts[1].startswith("You are a code reviewer.")  # /review, stored expanded: no marker of the command
    assert prompts[2:] == ["In one sentence, what did the review conclude?", "What is the magic passphrase?"]
    assert turn(s, 1).prompt_uuid == "msg_0cb5e239f001spXxeYKoK3Vai3"
    assert turn(s, 1).assistant_text == "Acknowledged: PURPLE-ELEPHANT-42. What would you like to work on?"
    assert (s.lines, s.lines_malformed, s.lines_unknown) == (24, 0, 0)  # synthetic, idle, agent-switched: known


def test_real2_user_shell_command_is_an_event_not_a_turn(real2: dict[str, Session]) -> None:
    t1 = turn(real2[TUI], 1)
    assert t1.invocations == []
    (event,) = t1.events
    assert (event.type, event.data["command"], event.data["exit"]) == (
        "command_output", "echo hello from user shell && ls *.py", 0)
    assert event.data["output"] == (
        "$ echo hello from user shell && ls *.py\nhello from user shell\nfarewell.py\nhello.py")


def test_real2_steps_are_batches_and_tokens_count_once(real2: dict[str, Session]) -> None:
    t2 = turn(real2[TUI], 2)
    assert [(i.tool_name, i.sequence, i.parallel_group) for i in t2.invocations] == [
        ("shell", 0, 1), ("shell", 0, 2), ("shell", 0, 3),
        ("read", 1, 1), ("read", 1, 2), ("read", 1, 3), ("read", 1, 4), ("read", 1, 5),
        ("shell", 2, 1), ("shell", 2, 2)]  # three assistant records: three model steps
    assert [i.command for i in t2.invocations[:3]] == ["git status --short", "git diff", "git diff --cached"]
    assert t2.invocations[3].file_path == "/Users/dev/oc-tools/hello.py"  # `path` relative to the session folder
    assert "[... cut for jacked's test fixture" in t2.invocations[7].result_brief
    m = t2.metrics  # four steps, each its own `tokens`
    assert (m.api_calls, m.input_tokens, m.output_tokens, m.cache_read_tokens) == (4, 18707, 2759, 54784)
    m = turn(real2["ses_f34addb6fffeca2UK7PpveGIW3"], 2).metrics  # output counts reasoning (19 + 232)
    assert (m.api_calls, m.input_tokens, m.output_tokens) == (1, 9568, 251)


def test_real2_compaction(real2: dict[str, Session]) -> None:
    s = real2[TUI]
    t3 = turn(s, 3)
    assert t3.compacted and [(e.type, e.data["trigger"]) for e in t3.events] == [("compaction", "manual")]
    assert t3.metrics.api_calls == 2 and t3.metrics.input_tokens == 128 + 683  # the answer, and the summarising call
    (summary,) = [x for x in s.texts if x.kind == "compact_summary"]
    assert summary.text.startswith("## Objective\n- The user asked the assistant to act as a code reviewer")
    assert summary.turn_index == 3
    assert turn(s, 4).assistant_text.startswith("There isn't a \"magic passphrase\" recorded anywhere")


def test_real2_errors(real2: dict[str, Session]) -> None:
    t1 = turn(real2[TOOLS], 1)
    failed = [(i.tool_name, i.command, i.result_brief) for i in t1.invocations if i.is_error]
    assert failed[0] == failed[2] == ("websearch", None, "Web search cancelled")
    assert failed[1][:2] == ("shell", "cat does-not-exist.txt")  # completed, exit 1
    assert failed[1][2].startswith("cat: does-not-exist.txt: No such file or directory")
    assert failed[3][0] == "execute" and failed[3][2].startswith("[browser.disconnected]")  # metadata.error
    assert failed[4] == ("read", None, "File not found: missing.txt")
    assert (t1.metrics.tool_call_count, t1.metrics.tool_error_count, t1.metrics.bash_error_count) == (19, 5, 1)
    # a step that failed before any output: an error of its turn, no response counted
    t1 = turn(real2["ses_f34addb6fffeca2UK7PpveGIW3"], 1)
    assert [(e.type, e.data) for e in t1.events] == [
        ("command_output", {"output": "The provided model identifier is invalid.", "level": "error"})]
    assert (t1.metrics.api_calls, t1.assistant_text) == (0, None)
    assert real2["ses_f34addb6fffeca2UK7PpveGIW3"].models == ["au.anthropic.claude-opus-5-5",
                                                              "muse-spark-1.2-contributor-free"]


def test_real2_file_changes(real2: dict[str, Session]) -> None:
    t1 = turn(real2[TOOLS], 1)
    write, edit = (i for i in t1.invocations if i.tool_name in ("write", "edit"))
    assert (write.file_path, write.lines_added) == ("/Users/dev/oc-tools/farewell.py", 6)
    assert (edit.file_path, edit.lines_added, edit.lines_removed) == ("/Users/dev/oc-tools/hello.py", 6, 0)
    assert "+def farewell(name):" in edit.diff
    t1 = turn(real2["ses_f34859f9affeumHNfv8TfefDkV"], 1)
    assert t1.invocations[0].file_path is None  # `read` of a directory: no file read
    assert t1.metrics.files_read == ["/Users/dev/oc-tools/hello.py", "/Users/dev/oc-tools/farewell.py",
                                     "/Users/dev/oc-tools/sub/data.txt"]
    assert t1.metrics.files_modified == ["/Users/dev/oc-tools/farewell.py"]  # replaceAll: 1 line out, 1 in
    assert (t1.metrics.lines_added, t1.metrics.lines_removed) == (1, 1)


def test_real2_subagent_child_session(real2: dict[str, Session]) -> None:
    s = real2[TOOLS]
    assert "ses_f34a2e95bffethLCcvMT6BjIMA" not in real2
    (sub,) = s.subagents
    assert (sub.agent_id, sub.tool_use_id, sub.turn_index, sub.agent_type, sub.description, sub.tool_usage) == (
        "ses_f34a2e95bffethLCcvMT6BjIMA", "call_50f5671d07a94ebf8b889d17", 1, "explore", "Summarize notes.md",
        {"read": 1})
    assert sub.prompt.startswith(
        "You are a subagent spawned by another session.\nRead the file /Users/dev/oc-tools/notes.md")
    assert sub.summary_text.startswith("The file `/Users/dev/oc-tools/notes.md` is a minimal notes file")
    call = next(i for i in turn(s, 1).invocations if i.tool_name == "subagent")
    assert call.agent_id == sub.agent_id


def test_real2_fixture_is_its_dump_and_reading_leaves_no_files(real2: dict[str, Session]) -> None:
    conn = sqlite3.connect(f"file:{REAL2 / 'opencode.db'}?mode=ro", uri=True)
    try:
        dump = "".join(line + "\n" for line in conn.iterdump())
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()
    assert dump == (REAL2 / "opencode.db.sql").read_text(encoding="utf-8")
    assert tables == {"session_v2", "session_message"}
    assert sorted(p.name for p in REAL2.iterdir()) == ["opencode.db", "opencode.db.sql"]


def _real2_copy(tmp_path: Path) -> Path:
    root = tmp_path / "opencode"
    root.mkdir()
    shutil.copy(REAL2 / "opencode.db", root / "opencode.db")
    return root


def test_2x_database_with_its_1x_tables(tmp_path: Path) -> None:
    """2.x keeps the 1.x tables beside its own: a session it holds in both is read from its 2.x
    records, a 1.x session from the 1.x tables."""
    root = _real2_copy(tmp_path)
    conn = sqlite3.connect(root / "opencode.db")
    conn.executescript("""
        CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT, slug TEXT NOT NULL,
            directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL, time_created INTEGER NOT NULL,
            time_updated INTEGER NOT NULL);
        CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
            time_updated INTEGER NOT NULL, data TEXT NOT NULL);
        CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
            time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
        INSERT INTO session VALUES ('ses_f34687c4effe4c1OUSq8A7KEeN', 'p', NULL, 'copy', '/old', 'legacy copy', '1.2.6',
            1, 2);
        INSERT INTO message VALUES ('msg_old1', 'ses_f34687c4effe4c1OUSq8A7KEeN', 1, 1, '{"role": "user"}');
        INSERT INTO part VALUES ('prt_old1', 'msg_old1', 'ses_f34687c4effe4c1OUSq8A7KEeN', 1, 1,
            '{"type": "text", "text": "LEGACY COPY"}');
        INSERT INTO session VALUES ('ses_v1only', 'p', NULL, 'old', '/work/old', 'A 1.x session', '1.2.6', 1, 2);
        INSERT INTO message VALUES ('msg_v1', 'ses_v1only', 1, 1, '{"role": "user", "time": {"created": 1}}');
        INSERT INTO part VALUES ('prt_v1', 'msg_v1', 'ses_v1only', 1, 1, '{"type": "text", "text": "From 1.x"}');
    """)
    conn.close()
    sessions, errors = read_all(root)
    assert errors == []
    assert [t.prompt for t in sessions["ses_f34687c4effe4c1OUSq8A7KEeN"].turns] == [
        "Use your question tool to ask me which color I prefer: red, green or blue. Then tell me what I picked."]
    assert [t.prompt for t in sessions["ses_v1only"].turns] == ["From 1.x"]
    counted = count_opencode.count_dir(root)["sessions"]
    assert sorted(sessions) == sorted(counted) and len(sessions) == 6
    for sid, s in sessions.items():
        assert figures(s) == counted[sid], sid


def test_pre_2_0_layout_session_table_with_session_message(tmp_path: Path) -> None:
    """Builds before 2.0 kept these sessions in `session` (renamed `session_v2` since)."""
    root = _real2_copy(tmp_path)
    conn = sqlite3.connect(root / "opencode.db")
    conn.execute("DROP INDEX session_v2_time_suspended_idx")
    conn.execute("ALTER TABLE session_v2 RENAME TO session")
    conn.commit()
    conn.close()
    sessions, errors = read_all(root)
    assert errors == [] and sorted(sessions) == sorted(count_opencode.count_dir(REAL2)["sessions"])
    assert figures(sessions[TOOLS]) == count_opencode.count_dir(root)["sessions"][TOOLS]


def _with_2x_records(root: Path, rows: list[tuple[str, str, int, str]]) -> Session:
    """The TUI session of a copy of REAL2 with these `session_message` rows (id, type, seq, data) added."""
    conn = sqlite3.connect(root / "opencode.db")
    conn.executemany(f"INSERT INTO session_message VALUES (?, '{TUI}', ?, ?, 1790118430000, 1790118430000, ?)", rows)
    conn.commit()
    conn.close()
    return read_all(root)[0][TUI]


def test_2x_records_being_written_unknown_or_cut(tmp_path: Path) -> None:
    root = _real2_copy(tmp_path)
    rows = [("msg_zz1", "user", 200, '{"text": "One more thing", "time": {"created": 1790118430000}}'),
            ("msg_zz2", "assistant", 201, json.dumps({  # a step still streaming: a call with its input so far
                "agent": "plan", "model": {"id": "big-pickle"}, "time": {"created": 1790118430100},
                "content": [{"type": "tool", "id": "call_zz", "name": "read", "state": {"status": "streaming",
                                                                                      "input": '{"pa'}},
                            {"type": "hologram"}]})),
            ("msg_zz3", "future-record", 202, "{}"),
            ("msg_zz4", "user", 203, '{"text": "cut')]
    s = _with_2x_records(root, rows)
    t5 = turn(s, 5)
    assert t5.prompt == "One more thing"
    (call,) = t5.invocations
    assert (call.tool_name, call.has_result, call.is_error, call.input_brief) == ("read", False, False, "{}")
    assert (s.lines, s.lines_malformed, s.lines_unknown) == (28, 1, 2)  # a part and a record type no release writes


def test_2x_refusal_and_interruption(tmp_path: Path) -> None:
    # 2.x records: a call whose permission prompt was rejected, then the turn stopped (`idle`
    # with outcome interrupted) while a call still ran; the counter and jacked agree
    root = _real2_copy(tmp_path)
    rejected = {"status": "error", "input": {"command": "rm -rf build"},
                "error": {"message": "The user rejected permission to use this specific tool call."}}
    rows = [("msg_zy1", "user", 300, '{"text": "Wipe the build folder", "time": {"created": 1790118440000}}'),
            ("msg_zy2", "assistant", 301, json.dumps({
                "agent": "build", "model": {"id": "big-pickle"}, "time": {"created": 1790118440100},
                "content": [{"type": "tool", "id": "call_zy1", "name": "shell", "state": rejected},
                            {"type": "tool", "id": "call_zy2", "name": "shell",
                             "state": {"status": "running", "input": {"command": "make clean"}}}]})),
            ("msg_zy3", "idle", 302, '{"outcome": "interrupted", "time": {"created": 1790118450000}}')]
    s = _with_2x_records(root, rows)
    last = s.turns[-1]
    assert [(e.data["kind"], e.data["tool_name"], e.data["tool_use_id"]) for e in last.events] == [
        ("tool_rejected", "shell", "call_zy1"), ("interrupted", "shell", "call_zy2")] and last.interrupted
    assert figures(s) == count_opencode.count_dir(root)["sessions"][TUI]


def test_2x_records_of_any_shape_never_raise() -> None:
    import copy
    import random

    from jacked.sources.opencode.build import build_session
    from jacked.sources.opencode.db import DbStore

    with DbStore(REAL2 / "opencode.db") as store:
        base = store.read(TUI)
        base.children.append(store.read("ses_f34a2e95bffethLCcvMT6BjIMA"))
    rng = random.Random(11)
    mutate = _mutator(rng)

    for _ in range(300):
        raw = copy.deepcopy(base)
        records = [raw.info] + raw.entries + raw.children[0].entries
        for _ in range(rng.randint(1, 6)):
            mutate(rng.choice(records))
        build_session(raw)


def test_scan_of_a_2x_database_rereads_only_a_changed_session(tmp_path: Path) -> None:
    root = _real2_copy(tmp_path)
    claude = tmp_path / "claude"
    claude.mkdir()
    catalog = Catalog(tmp_path / "catalog.db")
    first = Scanner(catalog, claude, agents={"opencode": root}).scan()
    assert first.errors == [] and first.sessions_scanned == 5
    rows = {r["session_id"]: r for r in list_sessions(catalog)}
    assert rows[TUI]["title"] == "Magic passphrase PURPLE-ELEPHANT-42"
    again = Scanner(catalog, claude, agents={"opencode": root}).scan()
    assert (again.sessions_scanned, again.sessions_unchanged) == (0, 5)
    conn = sqlite3.connect(root / "opencode.db")
    conn.execute(f"INSERT INTO session_message VALUES ('msg_zz1', '{TUI}', 'user', 200, 1790118430000, "
                 "1790118430000, '{\"text\": \"One more thing\", \"time\": {\"created\": 1790118430000}}')")
    conn.commit()
    conn.close()
    third = Scanner(catalog, claude, agents={"opencode": root}).scan()
    assert (third.sessions_scanned, third.changed_session_ids) == (1, [TUI])
    assert [t["prompt"] for t in turns_json(catalog, TUI)["turns"]][-1] == "One more thing"

# --------------------------------------------------------------------------- robustness
def test_unusable_database_is_reported_and_the_files_still_read(tmp_path: Path) -> None:
    shutil.copytree(HAND / "storage", tmp_path / "storage")
    (tmp_path / "opencode.db").write_bytes(b"this is not a database" * 100)
    errors: list[str] = []
    found = list(SOURCE.discover(tmp_path, errors))
    assert len(errors) == 1 and "opencode.db" in errors[0]
    assert {f.session_id for f in found} == {"ses_hand_main", "ses_hand_plain", "ses_hand_migrated"}


def test_a_session_being_written_and_huge_output(tmp_path: Path) -> None:
    spec = _spec()
    spec["turns"][0]["calls"][0]["output"] = "x" * 5_000_000
    write_opencode.write_session(tmp_path, spec)
    writer = sqlite3.connect(tmp_path / "opencode.db")
    writer.execute("BEGIN IMMEDIATE")  # opencode in the middle of writing a new message
    writer.execute("INSERT INTO message VALUES ('msg_zzz', 'ses_spec', 1, 1, '{\"role\": \"user\"')")
    try:
        (found,) = SOURCE.discover(tmp_path, [])
        s = SOURCE.read(found)
    finally:
        writer.rollback()
        writer.close()
    assert len(s.turns) == 2 and s.lines_malformed == 0
    assert len(turn(s, 1).invocations[0].result_brief) < 400  # a read's head only


def test_records_of_any_shape_never_raise() -> None:
    """Every field of the hand-written records replaced, at random, by a value of another type."""
    import copy
    import random

    from jacked.sources.opencode.build import build_session
    from jacked.sources.opencode.store import FileStore

    storage = HAND / "storage"
    base = FileStore(storage).read("ses_hand_main", next(storage.glob("session/*/ses_hand_main.json")))
    rng = random.Random(7)
    mutate = _mutator(rng)

    for _ in range(400):
        raw = copy.deepcopy(base)
        records = [raw.info] + [m for m, _ in raw.messages] + [p for _, ps in raw.messages for p in ps]
        for _ in range(rng.randint(1, 6)):
            mutate(rng.choice(records))
        build_session(raw)


# --------------------------------------------------------------------------- a scan into the catalog
def test_scan_lands_rescans_nothing_and_rereads_a_changed_session(tmp_path: Path) -> None:
    root = tmp_path / "opencode"
    shutil.copytree(HAND, root)
    claude = tmp_path / "claude"
    claude.mkdir()
    catalog = Catalog(tmp_path / "catalog.db")
    first = Scanner(catalog, claude, agents={"opencode": root}).scan()
    assert first.errors == [] and first.sessions_scanned == 4
    rows = {r["session_id"]: r for r in list_sessions(catalog)}
    assert set(rows) == {"ses_hand_main", "ses_hand_plain", "ses_db_main", "ses_hand_migrated"}
    assert {r["agent"] for r in rows.values()} == {"opencode"}
    assert rows["ses_db_main"]["title"] == "Fix the failing login test"
    assert [t["prompt"] for t in turns_json(catalog, "ses_db_main")["turns"]][:1] == ["Fix the failing login test"]

    again = Scanner(catalog, claude, agents={"opencode": root}).scan()
    assert (again.sessions_scanned, again.sessions_unchanged) == (0, 4)

    # one session grows in the database, one in the files
    conn = sqlite3.connect(root / "opencode.db")
    conn.execute("INSERT INTO message VALUES ('msg_d100', 'ses_db_main', 1767270000000, 1767270000000, ?)",
                 (json.dumps({"role": "user", "time": {"created": 1767270000000}}),))
    conn.execute("INSERT INTO part VALUES ('prt_d100', 'msg_d100', 'ses_db_main', 1767270000000, 1767270000000, ?)",
                 (json.dumps({"type": "text", "text": "One more thing"}),))
    conn.commit()
    conn.close()
    write_opencode.write_storage(root, {"id": "0f3c8a1e2b7d4c5e6f7a8b9c0d1e2f3a4b5c6d7e", "worktree": "/work/demo-app"},
                                 json.loads((root / "storage/session/0f3c8a1e2b7d4c5e6f7a8b9c0d1e2f3a4b5c6d7e/"
                                             "ses_hand_plain.json").read_text()),
                                 [({"id": "msg_p100", "sessionID": "ses_hand_plain", "role": "user",
                                    "time": {"created": 1767270000000}},
                                   [{"id": "prt_p100", "type": "text", "text": "Try again"}])])
    third = Scanner(catalog, claude, agents={"opencode": root}).scan()
    assert (third.sessions_scanned, third.sessions_unchanged) == (2, 2)
    assert sorted(third.changed_session_ids) == ["ses_db_main", "ses_hand_plain"]
    assert [t["prompt"] for t in turns_json(catalog, "ses_db_main")["turns"]][-1] == "One more thing"
    assert [t["prompt"] for t in turns_json(catalog, "ses_hand_plain")["turns"]][-1] == "Try again"


def test_registered_and_rooted_in_xdg_data_home() -> None:
    assert SOURCES["opencode"].label == "opencode"
    assert SOURCE.default_root({"XDG_DATA_HOME": "/x/data"}) == Path("/x/data/opencode")
    assert SOURCE.default_root({"HOME": "/home/u"}) == Path("/home/u/.local/share/opencode")


# --------------------------------------------------------------------------- the spec writer, read back
def _spec() -> dict[str, Any]:
    return {
        "session_id": "ses_spec", "cwd": "/work/spec-repo", "started_at": "2026-03-01T09:00:00Z",
        "model": "claude-sonnet-4-5", "title": "Spec session",
        "turns": [
            {"prompt": "Read and fix", "at": "2026-03-01T09:00:05Z", "assistant": "Fixed it.",
             "input_tokens": 1000, "output_tokens": 50,
             "calls": [
                 {"batch": 1, "kind": "read", "path": "/work/spec-repo/a.py", "output": "print('a')\n", "error": False},
                 {"batch": 1, "kind": "search", "path": "/work/spec-repo", "command": "TODO", "output": "none",
                  "error": True},
                 {"batch": 2, "kind": "edit", "path": "/work/spec-repo/a.py", "old": "print('a')\n",
                  "new": "print('b')\nprint('c')\n", "output": "Edit applied successfully.", "error": False},
                 {"batch": 3, "kind": "shell", "command": "pytest", "output": "1 failed", "error": True,
                  "exit_code": 2},
                 {"batch": 3, "kind": "write", "path": "/work/spec-repo/NOTES.md", "content": "one\ntwo\n",
                  "output": "", "error": False},
             ]},
            {"prompt": "Thanks", "at": "2026-03-01T09:05:00Z", "assistant": "You're welcome.",
             "input_tokens": 200, "output_tokens": 8, "calls": []},
        ],
    }


@pytest.mark.parametrize("layout", ["db", "storage"])
def test_writer_round_trip(tmp_path: Path, layout: str) -> None:
    spec = _spec()
    paths = write_opencode.write_session(tmp_path, spec, layout=layout)
    assert paths and all(p.exists() for p in paths)
    sessions, errors = read_all(tmp_path)
    assert errors == []
    s = sessions["ses_spec"]
    assert (s.title, s.cwd, s.models, s.started_at) == (
        "Spec session", "/work/spec-repo", ["claude-sonnet-4-5"], "2026-03-01T09:00:00.000Z")
    assert [(t.prompt, t.started_at) for t in s.turns] == [
        ("Read and fix", "2026-03-01T09:00:05.000Z"), ("Thanks", "2026-03-01T09:05:00.000Z")]
    for t, want in zip(s.turns, spec["turns"]):
        calls = want["calls"]
        assert t.assistant_text == want["assistant"]
        assert (t.metrics.input_tokens, t.metrics.output_tokens) == (want["input_tokens"], want["output_tokens"])
        assert [i.is_error for i in t.invocations] == [c["error"] for c in calls]
        batch_size = {b: sum(c["batch"] == b for c in calls) for b in {c["batch"] for c in calls}}
        assert [i.parallel_group > 0 for i in t.invocations] == [batch_size[c["batch"]] > 1 for c in calls]
    t1 = s.turns[0]
    assert [i.tool_name for i in t1.invocations] == ["read", "grep", "edit", "bash", "write"]
    assert [i.sequence for i in t1.invocations] == [0, 0, 1, 2, 2]
    assert (t1.invocations[2].lines_added, t1.invocations[2].lines_removed) == (2, 1)
    assert (t1.invocations[3].command, t1.metrics.bash_error_count) == ("pytest", 1)
    assert (t1.invocations[4].file_created, t1.invocations[4].lines_added) == (True, 2)
    counted = count_opencode.count_dir(tmp_path)["sessions"]["ses_spec"]
    assert figures(s) == counted


# --------------------------------------------------------------------------- MCP registration
def _env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home)}


EXE = ["/opt/jacked/bin/jacked"]


def test_install_creates_and_uninstall_removes(tmp_path: Path) -> None:
    env = _env(tmp_path)
    path = oc_install.install(EXE, env)
    assert path == tmp_path / "home/.config/opencode/opencode.json"
    assert json.loads(path.read_text()) == {
        "mcp": {"jacked": {"type": "local", "command": ["/opt/jacked/bin/jacked", "mcp"], "enabled": True}}}
    assert not path.with_name("opencode.json.jacked.bak").exists()  # nothing was there before
    assert oc_install.uninstall(env) == path
    assert not path.exists()
    assert oc_install.uninstall(env) is None


def test_install_keeps_other_keys_backs_up_and_is_idempotent(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "nohome")}
    path = tmp_path / "xdg/opencode/opencode.json"
    path.parent.mkdir(parents=True)
    before = {"$schema": "https://opencode.ai/config.json", "model": "anthropic/claude-sonnet-4-5",
              "mcp": {"github": {"type": "remote", "url": "https://example.invalid/mcp"}}}
    original = json.dumps(before, indent=4).encode()
    path.write_bytes(original)
    assert oc_install.install(EXE, env) == path
    data = json.loads(path.read_text())
    assert data["model"] == before["model"] and data["mcp"]["github"] == before["mcp"]["github"]
    assert data["mcp"]["jacked"]["command"] == ["/opt/jacked/bin/jacked", "mcp"]
    backup = path.with_name("opencode.json.jacked.bak")
    assert backup.read_bytes() == original
    written = path.read_bytes()
    oc_install.install(EXE, env)  # a second install writes nothing
    assert path.read_bytes() == written
    oc_install.uninstall(env)
    assert json.loads(path.read_text()) == before  # "mcp" keeps the user's own server


def test_install_writes_through_a_symlink(tmp_path: Path) -> None:
    env = _env(tmp_path)
    dotfiles = tmp_path / "dotfiles" / "opencode.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"theme": "opencode"}\n')
    link = tmp_path / "home/.config/opencode/opencode.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    oc_install.install(EXE, env)
    assert link.is_symlink() and json.loads(dotfiles.read_text())["mcp"]["jacked"]["type"] == "local"
    oc_install.uninstall(env)
    assert link.is_symlink() and json.loads(dotfiles.read_text()) == {"theme": "opencode"}


@pytest.mark.parametrize("content,message", [
    ('{"model": "x",, }', "invalid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"mcp": ["jacked"]}', '"mcp" is not an object'),
    ('{\n  // my models\n  "model": "x"\n}', "has comments"),
])
def test_install_refuses_a_file_it_cannot_keep(tmp_path: Path, content: str, message: str) -> None:
    env = _env(tmp_path)
    path = tmp_path / "home/.config/opencode/opencode.json"
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(JackedError, match=message) as e:
        oc_install.install(EXE, env)
    assert "\n" not in str(e.value)
    assert path.read_text() == content and not path.with_name("opencode.json.jacked.bak").exists()


def test_install_edits_a_jsonc_file_without_comments(tmp_path: Path) -> None:
    env = _env(tmp_path)
    path = tmp_path / "home/.config/opencode/opencode.jsonc"
    path.parent.mkdir(parents=True)
    path.write_text('{\n  "model": "x",\n  "share": "disabled",\n}\n')  # a trailing comma: JSONC
    assert oc_install.install(EXE, env) == path
    assert json.loads(path.read_text())["share"] == "disabled"
    assert not path.with_name("opencode.json").exists()
    oc_install.uninstall(env)
    assert json.loads(path.read_text()) == {"model": "x", "share": "disabled"}


def test_uninstall_reads_past_a_commented_file_it_did_not_write(tmp_path: Path) -> None:
    env = _env(tmp_path)
    folder = tmp_path / "home/.config/opencode"
    folder.mkdir(parents=True)
    commented = '{\n  // chosen by hand\n  "theme": "tokyonight"\n}\n'
    (folder / "opencode.jsonc").write_text(commented)
    (folder / "opencode.json").write_text('{"model": "x"}')
    assert oc_install.install(EXE, env) == folder / "opencode.json"  # the .json file is the one written
    assert oc_install.uninstall(env) == folder / "opencode.json"
    assert json.loads((folder / "opencode.json").read_text()) == {"model": "x"}
    assert (folder / "opencode.jsonc").read_text() == commented


def test_strip_jsonc_leaves_strings_alone() -> None:
    text = '{"url": "http://a//b", "s": "/* no */", "q": "\\"//\\"", /* c */ "a": [1, 2,],}'
    plain, commented = strip_jsonc(text)
    assert commented and json.loads(plain) == {"url": "http://a//b", "s": "/* no */", "q": '"//"', "a": [1, 2]}


_ODD_VALUES = [None, 0, -1, 1.5, float("nan"), float("inf"), True, "", "x", [], [1, "a"], {}, {"a": 1}, 10**30]


def _mutator(rng: random.Random) -> Any:
    """A function that puts an odd value somewhere deep in a record (in place)."""
    def mutate(obj: Any) -> None:
        if isinstance(obj, (dict, list)) and obj:
            key = rng.choice(list(obj)) if isinstance(obj, dict) else rng.randrange(len(obj))
            if rng.random() < 0.3:
                obj[key] = rng.choice(_ODD_VALUES)
            else:
                mutate(obj[key])
    return mutate

