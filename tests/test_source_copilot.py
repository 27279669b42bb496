"""GitHub Copilot CLI as a source: its session event logs (folder and legacy file layouts) read
against an independent count and hand-checked details; subagents, decisions, the scanner,
`status`, bad input and `install --agent copilot`."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jacked.catalog import Catalog
from jacked.ingest.agents import source_status
from jacked.ingest.scan import Scanner
from jacked.query.history import turns_json
from jacked.sources.copilot.source import CopilotSource
from jacked.sources.model import Session
from jacked.sources.registry import SOURCES
from kit import agent_module, assert_agrees_with_count, file_snapshot

HERE = Path(__file__).parent
HAND = HERE / "fixtures" / "copilot" / "hand" / ".copilot"
REAL = HERE / "fixtures" / "copilot" / "real" / ".copilot"  # Copilot CLI 1.0.10's own logs, March 2026
FIXING, BREAKDOWN = "8baa78ec-b203-4c7f-b1d3-c1170ae84b7d", "07c40cd0-ff51-4d6e-bdcd-ac2f90877203"
SOURCE = CopilotSource()
API = "3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b"
LEGACY = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"

counter = agent_module("count_copilot")


def _read_all(root: Path) -> dict[str, Session]:
    errors: list[str] = []
    out = {f.session_id: SOURCE.read(f) for f in SOURCE.discover(root, errors)}
    assert errors == []
    return out


@pytest.fixture(scope="module")
def hand() -> dict[str, Session]:
    return _read_all(HAND)


def test_counts_match_the_independent_count(hand: dict[str, Session]) -> None:
    expected = counter.count(HAND)
    assert_agrees_with_count(hand, expected["by_session"])
    assert {k: expected[k] for k in ("sessions", "turns", "tool_calls", "errors")} == \
        {"sessions": 2, "turns": 4, "tool_calls": 6, "errors": 2}
    assert [sum(c[k] for c in expected["by_session"].values()) for k in ("approved", "rejected", "interrupted")] == [
        1, 1, 1]


def test_real_sessions_match_the_independent_count() -> None:
    expected = counter.count(REAL)
    assert_agrees_with_count(_read_all(REAL), expected["by_session"])
    assert {k: expected[k] for k in ("sessions", "turns", "tool_calls", "errors")} == \
        {"sessions": 2, "turns": 5, "tool_calls": 40, "errors": 1}


def test_real_session_start_model_and_subagent() -> None:
    """1.0.10 names the model only on each call's completion (no `assistant.usage`); a subagent's
    events, with their `agentId`, do not move the session's start."""
    real = _read_all(REAL)
    s = real[FIXING]
    assert (s.started_at, s.models, s.version_first) == ("2026-03-20T19:08:04.591Z", ["claude-opus-4.6"], "1.0.10")
    assert (s.cwd, s.repo_name, s.git_branch) == ("D:\\Source\\GitHub\\agent-engram", "agent-engram",
                                                  "007-agent-engineering-refactor")
    assert [t.prompt[:40] for t in s.turns if t.index >= 1] == [
        "I'm getting the following errors on load", "How can I tell if the engram server has ",
        "It's showing that engram connection has ", "And yet engram is still not showing as a"]
    (explore,) = s.subagents
    assert (explore.agent_type, explore.turn_index, explore.tool_call_count) == ("explore", 4, 37)
    assert real[BREAKDOWN].models == ["claude-opus-4.6"] and real[BREAKDOWN].started_at == "2026-03-20T20:37:18.960Z"


def test_a_refused_call_with_no_completion_failed(tmp_path: Path) -> None:
    """As Copilot CLI 1.0.x logs a refusal (seen in a real, unlicensed log): the call starts, the
    user denies it, the turn is aborted, and no `tool.execution_complete` follows."""
    sid = "5e0c1f6a-0000-4000-8000-000000000001"
    events = [
        {"type": "session.start", "data": {"sessionId": sid, "context": {"cwd": "/home/dev/api"}}},
        {"type": "user.message", "data": {"content": "Add a copilot-instructions file"}},
        {"type": "assistant.message", "data": {"messageId": "m1", "content": "", "toolRequests": [
            {"toolCallId": "w1", "name": "create", "arguments": {"path": ".github/copilot-instructions.md"}}]}},
        {"type": "tool.execution_start", "data": {"toolCallId": "w1", "toolName": "create", "arguments": {}}},
        {"type": "permission.requested", "data": {"requestId": "r1", "permissionRequest": {
            "kind": "write", "toolCallId": "w1", "intention": "Create file"}}},
        {"type": "permission.completed", "data": {"requestId": "r1", "toolCallId": "w1",
                                                  "result": {"kind": "denied-interactively-by-user"}}},
        {"type": "abort", "data": {"reason": "user_initiated"}},
    ]
    folder = tmp_path / ".copilot" / "session-state" / sid
    folder.mkdir(parents=True)
    (folder / "events.jsonl").write_text("".join(
        json.dumps({**e, "id": f"e{n}", "timestamp": f"2026-06-08T02:32:{n:02d}.000Z"}) + "\n"
        for n, e in enumerate(events)), encoding="utf-8")
    expected = counter.count(tmp_path / ".copilot")
    assert expected["errors"] == 1
    assert_agrees_with_count(_read_all(tmp_path / ".copilot"), expected["by_session"])


