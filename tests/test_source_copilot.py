"""GitHub Copilot as a source: the CLI's session event logs (folder and legacy file layouts) and
VS Code's Copilot Chat sessions (`.json` versions 1-3, the `.jsonl` mutation log) read against
independent counts and hand-checked details; subagents, decisions, the scanner over both,
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
from jacked.ingest.agents import source_roots, source_status
from jacked.ingest.scan import Scanner
from jacked.query.history import turns_json
from jacked.sources.copilot.source import CopilotSource
from jacked.sources.model import Session
from jacked.sources.registry import SOURCES
from kit import agent_module, assert_agrees_with_count, file_snapshot, read_each

HERE = Path(__file__).parent
HAND = HERE / "fixtures" / "copilot" / "hand" / ".copilot"
REAL = HERE / "fixtures" / "copilot" / "real" / ".copilot"  # Copilot CLI 1.0.10's own logs, March 2026
VSCODE = HERE / "fixtures" / "copilot" / "vscode"  # an XDG_CONFIG_HOME: Code/User and Code - Insiders/User
CODE, INSIDERS = VSCODE / "Code" / "User", VSCODE / "Code - Insiders" / "User"
PANEL, OLD, MONO, EMPTY = ("5b0c8d2e-1f3a-4b6c-9d7e-8f9a0b1c2d3e", "0a5b3c7d-6e8f-4a1b-8c3d-4e5f6a7b8c9d",
                           "7d2e0f4a-3b5c-4d8e-9f0a-1b2c3d4e5f6a", "8e3f1a5b-4c6d-4e9f-8a1b-2c3d4e5f6a7b")
CUT = "9f4a2b6c-5d7e-4f0a-9b2c-3d4e5f6a7b8c"
FIXING, BREAKDOWN = "8baa78ec-b203-4c7f-b1d3-c1170ae84b7d", "07c40cd0-ff51-4d6e-bdcd-ac2f90877203"
SOURCE = CopilotSource()
API = "3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b"
LEGACY = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"

counter = agent_module("count_copilot")
vscode_counter = agent_module("count_copilot_vscode")


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
    assert SOURCES["copilot"].label == "GitHub Copilot"
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
    listed = {s["name"]: s for s in source_status(cat, claude, environ={"COPILOT_HOME": str(root),
                                                                         "JACKED_VSCODE_DIR": str(tmp_path / "none")})}
    assert listed["copilot"] == {"name": "copilot", "label": "GitHub Copilot", "root": str(root), "found": True,
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


# ------------------------------------------------------------------------------ VS Code's Copilot Chat
def _read_chats(user: Path) -> tuple[dict[str, Session], list[str]]:
    """Every chat under an editor's user folder that reads, and the errors of those that do not."""
    return read_each(SOURCE, user)


@pytest.mark.parametrize("user", [CODE, INSIDERS], ids=["code", "insiders"])
def test_vscode_chats_agree_with_count(user: Path) -> None:
    sessions, errors = _read_chats(user)
    expected = vscode_counter.count(user)
    assert_agrees_with_count(sessions, expected["by_session"])
    assert [e.split(": ")[0] for e in errors] == expected["unreadable"]
    for sid, want in expected["by_session"].items():
        edited = {i.file_path for t in sessions[sid].turns for i in t.invocations if i.tool_name == "edit"}
        assert len(edited) == want["files_edited"], sid


def test_vscode_chat_details() -> None:
    sessions, errors = _read_chats(CODE)
    assert set(sessions) == {PANEL, OLD, MONO, EMPTY} and len(errors) == 1 and CUT in errors[0]
    panel = sessions[PANEL]
    assert (panel.cwd, panel.repo_name, panel.title) == ("/home/dev/shop-api", "shop-api", "Checkout test fails on CI")
    assert panel.models == ["copilot/gpt-4.1", "copilot/claude-sonnet-4"]
    first, second, third = panel.turns
    assert first.prompt == "Why does the checkout test fail on CI?" and first.started_at == "2026-01-01T10:00:00.000Z"
    assert first.duration_ms == 42_000 and first.assistant_text == (
        "Let me look at the test and run it.\n\nThe rates table in `rates.py` has no EUR entry on CI. I added it:"
        "\n\nRun the test again to confirm.")
    read, run, edit = first.invocations
    assert (read.tool_name, read.file_path, read.is_error) == ("copilot_readFile", "/home/dev/shop-api/tests/checkout_test.py", False)
    assert (run.command, run.is_error, run.sequence, run.position) == ("pytest tests/checkout_test.py -x", True, 0, 2)
    assert "KeyError: 'EUR'" in run.result_brief
    # text came between the calls and the edit: the edit is the next model response
    assert (edit.file_path, edit.sequence, edit.lines_added, edit.lines_removed) == ("/home/dev/shop-api/shop/rates.py", 1, 3, 2)
    assert first.metrics.bash_commands == ["pytest tests/checkout_test.py -x"]
    assert second.interrupted and [e.data["kind"] for e in second.events] == ["tool_rejected", "interrupted"]
    assert second.events[0].data["target"] == "rm -rf .cache" and second.invocations[0].is_error
    assert [e.data["output"] for e in third.events] == ["Sorry, your request failed. Rate limit exceeded."]
    old = sessions[OLD]  # version 1: a bare string prompt, bare markdown, `responseErrorDetails`
    assert [t.prompt for t in old.turns] == ["How do I pin the uvicorn version?", "And for the dev server?"]
    assert old.turns[0].assistant_text == "Add `uvicorn==0.30.1` to requirements.txt." and old.title is None
    assert old.turns[1].events[0].data["output"] == "Copilot is offline"
    mono = sessions[MONO]  # the `.jsonl` replayed (the older `.json` beside it not read), its cut last line counted
    assert (mono.cwd, mono.title, mono.lines, mono.lines_malformed) == ("/home/dev/mono", "Billing client users", 6, 1)
    assert mono.file.endswith(".jsonl") and [t.prompt for t in mono.turns][1] == "Which ones import the billing client?"
    assert mono.turns[1].assistant_text == "Two of them:" and len(mono.turns[1].invocations) == 1
    empty = sessions[EMPTY]  # an empty window's chat, version 2
    assert (empty.cwd, empty.title, empty.turns[0].is_slash_command) == (None, "Python descriptors", True)
    (insider,) = _read_chats(INSIDERS)[0].values()  # `isConfirmed` as a ConfirmedReason
    assert (insider.cwd, [i.is_error for i in insider.turns[0].invocations]) == ("/srv/infra", [False, True, True])
    assert [(e.type, e.data["kind"], e.data["target"], e.data.get("reason")) for e in insider.turns[0].events] == [
        ("decision", "approval", "/srv/infra/worker/Dockerfile", None),
        ("feedback", "tool_rejected", "docker push worker", None),
        ("feedback", "tool_rejected", "docker rmi worker:old", "skipped")]


