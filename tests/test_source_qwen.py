"""Qwen Code as a source: its JSONL chats and its 2025 Gemini-format files, checked against an
independent count and hand-checked details; the scanner, `status`, bad input, the spec writer and
`install --agent qwen`."""
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
from jacked.sources.base import FoundSession
from jacked.sources.model import Session
from jacked.sources.qwen.source import QwenSource
from jacked.sources.registry import SOURCES
from kit import agent_module, assert_agrees_with_count, file_snapshot, suite_mode

HERE = Path(__file__).parent
HAND = HERE / "fixtures" / "qwen" / "hand" / ".qwen"
SOURCE = QwenSource()

SHOP = "1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed"
NOTES = "6ec0bd7f-11c0-43da-975e-2a8ad9ebae0b"
LEGACY = "7d444840-9dc0-11d1-b245-5ffdce74fad2"
LOGGED = "a8098c1a-f86e-11da-bd1a-00112444be1e"


counter = agent_module("count_qwen")
writer = agent_module("write_qwen")


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


def test_counts_match_the_independent_count() -> None:
    expected = counter.count(HAND)
    assert_agrees_with_count(_read_all(HAND), expected["by_session"])
    summary = {k: expected[k] for k in ("sessions", "turns", "tool_calls", "errors", "rejected", "interrupted")}
    assert summary == {"sessions": 4, "turns": 9, "tool_calls": 8, "errors": 4, "rejected": 1, "interrupted": 0}


def test_jsonl_session(hand: dict[str, Session]) -> None:
    s = hand[SHOP]
    assert (s.cwd, s.repo_name, s.git_branch, s.version_first) == ("/home/dev/shop", "shop", "main", "0.2.1")
    assert s.title == "Fix cart total" and s.models == ["qwen3-coder-plus"]
    assert s.lines == 25 and s.lines_malformed == 1  # the last line, still being written
    assert [t.prompt for t in s.turns] == ["Why do the cart tests fail? @tests/test_cart.py",
                                           "Delete the old fixtures folder", "/compress", "Find every caller of total()"]
    first = s.turns[0]
    read, shell, edit = first.invocations
    assert (read.sequence, shell.sequence, edit.sequence) == (0, 0, 1)  # read and shell: one parallel batch
    assert (read.parallel_group, shell.parallel_group, edit.parallel_group) == (1, 2, 0)
    assert read.file_path == "/home/dev/shop/cart.py" and "def total" in (read.result_brief or "")
    assert shell.command == "pytest -q tests/test_cart.py" and shell.is_error  # "Exit Code: 1", recorded as success
    assert (edit.lines_added, edit.lines_removed) == (1, 1) and edit.diff and "+    return sum(i.price" in edit.diff
    # 12000 prompt tokens of which 8000 cached, 150 + 40 thought tokens; then 12500/12000 and 12700/12500
    assert (first.metrics.input_tokens, first.metrics.cache_read_tokens, first.metrics.output_tokens) == \
        (4000 + 500 + 200, 8000 + 12000 + 12500, 190 + 60 + 20)
    assert first.assistant_text == "The total summed the items, not their prices; fixed in cart.py."


def test_declined_call_is_feedback_and_interrupts(hand: dict[str, Session]) -> None:
    turn = hand[SHOP].turns[1]
    (call,) = turn.invocations
    assert call.is_error and turn.interrupted
    assert [(e.type, e.data) for e in turn.events] == [
        ("feedback", {"kind": "tool_rejected", "tool_name": "run_shell_command", "tool_use_id": "call_4",
                      "target": "rm -rf tests/old", "reason": None})]


