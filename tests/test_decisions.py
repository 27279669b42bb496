"""Decisions, the user's feedback and the state each turn started from (jacked.sources.decisions):
pinned on the real fixtures (every event found by hand in the raw files), one hand-written case
per rule (tests/fixtures/decisions/), the generated bank (every planted event found, none
invented), and what they feed: timeline, show, turns, MCP, stats, search, retrieve, upgrades."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kit import DEEP, REAL, SID, assistant, claude_dir_with, prompt, result, scanned_real, text, tool_use

from jacked.catalog import Catalog
from jacked.ingest.scan import Scanner
from jacked.query.history import list_sessions, turns_json
from jacked.query.timeline import EVENT_TYPES, TimelineError, TimelineQuery, timeline
from jacked.sources import decisions as dec

CASES = Path(__file__).resolve().parent / "fixtures" / "decisions"
SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
CODERABBIT = "cb2e607c-c758-415a-8b45-c49e4631906a"
TOKENIZER = "f852ad25-1024-47da-964e-5eaae5bd6e6a"
RUBY = "b25638d7-b104-4f06-a797-70ac33d069ed"
SOUND = "7acd37a8-2745-4b58-a8a9-46164b22ad9e"
TIMELINE_HTML = "0d3a8e6f-290f-4105-a327-a2496e5e2a83"
NAV = "37f83ec9-f2ea-42a9-925e-0d5c105cb6e8"
REDIRECT = "9e953218-585f-4692-89df-9e0747a31c68"
LINT = "937c6e6b-27e7-4edd-86f1-ad28f9731841"
CI = "fe869ecb-c176-478f-9734-7e4b8ef12cff"


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    return scanned_real(tmp_path_factory.mktemp("decisions-real"))


def events(cat: Catalog, types: list[str], session: str | None = None) -> list[dict[str, Any]]:
    return timeline(cat, TimelineQuery(session_id=session, types=types))


def case(name: str, tmp: Path) -> tuple[Catalog, str]:
    """A hand-written case scanned into a catalog of its own."""
    path = CASES / name
    sid = json.loads(path.read_text().splitlines()[-1])["sessionId"]
    target = tmp / "claude" / "projects" / "-home-dev-projects-demo" / f"{sid}.jsonl"
    target.parent.mkdir(parents=True)
    shutil.copy(path, target)
    cat = Catalog(tmp / "catalog.db")
    Scanner(cat, tmp / "claude", archive=False).scan()
    return cat, sid


# --------------------------------------------------------------------------- the real fixtures
def test_every_decision_of_the_real_fixtures(real: Catalog) -> None:
    """Found by hand: every AskUserQuestion answered and every ExitPlanMode result of a main file
    (grep AskUserQuestion / ExitPlanMode; subagent files hold none of their own)."""
    found = [(e["session_id"][:8], e["turn_index"], e["kind"], e["text"]) for e in events(real, ["decision"])
             if e["kind"] in dec.SEARCHABLE_DECISIONS]
    assert sorted(found) == sorted([
        # deep-manifest (the plan-mode session): two questions answered at once, a third, three plans
        ("a7da6a22", 6, "question", "[Filesystem tar] Should tar archives found in the filesystem (not just embedded) "
         "also be processed recursively like ZIP files are? → Yes, both filesystem and embedded (Treat .tar/.tar.gz "
         "like .zip - process them whether found on disk or inside other archives). Alternatives: Only embedded tar "
         "archives"),
        ("a7da6a22", 6, "question", "[Tar formats] Which tar formats should be supported? → Also .tgz (Include .tgz "
         "as an alias for .tar.gz). Alternatives: .tar and .tar.gz only; Also .tar.bz2 and .tar.xz"),
        ("a7da6a22", 6, "plan", "Plan approved: Add Tar Archive Support"),
        ("a7da6a22", 7, "question", "[Error format] How should corrupted archives be reported in the manifest? → "
         "Option C: Extra field (Add CORRUPTED as a 4th tab-separated field on the archive line itself). "
         "Alternatives: Option B: Marker entry; Option A: Comment line"),
        ("a7da6a22", 7, "plan", "Plan rejected: Report Corrupted Archives in Manifest"),
        ("a7da6a22", 8, "plan", "Plan approved: Report Corrupted Archives in Manifest"),
        # coderabbit: the first plan refused with a reason, the second approved (its AskUserQuestion
        # call failed: "No such tool available", so nothing was decided there)
        ("cb2e607c", 1, "plan", "Plan rejected: Make Project Installable as UV Tool. Reason: Let's keep the name of "
         "the py file but change the pyproject script to reference it, otherwise gtg"),
        ("cb2e607c", 1, "plan", "Plan approved: Make Project Installable as UV Tool"),
        ("b25638d7", 1, "plan", "Plan approved: Plan to Fix Ruby Element Support for Chrome"),
        ("f852ad25", 2, "plan", "Plan rejected: Refactoring Plan"),
        ("f852ad25", 3, "plan", "Plan approved: Refactoring Plan"),
        ("f852ad25", 4, "plan", "Plan rejected: Web Worker Analysis & Alternative Solutions"),
        ("f852ad25", 5, "plan", "Plan approved: Add Documentation Details Elements"),
    ])
    q = next(e for e in events(real, ["decision"], DEEP) if e["kind"] == "question" and e["turn_index"] == 7)
    assert q["options"] == ["Option B: Marker entry", "Option A: Comment line", "Option C: Extra field"]
    assert (q["answer"], q["custom"], q["tool_use_id"]) == ("Option C: Extra field", False, "toolu_017rgBKoMg8TDAyiwQ1HzZg4")
    # TodoWrite lists changed while work was still open (each checked against the list before it)
    replans = sorted((e["session_id"][:8], e["turn_index"], tuple(e["added"]), tuple(e["removed"]))
                     for e in events(real, ["decision"]) if e["kind"] == "todos")
    assert replans == [
        ("7acd37a8", 5, ("Remove vendor prefixes from app/js files",), ("Remove vendor prefixes (AudioContext, URL)",)),
        ("7acd37a8", 6, ("Update CLAUDE.md to reflect AudioWorklet migration",), ()),
        ("937c6e6b", 5, (), ("Understand how SessionBrowser.action_toggle_expanded() works",)),
        ("cb2e607c", 3, ("Update README to document auto-detect feature",), ()),
        ("f852ad25", 3, ("Add debounced input for better performance", "Add share URL functionality"), ()),
    ]


def test_every_refused_call_of_the_real_fixtures(real: Catalog) -> None:
    """All 12 "doesn't want to proceed" results of the main files, each with its turn, tool and
    reason; the "[Request interrupted by user for tool use]" line after 9 of them is the same act."""
    found = sorted((e["session_id"][:8], e["turn_index"], e["kind"], e["tool_name"], e.get("reason"),
                    bool(e.get("stopped_turn"))) for e in events(real, ["feedback"])
                   if e["kind"] in ("tool_rejected", "plan_rejected"))
    assert found == sorted([
        ("0d3a8e6f", 1, "tool_rejected", "MultiEdit", None, True),
        ("0d3a8e6f", 2, "tool_rejected", "MultiEdit", None, True),
        ("0d3a8e6f", 3, "tool_rejected", "MultiEdit", None, True),
        ("37f83ec9", 2, "tool_rejected", "Write", None, True),
        ("37f83ec9", 3, "tool_rejected", "Edit", None, True),
        ("7acd37a8", 2, "tool_rejected", "Bash", None, True),
        ("7acd37a8", 4, "tool_rejected", "Bash", "use pnpm", False),
        ("cb2e607c", 1, "plan_rejected", "ExitPlanMode", "Let's keep the name of the py file but change the pyproject "
         "script to reference it, otherwise gtg", False),
        ("cb2e607c", 3, "tool_rejected", "Bash", None, True),
        ("f852ad25", 2, "plan_rejected", "ExitPlanMode", None, True),
        ("f852ad25", 4, "plan_rejected", "ExitPlanMode", None, True),
        ("a7da6a22", 7, "plan_rejected", "ExitPlanMode", None, True),
    ])
    # the raw files agree: one event per refusal, by tool_use_id
    raw = set()
    for path in REAL.joinpath("projects").glob("*/*.jsonl"):
        for line in path.read_text().splitlines():
            if dec.REJECT_PREFIX in line and '"tool_result"' in line:
                for b in json.loads(line)["message"]["content"]:
                    if b.get("type") == "tool_result" and str(b.get("content")).startswith(dec.REJECT_PREFIX):
                        raw.add(b["tool_use_id"])
    ids = {e["tool_use_id"] for e in events(real, ["feedback"]) if e["kind"].endswith("_rejected")}
    assert ids == raw and len(raw) == 12
    # the two calls of the `which …` batch stopped with the refused one are counted on it
    sound = next(e for e in events(real, ["feedback"], SOUND) if e["turn_index"] == 2)
    assert sound["cancelled"] == 2 and sound["target"].startswith("which python3")
    # every interruption in these files follows a refusal: none stands alone
    assert not [e for e in events(real, ["feedback"]) if e["kind"] == "interrupted"]


def test_corrections_found_in_the_real_fixtures(real: Catalog) -> None:
    found = sorted((e["session_id"][:8], e["turn_index"], e["about_turn"], e["cue"])
                   for e in events(real, ["feedback"]) if e["kind"] == "correction")
    assert found == [("0d3a8e6f", 3, 2, "I don't think"), ("37f83ec9", 5, 4, "Oh no"),
                     ("7acd37a8", 3, 2, "I don't want"), ("937c6e6b", 5, 4, "unhappy now"),
                     ("9e953218", 6, 5, "Still doesn't work"), ("9e953218", 9, 8, "Are you sure"),
                     ("fe869ecb", 2, 1, "Wait")]
    # every one is labelled a correction by hand (tests/fixtures/corrections_labels.jsonl)
    labels = {(x["session_id"][:8], x["turn"]): x["label"] for x in
              map(json.loads, (CASES.parent / "corrections_labels.jsonl").read_text().splitlines())}
    assert all(labels[(s, t)] == "correction" for s, t, _, _ in found)
    assert sum(v == "correction" for v in labels.values()) == 19 and len(labels) == 99


def test_session_totals_count_decisions_and_feedback(real: Catalog) -> None:
    rows = {r["session_id"]: r for r in list_sessions(real)}
    assert (rows[DEEP]["decision_count"], rows[DEEP]["feedback_count"]) == (6, 1)
    assert (rows[CODERABBIT]["decision_count"], rows[CODERABBIT]["feedback_count"]) == (3, 2)
    assert (rows[TOKENIZER]["decision_count"], rows[TOKENIZER]["feedback_count"]) == (5, 2)
    assert sum(r["decision_count"] for r in rows.values()) == 18
    assert sum(r["feedback_count"] for r in rows.values()) == 12 + 7


def test_snapshots_of_real_turns(real: Catalog) -> None:
    snaps = {e["turn_index"]: e for e in events(real, ["snapshot"], DEEP)}
    assert sorted(snaps) == list(range(1, 10))  # one per turn
    s = snaps[3]
    assert (s["cwd"], s["git_branch"], s["version"], s["model"]) == ("/src/deep-manifest", "master", "2.0.55",
                                                                     "claude-opus-4-5-20251101")
    assert s["files_backed_up"] == [".gitignore"] and s["permission_mode"] is None  # 2.0.x writes no mode
    assert snaps[1]["model"] is None  # /context: no response, no model before it
    first = events(real, ["snapshot"], "ef958aa1-0e93-49f0-bb71-150f63befcd1")[0]
    assert (first["permission_mode"], first["version"], first["model"]) == ("acceptEdits", "2.1.114", "claude-opus-4-7")


# --------------------------------------------------------------------------- hand-written cases
def test_case_questions(tmp_path: Path) -> None:
    cat, sid = case("questions.jsonl", tmp_path)
    ds = events(cat, ["decision"], sid)
    assert [(d["turn_index"], d["header"], d["answer"], d["custom"]) for d in ds] == [
        (1, "Cache store", "Redis", False),
        (1, "Endpoints", "forecast, current", False),  # multiSelect: every chosen label is an option
        (1, "TTL", "until the provider's Cache-Control says", True),  # typed in "Other"
        (2, "Auth token", "Environment variable", False),  # no toolUseResult: read from the result's text
    ]
    assert ds[0]["text"] == ("[Cache store] Where should the cache live? → Redis (Shared by every worker). "
                             "Alternatives: In memory")
    assert ds[1]["text"].endswith("Alternatives: alerts")
    # a question the user refused to answer is feedback, not a decision
    fb = events(cat, ["feedback"], sid)
    assert [(f["kind"], f["tool_name"], f["stopped_turn"]) for f in fb] == [("tool_rejected", "AskUserQuestion", True)]


def test_case_plans(tmp_path: Path) -> None:
    cat, sid = case("plans.jsonl", tmp_path)
    ds = events(cat, ["decision"], sid)
    assert [(d["turn_index"], d["kind"], d["outcome"], d.get("reason")) for d in ds] == [
        (1, "plan_mode", "entered", None),
        (1, "plan", "rejected", "keep the v1 client behind a flag"),  # 2.1.x: "the user said:"
        (1, "plan", "approved", None),
        (2, "plan", "rejected", None),
    ]
    assert ds[2]["text"] == "Plan approved: Migrate to the v2 API behind a flag"
    fb = events(cat, ["feedback"], sid)
    assert [(f["turn_index"], f["kind"], f.get("stopped_turn", False)) for f in fb] == [
        (1, "plan_rejected", False), (2, "plan_rejected", True)]
    snaps = events(cat, ["snapshot"], sid)
    assert [s["permission_mode"] for s in snaps] == ["default", "plan"]


def test_case_rejections_and_interruptions(tmp_path: Path) -> None:
    cat, sid = case("rejections.jsonl", tmp_path)
    fb = events(cat, ["feedback"], sid)
    assert [(f["turn_index"], f["kind"], f["tool_name"], f.get("reason"), f.get("cancelled"), f.get("stopped_turn"))
            for f in fb] == [
        (1, "tool_rejected", "Bash", None, 2, True),  # two parallel calls cancelled with it; the line after folded
        (2, "tool_rejected", "Bash", "use pnpm", None, None),  # refused with a reason: the agent went on
        (3, "interrupted", None, None, None, None),  # stopped while writing
        (4, "interrupted", "Bash", None, None, True),  # stopped a running command
    ]
    assert fb[1]["text"] == "rejected Bash npm install: use pnpm"
    assert not events(cat, ["decision"], sid)
    turns = turns_json(cat, sid)["turns"]
    assert [t["interrupted"] for t in turns] == [True, False, True, True]


def test_case_corrections(tmp_path: Path) -> None:
    cat, sid = case("corrections.jsonl", tmp_path)
    fb = events(cat, ["feedback"], sid)
    assert [(f["turn_index"], f["about_turn"], f["cue"]) for f in fb] == [
        (2, 1, "no,"), (3, 2, "that broke"), (7, 6, "Still doesn't work")]
    # not: the first prompt ("doesn't work" with nothing before it), "we don't do anything" (describes
    # code), "Are you sure" after /clear (no agent work to correct)
    assert fb[1]["prompt"] == "that broke the offline page, revert that"  # IDE context dropped


def test_case_snapshots_and_todo_replans(tmp_path: Path) -> None:
    cat, sid = case("snapshots.jsonl", tmp_path)
    snaps = events(cat, ["snapshot"], sid)
    assert [(s["turn_index"], s["git_branch"], s["model"], s["permission_mode"], s["files_backed_up"]) for s in snaps] == [
        (1, "main", "claude-sonnet-4-5", "acceptEdits", ["src/parser.py"]),
        (2, "feature/lexer", "claude-opus-4-7", "acceptEdits", []),
    ]
    ds = events(cat, ["decision"], sid)
    assert [(d["kind"], d["added"], d["removed"]) for d in ds] == [
        ("todos", ["Keep the tokenizer inline", "Add parser tests"], ["Split the tokenizer out"])]
    # todos are timeline-only: no `decision` point, no retrieve line
    assert "todos" not in dec.SEARCHABLE_DECISIONS


def test_rules_on_single_prompts() -> None:
    yes = ["no, don't touch that", "Nope. Use the old one", "Wait, that's the wrong file", "revert that please",
           "you broke the build", "that's not what I asked for", "I said tabs", "why did you delete the test?",
           "the tests are failing now", "Are you sure?", "still doesn't work", "we lost the header"]
    no = ["No problem, thanks", "It doesn't work on my phone", "we don't do anything there", "add a test",
          "<bash-input>git status</bash-input>", "!echo you broke the build", "<command-name>/clear</command-name>",
          "looks good, commit it",
          "fix the broken APIs", "Never mind! Add a details element"]
    assert [p for p in yes if dec.correction_cue(p) is None] == []
    assert [p for p in no if dec.correction_cue(p) is not None] == []
    assert dec.rejection_reason(dec.REJECT_PREFIX + ". The user provided the following reason for the rejection:  x y") == "x y"
    assert dec.rejection_reason(dec.REJECT_PREFIX + ". STOP what you are doing") is None
    assert dec.plan_title("\n\n## **Plan:** Ship it\nmore") == "Plan: Ship it"
    def todos(*items: tuple[str, str]) -> list[list[str]]:
        return dec.todo_items([{"content": c, "status": st} for c, st in items])

    assert dec.todo_replan(todos(("a", "completed")), todos(("b", "pending"))) is None  # a fresh list
    assert dec.todo_replan(todos(("a", "pending")), todos(("a", "completed"))) is None  # progress
    assert dec.todo_replan(todos(("a", "pending")), todos(("a", "pending"), ("b", "pending")))["added"] == ["b"]


def test_secrets_in_decisions_and_feedback_are_redacted(tmp_path: Path) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    qs = [{"question": f"Use the token {token}?", "header": "Token",
           "options": [{"label": "Yes", "description": f"export GH_TOKEN={token}"}, {"label": "No", "description": ""}],
           "multiSelect": False}]
    recs = [
        prompt("set up the release", t=0),
        assistant("m1", tool_use("t1", "AskUserQuestion", questions=qs), t=1),
        result("t1", f'User has answered your questions: "Use the token {token}?"="Yes".', t=2,
               tur={"questions": qs, "answers": {f"Use the token {token}?": "Yes"}}),
        assistant("m2", tool_use("t2", "Bash", command=f"gh auth login --with-token {token}"), t=3),
        result("t2", dec.REJECT_PREFIX + ". The user provided the following reason for the rejection:  "
               f"never paste {token}", is_error=True, t=4),
        assistant("m3", tool_use("t3", "TodoWrite", todos=[{"content": f"rotate {token}", "status": "pending"}]), t=5),
    ]
    claude = claude_dir_with(tmp_path / "claude", recs)
    cat = Catalog(tmp_path / "catalog.db")
    Scanner(cat, claude, archive=False).scan()
    rows = json.dumps([dict(r) for r in cat.db.execute("SELECT data FROM turn_events")])
    assert token not in rows and "REDACTED" in rows
    # the builder's saved state (the pending TodoWrite list) holds no secret either
    assert all(token.encode() not in (r[0] or b"") for r in cat.db.execute("SELECT state FROM files"))


def test_a_decision_whose_answer_arrives_in_a_later_scan(tmp_path: Path) -> None:
    """A file that grows: the question is asked in one scan, answered in the next (resumed state)."""
    qs = [{"question": "Which database?", "header": "DB", "options": [{"label": "SQLite", "description": ""},
                                                                    {"label": "Postgres", "description": ""}],
           "multiSelect": False}]
    asked = [prompt("store the results", t=0), assistant("m1", tool_use("t1", "AskUserQuestion", questions=qs), t=1)]
    claude = claude_dir_with(tmp_path / "claude", asked)
    cat = Catalog(tmp_path / "catalog.db")
    Scanner(cat, claude, archive=False).scan()
    assert not events(cat, ["decision"], SID)
    path = next(claude.rglob(f"{SID}.jsonl"))
    with path.open("a") as fh:
        for rec in (result("t1", "answered", t=60, tur={"questions": qs, "answers": {"Which database?": "Postgres"}}),
                    assistant("m2", text("Postgres it is."), t=61)):
            fh.write(json.dumps(rec) + "\n")
    report = Scanner(cat, claude, archive=False).scan()
    assert report.sessions_scanned == 1
    assert [d["answer"] for d in events(cat, ["decision"], SID)] == ["Postgres"]


def test_a_queued_prompt_repeated_by_its_user_line_keeps_one_snapshot(tmp_path: Path) -> None:
    recs = [
        prompt("first", t=0), assistant("m1", text("working"), t=1),
        {"type": "queue-operation", "operation": "enqueue", "timestamp": "2026-03-01T10:00:02.000Z",
         "content": "no, stop: do the second thing", "sessionId": SID},
        assistant("m2", text("still working"), t=3),
        prompt("no, stop: do the second thing", t=4), assistant("m3", text("ok"), t=5),
    ]
    claude = claude_dir_with(tmp_path / "claude", recs)
    cat = Catalog(tmp_path / "catalog.db")
    Scanner(cat, claude, archive=False).scan()
    snaps = events(cat, ["snapshot"], SID)
    assert [s["turn_index"] for s in snaps] == [1, 2]
    assert [(f["turn_index"], f["kind"]) for f in events(cat, ["feedback"], SID)] == [(2, "correction")]


# --------------------------------------------------------------------------- the generated bank
def test_generated_bank_every_planted_event_found_none_invented(tmp_path: Path) -> None:
    sys.path.insert(0, str(SCRIPTS))
    import decisions_bank_eval as bank

    truth, planted = bank.generate(tmp_path / "bank", 60, 1)
    found, other = bank.found_events(tmp_path / "bank")
    result = bank.compare(planted, found)
    assert {k: (r["planted"], len(r["missed"]), len(r["invented"])) for k, r in result.items()} == {
        "plan_approved": (18, 0, 0), "tool_rejected": (1, 0, 0), "interrupted": (7, 0, 0)}
    assert other == []  # the generator plants no questions, corrections or re-planned lists
    assert bank.in_truth(truth, planted) == []  # truth.json lists the same calls


# --------------------------------------------------------------------------- what they feed
def test_timeline_types_and_validation(real: Catalog) -> None:
    assert {"decision", "feedback", "snapshot"} <= set(EVENT_TYPES)
    across = timeline(real, TimelineQuery(types=["decision"]))
    assert {e["session_id"] for e in across} == {DEEP, CODERABBIT, TOKENIZER, RUBY, SOUND, LINT}
    assert [e["timestamp"] for e in across] == sorted(e["timestamp"] for e in across)
    ev = timeline(real, TimelineQuery(session_id=DEEP))
    turn7 = [e["type"] for e in ev if e["turn_index"] == 7]
    assert turn7[:2] == ["snapshot", "intent"]  # the state first, then the prompt
    assert turn7.index("decision") < turn7.index("feedback")
    with pytest.raises(TimelineError):
        timeline(real, TimelineQuery(types=["decisions"]))


def test_turns_json_carries_decisions_feedback_and_snapshot(real: Catalog) -> None:
    data = turns_json(real, CODERABBIT)
    t1 = data["turns"][0]
    assert [d["text"] for d in t1["decisions"]][:2] == [
        "Plan rejected: Make Project Installable as UV Tool. Reason: Let's keep the name of the py file but change "
        "the pyproject script to reference it, otherwise gtg", "Plan approved: Make Project Installable as UV Tool"]
    assert [f["kind"] for f in t1["feedback"]] == ["plan_rejected"]
    assert t1["snapshot"]["git_branch"] == "fix/comment-attribution-and-pagination"
    assert all({"decisions", "feedback", "snapshot"} <= set(t) for t in data["turns"])


def test_show_and_timeline_cli(tmp_path: Path) -> None:
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(REAL), JACKED_HOME=str(tmp_path / "home"), NO_COLOR="1",
               JACKED_USER_NAME="tester", COLUMNS="200")
    exe = Path(sys.executable).parent / "jacked"
    out = subprocess.run([str(exe), "timeline", DEEP[:8], "--type", "decision", "--type", "feedback", "--json"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert [e["type"] for e in got].count("decision") == 6 and [e["type"] for e in got].count("feedback") == 1
    shown = subprocess.run([str(exe), "show", CODERABBIT[:8], "--turn", "1"], capture_output=True, text=True,
                           env=env, timeout=300)
    assert shown.returncode == 0, shown.stderr
    assert "3 decisions · 2 feedback" in shown.stdout
    assert "decided: Plan rejected: Make Project Installable as UV Tool" in shown.stdout
    assert "rejected plan Plan: Make Project Installable" in shown.stdout
    assert "state: cwd /Users/dain/workspace/coderabbit-review-helper" in shown.stdout
    bad = subprocess.run([str(exe), "timeline", "--type", "decisions"], capture_output=True, text=True, env=env,
                         timeout=300)
    assert bad.returncode == 1 and "unknown event type" in bad.stderr


def test_mcp_timeline_tool_serves_the_new_types(tmp_path: Path) -> None:
    from jacked.config import load_settings
    from jacked.surfaces.mcp import JackedService

    svc = JackedService(load_settings(REAL, jacked_home=str(tmp_path / "home"), user_name="tester"))
    page = json.loads(svc.timeline(DEEP, ["decision", "feedback"], limit=50))
    assert page["total"] == 7 and {e["type"] for e in page["items"]} == {"decision", "feedback"}
    snap = json.loads(svc.timeline(DEEP, ["snapshot"], limit=1))
    assert snap["total"] == 9 and snap["items"][0]["cwd"] == "/src/deep-manifest"
    session = json.loads(svc.get_session(DEEP))
    assert (session["decision_count"], session["feedback_count"]) == (6, 1)


def test_stats_rejection_and_interruption_rates(real: Catalog) -> None:
    from jacked.query.stats import StatsQuery, compute_stats

    fb = compute_stats(real, StatsQuery())["feedback"]
    assert (fb["rejections"], fb["interruptions"], fb["corrections"]) == (12, 0, 7)
    by_tool = {r["tool"]: r for r in fb["by_tool"]}
    assert fb["by_tool"][0]["tool"] == "ExitPlanMode"  # the tool the user stops most
    plan = by_tool["ExitPlanMode"]
    assert (plan["rejected"], plan["calls"], plan["rejection_rate"]) == (4, 10, 0.4)
    assert (by_tool["MultiEdit"]["rejected"], by_tool["Bash"]["rejected"]) == (3, 3)
    by_repo = {r["repo"]: r for r in fb["by_repo"]}
    assert by_repo["deep-manifest"]["rejected"] == 1 and by_repo["JSSoundRecorder"]["corrections"] == 1
    one = compute_stats(real, StatsQuery(session_id=DEEP))["feedback"]
    assert one["rejections"] == 1 and one["by_tool"] == [
        {"tool": "ExitPlanMode", "calls": 3, "rejected": 1, "interrupted": 0, "stopped": 1,
         "rejection_rate": 0.3333, "interruption_rate": 0.0}]


def test_retrieve_smart_keeps_decisions_right_after_the_plan(real: Catalog) -> None:
    from jacked.query.retrieve import retrieve

    full = retrieve(real, [DEEP], mode="smart", budget=20_000, check_git=False)
    kinds = [s["content_type"] for s in full.sessions[0]["sections"]]
    assert kinds[0] == "plan" and kinds[1:7] == ["decision"] * 6
    assert full.text.index("## Plan") < full.text.index("## Decisions") < full.text.index("## Subagent reports")
    assert "- turn 7: [Error format] How should corrupted archives be reported" in full.text
    # a tight budget: the plan and every decision stay, the prompts are left out first
    # (the session's header names its cost since the usage model: a little more than 1,500 tokens)
    tight = retrieve(real, [DEEP], mode="smart", budget=1525, check_git=False)
    kinds = [s["content_type"] for s in tight.sessions[0]["sections"]]
    assert kinds[:7] == ["plan"] + ["decision"] * 6 and set(kinds[7:]) <= {"user_message"}
    assert {o["content_type"] for o in tight.omitted} == {"subagent_summary", "user_message"}


# --------------------------------------------------------------------------- search and upgrades
def test_decisions_are_searchable_and_an_upgrade_embeds_only_them(dense_embedder: Any, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from jacked.config import load_settings
    from jacked.index.extract import Extractor
    from jacked.index.indexer import Indexer
    from jacked.query.search import SearchOptions, search_many

    claude = tmp_path / "claude"
    for project in ("-src-deep-manifest", "-Users-dain-workspace-coderabbit-review-helper"):
        shutil.copytree(REAL / "projects" / project, claude / "projects" / project)
    shutil.copytree(REAL / "plans", claude / "plans")
    settings = load_settings(claude, jacked_home=str(tmp_path / "home"), user_name="ada")
    # the index as the release before this one wrote it: no decision points
    monkeypatch.setattr(Extractor, "_decisions", lambda self, *args: None)
    indexer = Indexer(settings)
    first = indexer.backfill()
    monkeypatch.undo()
    # this release's parser version makes the next scan read every file again
    indexer.catalog.db.execute("UPDATE files SET parser_version = parser_version - 1")
    second = indexer.backfill()
    docs = [d for sid in indexer.catalog.session_ids() for d in Extractor(indexer.catalog).documents(sid)
            if d.content_type == "decision"]
    assert len(docs) == 6 + 2  # deep-manifest: 3 questions, 3 plans; coderabbit: 2 plans
    assert second.scan.sessions_scanned >= 2
    assert (second.points_written, second.points_deleted) == (len(docs), 0)
    assert second.texts_embedded == len({d.text for d in docs})
    assert second.points_unchanged == first.points_written
    res = search_many(settings, ["which tar formats did we decide to support"],
                      SearchOptions(types=["decision"], limit=3))[0]["results"]
    assert res[0]["session_id"] == DEEP
    assert res[0]["matches"][0]["content_type"] == "decision" and "Also .tgz" in res[0]["matches"][0]["text"]
    why = search_many(settings, ["pyproject script name"], SearchOptions(types=["decision"], limit=3))[0]["results"]
    assert why[0]["session_id"] == CODERABBIT and "Plan rejected" in why[0]["matches"][0]["text"]


def test_the_other_agents_approvals_read_as_one_line() -> None:
    # approvals other agents record (a permission prompt answered yes): said in the timeline, turns
    # view and retrieve as Claude Code's decisions are
    from jacked.sources.decisions import decision_text

    assert decision_text({"kind": "approval", "outcome": "approved", "tool_name": "execute_bash",
                          "target": "npm ci"}) == "Approved execute_bash npm ci"
    assert decision_text({"kind": "approval", "tool_name": None, "target": None}) == "Approved tool call"
    assert decision_text({"kind": "approval", "question": "Run shell command?", "answer": "y",
                          "target": "pytest"}) == "Approved: Run shell command? → y"
