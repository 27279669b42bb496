"""2.1.x layouts beside the session file: compaction files, workflow runs, teammates and the
tool outputs moved to `tool-results/` (issue 10). Hand-written lines in the shapes real files use."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from kit import SID, assistant, claude_dir_with, prompt, result, system, text, tool_use, write_jsonl
from test_cli_history import run

from jacked.ingest.archive import Archive
from jacked.catalog import Catalog
from jacked.index.extract import Extractor
from jacked.query.history import turns_json
from jacked.query.retrieve import _subagent_title, build_items, retrieve
from jacked.ingest.scan import Scanner
from jacked.sources.claude import tool_results
from jacked.sources.claude.discover import discover
from jacked.sources.claude.tool_results import looks_like_reference, resolve_reference

PROJECT = "-home-dev-projects-demo"


def _session_dir(claude: Path) -> Path:
    return claude / "projects" / PROJECT / SID


def _scan(tmp: Path, claude: Path) -> tuple[Catalog, Any]:
    cat = Catalog(tmp / "home" / "catalog.db")
    report = Scanner(cat, claude).scan()
    return cat, report


def _agent_line(agent_id: str, rec: dict[str, Any], session: str = SID) -> dict[str, Any]:
    """A line of a subagent file: a sidechain line with the agent's id (2.1.x)."""
    rec.update(isSidechain=True, agentId=agent_id, sessionId=session)
    return rec


# --------------------------------------------------------------------------- 1. compaction files
ANALYSIS = "<analysis>\nLet me walk through the conversation chronologically. RAW-ANALYSIS-DUMP\n</analysis>"
SUMMARY_BODY = ("1. Primary Request and Intent:\n   The user asked to add dark mode to the settings page and to keep "
                "the choice across reloads.\n2. Key Technical Concepts:\n   - CSS variables\n   - localStorage")


def _compaction_session(tmp: Path, with_summary_line: bool) -> Path:
    main = [prompt("add dark mode to the settings page", 0),
            assistant("m1", text("Working on it."), 1),
            system("compact_boundary", 20, content="Conversation compacted",
                   compactMetadata={"trigger": "auto", "preTokens": 167189})]
    if with_summary_line:
        main.append(prompt("This session is being continued from a previous conversation that ran out of context. "
                           "The summary below covers the earlier portion of the conversation.\n\nSummary:\n"
                           + SUMMARY_BODY, 21, isCompactSummary=True, isVisibleInTranscriptOnly=True))
    main += [prompt("now persist it", 30), assistant("m2", text("Persisted in localStorage."), 31)]
    claude = claude_dir_with(tmp / "claude", main)
    aid = "acompact-1f2e3d4c5b6a7980"
    write_jsonl(_session_dir(claude) / "subagents" / f"agent-{aid}.jsonl", [
        _agent_line(aid, prompt("Your task is to create a detailed summary of the conversation so far.", 10)),
        _agent_line(aid, assistant("c1", text(f"{ANALYSIS}\n\n<summary>\n{SUMMARY_BODY}\n</summary>"), 19)),
    ])
    return claude


@pytest.mark.parametrize("with_summary_line", [True, False])
def test_compaction_file_is_the_compaction_summary_not_a_subagent(tmp_path: Path, with_summary_line: bool) -> None:
    claude = _compaction_session(tmp_path, with_summary_line)
    group = discover(claude / "projects")[0]
    assert group.subagents == [] and [c.layout for c in group.compactions] == ["acompact"]
    cat, report = _scan(tmp_path, claude)
    assert report.errors == []
    assert cat.subagent_rows(SID) == [] and cat.get_session_row(SID)["subagent_count"] == 0
    summaries = [x for x in cat.text_rows(SID) if x["kind"] == "compact_summary"]
    assert len(summaries) == 1  # stored once, whichever file holds it
    assert "Primary Request and Intent" in summaries[0]["text"]
    assert "RAW-ANALYSIS-DUMP" not in summaries[0]["text"] and "<summary>" not in summaries[0]["text"]
    if not with_summary_line:  # the compaction's own summary, in the turn it ran in
        assert summaries[0]["text"].startswith("1. Primary Request") and summaries[0]["turn_index"] == 1
    docs = Extractor(cat).documents(SID)
    assert not [d for d in docs if d.content_type == "subagent_summary"]
    assert len({d.index.split(".")[0] for d in docs if d.content_type == "compact_summary"}) == 1
    assert not any("RAW-ANALYSIS-DUMP" in d.text for d in docs)
    # retrieve shows the summary under the compaction heading, never the analysis under "subagent"
    items = build_items(cat, SID, "smart")
    assert [i.content_type for i in items if i.content_type == "compact_summary"] == ["compact_summary"]
    out = retrieve(cat, [SID], "smart", 4000, check_git=False)
    assert "## Compaction summaries and recaps" in out.text and "Primary Request and Intent" in out.text
    assert "RAW-ANALYSIS-DUMP" not in out.text and "## Subagent reports" not in out.text