def test_compression_slash_command_and_subagent(hand: dict[str, Session]) -> None:
    s = hand[SHOP]
    slash = s.turns[2]
    assert slash.is_slash_command and slash.compacted
    assert any(t.kind == "compact_summary" and "Fix the cart total" in t.text for t in s.texts)
    (sub,) = s.subagents
    task = s.turns[3].invocations[0]
    assert (sub.agent_id, sub.agent_type, sub.turn_index) == ("general-purpose-3f2a", "general-purpose", 4)
    assert sub.tool_use_id == task.tool_use_id == "call_5" and sub.description == "Find callers"
    assert sub.prompt == "List every caller of total() in /home/dev/shop"
    assert sub.summary_text == "One caller: checkout.py line 12." and sub.tool_call_count == 1
    # the subagent's call and tokens are its own, not the session's; a notification is no prompt
    assert [i.tool_name for i in s.turns[3].invocations] == ["task"]
    assert s.turns[3].assistant_text.startswith("checkout.py calls total() once")


def test_failed_call_and_a_line_that_is_not_json(hand: dict[str, Session]) -> None:
    s = hand[NOTES]
    assert s.lines_malformed == 1 and s.models == ["qwen3-coder-flash"]
    (turn,) = s.turns  # the goal's step Qwen Code sent is no prompt: its answer stays in the turn
    assert turn.invocations[0].is_error and "File not found" in (turn.invocations[0].result_brief or "")
    assert turn.assistant_text == "The goal is met."


def test_the_2025_gemini_format_and_the_prompt_log(hand: dict[str, Session]) -> None:
    old = hand[LEGACY]
    assert old.cwd == "/home/dev/legacy" and old.models == ["qwen3-coder-plus"]
    assert [t.prompt for t in old.turns] == ["List the Python files", "/quit"]
    glob, ls = old.turns[0].invocations
    assert (glob.parallel_group, ls.parallel_group) == (1, 2) and ls.is_error and not glob.is_error
    assert old.turns[0].assistant_text == "One file: app.py."  # a `qwen` message is the model's
    logged = hand[LOGGED]
    assert [t.prompt for t in logged.turns] == ["What does app.py do?", "Add a docstring"]
    # the JSONL session's prompt, logged in tmp/<hash>/logs.json too, is not a second session
    assert sum(1 for f in _found(HAND) if f.session_id == SHOP) == 1


def test_bad_content_never_raises(tmp_path: Path) -> None:
    chats = tmp_path / ".qwen" / "projects" / "-w-p" / "chats"
    chats.mkdir(parents=True)
    big = "x" * 3_000_000
    lines = [
        '{"type":"user","sessionId":"a","message":{"role":"user","parts":[{"text":"hi"}]}}',
        "[1,2]", '"text"', '{"type":"weird"}',
        '{"type":"assistant","message":{"parts":[null,{"functionCall":{"name":5,"args":[]}}]},"usageMetadata":{"promptTokenCount":"x"}}',
        '{"type":"tool_result","message":null,"toolCallResult":{"callId":7}}',
        json.dumps({"type": "assistant", "message": {"parts": [{"functionCall": {"id": "c", "name": "run_shell_command",
                                                                                  "args": {"command": "yes"}}}]}}),
        json.dumps({"type": "tool_result", "message": {"parts": [{"functionResponse": {"id": "c", "response": {"output": big}}}]},
                    "toolCallResult": {"callId": "c", "status": "success"}}),
        '{"type":"user","message":{"parts":"unfinished',
    ]
    (chats / "a.jsonl").write_text("\n".join(lines))
    (chats / "b.jsonl").write_text("not json at all\n")
    (chats / "c.jsonl").write_text("")
    found = _found(tmp_path / ".qwen")
    assert sorted(f.session_id for f in found) == ["a", "b"]  # an empty file: nothing recorded yet
    a = SOURCE.read(next(f for f in found if f.session_id == "a"))
    assert [t.prompt for t in a.turns] == ["hi"] and a.lines_malformed == 3 and a.lines_unknown == 1
    assert len(a.turns[0].invocations[1].result_brief or "") < 3000
    with pytest.raises(ValueError):
        SOURCE.read(next(f for f in found if f.session_id == "b"))