def test_session_context_batch_and_edit(hand: dict[str, Session]) -> None:
    s = hand[API]
    assert (s.cwd, s.repo_name, s.git_branch, s.version_first) == ("/home/dev/api/src", "api", "main", "0.0.400")
    assert s.models == ["claude-sonnet-4.5", "gpt-5"] and s.title == "Fix the health route"
    assert s.started_at == "2026-01-15T10:00:01.000Z"  # not moved by the subagent's events
    assert s.lines_malformed == 1  # the last line, still being written
    assert [t.prompt for t in s.turns] == ["Why does the health check fail?", "Also delete the old logs folder",
                                           "Find every caller of the health route"]
    view, bash, edit = s.turns[0].invocations
    assert (view.parallel_group, bash.parallel_group, edit.parallel_group) == (1, 2, 0)  # one response's two calls
    assert bash.command == "npm test" and bash.is_error and "GET /health returns 404" in bash.result_brief
    assert view.file_path == "/home/dev/api/src/app.js" and "healthz" in view.result_brief
    assert (edit.lines_added, edit.lines_removed) == (1, 1)
    # inputTokens hold the cached part (9000 of which 6000 cached, 9500 of which 9000)
    m = s.turns[0].metrics
    assert (m.input_tokens, m.cache_read_tokens, m.output_tokens) == (3000 + 500, 15000, 180)
    assert s.turns[0].assistant_text == "Fixed: the route is now /health."


def test_approval_refusal_interruption(hand: dict[str, Session]) -> None:
    first, second = hand[API].turns[:2]
    assert [(e.type, e.data) for e in first.events] == [
        ("decision", {"kind": "approval", "outcome": "approved", "tool_name": "bash", "scope": "approved-for-session"})]
    assert second.interrupted and second.invocations[0].is_error
    assert [(e.type, e.data) for e in second.events] == [
        ("feedback", {"kind": "tool_rejected", "tool_name": "bash", "reason": "keep logs, they are needed for the audit"}),
        ("feedback", {"kind": "interrupted", "reason": "user_initiated"})]


def test_subagent_compaction_and_not_typed_messages(hand: dict[str, Session]) -> None:
    s = hand[API]
    third = s.turns[2]  # the autopilot's continuation is no prompt: the interrupted turn is followed by this one
    (task,) = third.invocations
    (sub,) = s.subagents
    assert (sub.agent_id, sub.agent_type, sub.tool_use_id, sub.turn_index) == ("explore-1", "explore", task.tool_use_id, 3)
    assert sub.prompt == "List callers of /health" and sub.summary_text == "One caller: test/app.test.js line 4."
    assert sub.tool_call_count == 1 and third.metrics.input_tokens == 4000  # the subagent's tokens are its own
    assert third.compacted and any(t.kind == "compact_summary" and "/health route" in t.text for t in s.texts)
    assert [e.data.get("level") for e in third.events if e.type == "command_output"] == ["error"]


def test_legacy_file_with_a_line_that_is_not_json(hand: dict[str, Session]) -> None:
    s = hand[LEGACY]
    assert s.lines_malformed == 1 and s.cwd is None and s.version_first == "0.0.340"
    (create,) = s.turns[0].invocations
    assert create.tool_name == "create" and create.file_created and create.lines_added == 3


def test_bad_content_never_raises(tmp_path: Path) -> None:
    state = tmp_path / ".copilot" / "session-state"
    (state / "a").mkdir(parents=True)
    (state / "a" / "events.jsonl").write_text("\n".join([
        '{"type":"user.message","data":{"content":"hi"}}', "[1]", '{"type":5}', '{"data":"x"}',
        '{"type":"assistant.message","data":{"toolRequests":"nope","content":7}}',
        '{"type":"tool.execution_complete","data":{"toolCallId":"zz","success":false,"result":[1]}}',
        '{"type":"assistant.usage","data":{"inputTokens":"x","cacheReadTokens":-4}}',
        json.dumps({"type": "tool.execution_complete", "data": {"toolCallId": "big", "success": True,
                                                                 "result": {"content": "x" * 3_000_000}}})]) + "\n")
    (state / "b.jsonl").write_text("")
    found = {f.session_id: SOURCE.read(f) for f in SOURCE.discover(tmp_path / ".copilot", [])}
    a = found["a"]
    assert [t.prompt for t in a.turns] == ["hi"] and a.lines_malformed == 1 and a.lines_unknown == 2
    assert all(len(i.result_brief) < 3000 for i in a.turns[0].invocations) and len(a.turns[0].invocations) == 2
    assert found["b"].turns == []


