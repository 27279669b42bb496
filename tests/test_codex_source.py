"""Codex CLI as a transcript source (`jacked.sources.codex`): discovery, both rollout
generations, the turn rules as they apply to Codex, forks, and the MCP entry in config.toml.

Fixtures: `tests/fixtures/codex/home` is a CODEX_HOME written after the records of
`codex-rs/protocol` and public real rollouts: an enveloped session of 0.46 (three turns,
parallel calls, apply_patch, an interruption, a compaction, a rename), a fork of its first
turn, a legacy session of May 2025 (bare items, `record_type: state`), a 0.149 session
(`ordinal`, prompts as `item_completed`, a plan) and, archived, the subagent it spawned; a
session of refused calls (a shell command and a patch the user declined) and an interruption.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from jacked.sources.base import FoundSession
from jacked.sources.codex import mcp_config
from jacked.sources.codex.records import command_text, parse_output, parse_patch
from jacked.sources.codex.source import CodexSource
from jacked.sources.model import Session
from jacked.sources.registry import SOURCES

HOME = Path(__file__).parent / "fixtures" / "codex" / "home"
MODERN = "0199a213-81c0-7800-8aa1-bbab2a035a53"
FORK = "0199a219-0000-7000-8000-00000000f0c1"
LEGACY = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
NEWEST = "01a08d46-8735-7c00-b558-f23eb1ce6cbc"
CHILD = "01a08d50-0000-7c00-8000-00000000c41d"
REFUSED = "0199a7a0-4b1e-7c00-9d2a-5e1f0c3b8a71"
SOURCE = CodexSource()


def _sessions(root: Path = HOME) -> dict[str, Session]:
    errors: list[str] = []
    out = {f.session_id: SOURCE.read(f) for f in SOURCE.discover(root, errors)}
    assert errors == []
    return out


@pytest.fixture(scope="module")
def sessions() -> dict[str, Session]:
    return _sessions()


def _rollout(tmp_path: Path, lines: list[dict[str, Any] | str], sid: str = "0199aaaa-0000-7000-8000-000000000001") -> Session:
    folder = tmp_path / "sessions" / "2025" / "11" / "02"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-2025-11-02T10-00-00-{sid}.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return SOURCE.read(FoundSession(sid, str(path), [path], "", extra={"root": tmp_path}))


def _line(ts: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": f"2025-11-02T10:00:{ts}Z", "type": kind, "payload": payload}


META = _line("00.000", "session_meta", {"id": "0199aaaa-0000-7000-8000-000000000001", "cwd": "/w/app",
                                        "originator": "codex_cli_rs", "cli_version": "0.50.0"})


def _usage(i: int, c: int, o: int) -> dict[str, int]:
    return {"input_tokens": i, "cached_input_tokens": c, "output_tokens": o, "reasoning_output_tokens": 0,
            "total_tokens": i + o}


# ----------------------------------------------------------------------------- registry, discovery
def test_registered_with_its_folder_from_codex_home() -> None:
    assert SOURCES["codex"] is not None and SOURCES["codex"].label == "Codex CLI"
    assert SOURCE.default_root({"CODEX_HOME": "/x/codex"}) == Path("/x/codex")
    assert SOURCE.default_root({}).name == ".codex"


def test_discovers_dated_flat_and_archived_rollouts_once_each(tmp_path: Path) -> None:
    errors: list[str] = []
    found = {f.session_id: f for f in SOURCE.discover(HOME, errors)}
    assert sorted(found) == sorted([MODERN, FORK, LEGACY, NEWEST, CHILD, REFUSED]) and errors == []
    assert "archived_sessions" in found[CHILD].location and found[LEGACY].files[0].parent.name == "sessions"
    # the same session live and archived: read once, from its larger copy
    root = tmp_path / "home"
    shutil.copytree(HOME, root)
    live = next((root / "sessions").rglob(f"*{NEWEST}.jsonl"))
    archived = root / "archived_sessions" / live.name
    archived.write_bytes(live.read_bytes() + b"\n")
    (root / "sessions" / "rollout-renamed.jsonl").write_bytes(live.read_bytes())  # no uuid in its name
    found = [f for f in SOURCE.discover(root, errors) if f.session_id == NEWEST]
    assert len(found) == 1 and found[0].files == [archived]


# ----------------------------------------------------------------------------- the enveloped generation
def test_a_prompt_written_as_item_and_event_is_one_turn(sessions: dict[str, Session]) -> None:
    s = sessions[MODERN]
    assert [t.prompt for t in s.turns] == [
        "The checkout test fails with KeyError: 'currency'. Find out why and fix it.",
        "now run the whole suite", "summarize what we changed so far"]
    assert [t.index for t in s.turns] == [1, 2, 3] and all(t.started_by == "prompt" for t in s.turns)
    # injected context (environment, AGENTS.md, <turn_aborted>) never starts a turn
    assert s.first_prompt == s.turns[0].prompt and s.message_lines == 5


def test_session_facts_from_session_meta_and_turn_context(sessions: dict[str, Session]) -> None:
    s = sessions[MODERN]
    assert (s.cwd, s.repo_name, s.git_branch) == ("/home/dev/shop-api", "shop-api", "fix/checkout-currency")
    assert (s.version_first, s.version_last, s.agent) == ("0.46.0", "0.46.0", "codex")
    assert s.models == ["gpt-5-codex", "gpt-5.1-codex"] and s.turns[2].models == ["gpt-5.1-codex"]
    assert s.started_at == "2025-10-03T09:00:00.500Z" and s.project_dir == "sessions/2025/10/03"
    assert s.title == "Checkout currency fix"
    assert (s.lines, s.lines_malformed) == (44, 1)  # the torn last line is skipped and counted


def test_calls_of_one_response_are_a_parallel_batch(sessions: dict[str, Session]) -> None:
    t = sessions[MODERN].turns[0]
    assert [(i.tool_name, i.sequence, i.parallel_group) for i in t.invocations] == [
        ("shell", 0, 1), ("shell", 0, 2), ("apply_patch", 1, 0), ("shell", 2, 0)]
    assert t.metrics.bash_commands == ['rg -n "currency" src/checkout.py', "sed -n '1,80p' tests/test_checkout.py",
                                       "pytest -q tests/test_checkout.py"]


def test_tokens_count_each_response_once_with_cached_input_apart(sessions: dict[str, Session]) -> None:
    t1, t2, t3 = sessions[MODERN].turns
    # four responses (a repeated token_count with the same total is a refresh, not a fifth)
    assert t1.metrics.api_calls == 4 and [c.tool_calls for c in t1.llm_calls] == [2, 1, 1, 0]
    assert (t1.metrics.input_tokens, t1.metrics.cache_read_tokens, t1.metrics.output_tokens) == (10500, 34000, 980)
    total_in = sum(t.metrics.input_tokens + t.metrics.cache_read_tokens for t in (t1, t2, t3))
    assert total_in == 61500  # = Codex's own cumulative input total at the end of the session
    assert t1.llm_calls[0].model == "gpt-5-codex"


def test_apply_patch_counts_lines_per_file(sessions: dict[str, Session]) -> None:
    t = sessions[MODERN].turns[0]
    patch = t.invocations[2]
    assert (patch.file_path, patch.lines_added, patch.lines_removed, patch.file_created) == (
        "src/checkout.py", 6, 1, True)
    assert patch.diff is not None and "*** Add File: tests/test_currency.py" in patch.diff
    assert t.metrics.files_modified == ["src/checkout.py"] and t.metrics.files_written == ["tests/test_currency.py"]
    assert (t.metrics.lines_added, t.metrics.lines_removed) == (6, 1)


def test_results_errors_interruption_compaction(sessions: dict[str, Session]) -> None:
    t1, t2, t3 = sessions[MODERN].turns
    assert t1.invocations[3].result_brief == "2 passed in 0.31s\n"  # JSON output, terminal colours gone
    run = t2.invocations[0]
    assert (run.tool_name, run.command, run.is_error) == ("exec_command", "pytest -q", True)  # "Process exited with code 1"
    assert run.result_brief.startswith("FAILED tests/test_refund.py::test_refund_twice")  # Codex's header dropped
    assert t2.metrics.bash_error_count == 1
    assert t2.interrupted and not t1.interrupted
    assert t3.compacted and [e.type for e in t3.events] == ["compaction"]  # compacted + context_compacted: one event
    assert [(u.kind, u.turn_index) for u in sessions[MODERN].texts] == [("compact_summary", 3), ("custom_title", 3)]
    assert t1.assistant_text and t1.assistant_text.startswith("Fixed: `checkout`")


def test_a_turn_ends_at_its_last_line_not_at_the_next_turns_preamble(sessions: dict[str, Session]) -> None:
    t1, t2, _ = sessions[MODERN].turns
    assert (t1.started_at, t1.ended_at, t1.duration_ms) == ("2025-10-03T09:00:01.240Z", "2025-10-03T09:00:17.200Z", 15960)
    assert t2.ended_at == "2025-10-03T09:05:20.000Z"  # turn_aborted, not the injected <turn_aborted> notice after it


# ----------------------------------------------------------------------------- the legacy generation
def test_legacy_bare_items_with_a_header_line(sessions: dict[str, Session]) -> None:
    s = sessions[LEGACY]
    assert [t.prompt for t in s.turns] == ["add a --tag filter to the list command", "create notes/tags.py"]
    assert (s.cwd, s.repo_name, s.git_branch, s.started_at) == ("/Users/ann/notes", "notes", "main",
                                                                "2025-05-07T17:24:21.123Z")
    assert (s.lines, s.lines_malformed, s.lines_unknown) == (19, 1, 0)  # state markers are known lines
    t1, t2 = s.turns
    # no token_count: each call after a tool output is a new response, so none is parallel
    assert [(i.tool_name, i.sequence, i.parallel_group, i.is_error) for i in t1.invocations] == [
        ("shell", 0, 0, False), ("apply_patch", 1, 0, False), ("shell", 2, 0, True)]
    assert t1.metrics.files_modified == ["notes/cli.py"] and (t1.metrics.lines_added, t1.metrics.lines_removed) == (2, 1)
    assert t1.metrics.bash_commands == ["cat notes/cli.py", "python -m pytest -q"] and t1.metrics.api_calls == 0
    assert [(i.tool_name, i.command) for i in t2.invocations] == [("local_shell", "touch notes/tags.py")]


# ----------------------------------------------------------------------------- the newest generation
def test_newest_prompts_plans_and_content_item_outputs(sessions: dict[str, Session]) -> None:
    s = sessions[NEWEST]
    (t,) = s.turns
    assert t.prompt == "explore this project and review my draft post"  # only as item_completed UserMessage
    assert s.plan == "1. Fix typos\n2. Tighten the intro" and s.plan_source == "plan_item"
    read = t.invocations[1]
    assert (read.tool_name, read.result_brief, read.parallel_group) == ("read_file", "# Draft\nTeh quick fox", 2)
    assert t.metrics.files_read == ["C:\\Users\\kim\\blog\\drafts\\post.md"] and s.repo_name == "blog"


# ----------------------------------------------------------------------------- forks and subagents
def test_copied_turns_share_the_parents_identity(sessions: dict[str, Session]) -> None:
    parent, fork = sessions[MODERN], sessions[FORK]
    assert fork.turns[0].prompt_uuid == parent.turns[0].prompt_uuid == "codex-turn:0199a213-9000-7000-8000-000000000001"
    assert fork.turns[1].prompt_uuid not in {t.prompt_uuid for t in parent.turns}
    assert (fork.version_first, fork.cwd) == ("0.47.0", "/home/dev/shop-api")  # its own header, not the copied one
    child = sessions[CHILD]
    assert child.turns[0].prompt_uuid == sessions[NEWEST].turns[0].prompt_uuid
    woken = child.turns[1]  # the parent's message woke it: a turn no person started
    assert (woken.started_by, woken.prompt, woken.metrics.tool_call_count) == ("agent", None, 1)


def test_without_turn_ids_copies_match_by_their_header_and_prompts(tmp_path: Path) -> None:
    parent = [META, _line("01.000", "event_msg", {"type": "user_message", "message": "hello"}),
              _line("02.000", "response_item", {"type": "message", "role": "assistant",
                                                "content": [{"type": "output_text", "text": "hi"}]})]
    fork_meta = _line("05.000", "session_meta", {"id": "0199bbbb-0000-7000-8000-000000000002", "cwd": "/w/app"})
    a = _rollout(tmp_path, parent)
    b = _rollout(tmp_path, [fork_meta, *parent, _line("06.000", "event_msg", {"type": "user_message", "message": "hello"})],
                 sid="0199bbbb-0000-7000-8000-000000000002")
    assert b.turns[0].prompt_uuid == a.turns[0].prompt_uuid
    assert b.turns[1].prompt_uuid != a.turns[0].prompt_uuid  # the same words typed again are a new turn


def test_ingest_counts_copied_turns_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jacked.config import load_settings
    from jacked.query.stats import StatsQuery
    from jacked.service import Jacked

    codex = tmp_path / "codex"
    shutil.copytree(HOME, codex)
    monkeypatch.setenv("CODEX_HOME", str(codex))
    (tmp_path / "claude").mkdir()
    j = Jacked(load_settings(tmp_path / "claude", jacked_home=str(tmp_path / "home"), user_name="ada"))
    listed = {s["session_id"]: s for s in j.sessions()}
    assert set(listed) == {MODERN, FORK, LEGACY, NEWEST, CHILD, REFUSED} \
        and {s["agent"] for s in listed.values()} == {"codex"}
    stats = j.stats(StatsQuery())
    assert stats["turns"] == 10  # 12 turns, of which the fork's and the subagent's copies count once
    assert stats["by_agent"]["codex"]["tool_calls"] == 15
    assert stats["by_agent"]["codex"]["input_tokens"] == 61500 + 15000 + 16600 + 10200 + 21100


# ----------------------------------------------------------------------------- rules on small rollouts
def test_refreshed_and_total_only_token_counts(tmp_path: Path) -> None:
    def count(ts: str, total: dict[str, int] | None, last: dict[str, int] | None = None) -> dict[str, Any]:
        info = None if total is None and last is None else {"total_token_usage": total, "last_token_usage": last}
        return _line(ts, "event_msg", {"type": "token_count", "info": info})

    s = _rollout(tmp_path, [
        META, _line("01.000", "event_msg", {"type": "user_message", "message": "go"}),
        count("01.500", None),  # rate limits only
        _line("02.000", "response_item", {"type": "reasoning", "summary": []}),
        count("03.000", _usage(1000, 200, 50)),  # totals only: the first is its own difference
        count("03.100", _usage(1000, 200, 50)),  # a refresh
        _line("04.000", "response_item", {"type": "reasoning", "summary": []}),
        count("05.000", _usage(2500, 1100, 80)),
    ])
    (t,) = s.turns
    assert [(c.input_tokens, c.cache_read_tokens, c.output_tokens) for c in t.llm_calls] == [(800, 200, 50), (600, 900, 30)]


def test_prompt_records_in_either_order_and_repeated_prompts(tmp_path: Path) -> None:
    ask = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "continue"}]}
    answer = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}
    s = _rollout(tmp_path, [
        META,
        _line("01.000", "event_msg", {"type": "user_message", "message": "continue", "kind": "plain"}),
        _line("01.001", "response_item", ask),  # the same prompt, the other record: one turn
        _line("02.000", "response_item", answer),
        _line("03.000", "response_item", ask),  # typed again after an answer: a new turn
        _line("03.001", "event_msg", {"type": "user_message", "message": "continue"}),
        _line("03.002", "event_msg", {"type": "user_message", "message": "<environment_context>x</environment_context>"}),
        _line("03.003", "event_msg", {"type": "user_message", "message": "ignored", "kind": "user_instructions"}),
        _line("04.000", "response_item", answer),
    ])
    assert [t.prompt for t in s.turns] == ["continue", "continue"]


def test_a_review_result_is_the_turns_answer(tmp_path: Path) -> None:
    s = _rollout(tmp_path, [META, _line("01.000", "event_msg", {"type": "user_message", "message": "review my changes"}),
                            _line("09.000", "event_msg", {"type": "exited_review_mode", "review_output": {
                                "findings": [{"title": "[P1] Unchecked None", "body": "parse() may return None.",
                                              "confidence_score": 0.8, "priority": 1}],
                                "overall_correctness": "patch is incorrect", "overall_explanation": "One crash.",
                                "overall_confidence_score": 0.8}})])
    assert s.turns[0].assistant_text == "One crash.\n- [P1] Unchecked None: parse() may return None."


def test_model_output_before_any_prompt_is_turn_0(tmp_path: Path) -> None:
    s = _rollout(tmp_path, [META, _line("01.000", "response_item", {
        "type": "function_call", "name": "shell", "arguments": "{\"command\": [\"ls\"]}", "call_id": "c1"})])
    assert [(t.index, t.started_by) for t in s.turns] == [(0, None)] and s.turns[0].metrics.bash_commands == ["ls"]


def test_end_events_decide_errors_and_reads(tmp_path: Path) -> None:
    s = _rollout(tmp_path, [
        META, _line("01.000", "event_msg", {"type": "user_message", "message": "look"}),
        _line("02.000", "response_item", {"type": "function_call", "name": "shell", "call_id": "c1",
                                          "arguments": json.dumps({"command": ["bash", "-lc", "cat a.py"]})}),
        _line("02.100", "response_item", {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c2",
                                          "input": "*** Begin Patch\n*** Update File: b.py\n@@\n-x\n+y\n*** End Patch"}),
        _line("02.200", "response_item", {"type": "function_call", "name": "jira__get_issue", "call_id": "c3",
                                          "arguments": "{\"key\": \"OPS-1\"}"}),
        _line("03.000", "event_msg", {"type": "exec_command_end", "call_id": "c1", "exit_code": 0,
                                      "parsed_cmd": [{"type": "read", "cmd": "cat a.py", "name": "a.py", "path": "a.py"}]}),
        _line("03.100", "event_msg", {"type": "patch_apply_end", "call_id": "c2", "success": False, "stdout": "", "stderr": "no match"}),
        _line("03.200", "event_msg", {"type": "mcp_tool_call_end", "call_id": "c3", "result": {"Err": "timeout"}}),
        _line("04.000", "response_item", {"type": "function_call_output", "call_id": "c1", "output": "print(1)\n"}),
        _line("04.100", "response_item", {"type": "custom_tool_call_output", "call_id": "c2", "output": "Done"}),
        _line("04.200", "response_item", {"type": "function_call_output", "call_id": "c3", "output": "timeout"}),
    ])
    (t,) = s.turns
    assert [i.is_error for i in t.invocations] == [False, True, True]
    assert t.metrics.files_read == ["a.py"] and t.metrics.files_modified == [] and t.metrics.lines_added == 0


def test_unknown_and_odd_lines_are_counted_never_fatal(tmp_path: Path) -> None:
    s = _rollout(tmp_path, [META, {"type": "something_new", "payload": {}}, ["a", "list"], "{", "",
                            _line("01.000", "event_msg", {"type": "brand_new_event"}),
                            _line("02.000", "response_item", {"type": "function_call_output", "call_id": "nobody",
                                                              "output": "orphan"})])
    assert (s.lines_unknown, s.lines_malformed, s.turns) == (1, 2, [])


@pytest.mark.parametrize(("output", "text", "is_error"), [
    (json.dumps({"output": "ok", "metadata": {"exit_code": 0, "duration_seconds": 0.1}}), "ok", False),
    (json.dumps({"output": "boom", "metadata": {"exit_code": 127}}), "boom", True),
    ("Exit code: 2\nWall time: 0.1 seconds\nOutput:\nusage: x", "usage: x", True),
    ("Chunk ID: 1\nWall time: 1 seconds\nProcess exited with code 0\nOriginal token count: 2\nOutput:\nfine", "fine", False),
    ("Process running with session ID 7\nOutput:\n", "", None),
    ("Exit code: 0 is what I print\nmore", "Exit code: 0 is what I print\nmore", None),
    ({"content": "denied", "success": False}, "denied", True),
    (json.dumps({"content": [{"type": "text", "text": "r"}], "isError": True}), "r", True),
    ([{"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "data:"}], "a\n[image]", None),
    ("apply_patch verification failed: no such file", "apply_patch verification failed: no such file", True),
    ("plain text", "plain text", None),
])
def test_tool_outputs_of_every_version(output: Any, text: str, is_error: bool | None) -> None:
    out = parse_output(output)
    assert (out.text, out.is_error) == (text, is_error)


def test_patch_and_command_parsing() -> None:
    files = parse_patch("*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n-1\n+2\n+3\n"
                        "*** Delete File: c.py\n*** End Patch")
    assert [(f.op, f.path, f.move_to, f.added, f.removed) for f in files] == [
        ("move", "a.py", "b.py", 2, 1), ("delete", "c.py", None, 0, 0)]
    assert command_text(["bash", "-lc", "ls -la"]) == "ls -la"
    assert command_text(["git", "commit", "-m", "a b"]) == "git commit -m 'a b'"
    assert command_text("echo hi") == "echo hi" and command_text(None) is None


# ----------------------------------------------------------------------------- MCP in config.toml
def test_mcp_server_added_and_removed_keeping_the_users_file() -> None:
    original = '# my settings\nmodel = "gpt-5-codex"  # the default\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
    added = mcp_config.add_server(original, "jacked", "/opt/jacked/bin/jacked", ["mcp"])
    assert added.startswith(original) and '[mcp_servers.jacked]\ncommand = "/opt/jacked/bin/jacked"\nargs = ["mcp"]' in added
    assert mcp_config.add_server(added, "jacked", "/opt/jacked/bin/jacked", ["mcp"]) == added  # idempotent
    moved = mcp_config.add_server(added, "jacked", "/usr/bin/python3", ["-m", "jacked.surfaces.cli.main", "mcp"])
    assert 'command = "/usr/bin/python3"' in moved and moved.count("[mcp_servers.jacked]") == 1
    removed, found = mcp_config.remove_server(added, "jacked")
    assert found and removed == original
    assert mcp_config.remove_server(original, "jacked") == (original, False)
    only_ours = mcp_config.add_server("", "jacked", "jacked", ["mcp"])
    assert mcp_config.remove_server(only_ours, "jacked") == ("", True)


def test_mcp_config_refuses_what_it_must_not_touch() -> None:
    with pytest.raises(mcp_config.CodexConfigError, match="not valid TOML"):
        mcp_config.add_server("model = \n", "jacked", "jacked", ["mcp"])
    with pytest.raises(mcp_config.CodexConfigError, match="not a table"):
        mcp_config.add_server('mcp_servers = "x"\n', "jacked", "jacked", ["mcp"])
    theirs = '[mcp_servers.jacked]\ncommand = "something-else"\nargs = ["serve"]\n'
    with pytest.raises(mcp_config.CodexConfigError, match="another server"):
        mcp_config.add_server(theirs, "jacked", "jacked", ["mcp"])
    assert mcp_config.remove_server(theirs, "jacked") == (theirs, False)
    assert mcp_config.config_path({"CODEX_HOME": "/c"}) == Path("/c/config.toml")


# ----------------------------------------------------------------------------- the corpus writer
@pytest.mark.parametrize("layout", ["envelope", "legacy"])
def test_the_eval_writer_round_trips(tmp_path: Path, layout: str) -> None:
    """`tests/agents/write_codex.py` (scripts/agents_eval.py's Codex writer) and this reader agree."""
    from agents import write_codex  # tests/ is on sys.path (as for `kit`)

    spec = {"session_id": "0199cccc-0000-7000-8000-000000000003", "cwd": "/w/lib", "started_at": "2025-11-03T08:00:00Z",
            "model": "gpt-5-codex", "title": "Lib work", "turns": [
                {"prompt": "read and fix", "at": "2025-11-03T08:00:01Z", "assistant": "fixed", "input_tokens": 900,
                 "output_tokens": 90, "calls": [
                     {"batch": 0, "kind": "read", "path": "a.py", "output": "x = 1", "error": False},
                     {"batch": 0, "kind": "search", "path": ".", "command": "TODO", "output": "", "error": True},
                     {"batch": 1, "kind": "edit", "path": "a.py", "old": "x = 1", "new": "x = 2\ny = 3", "error": False},
                     {"batch": 2, "kind": "shell", "command": "pytest", "output": "1 failed", "error": True, "exit_code": 1}]},
                {"prompt": "thanks", "at": "2025-11-03T08:05:00Z", "assistant": "", "input_tokens": 0, "output_tokens": 0,
                 "calls": []}]}
    path = write_codex.write_session(tmp_path, spec, layout=layout)
    s = SOURCE.read(FoundSession(spec["session_id"], str(path), [path], "", extra={"root": tmp_path}))
    assert [t.prompt for t in s.turns] == ["read and fix", "thanks"]
    t = s.turns[0]
    assert [(i.tool_name, i.sequence, i.parallel_group, i.is_error) for i in t.invocations] == [
        ("shell", 0, 1, False), ("shell", 0, 2, True), ("apply_patch", 1, 0, False), ("shell", 2, 0, True)]
    assert (t.metrics.lines_added, t.metrics.lines_removed, t.metrics.files_modified) == (2, 1, ["a.py"])
    if layout == "envelope":
        assert (t.metrics.input_tokens + t.metrics.cache_read_tokens, t.metrics.output_tokens) == (900, 90)
        assert s.title == "Lib work" and s.cwd == "/w/lib"


def test_install_and_uninstall_in_codex_home(tmp_path: Path) -> None:
    from jacked.errors import JackedError
    from jacked.surfaces.agent_install import codex as codex_install

    home = tmp_path / "codex"
    home.mkdir()
    env = {"CODEX_HOME": str(home)}
    config = home / "config.toml"
    original = '# tuned by hand\nmodel = "gpt-5-codex"\n\n[mcp_servers.docs]  # keep me\ncommand = "docs"\n'
    config.write_text(original)
    assert codex_install.install(["/opt/jacked/bin/jacked"], env) == config
    text = config.read_text()
    assert text.startswith(original) and 'args = ["mcp"]' in text
    assert (home / "config.toml.jacked.bak").read_text() == original
    assert (home / "config.toml.jacked.bak").stat().st_mode & 0o777 == 0o600
    stamp = config.stat().st_mtime_ns
    codex_install.install(["/opt/jacked/bin/jacked"], env)
    assert config.stat().st_mtime_ns == stamp  # already there: nothing written
    assert codex_install.uninstall(env) == config and config.read_text() == original
    assert codex_install.uninstall(env) is None
    # a dotfiles symlink is written through, and stays a symlink
    real = tmp_path / "dotfiles" / "codex.toml"
    real.parent.mkdir()
    real.write_text(original)
    config.unlink()
    config.symlink_to(real)
    codex_install.install(["jacked"], env)
    assert config.is_symlink() and 'command = "jacked"' in real.read_text()
    config.unlink()
    config.write_text("model = \n")
    with pytest.raises(JackedError, match="not valid TOML"):
        codex_install.install(["jacked"], env)
    assert config.read_text() == "model = \n"
    config.unlink()
    codex_install.install(["python3", "-m", "jacked.surfaces.cli.main"], env)  # no file yet: created
    assert 'args = ["-m", "jacked.surfaces.cli.main", "mcp"]' in config.read_text()
    codex_install.uninstall(env)
    assert not config.exists()


def test_refused_calls_and_interruptions_are_feedback() -> None:
    # What Codex tells the model of a declined call, and a `patch_apply_end` written before the
    # output saying `declined`: one refusal each; `turn_aborted` names the call left running.
    s = _sessions()[REFUSED]
    t1, t2 = s.turns
    assert [(e.type, e.data["kind"], e.data["tool_name"], e.data["target"]) for e in t1.events] == [
        ("feedback", "tool_rejected", "shell", "rm -rf build"), ("feedback", "tool_rejected", "apply_patch", "pyproject.toml")]
    assert all(i.is_error for i in t1.invocations) and (t1.invocations[1].lines_added, t1.interrupted) == (0, False)
    assert [(e.data["kind"], e.data["tool_name"]) for e in t2.events] == [("interrupted", "shell")] and t2.interrupted
    modern = _sessions()[MODERN]
    assert [e.data for t in modern.turns for e in t.events if e.type == "feedback"] == [
        {"kind": "interrupted", "tool_name": None, "tool_use_id": None}]