# --------------------------------------------------------------------------- 2. workflow runs
def _workflow_agent(run_dir: Path, aid: str, lines: list[dict[str, Any]]) -> None:
    write_jsonl(run_dir / f"agent-{aid}.jsonl", [_agent_line(aid, r, f"{SID}#agent-{aid}") for r in lines])
    (run_dir / f"agent-{aid}.meta.json").write_text(json.dumps({"agentType": "workflow-subagent"}))


def test_workflow_runs_attach_to_the_turn_that_started_them(tmp_path: Path) -> None:
    main = [prompt("review the diff with a workflow", 0),
            assistant("m1", tool_use("toolu_wf01", "Workflow", script="phase('Map')"), 1),
            result("toolu_wf01", "Workflow launched in background. Task ID: task_demo01", t=2,
                   tur={"isAsync": True, "status": "async_launched", "runId": "wf_demo01"}),
            assistant("m2", text("Launched."), 3),
            prompt("and now a second one, without asking for it", 100),
            assistant("m3", text("ok"), 101)]
    claude = claude_dir_with(tmp_path / "claude", main)
    run1 = _session_dir(claude) / "subagents" / "workflows" / "wf_demo01"
    # a structured-output agent: its last text only announces the output the journal holds
    _workflow_agent(run1, "ag000001", [
        prompt("Map the **loader** area and report findings.", 5),
        assistant("a1", tool_use("toolu_so1", "StructuredOutput", area="loader", summary="glob misses workflows"), 6),
        result("toolu_so1", "ok", t=7),
        assistant("a2", text("Returning structured output."), 8)])
    # an agent whose file has no final text at all (it stopped after a tool call)
    _workflow_agent(run1, "ag000002", [
        prompt("synthesize", 9), assistant("b1", tool_use("toolu_r1", "Read", file_path="/repo/x.py"), 10)])
    write_jsonl(run1 / "journal.jsonl", [
        {"type": "started", "key": "v2:h0", "agentId": "ag000001"},
        {"type": "started", "key": "v2:h1", "agentId": "ag000002"},
        {"type": "result", "key": "v2:h0", "agentId": "ag000001",
         "result": {"area": "loader", "summary": "Discovery glob misses subagents/workflows."}},
        {"type": "result", "key": "v2:h1", "agentId": "ag000002", "result": "## Plan\n\nLand parsing first."}])
    run2 = _session_dir(claude) / "subagents" / "workflows" / "wf_later"
    _workflow_agent(run2, "ag000009", [prompt("late run", 120), assistant("c1", text("Late report."), 121)])

    cat, report = _scan(tmp_path, claude)
    assert report.errors == []
    subs = {a["agent_id"]: a for a in turns_json(cat, SID)["subagents"]}
    assert set(subs) == {"ag000001", "ag000002", "ag000009"}
    assert all(a["layout"] == "workflow" and a["role"] == "subagent" for a in subs.values())
    assert (subs["ag000001"]["workflow_run"], subs["ag000001"]["turn_index"]) == ("wf_demo01", 1)
    assert (subs["ag000002"]["workflow_run"], subs["ag000002"]["turn_index"]) == ("wf_demo01", 1)
    assert subs["ag000001"]["tool_use_id"] == "toolu_wf01"  # the Workflow call of that turn
    assert (subs["ag000009"]["workflow_run"], subs["ag000009"]["turn_index"]) == ("wf_later", 2)
    assert "Discovery glob misses subagents/workflows." in subs["ag000001"]["summary_text"]
    assert subs["ag000002"]["summary_text"] == "## Plan\n\nLand parsing first."
    assert subs["ag000009"]["summary_text"] == "Late report."
    assert cat.get_session_row(SID)["subagent_count"] == 3
    turn1 = turns_json(cat, SID)["turns"][0]
    assert [i["tool_name"] for i in turn1["invocations"]] == ["Workflow"]  # agents' work is their own
    rows = {a["agent_id"]: a for a in cat.subagent_rows(SID)}
    assert _subagent_title(rows["ag000002"]) == "### workflow-subagent [workflow wf_demo01] (turn 1)"


