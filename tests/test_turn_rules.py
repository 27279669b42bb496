"""One small case per rule of DESIGN.md "Turn rules" and per transcript format note."""
from __future__ import annotations

import json
from pathlib import Path

from kit import (
    SID,
    assistant,
    base,
    inv_tuples,
    prompt,
    result,
    session_of,
    system,
    text,
    tool_use,
    uid,
)


def test_unparsable_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    data = session_of(tmp_path, [prompt("hello"), "{not json", "[1, 2]", assistant("m1", text("hi"))])
    assert len(data["turns"]) == 1
    assert data["row"]["lines_skipped"] == 2


def test_truncated_last_line_is_counted_not_fatal(tmp_path: Path) -> None:
    claude = tmp_path / "claude" / "projects" / "-p"
    claude.mkdir(parents=True)
    f = claude / f"{SID}.jsonl"
    f.write_text(json.dumps(prompt("first")) + "\n" + json.dumps(assistant("m1", text("ok")))[:40])
    from jacked.catalog import Catalog
    from jacked.ingest.scan import Scanner

    cat = Catalog(tmp_path / "h" / "c.db")
    report = Scanner(cat, tmp_path / "claude").scan()
    assert report.lines_skipped == 1
    assert cat.get_session_row(SID)["turn_count"] == 1


def test_repeated_uuid_first_occurrence_wins(tmp_path: Path) -> None:
    p = prompt("do it")
    call = assistant("m1", tool_use("t1", "Bash", command="ls"))
    res = result("t1", "a b")
    again = dict(call, message=dict(call["message"], content=[tool_use("t1", "Bash", command="rm -rf /")]))
    data = session_of(tmp_path, [p, call, res, again, dict(res)])
    turn = data["turns"][0]
    assert [i["command"] for i in turn["invocations"]] == ["ls"]


def test_sidechain_lines_never_start_turns_nor_count(tmp_path: Path) -> None:
    task = assistant("m1", tool_use("t1", "Task", description="look", prompt="look around", subagent_type="Explore"))
    side_prompt = prompt("look around", isSidechain=True, parentUuid=None)
    side_call = assistant("s1", tool_use("st1", "Read", file_path="/x"), isSidechain=True)
    side_res = result("st1", "content", isSidechain=True)
    side_report = assistant("s2", text("Found the thing in /x. " * 20), isSidechain=True)
    data = session_of(tmp_path, [prompt("go"), task, side_prompt, side_call, side_res, side_report,
                                 result("t1", [text("report")])])
    assert len(data["turns"]) == 1
    assert inv_tuples(data["turns"][0]) == [("Task", 0, 0, False)]
    sub = data["subagents"][0]
    assert sub["layout"] == "inline" and sub["tool_use_id"] == "t1" and sub["agent_type"] == "Explore"
    assert sub["tool_call_count"] == 1 and sub["summary_text"].startswith("Found the thing")


def test_turn_starts_only_at_human_prompts(tmp_path: Path) -> None:
    recs = [
        prompt("real prompt one"),
        prompt("meta text", isMeta=True),
        prompt("summary of earlier", isCompactSummary=True),
        prompt("<local-command-stdout>output</local-command-stdout>"),
        prompt("<local-command-caveat>Caveat: ...</local-command-caveat>"),
        prompt("[Request interrupted by user for tool use]"),
        prompt([{"type": "text", "text": "[Request interrupted by user]"}]),
        prompt([{"type": "text", "text": "list prompt"}, {"type": "image", "source": {"data": "AAAA"}}]),
    ]
    data = session_of(tmp_path, recs)
    assert [t["prompt"] for t in data["turns"]] == ["real prompt one", "list prompt"]
    assert [t["index"] for t in data["turns"]] == [1, 2]


def test_prompt_of_list_content_joins_text_blocks(tmp_path: Path) -> None:
    data = session_of(tmp_path, [prompt([text("line one"), {"type": "image", "source": {}}, text("line two")])])
    assert data["turns"][0]["prompt"] == "line one\nline two"


