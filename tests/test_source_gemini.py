"""Gemini CLI as a transcript source: reading checked against an independent count, hand-checked
details of real and hand-written sessions, a scan into the catalog, the spec writer read back,
and the MCP registration (`jacked install --agent gemini`)."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from jacked.catalog import Catalog
from jacked.errors import JackedError
from jacked.ingest.scan import Scanner
from jacked.sources.base import FoundSession
from jacked.sources.gemini.source import GeminiSource
from jacked.sources.model import Session
from jacked.sources.registry import SOURCES
from jacked.surfaces.agent_install import gemini as gemini_install

HERE = Path(__file__).parent
FIX = HERE / "fixtures" / "gemini"
HAND = FIX / "hand" / ".gemini"
REAL = FIX / "real" / ".gemini"
SOURCE = GeminiSource()

WEBAPP = "aaaa1111-0000-4000-8000-000000000001"
SHOP = "bbbb2222-0000-4000-8000-000000000002"
NOTES = "cccc3333-0000-4000-8000-000000000003"
CUT = "eeee5555-0000-4000-8000-000000000005"
LOGGED = "ffff6666-0000-4000-8000-000000000006"
FLAT_SUB = "9999aaaa-0000-4000-8000-000000000009"
DECLINED = "7777bbbb-0000-4000-8000-000000000007"
POMODORO = "0b23371a-ce2e-4b1c-81a0-44af5d94d9ce"
AIM = "95ee2bc8-b4a1-47fb-8db8-b0cfe91bee88"


def _module(name: str) -> ModuleType:
    path = HERE / "agents" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"gemini_test_{name}", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


counter = _module("count_gemini")
writer = _module("write_gemini")


def _found(root: Path) -> list[FoundSession]:
    errors: list[str] = []
    found = list(SOURCE.discover(root, errors))
    assert errors == []
    return found


def _read_all(root: Path) -> dict[str, Session]:
    out = {}
    for f in _found(root):
        s = SOURCE.read(f)
        assert s.session_id == f.session_id
        out[s.session_id] = s
    return out


@pytest.fixture(scope="module")
def hand() -> dict[str, Session]:
    return _read_all(HAND)


@pytest.fixture(scope="module")
def real() -> dict[str, Session]:
    return _read_all(REAL)


# --------------------------------------------------------------------------- against the independent count
@pytest.mark.parametrize("root", [HAND, REAL], ids=["hand", "real"])
def test_counts_match_the_independent_count(root: Path) -> None:
    expected = counter.count(root)
    sessions = _read_all(root)
    assert len(sessions) == expected["sessions"]
    assert set(sessions) == set(expected["by_session"])
    for sid, want in expected["by_session"].items():
        s = sessions[sid]
        turns = [t for t in s.turns if t.index >= 1]
        calls = [i for t in s.turns for i in t.invocations]
        assert len(turns) == want["turns"], sid
        assert len(calls) == want["tool_calls"], sid
        assert sum(i.is_error for i in calls) == want["errors"], sid
        assert sum(t.metrics.input_tokens for t in s.turns) == want["input_tokens"], sid
        assert sum(t.metrics.output_tokens for t in s.turns) == want["output_tokens"], sid
        assert sum(t.metrics.cache_read_tokens for t in s.turns) == want["cache_read_tokens"], sid
        feedback = [e.data["kind"] for t in s.turns for e in t.events if e.type == "feedback"]
        assert (feedback.count("tool_rejected"), feedback.count("interrupted")) == (
            want["rejected"], want["interrupted"]), sid
        assert s.message_lines > 0
    # the figures as of writing, so a change in either reading shows
    summary = {k: expected[k] for k in ("sessions", "turns", "tool_calls", "errors", "rejected", "interrupted")}
    assert summary == ({"sessions": 7, "turns": 14, "tool_calls": 20, "errors": 5, "rejected": 1, "interrupted": 1}
                       if root == HAND else
                       {"sessions": 2, "turns": 7, "tool_calls": 20, "errors": 3, "rejected": 0, "interrupted": 0})


# --------------------------------------------------------------------------- real sessions
def test_real_pomodoro_session(real: dict[str, Session]) -> None:
    s = real[POMODORO]
    assert s.file.endswith("chats/session-2025-10-21T20-04-0b23371a.json") and os.path.isabs(s.file)
    # the project folder is the SHA-256 of the root: recovered from the written files' paths
    assert s.cwd == "/Users/yoavfarhi/dev/pomodoro/gemini" and s.repo_name == "gemini"
    assert (s.started_at, s.ended_at) == ("2025-10-21T20:04:20.819Z", "2025-10-21T20:08:49.642Z")
    assert s.models == ["gemini-2.5-pro"] and s.version_first is None
    assert [t.prompt for t in s.turns][1:4] == ["add smooth transitions between states", "add a Pause/Resume feature",
                                                "Anything else we should add?"]
    first = s.turns[0]
    assert first.prompt.startswith("Build a simple Pomodoro timer web app")
    # three write_file calls in one response: a parallel batch
    assert [(i.tool_name, i.parallel_group) for i in first.invocations] == [("write_file", 1), ("write_file", 2),
                                                                             ("write_file", 3)]
    assert first.invocations[0].file_path == "/Users/yoavfarhi/dev/pomodoro/gemini/index.html"
    assert first.invocations[0].lines_added == 27 and first.invocations[0].file_created
    # tokens of a response count once; the first response's usage was recorded as zeros
    assert (first.metrics.input_tokens, first.metrics.output_tokens, first.metrics.cache_read_tokens) == (
        7269 - 5811, 46 + 58, 5811)
    assert first.metrics.api_calls == 1
    edit = s.turns[1].invocations[0]
    assert (edit.tool_name, edit.lines_added, edit.lines_removed) == ("replace", 1, 0)
    assert "transition: background-color 0.5s ease;" in (edit.diff or "")
    failed = [i for t in s.turns for i in t.invocations if i.is_error]
    assert len(failed) == 1 and failed[0].tool_name == "replace"
    assert failed[0].result_brief.startswith("A secondary check by an LLM determined that no changes were necessary")
    assert s.turns[4].metrics.tool_error_count == 1 and s.turns[4].metrics.lines_added == 50


def test_real_benchmark_session(real: dict[str, Session]) -> None:
    s = real[AIM]
    assert s.cwd == "/home/kingb/aim_benchmarks/django_control_pro"
    assert [t.prompt for t in s.turns] == ["hello", "please read the task.md file"]
    work = s.turns[1]
    assert work.metrics.tool_usage == {"read_file": 1, "run_shell_command": 4, "write_file": 3, "grep_search": 1}
    shells = [i for i in work.invocations if i.tool_name == "run_shell_command"]
    assert [i.command for i in shells] == ["cat test_url.py test_url2.py"] + ["python3 test_aggregation.py"] * 3
    # Gemini CLI records these as "success"; their output says "Exit Code: 1"
    assert [i.is_error for i in shells] == [False, True, False, True]
    assert work.metrics.bash_error_count == 2
    assert "ModuleNotFoundError: No module named 'django'" in shells[1].result_brief
    assert work.invocations[0].file_path == "TASK.md" and work.metrics.files_read == ["TASK.md"]
    assert all(i.parallel_group == 0 for i in work.invocations)  # one call per response
    assert [i.sequence for i in work.invocations] == list(range(9))
    assert s.turns[0].assistant_text.startswith("Hello. I am ready to operate")


# --------------------------------------------------------------------------- hand-written: .json generation
def test_legacy_json_session(hand: dict[str, Session]) -> None:
    s = hand[WEBAPP]
    assert s.cwd == "/home/dev/webapp" and s.repo_name == "webapp"  # by hash, from the tool-call paths
    assert s.title == "Fix the login test's password encoding"
    assert [t.kind for t in s.texts] == ["ai_title"]
    assert (s.lines, s.lines_malformed, s.lines_unknown, s.message_lines) == (12, 0, 1, 8)
    assert s.models == ["gemini-2.5-pro", "gemini-2.5-flash"]
    t1, t2 = s.turns
    assert t1.prompt == "Fix the failing login test"
    assert t2.prompt == "@README.md add a section about the fix"  # the files @ pulled in are not the prompt
    reads = t1.invocations[:2]
    assert [(i.tool_name, i.parallel_group, i.sequence) for i in reads] == [("read_file", 1, 0), ("read_file", 2, 0)]
    assert reads[1].file_path == "/home/dev/webapp/app/login.py"
    shell = t1.invocations[2]
    assert (shell.command, shell.is_error) == ("pytest tests/test_login.py", True)
    assert shell.description == "Run the login test"
    edit = t1.invocations[3]
    assert (edit.lines_added, edit.lines_removed) == (3, 1)  # from the diff Gemini CLI showed
    assert edit.before_hash and edit.after_hash and edit.before_hash != edit.after_hash
    assert t1.metrics.files_modified == ["/home/dev/webapp/app/login.py"]
    assert t1.metrics.bash_commands == ["pytest tests/test_login.py"] * 2 and t1.metrics.bash_error_count == 1
    assert (t1.metrics.input_tokens, t1.metrics.output_tokens, t1.metrics.cache_read_tokens,
            t1.metrics.api_calls) == (2100, 175, 6500, 5)
    assert t1.assistant_text == "The login test passes now." and not t1.interrupted
    assert t1.duration_ms == 25_000 and t1.duration_source == "timestamps"
    write, bad_edit, search = t2.invocations
    assert (write.tool_name, write.lines_added, write.file_created) == ("write_file", 4, False)  # overwrote
    assert bad_edit.is_error and "0 occurrences found" in bad_edit.result_brief
    assert search.is_error and search.tool_name == "google_web_search"  # cancelled
    assert t2.interrupted and t2.metrics.tool_error_count == 2
    # the call stopped while it ran and the notice after it: one interruption
    assert [(e.type, e.data.get("output") or e.data["kind"]) for e in t2.events] == [
        ("feedback", "interrupted"), ("command_output", "Request cancelled."),
        ("command_output", "[API Error: You exceeded your current quota]")]
    assert t2.events[0].data["tool_name"] == "google_web_search"


# --------------------------------------------------------------------------- hand-written: .jsonl generation
def test_jsonl_session(hand: dict[str, Session]) -> None:
    s = hand[SHOP]
    assert s.file.endswith("tmp/shop/chats/session-2026-05-02T09-15-bbbb2222.jsonl")
    assert s.cwd == "/home/dev/shop" and s.project_dir == "shop"  # from .project_root
    assert (s.started_at, s.ended_at) == ("2026-05-02T09:15:00.000Z", "2026-05-02T09:19:40.000Z")
    # a line that does not decode and the last line still being written; one record of no known shape
    assert (s.lines_malformed, s.lines_unknown) == (2, 1)
    assert [t.prompt for t in s.turns] == ["Add a discount field to the cart", "/review src/cart.py",
                                           "Make the discount a percentage", "Make the discount a fixed amount instead",
                                           "Plan the checkout flow"]  # a rewound prompt stays: it was sent and answered
    t1, t2, t3, t4, t5 = s.turns
    assert [i.tool_name for i in t1.invocations] == ["glob", "grep_search", "replace", "run_shell_command"]
    assert [i.parallel_group for i in t1.invocations] == [1, 2, 0, 0]
    # g1 was written three times as it grew: its tokens count once
    assert t1.metrics.api_calls == 4
    assert (t1.metrics.input_tokens, t1.metrics.output_tokens, t1.metrics.cache_read_tokens) == (5200, 245, 16600)
    edit = t1.invocations[2]
    assert (edit.file_path, edit.lines_added, edit.lines_removed) == ("/home/dev/shop/src/cart.py", 1, 0)
    assert t1.invocations[3].is_error and t1.metrics.bash_error_count == 1
    assert t1.invocations[0].result_brief.endswith("/home/dev/shop/src/cart.py")
    assert t2.is_slash_command  # what was typed (displayContent), not the expanded command
    call = t2.invocations[0]
    assert (call.tool_name, call.agent_id) == ("invoke_agent", "agent-0001")
    assert call.subagent_type == "codebase_investigator"
    (sub,) = s.subagents
    assert (sub.agent_id, sub.tool_use_id, sub.turn_index, sub.agent_type) == ("agent-0001", "invoke_agent_5", 2,
                                                                               "codebase_investigator")
    assert (sub.prompt, sub.summary_text, sub.tool_call_count, sub.tool_usage) == (
        "Review src/cart.py", "No bugs in src/cart.py", 1, {"read_file": 1})
    assert t3.assistant_text == "Shall I store it as 0-100 or 0-1?"
    # compression: its <state_snapshot> is the compaction summary, the model's "Got it" is no answer
    assert t4.compacted and [e.type for e in t4.events] == ["compaction", "command_output"]
    assert s.lines_duplicate == 2  # the kept history recorded again after the summary: not turns again
    assert t4.assistant_text == "It already is a fixed amount."
    summary = [t for t in s.texts if t.kind == "compact_summary"]
    assert len(summary) == 1 and summary[0].turn_index == 4 and "fixed-amount discount" in summary[0].text
    assert s.title == "Add a discount field to the cart"
    assert [i.tool_name for i in t5.invocations] == ["enter_plan_mode", "write_file", "exit_plan_mode"]
    assert s.plan == "# Checkout plan\n1. Validate the cart\n2. Apply the discount\n3. Charge\n"
    assert s.plan_source == "file"
    assert t5.assistant_text == "The plan is ready for your review."  # the truncated last line is not read yet


def test_resumed_json_is_read_from_its_jsonl_and_other_layouts(hand: dict[str, Session]) -> None:
    notes = hand[NOTES]
    assert notes.file.endswith("session-2026-04-01T08-00-cccc3333.jsonl")
    assert notes.cwd == "/home/dev/notes"  # projects.json names the folder
    assert [t.prompt for t in notes.turns] == ["List my notes", "Add 'buy milk' to todo.md"]
    assert notes.turns[1].metrics.lines_added == 1 and notes.turns[1].metrics.lines_removed == 0
    cut = hand[CUT]  # a .json document cut short (being written): the messages before the cut
    assert [t.prompt for t in cut.turns] == ["Summarise todo.md"]
    assert cut.lines_malformed == 1 and cut.turns[0].invocations[0].tool_name == "read_file"
    assert "dddd4444-0000-4000-8000-000000000004" not in hand  # an empty file is no session
    flat = hand[FLAT_SUB]  # a 2026-03 subagent chat beside the sessions: read as a session of its own
    assert [t.prompt for t in flat.turns] == ["Find notes about groceries"]


def test_session_known_only_from_the_prompt_log(hand: dict[str, Session]) -> None:
    found = {f.session_id: f for f in _found(HAND)}
    logged = found[LOGGED]
    assert logged.location.endswith("logs.json#" + LOGGED) and logged.extra["fallback"] is True
    assert found[WEBAPP].extra["kind"] == "chat"  # its logged prompt is not a second session
    s = hand[LOGGED]
    assert [(t.index, t.prompt, t.is_slash_command) for t in s.turns] == [
        (1, "explain the build script", False), (2, "/quit", True)]
    assert s.started_at == "2025-08-01T09:00:00.000Z" and s.cwd is None and s.message_lines == 2


# --------------------------------------------------------------------------- robustness
def test_bad_content_never_raises(tmp_path: Path) -> None:
    chats = tmp_path / ".gemini" / "tmp" / "p" / "chats"
    chats.mkdir(parents=True)
    (chats / "session-a.jsonl").write_text(
        '{"sessionId":"s-a","projectHash":"x"}\n[1,2]\n"text"\n{"id":"u","type":"user","content":{"text":"hi"}}\n'
        '{"id":"g","type":"gemini","content":null,"toolCalls":[null,{"name":5,"args":[],"result":7,"status":1}],'
        '"tokens":{"input":"x","output":-3}}\n{"id":"v","type":"user","content":[{"text":"/"},"x",3]}\n')
    big = "x" * 3_000_000
    (chats / "session-b.json").write_text(json.dumps({"sessionId": "s-b", "messages": [
        {"id": "u", "type": "user", "content": "run it"},
        {"id": "g", "type": "gemini", "content": "", "toolCalls": [
            {"id": "c", "name": "run_shell_command", "args": {"command": "yes"}, "status": "success",
             "result": [{"functionResponse": {"id": "c", "name": "run_shell_command", "response": {"output": big}}}]}]},
        "not a message", {"id": 3}]}))
    (chats / "session-c.json").write_text("[]")
    sessions = {}
    for f in _found(tmp_path / ".gemini"):
        sessions[f.session_id] = SOURCE.read(f)
    assert set(sessions) == {"s-a", "s-b"}  # "[]" holds no session
    a = sessions["s-a"]
    assert [t.prompt for t in a.turns] == ["hi", "/x"] and a.lines_malformed == 2  # lines that are no objects
    assert a.turns[0].invocations[0].tool_name == "5"
    b = sessions["s-b"]
    brief = b.turns[0].invocations[0].result_brief
    assert len(brief) < 3000 and b.lines_unknown == 2


def test_default_root_follows_gemini_cli_home(tmp_path: Path) -> None:
    assert SOURCE.default_root({"GEMINI_CLI_HOME": str(tmp_path)}) == tmp_path / ".gemini"
    assert SOURCE.default_root({"HOME": str(tmp_path / "h")}) == tmp_path / "h" / ".gemini"
    assert SOURCES["gemini"] is not None and SOURCES["gemini"].label == "Gemini CLI"


# --------------------------------------------------------------------------- through the scanner
def test_scan_into_the_catalog(tmp_path: Path) -> None:
    root = tmp_path / "gemini-home" / ".gemini"
    shutil.copytree(HAND, root)
    claude = tmp_path / "claude"
    claude.mkdir()
    cat = Catalog(tmp_path / "catalog.db")
    first = Scanner(cat, claude, agents={"gemini": root}).scan()
    assert first.errors == []
    rows = {r["session_id"]: r for r in cat.list_sessions()}
    assert set(rows) == {WEBAPP, SHOP, NOTES, CUT, LOGGED, FLAT_SUB, DECLINED}
    assert {r["agent"] for r in rows.values()} == {"gemini"}
    assert rows[SHOP]["cwd"] == "/home/dev/shop" and rows[SHOP]["repo_name"] == "shop"
    assert len(cat.turn_rows(SHOP)) == 5 and len(cat.invocation_rows(SHOP)) == 8

    again = Scanner(cat, claude, agents={"gemini": root}).scan()
    assert again.sessions_unchanged == 7 and again.sessions_scanned == 0

    # the session still being written gets its last line, then a new prompt
    chat = root / "tmp" / "shop" / "chats" / "session-2026-05-02T09-15-bbbb2222.jsonl"
    with chat.open("a") as fh:
        fh.write('ckout page."}\n{"id":"u6","timestamp":"2026-05-02T09:30:00.000Z","type":"user",'
                 '"content":[{"text":"Now build the checkout page"}]}\n')
    grown = Scanner(cat, claude, agents={"gemini": root}).scan()
    assert grown.sessions_scanned == 1 and grown.sessions_unchanged == 6
    turns = cat.turn_rows(SHOP)
    assert len(turns) == 6 and turns[-1]["prompt"] == "Now build the checkout page"
    assert SOURCE.read(next(f for f in _found(root) if f.session_id == SHOP)).lines_malformed == 1


# --------------------------------------------------------------------------- the spec writer, read back
SPEC = {
    "session_id": "5bec0000-1111-4222-8333-444455556666", "cwd": "/work/generated/api",
    "started_at": "2026-02-01T12:00:00Z",
    "model": "gemini-2.5-pro", "title": "Harden the API",
    "turns": [
        {"prompt": "Why does /health fail?", "at": "2026-02-01T12:00:10Z", "assistant": "The route was missing.",
         "input_tokens": 1500, "output_tokens": 120,
         "calls": [
             {"batch": 0, "kind": "read", "path": "/work/generated/api/app.py", "command": None, "content": None,
              "old": None, "new": None, "output": "app = Flask(__name__)\n", "error": False, "exit_code": None},
             {"batch": 0, "kind": "search", "path": "/work/generated/api", "command": "health", "content": None,
              "old": None, "new": None, "output": "No matches", "error": False, "exit_code": None},
             {"batch": 1, "kind": "shell", "path": None, "command": "curl -f localhost:8000/health", "content": None,
              "old": None, "new": None, "output": "curl: (22) 404", "error": True, "exit_code": 22},
             {"batch": 2, "kind": "edit", "path": "/work/generated/api/app.py", "command": None, "content": None,
              "old": "app = Flask(__name__)\n",
              "new": "app = Flask(__name__)\n\n@app.get('/health')\ndef health():\n    return 'ok'\n",
              "output": "", "error": False, "exit_code": None}]},
        {"prompt": "Add a README", "at": "2026-02-01T12:05:00Z", "assistant": "Done.", "input_tokens": 900,
         "output_tokens": 40,
         "calls": [
             {"batch": 0, "kind": "write", "path": "/work/generated/api/README.md", "command": None,
              "content": "# api\n\nRun `flask run`.\n", "old": None, "new": None, "output": "", "error": False,
              "exit_code": None},
             {"batch": 1, "kind": "edit", "path": "/work/generated/api/NOTES.md", "command": None, "content": None,
              "old": "x", "new": "y", "output": "Failed to edit, 0 occurrences found", "error": True,
              "exit_code": None}]},
        {"prompt": "Thanks", "at": "2026-02-01T12:07:00Z", "assistant": "You're welcome.", "input_tokens": 300,
         "output_tokens": 5, "calls": []},
    ],
}
KINDS = {"read": "read_file", "write": "write_file", "edit": "replace", "shell": "run_shell_command",
         "search": "grep_search"}


@pytest.mark.parametrize("layout,project", [("jsonl", "slug"), ("json", "hash")])
def test_writer_round_trip(tmp_path: Path, layout: str, project: str) -> None:
    root = tmp_path / ".gemini"
    paths = writer.write_session(root, SPEC, layout=layout, project=project)
    assert len(paths) == 1 and paths[0].suffix == "." + layout
    (s,) = _read_all(root).values()
    assert s.session_id == SPEC["session_id"] and s.cwd == SPEC["cwd"] and s.title == SPEC["title"]
    assert s.models == [SPEC["model"]] and s.started_at == "2026-02-01T12:00:00.000Z"
    assert [t.prompt for t in s.turns] == [t["prompt"] for t in SPEC["turns"]]
    for turn, want in zip(s.turns, SPEC["turns"]):
        assert [i.tool_name for i in turn.invocations] == [KINDS[c["kind"]] for c in want["calls"]]
        assert [i.is_error for i in turn.invocations] == [c["error"] for c in want["calls"]]
        batches = [c["batch"] for c in want["calls"]]
        assert [i.parallel_group > 0 for i in turn.invocations] == [batches.count(b) > 1 for b in batches]
        assert (turn.metrics.input_tokens, turn.metrics.output_tokens) == (want["input_tokens"], want["output_tokens"])
        assert turn.assistant_text == want["assistant"]
    t1, t2 = s.turns[:2]
    assert t1.invocations[2].command == "curl -f localhost:8000/health"
    assert (t1.metrics.lines_added, t1.metrics.lines_removed) == (4, 0)
    assert t2.invocations[0].file_created and t2.metrics.lines_added == 3
    assert counter.count(root)["by_session"][SPEC["session_id"]]["errors"] == 2


# --------------------------------------------------------------------------- MCP registration
def _env(home: Path) -> dict[str, str]:
    return {"GEMINI_CLI_HOME": str(home), "HOME": "/nonexistent"}


EXE = ["/opt/jacked/bin/jacked"]


def test_install_adds_the_server_and_keeps_the_rest(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    before = {"security": {"auth": {"selectedType": "oauth-personal"}}, "mcpServers": {"other": {"command": "x"}}}
    settings.write_text(json.dumps(before))
    assert gemini_install.install(EXE, _env(tmp_path)) == settings
    data = json.loads(settings.read_text())
    assert data["mcpServers"]["jacked"] == {"command": "/opt/jacked/bin/jacked", "args": ["mcp"]}
    assert data["security"] == before["security"] and data["mcpServers"]["other"] == {"command": "x"}
    assert json.loads((tmp_path / ".gemini" / "settings.json.jacked.bak").read_text()) == before
    written = settings.read_bytes()
    gemini_install.install(EXE, _env(tmp_path))  # idempotent
    assert settings.read_bytes() == written
    gemini_install.install(["python", "-m", "jacked"], _env(tmp_path))  # another command: updated
    assert json.loads(settings.read_text())["mcpServers"]["jacked"] == {"command": "python",
                                                                       "args": ["-m", "jacked", "mcp"]}
    assert gemini_install.uninstall(_env(tmp_path)) == settings
    assert json.loads(settings.read_text()) == before
    assert gemini_install.uninstall(_env(tmp_path)) is None  # nothing left to take out


def test_install_into_a_new_file_and_uninstall_removes_it(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    gemini_install.install(EXE, _env(tmp_path))
    assert json.loads(settings.read_text()) == {"mcpServers": {"jacked": {"command": EXE[0], "args": ["mcp"]}}}
    assert not (tmp_path / ".gemini" / "settings.json.jacked.bak").exists()
    gemini_install.uninstall(_env(tmp_path))
    assert not settings.exists()


def test_install_writes_through_a_symlink(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "gemini-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"ui": {"theme": "Dracula"}}')
    link = tmp_path / ".gemini" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(dotfiles)
    gemini_install.install(EXE, _env(tmp_path))
    assert link.is_symlink()
    assert json.loads(dotfiles.read_text())["mcpServers"]["jacked"]["args"] == ["mcp"]
    gemini_install.uninstall(_env(tmp_path))
    assert link.is_symlink() and json.loads(dotfiles.read_text()) == {"ui": {"theme": "Dracula"}}


@pytest.mark.parametrize("text,message", [
    ('{\n  // my theme\n  "ui": {"theme": "Dracula"}\n}', "has comments"),
    ('{"ui": {"theme": "Dracula",}', "invalid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"mcpServers": []}', '"mcpServers" is not an object'),
    ('{"mcpServers": {"jacked": {"httpUrl": "https://example.test/mcp"}}}', "is not jacked's"),
])
def test_install_refuses_a_file_it_cannot_keep(tmp_path: Path, text: str, message: str) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(text)
    with pytest.raises(JackedError) as e:
        gemini_install.install(EXE, _env(tmp_path))
    assert message in str(e.value) and "\n" not in str(e.value)
    assert settings.read_text() == text and not (settings.parent / "settings.json.jacked.bak").exists()


def test_declined_call_is_a_refusal_not_an_interruption(hand: dict[str, Session]) -> None:
    # Gemini CLI's "User did not allow tool call" (status `cancelled`): the turn ends with it
    (turn,) = hand[DECLINED].turns
    assert turn.interrupted and turn.invocations[0].is_error
    assert [(e.type, e.data["kind"], e.data["target"]) for e in turn.events] == [
        ("feedback", "tool_rejected", "rm -rf migrations/old")]