def test_vscode_bad_content_never_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chats = tmp_path / "User" / "workspaceStorage" / "h" / "chatSessions"
    chats.mkdir(parents=True)
    (chats.parent / "workspace.json").write_text("{not json")
    (chats / "a.json").write_text(json.dumps({"sessionId": "a", "requests": [
        7, {"message": {"text": 5}, "response": [1, None, {"kind": "toolInvocationSerialized", "resultDetails": "x"},
                                                  {"kind": "textEditGroup", "edits": [[{"range": 3}], 5]}],
            "result": {"errorDetails": [], "timings": {"totalElapsed": "x"}}, "timestamp": "soon"}]}))
    (chats / "b.jsonl").write_text('{"kind":0,"v":{"requests":[]}}\n{"kind":1,"k":["requests",9,"x"],"v":1}\n'
                                   '{"kind":2,"k":["nope","deeper"],"v":[1]}\n[1]\n{"kind":1,"k":[]}\n')
    (chats / "c.json").write_text("[1, 2]")
    (chats / "d.jsonl").write_text("\n")
    sessions, errors = _read_chats(tmp_path / "User")
    assert set(sessions) == {"a", "b"} and len(errors) == 2
    a = sessions["a"]
    assert a.cwd is None and len(a.turns) == 1 and a.turns[0].prompt is None and len(a.turns[0].invocations) == 2
    assert (sessions["b"].lines, sessions["b"].lines_malformed) == (5, 4)
    monkeypatch.setattr("jacked.sources.copilot.vscode.MAX_FILE_BYTES", 5)  # a huge file: skipped, said so
    skipped: list[str] = []
    assert [f.session_id for f in SOURCE.discover(tmp_path / "User", skipped)] == ["d"]
    assert len(skipped) == 3 and all("skipped" in e for e in skipped)


def test_vscode_chats_are_copilot_sessions_scanned_with_the_cli(tmp_path: Path) -> None:
    home, config = tmp_path / ".copilot", tmp_path / "config"
    shutil.copytree(HAND, home)
    shutil.copytree(VSCODE, config)
    before = file_snapshot(config)
    env = {"COPILOT_HOME": str(home), "XDG_CONFIG_HOME": str(config), "HOME": str(tmp_path / "nohome")}
    roots = source_roots(environ=env)
    assert roots["copilot"] == [home, config / "Code" / "User", config / "Code - Insiders" / "User"]
    claude = tmp_path / "claude"
    claude.mkdir()
    cat = Catalog(tmp_path / "catalog.db")
    first = Scanner(cat, claude, agents=roots).scan()
    assert first.sessions_scanned == 2 + 4 + 1 and first.agents["copilot"]["skipped"] == 1
    assert len(first.errors) == 1 and CUT in first.errors[0] and file_snapshot(config) == before
    assert [t["prompt"] for t in turns_json(cat, PANEL)["turns"]][0] == "Why does the checkout test fail on CI?"
    again = Scanner(cat, claude, agents=roots).scan()
    assert (again.sessions_scanned, again.sessions_unchanged) == (0, 7)
    listed = {s["name"]: s for s in source_status(cat, claude, environ=env)}["copilot"]
    assert (listed["root"], listed["sessions"], listed["found"]) == (str(home), 7, True)
    assert listed["roots"] == [str(p) for p in roots["copilot"]]
    only_editor = {"XDG_CONFIG_HOME": str(config), "COPILOT_HOME": str(tmp_path / "absent"), "HOME": str(tmp_path)}
    alone = {s["name"]: s for s in source_status(cat, claude, environ=only_editor)}["copilot"]
    assert (alone["root"], alone["found"]) == (str(config / "Code" / "User"), True)
    assert SOURCE.roots({"JACKED_VSCODE_DIR": str(CODE), "COPILOT_HOME": "/x"}) == [Path("/x"), CODE]