def test_registered_and_rooted(tmp_path: Path) -> None:
    assert SOURCES["qwen"].label == "Qwen Code"
    assert SOURCE.default_root({"QWEN_RUNTIME_DIR": str(tmp_path / "rt"), "HOME": "/home/u"}) == tmp_path / "rt"
    assert SOURCE.default_root({"HOME": str(tmp_path)}) == tmp_path / ".qwen"


def test_scan_is_incremental_and_never_writes_to_qwen_files(tmp_path: Path) -> None:
    root = tmp_path / ".qwen"
    shutil.copytree(HAND, root)
    before = file_snapshot(root)
    claude = tmp_path / "claude"
    claude.mkdir()
    cat = Catalog(tmp_path / "catalog.db")
    first = Scanner(cat, claude, agents={"qwen": root}).scan()
    assert first.errors == [] and first.sessions_scanned == 4
    rows = {r["session_id"]: r for r in cat.list_sessions()}
    assert set(rows) == {SHOP, NOTES, LEGACY, LOGGED} and {r["agent"] for r in rows.values()} == {"qwen"}
    assert rows[SHOP]["repo_name"] == "shop" and len(turns_json(cat, SHOP)["turns"]) == 4
    assert file_snapshot(root) == before  # bytes and times of Qwen Code's files unchanged

    again = Scanner(cat, claude, agents={"qwen": root}).scan()
    assert (again.sessions_scanned, again.sessions_unchanged) == (0, 4)

    chat = root / "projects" / "-home-dev-shop" / "chats" / f"{SHOP}.jsonl"
    text = chat.read_text().rsplit("\n", 1)[0] + "\n"  # Qwen Code finishes its last line, then a prompt
    chat.write_text(text + json.dumps({"uuid": "x1", "sessionId": SHOP, "timestamp": "2026-03-10T10:00:00.000Z",
                                       "type": "user", "cwd": "/home/dev/shop",
                                       "message": {"role": "user", "parts": [{"text": "Now add a test for it"}]}}) + "\n")
    grown = Scanner(cat, claude, agents={"qwen": root}).scan()
    assert (grown.sessions_scanned, grown.sessions_unchanged) == (1, 3)
    assert turns_json(cat, SHOP)["turns"][-1]["prompt"] == "Now add a test for it"


def test_status_lists_qwen_with_its_folder_and_sessions(tmp_path: Path) -> None:
    root = tmp_path / ".qwen"
    shutil.copytree(HAND, root)
    claude = tmp_path / "claude"
    claude.mkdir()
    cat = Catalog(tmp_path / "catalog.db")
    Scanner(cat, claude, agents={"qwen": root}).scan()
    listed = {s["name"]: s for s in source_status(cat, claude, environ={"QWEN_RUNTIME_DIR": str(root)})}
    assert listed["qwen"] == {"name": "qwen", "label": "Qwen Code", "root": str(root), "found": True,
                              "enabled": True, "sessions": 4}


SPEC = {
    "session_id": "5bec0000-1111-4222-8333-444455556666", "cwd": "/work/generated/api",
    "started_at": "2026-02-01T12:00:00Z", "model": "qwen3-coder-plus", "title": "Harden the API",
    "turns": [
        {"prompt": "Why does /health fail?", "at": "2026-02-01T12:00:10Z", "assistant": "The route was missing.",
         "input_tokens": 1500, "output_tokens": 120, "calls": [
             {"batch": 0, "kind": "read", "path": "/work/generated/api/app.py", "command": None, "content": None,
              "old": None, "new": None, "output": "app = Flask(__name__)\n", "error": False, "exit_code": None},
             {"batch": 0, "kind": "search", "path": "/work/generated/api", "command": "health", "content": None,
              "old": None, "new": None, "output": "No matches", "error": False, "exit_code": None},
             {"batch": 1, "kind": "shell", "path": None, "command": "curl -f localhost:8000/health", "content": None,
              "old": None, "new": None, "output": "curl: (22) 404", "error": True, "exit_code": 22},
             {"batch": 2, "kind": "edit", "path": "/work/generated/api/app.py", "command": None, "content": None,
              "old": "app = Flask(__name__)\n", "new": "app = Flask(__name__)\n\n@app.get('/health')\ndef health():\n    return 'ok'\n",
              "output": "", "error": False, "exit_code": None}]},
        {"prompt": "Thanks", "at": "2026-02-01T12:07:00Z", "assistant": "You're welcome.", "input_tokens": 300,
         "output_tokens": 5, "calls": []},
    ],
}