def test_slash_command_starts_a_turn_without_answer(tmp_path: Path) -> None:
    recs = [prompt("hello"), assistant("m1", text("hi")),
            prompt("<command-name>/model</command-name>\n<command-message>model</command-message>"),
            prompt("<local-command-stdout>Set model to opus</local-command-stdout>"),
            prompt("next")]
    data = session_of(tmp_path, recs)
    assert [t["index"] for t in data["turns"]] == [1, 2, 3]
    assert data["turns"][1]["is_slash_command"] is True
    assert data["turns"][1]["invocations"] == []


def test_assistant_lines_before_first_prompt_form_turn_zero(tmp_path: Path) -> None:
    recs = [assistant("m0", tool_use("t0", "Read", file_path="/a")), result("t0", "x"), prompt("now"),
            assistant("m1", text("ok"))]
    data = session_of(tmp_path, recs)
    assert [(t["index"], t["prompt"]) for t in data["turns"]] == [(0, None), (1, "now")]
    assert data["turns"][0]["metrics"]["files_read"] == ["/a"]


def test_no_turn_zero_without_leading_assistant_lines(tmp_path: Path) -> None:
    data = session_of(tmp_path, [system("local_command"), prompt("first"), assistant("m1", text("a"))])
    assert [t["index"] for t in data["turns"]] == [1]


def test_turn_owns_everything_until_next_prompt(tmp_path: Path) -> None:
    recs = [prompt("one", t=0), assistant("m1", tool_use("t1", "Bash", command="make")),
            system("compact_boundary", t=5, compactMetadata={"trigger": "auto"}),
            prompt("Summary: earlier work", isCompactSummary=True, t=6),
            result("t1", "Exit code 2\nboom", is_error=True, t=7),
            system("turn_duration", t=8, durationMs=8000), prompt("two", t=10)]
    data = session_of(tmp_path, recs)
    first = data["turns"][0]
    assert first["compacted"] is True and first["duration_ms"] == 8000
    assert first["invocations"][0]["is_error"] is True
    assert [x["kind"] for x in data["texts"]] == ["compact_summary"]


def test_sequence_and_parallel_groups(tmp_path: Path) -> None:
    recs = [prompt("go"),
            assistant("m1", text("looking")),
            assistant("m1", tool_use("a", "Read", file_path="/1")),
            assistant("m1", tool_use("b", "Read", file_path="/2")),
            assistant("m1", tool_use("c", "Grep", pattern="x")),
            result("a"), result("b"), result("c"),
            assistant("m2", text("thinking only, no tools")),
            assistant("m3", tool_use("d", "Edit", file_path="/1")),
            result("d")]
    data = session_of(tmp_path, recs)
    assert inv_tuples(data["turns"][0]) == [("Read", 0, 1, False), ("Read", 0, 2, False), ("Grep", 0, 3, False),
                                            ("Edit", 1, 0, False)]


def test_several_blocks_in_one_assistant_line(tmp_path: Path) -> None:
    rec = assistant("m1", text("two at once"))
    rec["message"]["content"] = [text("two at once"), tool_use("a", "Bash", command="ls"),
                                 tool_use("b", "Bash", command="pwd")]
    data = session_of(tmp_path, [prompt("go"), rec, result("a"), result("b")])
    assert inv_tuples(data["turns"][0]) == [("Bash", 0, 1, False), ("Bash", 0, 2, False)]


def test_results_join_by_tool_use_id_and_errors(tmp_path: Path) -> None:
    recs = [prompt("go"), assistant("m1", tool_use("a", "Bash", command="false")),
            assistant("m1", tool_use("b", "Read", file_path="/nope")),
            result("b", "File does not exist.", is_error=True), result("a", "Exit code 1", is_error=True)]
    data = session_of(tmp_path, recs)
    turn = data["turns"][0]
    assert inv_tuples(turn) == [("Bash", 0, 1, True), ("Read", 0, 2, True)]
    m = turn["metrics"]
    assert m["tool_error_count"] == 2 and m["bash_error_count"] == 1 and m["files_read"] == []
    assert m["bash_commands"] == ["false"]