# --------------------------------------------------------------------------- 3. teammates
def _task(tool_id: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": "Task", "input": inp}


def test_teammates_are_named_members_of_their_team(tmp_path: Path) -> None:
    alice_prompt = "You are **alice**, a teammate in the test-coverage team. Add relay tests and report back."
    bob_prompt = "You are **bob**, a teammate in the test-coverage team. Add server tests and report back."
    main = [prompt("Start a test-coverage team and dispatch teammates.", 0),
            assistant("m1", tool_use("tu_team", "TeamCreate", team_name="test-coverage"), 1),
            result("tu_team", '{"team_name": "test-coverage"}', t=2, teamName="test-coverage"),
            assistant("m2", _task("tu_alice", description="Run alice's test work", subagent_type="general-purpose",
                                  name="alice", team_name="test-coverage", prompt=alice_prompt), 3,
                      teamName="test-coverage"),
            result("tu_alice", [text("Relay tests added.")], t=4, teamName="test-coverage",
                   tur={"status": "completed", "agentId": "aaaa111111111111", "agentType": "general-purpose"}),
            # no toolUseResult: linked by the call's prompt, which the lead's message wraps
            assistant("m3", _task("tu_bob", description="Run bob's test work", subagent_type="general-purpose",
                                  name="bob", team_name="test-coverage", prompt=bob_prompt), 5,
                      teamName="test-coverage"),
            result("tu_bob", "Spawned successfully.", t=6, teamName="test-coverage"),
            assistant("m4", text("Both teammates are working."), 7, teamName="test-coverage")]
    claude = claude_dir_with(tmp_path / "claude", main)
    subdir = _session_dir(claude) / "subagents"
    write_jsonl(subdir / "agent-aaaa111111111111.jsonl", [
        _agent_line("aaaa111111111111", prompt(alice_prompt, 3)),
        _agent_line("aaaa111111111111", assistant("x1", text("Relay module coverage is now 96%."), 4))])
    write_jsonl(subdir / "agent-bbbb222222222222.jsonl", [
        _agent_line("bbbb222222222222", prompt(
            '<teammate-message teammate_id="team-lead" color="cyan" summary="task spawn">\n'
            + bob_prompt + "\n</teammate-message>", 5)),
        _agent_line("bbbb222222222222", assistant("y1", text("Server module coverage is now 88%."), 6))])
    # a teammate no call names: its own records say which team and member it is
    write_jsonl(subdir / "agent-cccc333333333333.jsonl", [
        _agent_line("cccc333333333333", prompt("Review the test plan.", 6, teamName="test-coverage",
                                               agentName="carol")),
        _agent_line("cccc333333333333", assistant("z1", text("Reviewed."), 7, teamName="test-coverage",
                                                  agentName="carol"))])
    # an ordinary subagent stays one
    write_jsonl(subdir / "agent-dddd444444444444.jsonl", [
        _agent_line("dddd444444444444", prompt("Find the config loader.", 6)),
        _agent_line("dddd444444444444", assistant("w1", text("It is in config.py."), 7))])

    cat, report = _scan(tmp_path, claude)
    assert report.errors == []
    subs = {a["agent_id"]: a for a in turns_json(cat, SID)["subagents"]}
    who = {aid: (a["role"], a["team_name"], a["member_name"]) for aid, a in subs.items()}
    assert who == {"aaaa111111111111": ("teammate", "test-coverage", "alice"),
                   "bbbb222222222222": ("teammate", "test-coverage", "bob"),
                   "cccc333333333333": ("teammate", "test-coverage", "carol"),
                   "dddd444444444444": ("subagent", None, None)}
    assert subs["bbbb222222222222"]["tool_use_id"] == "tu_bob" and subs["bbbb222222222222"]["turn_index"] == 1
    assert subs["aaaa111111111111"]["agent_type"] == "general-purpose"
    assert subs["cccc333333333333"]["agent_type"] == "teammate"
    inv_bob = [i for i in turns_json(cat, SID)["turns"][0]["invocations"] if i["tool_use_id"] == "tu_bob"]
    assert inv_bob[0]["agent_id"] == "bbbb222222222222"
    rows = {a["agent_id"]: a for a in cat.subagent_rows(SID)}
    assert _subagent_title(rows["aaaa111111111111"]) == \
        "### teammate alice@test-coverage (general-purpose): Run alice's test work (turn 1)"
    assert _subagent_title(rows["cccc333333333333"]) == "### teammate carol@test-coverage"


# --------------------------------------------------------------------------- 4. tool-results
def _persisted(tool_id: str, size: str = "61.2KB", other_session: str = SID) -> str:
    return ("<persisted-output>\nOutput too large (" + size + "). Full output saved to: "
            f"/Users/someone/.claude/projects/-Users-someone-demo/{other_session}/tool-results/{tool_id}.txt\n\n"
            "Preview (first 2KB):\nCollecting packages\n...\n</persisted-output>")


def test_moved_tool_output_is_read_back_head_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    main = [prompt("run the tests", 0),
            assistant("m1", tool_use("toolu_big", "Bash", command="pytest -x"), 1),
            result("toolu_big", _persisted("toolu_big"), is_error=True, t=2),
            assistant("m2", tool_use("toolu_ok", "Bash", command="ls"), 3),
            result("toolu_ok", "README.md", t=4),
            assistant("m3", text("The tests fail on an import."), 5)]
    claude = claude_dir_with(tmp_path / "claude", main)
    out = _session_dir(claude) / "tool-results" / "toolu_big.txt"
    out.parent.mkdir(parents=True)
    secret = "sk-ant-api03-" + "A1b2C3d4" * 12
    head = (f"\x1b[31mERROR\x1b[0m collecting tests/test_app.py\nANTHROPIC_API_KEY={secret}\n"
            "ImportError: No module named 'frobnicate'\n")
    out.write_text(head + ("x" * 99 + "\n") * 20_000)  # 2 MB: never read whole

    reads: list[int] = []
    real_open = open

    class Spy:
        def __init__(self, fh: Any) -> None:
            self.fh = fh

        def __enter__(self) -> Spy:
            return self

        def __exit__(self, *exc: Any) -> None:
            self.fh.close()

        def fileno(self) -> int:
            return self.fh.fileno()

        def read(self, n: int = -1) -> bytes:
            reads.append(n)
            return self.fh.read(n)

    monkeypatch.setattr(tool_results, "open", lambda p, mode="r": Spy(real_open(p, mode)), raising=False)
    cat, report = _scan(tmp_path, claude)
    assert report.errors == [] and report.tool_results_missing == 0
    assert reads and all(0 < n <= 2000 * 4 for n in reads)  # the head a brief needs, not the file
    invs = {i["tool_use_id"]: i for i in turns_json(cat, SID)["turns"][0]["invocations"]}
    brief = invs["toolu_big"]["result"]
    assert not looks_like_reference(brief) and brief.startswith("ERROR collecting tests/test_app.py")
    assert "ImportError: No module named 'frobnicate'" in brief and "\x1b" not in brief
    assert secret not in brief and len(brief) < 2100 and brief.endswith("bytes]")
    assert invs["toolu_big"]["is_error"] is True and invs["toolu_ok"]["result"] == "README.md"
    # search finds the error's text (the sparse chunk of the turn holds the brief)
    chunks = [d.text for d in Extractor(cat).documents(SID) if d.content_type == "chunk"]
    assert any("frobnicate" in c for c in chunks)
    # the archive keeps the moved output with the session's other files
    kinds = {(e.kind, Path(e.source).name) for e in Archive(tmp_path / "home", claude).entries()}
    assert ("tool_result", "toolu_big.txt") in kinds and ("main", f"{SID}.jsonl") in kinds


def test_archived_tool_output_serves_a_session_claude_deleted(tmp_path: Path) -> None:
    main = [prompt("run the tests", 0), assistant("m1", tool_use("toolu_big", "Bash", command="pytest"), 1),
            result("toolu_big", _persisted("toolu_big"), is_error=True, t=2)]
    claude = claude_dir_with(tmp_path / "claude", main)
    out = _session_dir(claude) / "tool-results" / "toolu_big.txt"
    out.parent.mkdir(parents=True)
    out.write_text("ImportError: No module named 'frobnicate'\n" + "y" * 60_000)
    _scan(tmp_path, claude)
    for p in (claude / "projects" / PROJECT / f"{SID}.jsonl", out):  # Claude Code's 30-day sweep
        p.unlink()
    (tmp_path / "home" / "catalog.db").unlink()
    for extra in (tmp_path / "home").glob("catalog.db-*"):
        extra.unlink()
    cat, report = _scan(tmp_path, claude)  # a fresh catalog: the session comes back from the archive
    assert report.tool_results_missing == 0
    brief = turns_json(cat, SID)["turns"][0]["invocations"][0]["result"]
    assert brief.startswith("ImportError: No module named 'frobnicate'")


def test_reference_of_a_resumed_session_finds_its_parents_output(tmp_path: Path) -> None:
    parent = "99999999-2222-4333-8444-555555555555"
    folder = tmp_path / "projects" / PROJECT
    (folder / parent / "tool-results").mkdir(parents=True)
    (folder / parent / "tool-results" / "toolu_p.txt").write_text("from the parent session")
    text_ = _persisted("toolu_p", other_session=parent)
    assert resolve_reference(text_, folder / SID, "toolu_p") == "from the parent session"
    # only names inside the project folder are ever opened
    evil = text_.replace(f"{parent}/tool-results/toolu_p.txt", "../../../../etc/passwd")
    assert resolve_reference(evil, folder / SID, None) is None


# --------------------------------------------------------------------------- 5. missing tool-results file
def test_missing_tool_output_is_counted_and_nothing_else_lost(tmp_path: Path) -> None:
    ref = _persisted("toolu_gone")
    main = [prompt("run the tests", 0),
            assistant("m1", tool_use("toolu_gone", "Bash", command="pytest"), 1),
            result("toolu_gone", ref, is_error=True, t=2),
            assistant("m2", tool_use("toolu_ok", "Read", file_path="/repo/app.py"), 3),
            result("toolu_ok", "print('hi')", t=4),
            assistant("m3", text("Done."), 5),
            prompt("thanks", 6)]
    claude = claude_dir_with(tmp_path / "claude", main)
    cat, report = _scan(tmp_path, claude)
    assert report.tool_results_missing == 1 and report.errors == []
    data = turns_json(cat, SID)
    assert [t["prompt"] for t in data["turns"]] == ["run the tests", "thanks"]
    invs = data["turns"][0]["invocations"]
    assert [i["tool_name"] for i in invs] == ["Bash", "Read"]
    assert invs[0]["result"] == ref and invs[0]["is_error"] is True  # Claude Code's preview is kept
    assert data["turns"][0]["metrics"]["files_read"] == ["/repo/app.py"]
    again = Scanner(cat, claude).scan()  # unchanged: still reported
    assert again.sessions_scanned == 0 and again.tool_results_missing == 1
    p = run(["scan", "--json"], tmp_path / "cli-home", claude)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["tool_results_missing"] == 1
    assert os.path.exists(claude / "projects" / PROJECT / f"{SID}.jsonl")


@pytest.mark.parametrize("ref", [
    "<persisted-output>\nOutput too large (34.3KB). Full output saved to: C:\\Users\\dev\\.claude\\projects\\H--demo\\"
    f"{SID}\\tool-results\\toolu_w.txt\n\nPreview (first 2KB):\nH:\\demo\\a.ts:1: x\n</persisted-output>",
    f"<persisted-output>Tool result saved to: /Users/dev/.claude/projects/-demo/{SID}/tool-results/toolu_w.txt\n\n"
    "Use Read to view</persisted-output>",
])
def test_reference_wordings_and_windows_paths(tmp_path: Path, ref: str) -> None:
    assert tool_results.reference_name(ref) == ("toolu_w.txt", SID)
    (tmp_path / SID / "tool-results").mkdir(parents=True)
    (tmp_path / SID / "tool-results" / "toolu_w.txt").write_text("whole output")
    assert resolve_reference(ref, tmp_path / SID) == "whole output"
    assert not looks_like_reference("the file says: <persisted-output>Tool result saved to: x.txt")