def test_registered_and_rooted(tmp_path: Path) -> None:
    assert SOURCES["copilot"].label == "GitHub Copilot CLI"
    assert SOURCE.default_root({"COPILOT_HOME": "/x/cop", "HOME": "/home/u"}) == Path("/x/cop")
    assert SOURCE.default_root({"HOME": str(tmp_path)}) == tmp_path / ".copilot"


def test_scan_is_incremental_never_writes_and_status(tmp_path: Path) -> None:
    root = tmp_path / ".copilot"
    shutil.copytree(HAND, root)
    before = file_snapshot(root)
    claude = tmp_path / "claude"
    claude.mkdir()
    cat = Catalog(tmp_path / "catalog.db")
    first = Scanner(cat, claude, agents={"copilot": root}).scan()
    assert first.errors == [] and first.sessions_scanned == 2
    assert len(turns_json(cat, API)["turns"]) == 3 and file_snapshot(root) == before
    again = Scanner(cat, claude, agents={"copilot": root}).scan()
    assert (again.sessions_scanned, again.sessions_unchanged) == (0, 2)
    log = root / "session-state" / API / "events.jsonl"
    text = log.read_text().rsplit("\n", 1)[0] + "\n"
    log.write_text(text + json.dumps({"type": "user.message", "data": {"content": "Now add a test"},
                                      "id": "x", "timestamp": "2026-01-15T11:00:00.000Z", "parentId": None}) + "\n")
    grown = Scanner(cat, claude, agents={"copilot": root}).scan()
    assert (grown.sessions_scanned, grown.sessions_unchanged) == (1, 1)
    assert turns_json(cat, API)["turns"][-1]["prompt"] == "Now add a test"
    listed = {s["name"]: s for s in source_status(cat, claude, environ={"COPILOT_HOME": str(root)})}
    assert listed["copilot"] == {"name": "copilot", "label": "GitHub Copilot CLI", "root": str(root), "found": True,
                                 "enabled": True, "sessions": 2}


def test_install_writes_copilots_mcp_config(tmp_path: Path) -> None:
    config = tmp_path / ".copilot" / "mcp-config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"mcpServers": {"playwright": {"type": "local", "command": "npx", "tools": ["*"]}}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JACKED_", "COPILOT_"))}
    env.update(HOME=str(tmp_path), JACKED_HOME=str(tmp_path / "jh"), CLAUDE_CONFIG_DIR=str(tmp_path / ".claude"))
    jacked = str(Path(sys.executable).parent / "jacked")
    done = subprocess.run([jacked, "install", "--agent", "copilot"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    servers = json.loads(config.read_text())["mcpServers"]
    assert set(servers) == {"playwright", "jacked"}
    assert servers["jacked"]["type"] == "local" and servers["jacked"]["tools"] == ["*"] and servers["jacked"]["args"][-1] == "mcp"
    gone = subprocess.run([jacked, "uninstall", "--agent", "copilot"], env=env, capture_output=True, text=True, timeout=120)
    assert gone.returncode == 0, gone.stderr
    assert set(json.loads(config.read_text())["mcpServers"]) == {"playwright"}


def test_writer_round_trip(tmp_path: Path) -> None:
    from tests.test_source_qwen import SPEC  # the neutral spec the agents' writers share

    writer = agent_module("write_copilot")
    root = tmp_path / ".copilot"
    writer.write_session(root, SPEC)
    (s,) = _read_all(root).values()
    assert s.session_id == SPEC["session_id"] and s.cwd == SPEC["cwd"] and s.title == SPEC["title"]
    assert [t.prompt for t in s.turns] == [t["prompt"] for t in SPEC["turns"]]
    for turn, want in zip(s.turns, SPEC["turns"]):
        assert [i.is_error for i in turn.invocations] == [c["error"] for c in want["calls"]]
        assert (turn.metrics.input_tokens, turn.metrics.output_tokens) == (want["input_tokens"], want["output_tokens"])
        assert turn.assistant_text == want["assistant"]
    assert (s.turns[0].metrics.lines_added, s.turns[0].metrics.lines_removed) == (4, 0)
    assert counter.count(root)["by_session"][SPEC["session_id"]]["errors"] == 1