def test_absent_is_error_means_success(tmp_path: Path) -> None:
    recs = [prompt("go"), assistant("m1", tool_use("a", "Read", file_path="/f")), result("a", "text")]
    assert session_of(tmp_path, recs)["turns"][0]["invocations"][0]["is_error"] is False


def test_file_metrics_dedupe_in_first_seen_order(tmp_path: Path) -> None:
    recs = [prompt("go")]
    for i, (name, path) in enumerate([("Read", "/b"), ("Read", "/a"), ("Read", "/b"), ("Write", "/w"),
                                      ("Edit", "/e"), ("Edit", "/e")]):
        recs += [assistant(f"m{i}", tool_use(f"t{i}", name, file_path=path)), result(f"t{i}")]
    m = session_of(tmp_path, recs)["turns"][0]["metrics"]
    assert m["files_read"] == ["/b", "/a"] and m["files_written"] == ["/w"] and m["files_modified"] == ["/e"]
    assert m["tool_usage"] == {"Read": 3, "Write": 1, "Edit": 2}


def test_lines_from_structured_patch_and_created_files(tmp_path: Path) -> None:
    patch = [{"oldStart": 1, "oldLines": 2, "newStart": 1, "newLines": 3, "lines": [" a", "-b", "+c", "+d"]}]
    recs = [prompt("go"),
            assistant("m1", tool_use("e", "Edit", file_path="/f", old_string="b", new_string="c\nd")),
            result("e", "ok", tur={"filePath": "/f", "structuredPatch": patch}),
            assistant("m2", tool_use("w", "Write", file_path="/new", content="1\n2\n3\n")),
            result("w", "created", tur={"type": "create", "filePath": "/new", "content": "1\n2\n3\n",
                                        "structuredPatch": []}),
            assistant("m3", tool_use("x", "Edit", file_path="/g")),
            result("x", "failed", is_error=True, tur="Error: String not found")]
    m = session_of(tmp_path, recs)["turns"][0]["metrics"]
    assert (m["lines_added"], m["lines_removed"]) == (5, 1)
    assert m["files_modified"] == ["/f"]


