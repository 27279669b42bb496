"""Retrieve: budget fitting over the real fixture sessions, whole units, priority, CLI contract."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from kit import REAL
from test_cli_history import run

from jacked.catalog import Catalog
from jacked.query.budget import capacity as capacity_for
from jacked.query.retrieve import MODES, RetrieveError, build_items, recall_brief, retrieve
from jacked.ingest.scan import Scanner
from jacked.util.tokens import count_tokens, with_margin

# eval-style priority of content types (first = highest)
PRIORITY = ["plan", "subagent_summary", "user_message", "summary_label"]


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    cat = Catalog(tmp_path_factory.mktemp("retrieve-home") / "catalog.db")
    Scanner(cat, REAL).scan()
    return cat


def _sources(catalog: Catalog, sid: str) -> dict[str, list[str]]:
    row = catalog.get_session_row(sid) or {}
    texts = catalog.text_rows(sid)
    return {
        "plan": [row.get("plan") or ""],
        "subagent_summary": [a["summary_text"] or "" for a in catalog.subagent_rows(sid)],
        "summary_label": [x["text"] for x in texts if x["kind"] == "summary_label"],
        "compact_summary": [x["text"] for x in texts if x["kind"] == "compact_summary"],
        "recap": [x["text"] for x in texts if x["kind"] == "recap"],
        "user_message": [t["prompt"] for t in catalog.turn_rows(sid) if t["prompt"]],
    }


def test_random_retrieves_stay_in_budget_whole_and_in_priority(catalog: Catalog) -> None:
    rng = random.Random(3)
    ids = catalog.session_ids()
    for _ in range(40):
        pick = rng.sample(ids, rng.choice([1, 1, 2, 3]))
        mode = rng.choice(["smart", "smart", "plan", "labels", "agents", "full"])
        budget = rng.choice([150, 300, 800, 2000, 5000, 20000])
        r = retrieve(catalog, pick, mode=mode, budget=budget, check_git=False).to_json()
        assert r["used"] <= budget and with_margin(r["used"]) <= budget
        assert count_tokens(retrieve(catalog, pick, mode=mode, budget=budget, check_git=False).text) == r["used"]
        secs = [sec for s in r["sessions"] for sec in s["sections"]]
        assert sum(sec["tokens"] for sec in secs) <= r["used"]
        for s in r["sessions"]:
            src = _sources(catalog, s["session_id"])
            for sec in s["sections"]:
                if sec["content_type"] in src:
                    assert sec["text"] in src[sec["content_type"]], (mode, sec["content_type"])
            if mode != "smart":
                continue
            kept: dict[str, list[int]] = {}
            for sec in s["sections"]:
                kept.setdefault(sec["content_type"], []).append(sec["tokens"])
            for o in (o for o in r["omitted"] if o["session_id"] == s["session_id"]):
                if o["content_type"] not in PRIORITY:
                    continue
                for lower in PRIORITY[PRIORITY.index(o["content_type"]) + 1:]:
                    assert not (lower in kept and min(kept[lower]) >= o["tokens"]), (o, lower, kept[lower])


def test_smart_takes_the_plan_before_anything_else(catalog: Catalog) -> None:
    sid = next(s for s in catalog.session_ids() if (catalog.get_session_row(s) or {}).get("plan"))
    plan_tokens = count_tokens(catalog.get_session_row(sid)["plan"])
    r = retrieve(catalog, [sid], "smart", budget=plan_tokens * 2 + 400, check_git=False).to_json()  # room for the margin and headers
    types = [sec["content_type"] for sec in r["sessions"][0]["sections"]]
    assert types[0] == "plan"


def test_a_session_nothing_fits_is_dropped_with_a_warning(catalog: Catalog) -> None:
    big = max(catalog.session_ids(), key=lambda s: min((i.tokens for i in build_items(catalog, s, "agents")), default=0))
    assert min(i.tokens for i in build_items(catalog, big, "agents")) > 200
    warnings: list[str] = []
    r = retrieve(catalog, [big], "agents", budget=200, check_git=False, warn=warnings.append)
    assert r.dropped_sessions == [big] and r.sessions == [] and warnings
    assert r.omitted and all(o["session_id"] == big for o in r.omitted)


def test_full_mode_is_the_conversation_in_order(catalog: Catalog) -> None:
    sid = "ef958aa1-0e93-49f0-bb71-150f63befcd1"
    r = retrieve(catalog, [sid], "full", budget=50000, check_git=False)
    assert not r.omitted
    prompts = [t["prompt"] for t in catalog.turn_rows(sid) if t["turn_index"] >= 1]
    pos = [r.text.index(p[:60]) for p in prompts]
    assert pos == sorted(pos)
    assert "TOOLS (" in r.text and "## Turn 1" in r.text


def test_header_counts_and_notices(catalog: Catalog) -> None:
    sid = "ef958aa1-0e93-49f0-bb71-150f63befcd1"
    r = retrieve(catalog, [sid], "smart", budget=3000, check_git=False)
    assert f"Used: {r.used:,} | Remaining: {3000 - r.used:,}" in r.text
    assert f"({r.sessions[0]['tokens']:,} tokens)" in r.text
    assert "OLD CONTEXT WARNING" in r.text  # the fixture sessions are months old
    assert r.text.rstrip().endswith("END OF PREVIOUS SESSION CONTEXT ===")


def test_bad_requests(catalog: Catalog) -> None:
    with pytest.raises(RetrieveError):
        retrieve(catalog, catalog.session_ids()[:1], "bogus")
    with pytest.raises(RetrieveError):
        retrieve(catalog, catalog.session_ids()[:1], "smart", budget=10)
    assert capacity_for(1100, 0.1) == 1000 and with_margin(capacity_for(777, 0.1)) <= 777
    assert set(MODES) == {"smart", "plan", "labels", "agents", "full"}


def test_recall_brief_is_short_and_about_the_repo(catalog: Catalog) -> None:
    brief = recall_brief(catalog, "/src/deep-manifest", max_tokens=1500)
    assert brief["sessions"] and brief["tokens"] <= 1500 and "deep-manifest" in brief["text"]
    assert recall_brief(catalog, "/nowhere/at/all")["text"] == ""
    small = recall_brief(catalog, "/home/dev/projects/claude-code-log", max_tokens=120)
    assert small["tokens"] <= 120



def test_recall_reads_only_the_newest_sessions_of_a_big_repo_and_counts_the_rest(catalog: Catalog) -> None:
    """The repo's newest sessions come with a LIMIT and the rest are only counted: the same rows as
    reading them all, and the brief's head gives the count an independent SQL query finds."""
    from jacked.catalog.retrieve_queries import sessions_in_folder

    cwd = catalog.db.execute("SELECT cwd FROM sessions WHERE has_main = 1 GROUP BY cwd "
                             "ORDER BY COUNT(*) DESC LIMIT 1").fetchone()[0]
    everything, total = sessions_in_folder(catalog, cwd, None)
    assert total == len(everything) > 2
    newest, counted = sessions_in_folder(catalog, cwd, None, limit=2)
    assert counted == total and [r["session_id"] for r in newest] == [r["session_id"] for r in everything[:2]]
    below = cwd.replace("_", "\\_").replace("%", "\\%") + "/%"
    independent = catalog.db.execute("SELECT COUNT(*) FROM sessions WHERE has_main = 1 AND (cwd = ? OR cwd LIKE ? "
                                     "ESCAPE '\\')", (cwd, below)).fetchone()[0]
    brief = recall_brief(catalog, cwd, max_tokens=1500)
    assert f"jacked memory: {independent} past Claude Code sessions in" in brief["text"]


