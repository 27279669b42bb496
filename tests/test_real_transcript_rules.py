"""Issue 10: the rules real transcripts taught (DESIGN "Turn rules"), one hand-written case each,
in the shapes real files have."""
from __future__ import annotations

import json
from pathlib import Path

from kit import FIXTURES, SID, assistant, base, prompt, result, session_of, system, text, tool_use, write_jsonl

from jacked.catalog import Catalog
from jacked.query.history import list_sessions, turns_json
from jacked.ingest.scan import Scanner


def _queue(content: object, t: int, operation: str = "enqueue") -> dict:
    rec = {"type": "queue-operation", "operation": operation, "timestamp": f"2026-03-01T10:00:{t:02d}.000Z",
           "sessionId": SID}
    if content is not None:
        rec["content"] = content
    return rec


def _sidechain(text_: str, t: int, parent: str | None, role: str = "user", msg_id: str | None = None,
               block: dict | None = None) -> dict:
    if role == "user":
        return base(t, type="user", isSidechain=True, parentUuid=parent,
                    message={"role": "user", "content": text_})
    return assistant(msg_id or "x", block or text(text_), t, isSidechain=True, parentUuid=parent)


def test_parallel_inline_sidechains_pair_by_prompt_not_position(tmp_path: Path) -> None:
    # 1.0.x: three parallel Task calls; their sidechains are written in completion order (c, a, b).
    calls = [("ta", "Setup Next.js project"), ("tb", "Write the components"), ("tc", "Add the tests")]
    recs = [prompt("build the site", 0)]
    recs += [assistant("m1", tool_use(tid, "Task", description=d, prompt=f"Please {d.lower()} now"), 1)
             for tid, d in calls]
    work = {"ta": 3, "tb": 1, "tc": 2}  # tool calls each subagent makes
    for tid, d in (calls[2], calls[0], calls[1]):
        root = _sidechain(f"Please {d.lower()} now", 2, None)
        recs.append(root)
        for k in range(work[tid]):
            recs.append(_sidechain("", 3, root["uuid"], "assistant", f"s{tid}{k}", tool_use(f"u{tid}{k}", "Bash",
                                                                                          command="ls")))
            recs.append(base(3, type="user", isSidechain=True, message={"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"u{tid}{k}", "content": "ok"}]}))
        recs.append(_sidechain(f"report of {d}", 4, None, "assistant", f"r{tid}"))
    recs += [result(tid, f"done {d}", t=5) for tid, d in calls]
    data = session_of(tmp_path, recs)
    by_call = {s["tool_use_id"]: s for s in data["subagents"]}
    assert set(by_call) == {"ta", "tb", "tc"}  # every sidechain linked
    for tid, d in calls:
        assert by_call[tid]["summary_text"] == f"report of {d}"
        assert by_call[tid]["tool_call_count"] == work[tid]
    assert data["turns"][0]["metrics"]["tool_call_count"] == 3  # the Task calls only


def test_summary_label_titles_the_session_holding_its_leaf(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    owner, resumed = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
    first = [prompt("fix the cache", 0, sessionId=owner), assistant("m1", text("fixed"), 1, sessionId=owner)]
    leaf = first[-1]["uuid"]
    write_jsonl(claude / "projects" / "-p" / f"{owner}.jsonl", first)
    write_jsonl(claude / "projects" / "-p" / f"{resumed}.jsonl", [
        {"type": "summary", "summary": "Cache invalidation fix", "leafUuid": leaf},
        {"type": "summary", "summary": "A label for nothing", "leafUuid": "no-such-uuid"},
        prompt("and now the docs", 10, sessionId=resumed), assistant("m2", text("ok"), 11, sessionId=resumed)])
    cat = Catalog(tmp_path / "c.db")
    Scanner(cat, claude).scan()
    assert cat.get_session_row(owner)["title"] == "Cache invalidation fix"
    assert cat.get_session_row(resumed)["title"] is None
    assert [(x["kind"], x["text"]) for x in turns_json(cat, owner)["texts"]] == [
        ("summary_label", "Cache invalidation fix")]
    assert turns_json(cat, resumed)["texts"] == []


def test_label_arriving_after_its_owner_was_scanned(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    owner, later = "aaaaaaaa-0000-4000-8000-000000000003", "bbbbbbbb-0000-4000-8000-000000000004"
    first = [prompt("profile the loader", 0, sessionId=owner), assistant("m1", text("done"), 1, sessionId=owner)]
    write_jsonl(claude / "projects" / "-p" / f"{owner}.jsonl", first)
    cat = Catalog(tmp_path / "c.db")
    Scanner(cat, claude).scan()
    seq = cat.get_session_row(owner)["content_seq"]
    write_jsonl(claude / "projects" / "-p" / f"{later}.jsonl", [
        {"type": "summary", "summary": "Loader profiling", "leafUuid": first[-1]["uuid"]},
        prompt("next", 5, sessionId=later)])
    Scanner(cat, claude).scan()
    row = cat.get_session_row(owner)
    assert row["title"] == "Loader profiling"
    assert row["content_seq"] > seq  # its points are brought up to date by the next index run


def test_api_response_split_by_a_prompt_counts_once(tmp_path: Path) -> None:
    usage = {"input_tokens": 442_000, "output_tokens": 10}
    recs = [prompt("start", 0), assistant("m1", text("working"), 1, usage=usage),
            prompt("also check the docs", 2),  # typed mid-stream: splits m1's lines
            assistant("m1", tool_use("t1", "Read", file_path="/a"), 3, usage=usage), result("t1", "x", t=4),
            assistant("m2", text("done"), 5, usage={"input_tokens": 5, "output_tokens": 1})]
    data = session_of(tmp_path, recs)
    first, second = (t["metrics"] for t in data["turns"])
    assert (first["api_calls"], first["input_tokens"]) == (1, 442_000)
    assert (second["api_calls"], second["input_tokens"]) == (1, 5)
    assert data["row"]["input_tokens"] == 442_005
    assert [i["tool_name"] for i in data["turns"][1]["invocations"]] == ["Read"]  # calls stay in file order


def test_task_notification_starts_a_turn_without_a_prompt(tmp_path: Path) -> None:
    note = ("<task-notification>\n<task-id>c3</task-id>\n<status>completed</status>\n"
            "<summary>Agent \"Coverage analysis\" completed</summary>\n<result>96%</result>\n</task-notification>")
    recs = [prompt("spawn the coverage agent", 0), assistant("m1", text("spawned"), 1),
            prompt(note, 2), assistant("m2", text("Coverage report received."), 3)]
    data = session_of(tmp_path, recs)
    assert [(t["index"], t["prompt"], t["started_by"]) for t in data["turns"]] == [
        (1, "spawn the coverage agent", "prompt"), (2, None, "notification")]
    assert data["row"]["first_prompt"] == "spawn the coverage agent"


def test_queued_message_is_a_prompt_unless_its_user_line_follows(tmp_path: Path) -> None:
    recs = [prompt("refactor the parser", 0), assistant("m1", tool_use("t1", "Bash", command="make"), 1),
            _queue([{"type": "text", "text": "also keep the old API"}], 2),  # typed while Claude worked
            result("t1", "ok", t=3),
            assistant("m2", tool_use("t2", "Edit", file_path="/p.py"), 4), result("t2", "ok", t=5),
            # 2.0.x: a queued message later also written as its user line (that line wins)
            _queue("ship it", 6), _queue(None, 6, "dequeue"), prompt("ship it", 7),
            assistant("m3", text("shipped"), 8),
            _queue(None, 9)]  # an enqueue with no content: skipped, counted
    data = session_of(tmp_path, recs)
    assert [(t["index"], t["prompt"], t["started_by"]) for t in data["turns"]] == [
        (1, "refactor the parser", "prompt"), (2, "also keep the old API", "queued"), (3, "ship it", "prompt")]
    assert [i["tool_name"] for i in data["turns"][1]["invocations"]] == ["Edit"]
    assert data["row"]["lines_skipped"] == 1


def test_queued_message_then_its_user_line_after_more_work_folds_back(tmp_path: Path) -> None:
    recs = [prompt("run the suite", 0), _queue("then fix what fails", 1),
            assistant("m1", tool_use("t1", "Bash", command="pytest"), 2), result("t1", "2 failed", t=3),
            prompt("then fix what fails", 4), assistant("m2", tool_use("t2", "Edit", file_path="/x"), 5)]
    data = session_of(tmp_path, recs)
    assert [(t["prompt"], [i["tool_name"] for i in t["invocations"]]) for t in data["turns"]] == [
        ("run the suite", ["Bash"]), ("then fix what fails", ["Edit"])]


def _absorbed(text_: str, t: int, reason: str | None = "absorbed_mid_turn") -> list[dict]:
    """2.1.x: a queued message handed to the model inside the running turn (no user line follows):
    a `queued_command` attachment holding its text, then the queue's `remove`."""
    attachment = base(t, type="attachment", attachment={"type": "queued_command", "prompt": text_,
                                                       "commandMode": "prompt", "origin": {"kind": "human"}})
    remove = _queue(text_, t, "remove")
    if reason is not None:
        remove["reason"] = reason
    return [attachment, remove]


def test_queued_message_delivered_mid_turn_is_a_prompt_at_its_time(tmp_path: Path) -> None:
    recs = [prompt("run the suite", 0), assistant("m1", tool_use("t1", "Bash", command="pytest"), 1),
            _queue("yes", 2),  # typed while the tests ran
            result("t1", "2 failed", t=3), *_absorbed("yes", 4),
            assistant("m2", text("Going ahead with the fix."), 5),
            assistant("m3", tool_use("t2", "Edit", file_path="/x.py"), 6), result("t2", "ok", t=7),
            system("turn_duration", 8, durationMs=8000),
            # later, the same word typed as a prompt of its own: not the queued message's user line
            prompt("yes", 20), assistant("m4", tool_use("t3", "Bash", command="git push"), 21),
            result("t3", "ok", t=22)]
    data = session_of(tmp_path, recs)
    assert [(t["index"], t["prompt"], t["started_by"], t["started_at"], [i["tool_name"] for i in t["invocations"]])
            for t in data["turns"]] == [
        (1, "run the suite", "prompt", "2026-03-01T10:00:00.000Z", ["Bash"]),
        (2, "yes", "queued", "2026-03-01T10:00:02.000Z", ["Edit"]),
        (3, "yes", "prompt", "2026-03-01T10:00:20.000Z", ["Bash"])]
    assert data["row"]["turn_count"] == 3


def test_queued_message_removed_without_a_reason_is_delivered_too(tmp_path: Path) -> None:
    # before 2.1.246 the `remove` of an absorbed message names no reason (and a later copy of the
    # text typed again is a prompt of its own)
    recs = [prompt("deploy", 0), _queue("and tag it", 1), assistant("m1", tool_use("t1", "Bash", command="make"), 2),
            _queue("and tag it", 3, "remove"), result("t1", "ok", t=3), assistant("m2", text("tagged too"), 4),
            prompt("and tag it", 10), assistant("m3", text("already tagged"), 11)]
    data = session_of(tmp_path, recs)
    assert [(t["prompt"], t["started_by"]) for t in data["turns"]] == [
        ("deploy", "prompt"), ("and tag it", "queued"), ("and tag it", "prompt")]


def test_queued_slash_command_matches_its_command_line(tmp_path: Path) -> None:
    recs = [_queue([{"type": "text", "text": "/init"}], 0), _queue(None, 0, "dequeue"),
            prompt("<command-message>init is analyzing your codebase…</command-message>\n"
                   "<command-name>/init</command-name>", 1), assistant("m1", text("ok"), 2)]
    data = session_of(tmp_path, recs)
    assert len(data["turns"]) == 1 and data["turns"][0]["is_slash_command"]
    assert data["row"]["first_prompt"] == "/init"


def test_terminal_escapes_never_reach_the_catalog(tmp_path: Path) -> None:
    colored = "\x1b[32m✔\x1b[39m lefthook \x1b[1mpre-commit\x1b[22m\x1b[2K\r done"
    recs = [prompt("commit", 0), assistant("m1", tool_use("t1", "Bash", command="git commit"), 1),
            result("t1", colored, t=2), assistant("m2", text("Committed \x1b[1mok\x1b[0m"), 3)]
    data = session_of(tmp_path, recs)
    turn = data["turns"][0]
    assert "\x1b" not in turn["invocations"][0]["result"] and "lefthook pre-commit" in turn["invocations"][0]["result"]
    assert turn["assistant_text"] == "Committed ok"


def test_turn_ends_before_the_next_prompt(tmp_path: Path) -> None:
    recs = [prompt("one", 0), assistant("m1", text("a"), 5), system("turn_duration", 6, durationMs=6000),
            prompt("two", 40), assistant("m2", text("b"), 41)]
    data = session_of(tmp_path, recs)
    assert data["turns"][0]["ended_at"] == "2026-03-01T10:00:06.000Z"


def test_session_list_shows_the_head_of_a_long_first_prompt(tmp_path: Path) -> None:
    long_prompt = "paste: " + "x" * 22_000
    data = session_of(tmp_path, [prompt(long_prompt, 0), assistant("m1", text("ok"), 1)])
    cat = Catalog(tmp_path / "home" / "catalog.db")
    row = list_sessions(cat)[0]
    assert len(row["first_prompt"]) <= 301 and row["first_prompt"].startswith("paste: xxx")
    assert data["turns"][0]["prompt"] == long_prompt  # the turn keeps it whole


def test_malformed_queue_and_summary_lines_are_harmless(tmp_path: Path) -> None:
    recs = [{"type": "summary", "leafUuid": None}, {"type": "summary", "summary": "x", "leafUuid": 5},
            _queue(12, 1), _queue({"weird": True}, 1), prompt("hello", 2), assistant("m1", text("hi"), 3)]
    data = session_of(tmp_path, recs)
    assert [t["prompt"] for t in data["turns"]] == ["hello"]


def test_the_real_async_agent_fixture(tmp_path: Path) -> None:
    """The hand-written 2.1.x background-agent session: the notification is no prompt."""
    src = FIXTURES / "handwritten" / "claude-code-log" / "async_agents" / "eb000000-0000-4000-8000-000000000001.jsonl"
    claude = tmp_path / "claude"
    dest = claude / "projects" / "-p" / src.name
    dest.parent.mkdir(parents=True)
    dest.write_bytes(src.read_bytes())
    cat = Catalog(tmp_path / "c.db")
    Scanner(cat, claude).scan()
    turns = turns_json(cat, src.stem)["turns"]
    assert [t["started_by"] for t in turns] == ["prompt", "notification"]
    assert sum(1 for line in src.read_text().splitlines()
               if "<task-notification>" in json.dumps(json.loads(line).get("message", ""))) == 1


def test_a_huge_snapshot_line_is_skipped_with_memory_flat(tmp_path: Path) -> None:
    from jacked.sources.reader import MAX_LINE_BYTES

    claude = tmp_path / "claude"
    f = write_jsonl(claude / "projects" / "-p" / f"{SID}.jsonl", [prompt("before", 0)])
    with f.open("a") as fh:  # a snapshot line just over the limit, then the session goes on
        fh.write('{"type":"file-history-snapshot","messageId":"m","snapshot":{"trackedFileBackups":{"a":"')
        fh.write("x" * MAX_LINE_BYTES)
        fh.write('"}}}\n')
        fh.write(json.dumps(assistant("m1", text("after"), 2)) + "\n")
    cat = Catalog(tmp_path / "c.db")
    report = Scanner(cat, claude).scan()
    assert report.lines_skipped == 1 and any("skipped" in e for e in report.errors)
    turn = turns_json(cat, SID)["turns"][0]
    assert (turn["prompt"], turn["assistant_text"]) == ("before", "after")


def test_a_resumed_session_repeating_its_parent_counts_each_turn_once(tmp_path: Path) -> None:
    from jacked.index.extract import Extractor
    from jacked.query.stats import StatsQuery, compute_stats

    claude = tmp_path / "claude"
    parent, resumed = "aaaaaaaa-0000-4000-8000-00000000000a", "bbbbbbbb-0000-4000-8000-00000000000b"
    usage = {"input_tokens": 100, "output_tokens": 10}
    shared = [prompt("find the leak", 0), assistant("m1", tool_use("t1", "Bash", command="valgrind ./app"), 1,
                                                     usage=usage), result("t1", "leak in pool.c", t=2)]
    write_jsonl(claude / "projects" / "-p" / f"{parent}.jsonl", [dict(r, sessionId=parent) for r in shared])
    # the resumed file repeats the parent's lines (same uuids), then goes on
    more = [prompt("now fix it", 10), assistant("m2", tool_use("t2", "Edit", file_path="/pool.c"), 11, usage=usage),
            result("t2", "ok", t=12)]
    write_jsonl(claude / "projects" / "-p" / f"{resumed}.jsonl", [dict(r, sessionId=resumed) for r in shared + more])
    cat = Catalog(tmp_path / "c.db")
    Scanner(cat, claude).scan()
    turns = turns_json(cat, resumed)["turns"]
    assert [t["prompt"] for t in turns] == ["find the leak", "now fix it"]  # shown whole
    row = cat.get_session_row(resumed)
    assert (row["tool_call_count"], row["input_tokens"]) == (1, 100)  # only its own turn
    stats = compute_stats(cat, StatsQuery())
    assert stats["turns"] == 2 and stats["tokens"]["input"] == 200
    kinds = [(d.content_type, d.turn_index) for d in Extractor(cat).documents(resumed)]
    assert ("user_message", 1) not in kinds and ("user_message", 2) in kinds


def test_no_resume_hint_for_a_transcript_not_named_by_its_session_id(tmp_path: Path) -> None:
    from jacked.query.history import catalog_for_path
    from jacked.query.retrieve import retrieve

    recs = [prompt("plan the release", 0), assistant("m1", text("ok"), 1)]
    named = write_jsonl(tmp_path / "a" / f"{SID}.jsonl", recs)
    cat, sid = catalog_for_path(named)[:2]
    assert retrieve(cat, [sid], budget=4000, check_git=False).sessions[0]["resume"].endswith(
        f"claude --resume {SID}")
    renamed = write_jsonl(tmp_path / "b" / "release-notes.jsonl", recs)
    cat, sid = catalog_for_path(renamed)[:2]
    assert sid == "release-notes"
    assert retrieve(cat, [sid], budget=4000, check_git=False).sessions[0]["resume"] is None


def test_a_user_line_from_a_task_origin_is_a_notification(tmp_path: Path) -> None:
    recs = [prompt("watch the PR", 0), assistant("m1", text("watching"), 1),
            prompt("List files", 2, origin={"kind": "task-notification"}), assistant("m2", text("a b"), 3)]
    data = session_of(tmp_path, recs)
    assert [(t["prompt"], t["started_by"]) for t in data["turns"]] == [
        ("watch the PR", "prompt"), (None, "notification")]


def test_prompt_is_what_was_typed_and_the_ide_context_is_kept(tmp_path: Path) -> None:
    # the shapes of the real 2.0.x fixtures (VS Code extension; /mcp typed in the terminal)
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    selection = ("<ide_selection>The user selected the lines 206 to 207 from /home/dev/projects/demo/README.md:\n"
                 f"export GITHUB_TOKEN={token}\n\nThis may or may not be related to the current task.</ide_selection>")
    opened = ("<ide_opened_file>The user opened the file /home/dev/projects/demo/app.py in the IDE. This may or "
              "may not be related to the current task.</ide_opened_file>")
    recs = [prompt([{"type": "text", "text": selection}, {"type": "text", "text": "why is this token here?"}], 0),
            assistant("m1", text("It should not be."), 1),
            prompt("<command-name>/mcp</command-name>\n            <command-message>mcp</command-message>\n"
                   "            <command-args></command-args>", 2),
            prompt(opened + "\nrename main() to run()", 3), assistant("m2", text("Renamed."), 4)]
    data = session_of(tmp_path, recs)
    assert [(t["prompt"], t["is_slash_command"]) for t in data["turns"]] == [
        ("why is this token here?", False), ("/mcp", True), ("rename main() to run()", False)]
    first, command, last = data["turns"]
    assert [c["kind"] for c in first["context"]] == ["ide_selection"]
    assert "README.md" in first["context"][0]["text"] and token not in first["context"][0]["text"]
    assert command["context"] == []
    assert last["context"] == [{"kind": "ide_opened_file", "text": opened[len("<ide_opened_file>"):-len(
        "</ide_opened_file>")]}]
    assert data["row"]["first_prompt"] == "why is this token here?"
    assert token not in json.dumps(data)
    # the context stays searchable: it is part of the turn's text for the index's chunk windows
    event_texts = Catalog(tmp_path / "home" / "catalog.db").event_texts(SID)
    assert any("/home/dev/projects/demo/app.py" in x for x in event_texts[3])
    assert any("README.md" in x and token not in x for x in event_texts[1])


def test_a_bash_mode_command_is_its_typed_prompt(tmp_path: Path) -> None:
    # the shape of the real 1.0.x fixtures: `!uv run ty check` typed in bash mode, its output sent on
    recs = [prompt("<bash-input>uv run ty check</bash-input>", 0),
            prompt("<bash-stdout>error[call-non-callable]: test/test_cache.py:428</bash-stdout><bash-stderr></bash-stderr>", 1),
            prompt("please fix these", 2), assistant("m1", text("Fixed."), 3),
            prompt("<bash-input>a</bash-input><bash-input>b</bash-input>", 4)]
    data = session_of(tmp_path, recs)
    assert [t["prompt"] for t in data["turns"]] == [
        "!uv run ty check",
        "<bash-stdout>error[call-non-callable]: test/test_cache.py:428</bash-stdout><bash-stderr></bash-stderr>",
        "please fix these",
        "<bash-input>a</bash-input><bash-input>b</bash-input>"]  # not one command: left as written
    assert data["row"]["first_prompt"] == "!uv run ty check"