def test_subagent_work_is_not_the_parents(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    proj = claude / "projects" / "-p"
    from kit import claude_dir_with, write_jsonl

    agent = "a1234567890abcdef"
    claude_dir_with(claude, [prompt("delegate"),
                             assistant("m1", tool_use("t1", "Agent", description="dig", prompt="dig",
                                                      subagent_type="Explore")),
                             result("t1", [text("done")], tur={"status": "completed", "agentId": agent,
                                                                 "agentType": "Explore"})], project="-p")
    write_jsonl(proj / SID / "subagents" / f"agent-{agent}.jsonl", [
        prompt("dig", isSidechain=True, agentId=agent),
        assistant("s1", tool_use("x1", "Bash", command="grep -r foo"), isSidechain=True, agentId=agent),
        result("x1", "hit", isSidechain=True, agentId=agent),
        assistant("s2", text("The foo lives in bar.py " * 10), isSidechain=True, agentId=agent)])
    (proj / SID / "subagents" / f"agent-{agent}.meta.json").write_text('{"agentType": "Explore"}')
    from jacked.catalog import Catalog
    from jacked.query.history import turns_json
    from jacked.ingest.scan import Scanner

    cat = Catalog(tmp_path / "h.db")
    Scanner(cat, claude).scan()
    data = turns_json(cat, SID)
    assert inv_tuples(data["turns"][0]) == [("Agent", 0, 0, False)]
    assert data["turns"][0]["invocations"][0]["agent_id"] == agent
    sub = data["subagents"][0]
    assert (sub["agent_id"], sub["agent_type"], sub["turn_index"], sub["tool_call_count"]) == (agent, "Explore", 1, 1)
    assert sub["summary_text"].startswith("The foo lives")


def test_flat_subagent_tied_by_session_id_and_warmups(tmp_path: Path) -> None:
    from kit import claude_dir_with, write_jsonl
    from jacked.catalog import Catalog
    from jacked.query.history import turns_json
    from jacked.ingest.scan import Scanner

    claude = tmp_path / "claude"
    proj = claude / "projects" / "-p"
    claude_dir_with(claude, [prompt("plan it"),
                             assistant("m1", tool_use("t1", "Task", description="d", prompt="p", subagent_type="Plan")),
                             result("t1", [text("r")], tur={"status": "completed", "agentId": "abcd1234"})],
                    project="-p")
    write_jsonl(proj / "agent-abcd1234.jsonl", [prompt("p", isSidechain=True, agentId="abcd1234"),
                                                assistant("s1", text("plan report"), isSidechain=True)])
    write_jsonl(proj / "agent-0000ffff.jsonl", [prompt("Warmup", isSidechain=True, agentId="0000ffff"),
                                                assistant("s2", text("ready"), isSidechain=True)])
    cat = Catalog(tmp_path / "h.db")
    Scanner(cat, claude).scan()
    subs = {s["agent_id"]: s for s in turns_json(cat, SID)["subagents"]}
    assert subs["abcd1234"]["agent_type"] == "Plan" and subs["abcd1234"]["turn_index"] == 1
    assert subs["0000ffff"]["is_warmup"] is True
    assert cat.session_ids() == [SID]  # subagents are never listed as sessions


def test_duration_from_turn_duration_else_timestamps(tmp_path: Path) -> None:
    recs = [prompt("one", t=0), assistant("m1", text("a"), t=3), system("turn_duration", t=4, durationMs=4321),
            prompt("two", t=10), assistant("m2", text("b"), t=15)]
    turns = session_of(tmp_path, recs)["turns"]
    assert (turns[0]["duration_ms"], turns[0]["duration_source"]) == (4321, "turn_duration")
    assert (turns[1]["duration_ms"], turns[1]["duration_source"]) == (5000, "timestamps")


def test_tokens_count_each_api_response_once(tmp_path: Path) -> None:
    u = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100}
    final = {"input_tokens": 10, "output_tokens": 50, "cache_read_input_tokens": 100}
    recs = [prompt("go"), assistant("m1", text("a"), usage=u), assistant("m1", tool_use("t", "Bash", command="x"),
                                                                        usage=final),
            result("t"), assistant("m2", text("done"), usage={"input_tokens": 1, "output_tokens": 2})]
    m = session_of(tmp_path, recs)["turns"][0]["metrics"]
    assert (m["input_tokens"], m["output_tokens"], m["cache_read_tokens"], m["api_calls"]) == (11, 52, 100, 2)


def test_message_as_json_string_and_string_content(tmp_path: Path) -> None:
    rec = base(type="user", message=json.dumps({"role": "user", "content": "stringified"}))
    call = assistant("m1", tool_use("t", "Bash", command="ls"))
    call["message"] = json.dumps(call["message"])
    res = result("t", [text("listing"), {"type": "image", "source": {}}, {"type": "tool_reference", "tool_name": "X"}])
    data = session_of(tmp_path, [rec, call, res])
    assert data["turns"][0]["prompt"] == "stringified"
    assert inv_tuples(data["turns"][0]) == [("Bash", 0, 0, False)]
    assert "listing" in data["turns"][0]["invocations"][0]["result"]


def test_tool_use_result_shapes_string_list_absent(tmp_path: Path) -> None:
    recs = [prompt("go")]
    for i, tur in enumerate(["Error: boom", [{"type": "text", "text": "x"}], None]):
        recs += [assistant(f"m{i}", tool_use(f"t{i}", "Edit", file_path=f"/f{i}")),
                 result(f"t{i}", "r", is_error=(i == 0), tur=tur)]
    m = session_of(tmp_path, recs)["turns"][0]["metrics"]
    assert m["files_modified"] == ["/f1", "/f2"] and m["lines_added"] == 0