# ---------------------------------------------------------------- CLI
@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("retrieve-cli-home")


def test_cli_json_contract(home: Path) -> None:
    p = run(["retrieve", "ef958aa1", "a7da6a22", "--max-tokens", "1500", "--json"], home)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    for key in ("mode", "budget", "used", "sessions", "dropped_sessions", "omitted"):
        assert key in r
    assert r["mode"] == "smart" and r["budget"] == 1500 and r["used"] <= 1500
    for s in r["sessions"]:
        assert {"session_id", "tokens", "staleness", "sections"} <= set(s)
        for sec in s["sections"]:
            assert {"content_type", "tokens", "text"} <= set(sec)
    for o in r["omitted"]:
        assert {"session_id", "content_type", "tokens"} <= set(o)


def test_cli_text_block_dry_run_and_output_file(home: Path, tmp_path: Path) -> None:
    p = run(["retrieve", "a7da6a22", "--mode", "plan"], home)
    assert p.returncode == 0 and p.stdout.startswith("=== CONTEXT FROM PREVIOUS SESSIONS")
    assert "claude --resume a7da6a22-facc-4fcd-8bab-f83c87862004" in p.stdout
    dry = run(["retrieve", "a7da6a22", "--dry-run"], home)
    assert dry.returncode == 0 and "would use" in dry.stdout and "+ plan" in dry.stdout
    out = tmp_path / "ctx.md"
    q = run(["retrieve", "a7da6a22", "-o", str(out), "--json"], home)
    assert q.returncode == 0 and q.stdout == "" and json.loads(out.read_text())["sessions"]


@pytest.mark.parametrize("args", [["retrieve", "no-such-session"], ["retrieve", "ef958aa1", "--mode", "bogus"],
                                  ["retrieve", "ef958aa1", "--max-tokens", "5"]])
def test_cli_bad_input_is_one_line(home: Path, args: list[str]) -> None:
    p = run(args, home)
    assert p.returncode == 1 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