def test_writer_round_trip(tmp_path: Path) -> None:
    root = tmp_path / ".qwen"
    (path,) = writer.write_session(root, SPEC)
    (s,) = _read_all(root).values()
    assert path.stem == SPEC["session_id"] == s.session_id and s.cwd == SPEC["cwd"] and s.title == SPEC["title"]
    assert [t.prompt for t in s.turns] == [t["prompt"] for t in SPEC["turns"]]
    for turn, want in zip(s.turns, SPEC["turns"]):
        assert [i.is_error for i in turn.invocations] == [c["error"] for c in want["calls"]]
        assert (turn.metrics.input_tokens, turn.metrics.output_tokens) == (want["input_tokens"], want["output_tokens"])
        assert turn.assistant_text == want["assistant"]
    assert (s.turns[0].metrics.lines_added, s.turns[0].metrics.lines_removed) == (4, 0)
    assert counter.count(root)["by_session"][SPEC["session_id"]] == {
        "turns": 2, "tool_calls": 4, "errors": 1, "input_tokens": 1800, "output_tokens": 125, "cache_read_tokens": 0,
        "rejected": 0, "interrupted": 0}


def _run(args: list[str], home: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JACKED_", "QWEN_"))}
    env.update(HOME=str(home), JACKED_HOME=str(home / "jh"), CLAUDE_CONFIG_DIR=str(home / ".claude"),
               NO_COLOR="1", **suite_mode(), **extra)
    return subprocess.run([str(Path(sys.executable).parent / "jacked"), *args], capture_output=True, text=True,
                          env=env, timeout=600)


def test_install_keeps_the_other_settings(tmp_path: Path) -> None:
    settings = tmp_path / ".qwen" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": {"name": "qwen3-coder-plus"}, "mcpServers": {"x": {"command": "x"}}}))
    added = _run(["install", "--agent", "qwen"], tmp_path)
    assert added.returncode == 0, added.stderr
    data = json.loads(settings.read_text())
    assert data["model"] == {"name": "qwen3-coder-plus"} and set(data["mcpServers"]) == {"x", "jacked"}
    assert data["mcpServers"]["jacked"]["args"][-1] == "mcp"
    removed = _run(["uninstall", "--agent", "qwen"], tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(settings.read_text())["mcpServers"] == {"x": {"command": "x"}}


def test_backfill_search_agent_filter_and_status(tmp_path: Path) -> None:
    """`jacked backfill`, `search --agent qwen` and `status --json` in subprocesses."""
    root = tmp_path / "rt"
    shutil.copytree(HAND, root)
    (tmp_path / ".claude").mkdir()
    before = file_snapshot(root)
    done = _run(["backfill", "--json"], tmp_path, QWEN_RUNTIME_DIR=str(root))
    assert done.returncode == 0, done.stderr
    found = _run(["search", "cart total prices", "--agent", "qwen", "--json"], tmp_path, QWEN_RUNTIME_DIR=str(root))
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["results"]
    assert results and {r["agent"] for r in results} == {"qwen"} and results[0]["repo_name"] == "shop"
    status = _run(["status", "--json"], tmp_path, QWEN_RUNTIME_DIR=str(root))
    assert status.returncode == 0, status.stderr
    qwen = next(s for s in json.loads(status.stdout)["sources"] if s["name"] == "qwen")
    assert (qwen["root"], qwen["found"], qwen["sessions"]) == (str(root), True, 4)
    assert file_snapshot(root) == before