def test_lines_without_uuid_and_unknown_types(tmp_path: Path) -> None:
    recs = [{"type": "summary", "summary": "Fixing the login bug", "leafUuid": "elsewhere"},
            {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}},
            {"type": "queue-operation", "operation": "enqueue"},
            {"type": "permission-mode", "permissionMode": "plan"},
            {"type": "last-prompt", "lastPrompt": "x"},
            {"type": "ai-title", "aiTitle": "Login bug hunt", "sessionId": SID},
            {"type": "custom-title", "customTitle": "My login fix", "sessionId": SID},
            {"type": "pr-link", "url": "https://example.invalid/pr/1"},
            {"type": "brand-new-kind", "x": 1},
            prompt("go"), assistant("m1", text("ok"))]
    data = session_of(tmp_path, recs)
    assert len(data["turns"]) == 1
    kinds = [x["kind"] for x in data["texts"]]
    # the label's leaf is in no known session: dropped, never given to the file it sits in
    assert kinds == ["ai_title", "custom_title"]
    assert data["row"]["title"] == "My login fix"
    # the unknown type and the enqueue with no content: counted, not fatal
    assert data["row"]["lines_skipped"] == 2


def test_recap_from_away_summary(tmp_path: Path) -> None:
    data = session_of(tmp_path, [prompt("go"), assistant("m1", text("ok")),
                                 system("away_summary", content="Working on the parser; next: tests.")])
    assert data["texts"] == [{"kind": "recap", "text": "Working on the parser; next: tests.",
                              "timestamp": data["texts"][0]["timestamp"], "turn_index": 1}]


def test_version_changes_mid_file_and_windows_paths(tmp_path: Path) -> None:
    win = "C:\\Users\\bo\\src\\app"
    recs = [prompt("go", cwd=win, version="2.0.5"), assistant("m1", text("ok"), cwd=win, version="2.0.8")]
    data = session_of(tmp_path, recs)
    row = data["row"]
    assert row["repo_name"] == "app" and row["cwd"] == win
    assert (row["version_first"], row["version_last"]) == ("2.0.5", "2.0.8")


def test_parent_uuid_outside_the_file_is_harmless(tmp_path: Path) -> None:
    data = session_of(tmp_path, [prompt("resumed", parentUuid=uid()), assistant("m1", text("ok"))])
    assert len(data["turns"]) == 1


def test_repo_comes_from_cwd_not_folder_name(tmp_path: Path) -> None:
    data = session_of(tmp_path, [prompt("go", cwd="/home/dev/my.dotted-repo_name")])
    assert data["row"]["repo_name"] == "my.dotted-repo_name"


def test_plan_from_exit_plan_mode_when_no_plan_file(tmp_path: Path) -> None:
    recs = [prompt("plan", slug="no-such-slug"),
            assistant("m1", tool_use("p", "ExitPlanMode", plan="# Plan\n1. do it")), result("p")]
    data = session_of(tmp_path, recs)
    assert (data["plan"], data["plan_source"]) == ("# Plan\n1. do it", "exit_plan_mode")


def test_huge_base64_line_is_read(tmp_path: Path) -> None:
    img = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A" * 850_000}}
    data = session_of(tmp_path, [prompt([text("look at this"), img]), assistant("m1", text("nice"))])
    assert data["turns"][0]["prompt"] == "look at this"


def test_empty_and_summary_only_files(tmp_path: Path) -> None:
    from jacked.catalog import Catalog
    from jacked.ingest.scan import Scanner

    proj = tmp_path / "claude" / "projects" / "-p"
    proj.mkdir(parents=True)
    (proj / "aaaaaaaa-0000-4000-8000-000000000000.jsonl").write_text("")
    (proj / "bbbbbbbb-0000-4000-8000-000000000000.jsonl").write_text(
        json.dumps({"type": "summary", "summary": "Old chat about caching", "leafUuid": "x"}) + "\n")
    cat = Catalog(tmp_path / "c.db")
    report = Scanner(cat, tmp_path / "claude").scan()
    # neither is a session: nothing listed, and the label (its leaf is nowhere) titles nothing
    assert report.errors == [] and report.sessions == 0
    assert cat.list_sessions() == []
    assert [x["text"] for x in cat.text_rows("bbbbbbbb-0000-4000-8000-000000000000")] == []
