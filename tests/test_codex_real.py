"""Codex CLI, real rollouts: jacked's reading of public real sessions (`fixtures/codex/real`, where
they come from: `fixtures/codex/README.md`) and of the hand-written home (`fixtures/codex/home`)
against an independent count of the same files (`agents/count_codex.py`), then details of the
real files checked by hand against their raw lines."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "agents"))
import count_codex

from jacked.sources.codex.source import CodexSource
from jacked.sources.model import Session, Turn

FIXTURES = Path(__file__).parent / "fixtures" / "codex"
REAL, HOME = FIXTURES / "real", FIXTURES / "home"
SOURCE = CodexSource()

RUN = "019eb2d8-26de-7430-b0a4-2d8cff9dc87c"       # 0.139.0 exec: every tool kind, a failed `cat`, a compaction
SUBAGENT = "019e03b2-11a2-7320-9098-5d831813e66c"  # 0.128.0 exec: a spawned subagent, its parent's turn copied
PROBE = "019e9625-802f-7e91-840a-cfe88d14117a"     # 0.135.0 exec: one prompt, text replaced by its publisher
DESKTOP = "019c8bfe-ec25-79e0-97d7-bda6a9c575ff"   # Codex Desktop 0.104.0-alpha.1: MCP calls, all text redacted
CWD_RUN = "/var/folders/jk/4rycn96j1rdbj2mz275yv11m0000gn/T/toolpath-elicit.7HDqFK/codex"


def read_all(root: Path) -> dict[str, Session]:
    errors: list[str] = []
    sessions = {f.session_id: SOURCE.read(f) for f in SOURCE.discover(root, errors)}
    assert errors == []
    return sessions


def figures(s: Session) -> dict[str, Any]:
    """jacked's reading in the independent count's terms: prompts, calls, failed calls."""
    invs = [i for t in s.turns for i in t.invocations]
    feedback = [e.data["kind"] for t in s.turns for e in t.events if e.type == "feedback"]
    return {"turns": sum(1 for t in s.turns if t.started_by == "prompt"), "tool_calls": len(invs),
            "errors": sum(i.is_error for i in invs), "rejected": feedback.count("tool_rejected"),
            "interrupted": feedback.count("interrupted")}


def turn(s: Session, index: int) -> Turn:
    return next(t for t in s.turns if t.index == index)


@pytest.fixture(scope="module")
def real() -> dict[str, Session]:
    return read_all(REAL)


# --------------------------------------------------------------------------- against the independent count
@pytest.mark.parametrize("root", [REAL, HOME], ids=["real", "hand"])
def test_reading_matches_the_independent_count(root: Path) -> None:
    counted = count_codex.count_dir(root)["sessions"]
    sessions = read_all(root)
    assert sorted(sessions) == sorted(counted)
    for sid, s in sessions.items():
        got, want = figures(s), dict(counted[sid])
        if sid == DESKTOP:  # its prompts: test_redacted_context_is_no_prompt
            del got["turns"], want["turns"]
        assert got == want, sid


def test_independent_totals_are_the_hand_checked_ones() -> None:
    # real: 1 + 2 + 1 + 2 prompts; 5 MCP + 1 wc + 13 (6 exec, 3 apply_patch, tool_search, spawn/wait/close_agent)
    assert count_codex.count_dir(REAL)["totals"] == {"turns": 6, "tool_calls": 19, "errors": 1, "rejected": 0,
                                                     "interrupted": 0, "sessions": 4}
    assert count_codex.count_dir(HOME)["totals"] == {"turns": 11, "tool_calls": 19, "errors": 4, "rejected": 2,
                                                     "interrupted": 2, "sessions": 6}


@pytest.mark.xfail(strict=True, reason=(
    "the publisher replaced every text with `[REDACTED_TEXT len=… sha=…]`: the AGENTS.md and "
    "<environment_context> messages (lines 4-5) lose the markup jacked recognises injected context by, "
    "and the prompt's item (line 9) and event (line 10) no longer have the same text, so jacked reads "
    "4 prompts where the file's one `user_message` event (and its one task) says 1"))
def test_redacted_context_is_no_prompt(real: dict[str, Session]) -> None:
    assert figures(real[DESKTOP])["turns"] == count_codex.count_dir(REAL)["sessions"][DESKTOP]["turns"] == 1


# --------------------------------------------------------------------------- 0.139.0: a whole run
def test_run_prompts_and_session_facts(real: dict[str, Session]) -> None:
    s = real[RUN]
    assert (s.version_first, s.cwd, s.models, s.started_at) == ("0.139.0", CWD_RUN, ["gpt-5.5"],
                                                                 "2026-06-10T18:42:50.774Z")
    t1, t2 = s.turns
    assert t1.prompt.startswith("You're going to walk through a small set of tasks designed to exercise")
    assert "7. Read a file that does not exist: `does-not-exist.txt`." in t1.prompt
    assert (t2.prompt, t2.assistant_text) == ("Reply with the single word: ok.", "ok")
    assert t1.assistant_text.startswith("I listed the current directory, created and read `notes.md`")
    # the item and the event of each prompt are one turn; <environment_context> and the
    # <subagent_notification> (line 73) are none
    assert [t.prompt_uuid for t in s.turns] == ["codex-turn:019eb2d8-2713-7100-9cd6-53971d5e1df4",
                                                "codex-turn:019eb2d9-278a-7823-bd1c-b8c16b2510f5"]


def test_run_calls_commands_and_the_failed_read(real: dict[str, Session]) -> None:
    t1 = real[RUN].turns[0]
    assert [(i.tool_name, i.command or i.file_path) for i in t1.invocations] == [
        ("exec_command", "ls -la"), ("apply_patch", "notes.md"), ("exec_command", "cat notes.md"),
        ("apply_patch", "notes.md"), ("exec_command", "find . -maxdepth 1 -name 'note*'"),
        ("exec_command", "grep -r fixture ."), ("exec_command", "cat does-not-exist.txt"),
        ("apply_patch", "count.sh"), ("exec_command", "bash count.sh"), ("tool_search", None),
        ("spawn_agent", None), ("wait_agent", None), ("close_agent", None)]
    # every call is its own response (a token_count follows each): no parallel batch
    assert [(i.sequence, i.parallel_group) for i in t1.invocations] == [(n, 0) for n in range(13)]
    failed = [i for i in t1.invocations if i.is_error]
    assert [(i.tool_use_id, i.command) for i in failed] == [("call_xgCjlgu0PebzpA1zDq1hHFkA", "cat does-not-exist.txt")]
    assert failed[0].result_brief.startswith("cat: does-not-exist.txt: No such file or directory")  # "Process exited with code 1"
    ls, add, _, edit, *_ = t1.invocations
    assert ls.result_brief.startswith("total 8\n") and "Chunk ID" not in ls.result_brief  # Codex's header dropped
    assert [(p.file_created, p.lines_added, p.lines_removed) for p in (add, edit)] == [(True, 2, 0), (False, 1, 1)]
    assert t1.invocations[8].result_brief == "1\n2\n3\n4\n5\n"


def test_run_tokens_and_one_compaction(real: dict[str, Session]) -> None:
    t1, t2 = real[RUN].turns
    # 14 responses in turn 1 (the token_count after the compaction repeats the total: no 15th);
    # input without its cached part: 227038 - 216320 = 10718; turn 2: 14038 - 11136 = 2902
    assert (t1.metrics.api_calls, t1.metrics.input_tokens, t1.metrics.cache_read_tokens, t1.metrics.output_tokens) == (
        14, 10718, 216320, 2117)
    assert (t2.metrics.api_calls, t2.metrics.input_tokens, t2.metrics.cache_read_tokens, t2.metrics.output_tokens) == (
        1, 2902, 11136, 5)
    # one compaction (`compacted`, a `token_count`, `context_compacted`: lines 85-87) is one event
    assert [e.type for t in real[RUN].turns for e in t.events] == ["compaction"]


# --------------------------------------------------------------------------- 0.128.0: a subagent
def test_subagent_own_turn_and_copied_parent_turn(real: dict[str, Session]) -> None:
    s = real[SUBAGENT]
    assert (s.version_first, s.models, s.started_at) == ("0.128.0", ["gpt-5.5"], "2026-05-07T18:27:42.128Z")
    copied, own = s.turns
    # the parent's turn, copied after its session_meta (line 2): its prompt and messages, not its calls
    assert copied.prompt.startswith("You're going to walk through a small set of tasks")
    assert (copied.prompt_uuid, copied.invocations) == ("codex-turn:019e03b1-6438-7b43-804d-fbbbe91c3971", [])
    assert own.prompt == "Count the words in `notes.md` and report the number."
    (wc,) = own.invocations
    assert (wc.tool_name, wc.command, wc.tool_use_id, wc.is_error) == (
        "exec_command", "wc -w notes.md", "call_YrsZZmJxxRTadsHqQUDeG7KT", False)
    assert wc.result_brief.strip() == "11 notes.md" and own.assistant_text == "`notes.md` contains 11 words."
    # its own two responses: last_token_usage 12882 - 9600 and 13430 - 9600 uncached
    assert (own.metrics.api_calls, own.metrics.input_tokens, own.metrics.cache_read_tokens, own.metrics.output_tokens) == (
        2, 7112, 19200, 509)


# --------------------------------------------------------------------------- 0.135.0 and Desktop 0.104
def test_probe_session_with_its_publishers_placeholders(real: dict[str, Session]) -> None:
    s = real[PROBE]
    (t,) = s.turns
    assert (t.prompt, t.assistant_text, s.cwd) == ("[REDACTED_PROMPT]", "[REDACTED_ASSISTANT_TEXT]",
                                                   "/tmp/agent-history-real-agent/codex/workspace")
    assert (t.metrics.api_calls, t.metrics.input_tokens, t.metrics.cache_read_tokens, t.metrics.output_tokens) == (
        1, 22539 - 20864, 20864, 10)


def test_desktop_session_mcp_calls(real: dict[str, Session]) -> None:
    s = real[DESKTOP]
    assert (s.version_first, s.git_branch, s.models) == ("0.104.0-alpha.1", "main", ["gpt-5.3-codex"])
    invs = [i for t in s.turns for i in t.invocations]
    assert [i.tool_name for i in invs] == [
        "mcp__cloud-associates__search_workflows", "[REDACTED_NAME len=43 sha=c186413b]",
        "mcp__cloud-associates__execute_workflow", "mcp__cloud-associates__execute_workflow",
        "mcp__cloud-associates__execute_workflow"]
    assert not any(i.is_error for i in invs)  # outputs redacted: no exit code to read
