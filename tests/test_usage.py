"""Issue 40: what the sessions cost. Token totals that add up to the bill (subagents, teammates and
compactions included, each API response once), priced by the shipped table, and the same totals
on every surface for the same filter.

The real fixtures are checked against `independent_count.count_billed`, which reads the JSONL
files with the standard library only; hand-written sessions cover what the fixtures lack (a
compaction file, a streamed response, one-hour cache writes, a model without a price).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import independent_count as ic
import pytest
from kit import (REAL, SID, assistant, claude_dir_with, prompt, result, scanned_real, suite_mode, system, text, tool_use,
                 write_jsonl)

from jacked.catalog import Catalog
from jacked.config import load_settings
from jacked.ingest.scan import Scanner
from jacked.query.history import list_sessions, turns_json
from jacked.query.prices import SHIPPED, PriceError, PriceTable, Rates, model_key
from jacked.query.usage import UsageError, UsageQuery, session_usage, usage_report

BILLED = ic.count_billed(REAL)  # session id -> api_calls and the four token totals, read straight from the files
KINDS = ("input", "output", "cache_creation", "cache_read")


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalog]:
    tmp = tmp_path_factory.mktemp("usage-real")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JACKED_HOME", str(tmp / "home"))
        mp.setenv("CLAUDE_CONFIG_DIR", str(tmp / "claude"))
        yield scanned_real(tmp)


# --------------------------------------------------------------------------- tokens, counted once
def test_every_real_session_bills_what_an_independent_count_reads(real: Catalog) -> None:
    """Every session's four token totals and its API calls, subagents and compactions included,
    equal the independent count's; and the subagents are really in them (the main chain alone is less)."""
    rows = {r["session"]: r for r in usage_report(real, UsageQuery(by="session"), PriceTable())["rows"]}
    problems = []
    for sid in sorted(set(rows) | set(BILLED)):
        mine = BILLED.get(sid, {})
        row = rows.get(sid)
        got = (row["api_calls"], *(row["tokens"][k] for k in KINDS)) if row else None
        want = (mine["api_calls"], *(mine[k] for k in KINDS)) if mine else None
        if got != want:
            problems.append(f"  {sid}: jacked {got}, independent {want}")
    assert not problems, "billed tokens differ (api_calls, input, output, cache_creation, cache_read)\n" + \
        "\n".join(problems)
    main_only = ic.count_dir(REAL)["sessions"]
    more = [sid for sid, s in main_only.items() if BILLED.get(sid, {}).get("output", 0) > s["output_tokens"]]
    assert more, "no fixture session has subagent tokens beyond its main chain"
    listed = {s["session_id"]: s for s in list_sessions(real)}
    for sid in more:
        assert rows[sid]["by_role"]["main"]["tokens"]["output"] == main_only[sid]["output_tokens"]
        assert rows[sid]["by_role"]["subagent"]["tokens"]["output"] == \
            BILLED[sid]["output"] - main_only[sid]["output_tokens"]
        if sid in listed:  # a session's models are every model that answered, its subagents' too
            assert listed[sid]["models"] == rows[sid]["models"]
    assert any(set(rows[sid]["models"]) - _main_models(real, sid) for sid in more)  # a subagent on another model


def _main_models(cat: Catalog, sid: str) -> set[str]:
    return {m for t in turns_json(cat, sid)["turns"] for m in t["models"]}


def test_every_real_model_is_priced_and_the_total_is_the_sum_of_its_rows(real: Catalog) -> None:
    report = usage_report(real, UsageQuery(by="model"), PriceTable())
    assert report["total"]["unpriced_models"] == [] and report["total"]["cost_usd"] > 0
    for by in ("day", "week", "month", "session", "model", "agent", "role", "repo"):
        rep = usage_report(real, UsageQuery(by=by), PriceTable())
        for k in KINDS:
            assert sum(r["tokens"][k] for r in rep["rows"]) == report["total"]["tokens"][k], (by, k)
        assert sum(r["cost_usd"] for r in rep["rows"]) == pytest.approx(report["total"]["cost_usd"], abs=1e-5), by
    assert report["total"]["tokens"] == {k: sum(s[k] for s in BILLED.values()) for k in KINDS}


# --------------------------------------------------------------------------- a hand-written session
def _agent_line(agent_id: str, rec: dict[str, Any]) -> dict[str, Any]:
    rec.update(isSidechain=True, agentId=agent_id, sessionId=SID)
    return rec


def _usage(i: int, o: int, cw: int = 0, cr: int = 0, one_hour: int = 0) -> dict[str, Any]:
    return {"input_tokens": i, "output_tokens": o, "cache_creation_input_tokens": cw, "cache_read_input_tokens": cr,
            "cache_creation": {"ephemeral_5m_input_tokens": cw - one_hour, "ephemeral_1h_input_tokens": one_hour}}


def _busy_session(tmp: Path) -> Path:
    """Turn 1 calls a subagent (streamed response: its first line's usage is stale); turn 2 is
    compacted by an `agent-acompact-*` run; one model has no price."""
    main = [prompt("map the loader", 0),
            assistant("m1", tool_use("tu1", "Task", prompt="find the loader", subagent_type="Explore"), 1,
                      usage=_usage(3, 1, 500, 0)),
            assistant("m1", text("(stream end)"), 2, usage=_usage(3, 40, 500, 0, one_hour=200)),
            result("tu1", "found it\nagentId: a1", t=9, tur={"agentId": "a1", "status": "completed"}),
            assistant("m2", text("The loader is in src/load.py."), 10, usage=_usage(5, 30, 0, 900)),
            prompt("now fix it", 20),
            assistant("m3", text("Fixed."), 21, usage=_usage(7, 50, 100, 1200)),
            system("compact_boundary", 30, content="Conversation compacted",
                   compactMetadata={"trigger": "auto", "preTokens": 1700})]
    claude = claude_dir_with(tmp / "claude", main)
    sdir = claude / "projects" / "-home-dev-projects-demo" / SID / "subagents"
    write_jsonl(sdir / "agent-a1.jsonl", [
        _agent_line("a1", prompt("find the loader", 3)),
        _agent_line("a1", assistant("s1", text("found it"), 8, usage=_usage(11, 60, 300, 400))),
    ])
    write_jsonl(sdir / "agent-acompact-9f8e7d.jsonl", [
        _agent_line("acompact-9f8e7d", prompt("Summarise the conversation so far.", 25)),
        _agent_line("acompact-9f8e7d", assistant("c1", text("<summary>loader fixed</summary>"), 29,
                                                 usage=_usage(13, 70, 0, 1500))),
    ])
    return claude


PRICED = {"claude-test": {"input": 2, "output": 10, "cache_creation": 2.5, "cache_creation_1h": 4, "cache_read": 0.2}}


def test_a_session_bills_its_subagents_and_compactions_each_response_once(tmp_path: Path) -> None:
    claude = _busy_session(tmp_path)
    cat = Catalog(tmp_path / "home" / "catalog.db")
    Scanner(cat, claude).scan()
    # the independent reading of the same files
    want = ic.count_billed(claude)[SID]
    assert want == {"api_calls": 5, "input": 3 + 5 + 7 + 11 + 13, "output": 40 + 30 + 50 + 60 + 70,
                    "cache_creation": 500 + 100 + 300, "cache_read": 900 + 1200 + 400 + 1500}
    [row] = list_sessions(cat)
    assert row["tokens"] == {k: want[k] for k in KINDS} and row["api_calls"] == 5
    assert {r: u["tokens"]["output"] for r, u in row["usage_by_role"].items()} == {
        "main": 120, "subagent": 60, "compaction": 70}
    # no price for "claude-test": the cost is unknown, never 0
    assert row["cost_usd"] is None and row["unpriced_models"] == ["claude-test"]
    # with a price: each kind at its rate, the one-hour cache writes at theirs
    prices = PriceTable.with_overrides(PRICED)
    [row] = list_sessions(cat, prices=prices)
    expected = (39 * 2 + 250 * 10 + (900 - 200) * 2.5 + 200 * 4 + 4000 * 0.2) / 1e6
    assert row["cost_usd"] == pytest.approx(expected, abs=1e-9)
    # per turn: the subagent is turn 1's (its Task call's), the compaction turn 2's
    data = turns_json(cat, SID, prices)
    per_turn = {t["index"]: t["usage"]["tokens"]["output"] for t in data["turns"]}
    assert per_turn == {1: 40 + 30 + 60, 2: 50 + 70}
    assert data["usage"]["tokens"] == row["tokens"] and "usage_outside_turns" not in data
    assert sum(t["usage"]["cost_usd"] for t in data["turns"]) == pytest.approx(expected, abs=1e-9)


# --------------------------------------------------------------------------- the price table
def test_model_names_reach_their_price() -> None:
    for name in ("claude-sonnet-4-5-20250929", "anthropic/claude-sonnet-4-5", "claude-sonnet-4-5@20250929",
                 "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "Claude-Sonnet-4-5"):
        assert model_key(name) == "claude-sonnet-4-5", name
    table = PriceTable()
    assert table.price("claude-opus-4-1-20250805") is SHIPPED["claude-opus-4-1"]
    assert table.price("gpt-5-codex") is SHIPPED["gpt-5-codex"]
    assert table.price("some-model-nobody-priced") is None and table.price(None) is None


def test_long_context_and_one_hour_cache_rates() -> None:
    sonnet = SHIPPED["claude-sonnet-4-5"]
    assert sonnet.for_response(False) == Rates(3, 15, 3.75, 6, 0.3)
    assert sonnet.for_response(True) == Rates(6, 22.5, 7.5, 12, 0.6)
    haiku = SHIPPED["claude-haiku-4-5"]  # no long-context rates: the same either way
    assert haiku.for_response(True) is haiku.rates
    assert sonnet.rates.cost(1_000_000, 0, 1_000_000, 400_000, 0) == pytest.approx(3 + 600_000 * 3.75e-6 + 400_000 * 6e-6)


def test_a_long_response_is_priced_at_the_long_context_rates(tmp_path: Path) -> None:
    big = _usage(1000, 2000, 0, 250_000)
    claude = claude_dir_with(tmp_path / "claude", [
        prompt("read everything", 0),
        {**assistant("m1", text("done"), 1, usage=big), "message": {
            "id": "m1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [text("done")], "usage": big}}])
    cat = Catalog(tmp_path / "home" / "catalog.db")
    Scanner(cat, claude).scan()
    tally = session_usage(cat, [SID], PriceTable())[SID]
    assert tally.cost_usd == pytest.approx((1000 * 6 + 2000 * 22.5 + 250_000 * 0.6) / 1e6)


def test_price_overrides_replace_or_add_and_bad_ones_are_named() -> None:
    table = PriceTable.with_overrides({"claude-sonnet-4-5": {"output": 20}, "my-model": {"input": 1, "output": 2}})
    sonnet = table.price("claude-sonnet-4-5-20250929")
    assert sonnet is not None and sonnet.rates == Rates(3, 20, 3.75, 6, 0.3) and sonnet.long_context is not None
    mine = table.price("my-model")
    assert mine is not None and mine.rates == Rates(1, 2, 0, 0, 0)
    with pytest.raises(PriceError, match=r"prices\.new-model: `input` is missing"):
        PriceTable.with_overrides({"new-model": {"output": 2}})
    with pytest.raises(PriceError, match=r"prices\.x\.output: give a number"):
        PriceTable.with_overrides({"x": {"input": 1, "output": "cheap"}})
    with pytest.raises(UsageError, match="choose one of"):
        usage_report(Catalog(":memory:"), UsageQuery(by="fortnight"), table)


# --------------------------------------------------------------------------- the CLI
def _cli(args: list[str], claude: Path, home: Path, **env_extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKED_")}
    env.update(CLAUDE_CONFIG_DIR=str(claude), JACKED_HOME=str(home), NO_COLOR="1", **suite_mode(),
               HOME=str(home.parent), **env_extra)
    script = Path(sys.executable).parent / "jacked"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "jacked.surfaces.cli.main"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, timeout=300)


def _config(claude: Path, data: dict[str, Any]) -> None:
    path = claude / "jacked.json"
    path.write_text(json.dumps(data))
    path.chmod(0o600)


def test_cli_usage_reads_prices_from_jacked_json_and_says_what_is_wrong(tmp_path: Path) -> None:
    claude = _busy_session(tmp_path)
    home = tmp_path / "jh"
    p = _cli(["usage", "--by", "role", "--json"], claude, home)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["total"]["cost_usd"] is None and data["total"]["unpriced_models"] == ["claude-test"]
    assert [r["role"] for r in data["rows"]] and {r["role"] for r in data["rows"]} == {"main", "subagent", "compaction"}
    _config(claude, {"prices": PRICED})
    p = _cli(["usage", "--json"], claude, home)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["total"]["cost_usd"] == pytest.approx(
        (39 * 2 + 250 * 10 + 700 * 2.5 + 200 * 4 + 4000 * 0.2) / 1e6, abs=1e-9)
    p = _cli(["usage"], claude, home)
    assert p.returncode == 0 and "total" in p.stdout and "$0.01" in p.stdout
    _config(claude, {"prices": {"claude-test": {"input": -1, "output": 1}}})
    p = _cli(["usage", "--json"], claude, home)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.strip().count("\n") == 0 and "prices.claude-test.input" in p.stderr, p.stderr
    for bad in (["--by", "fortnight"], ["--until", "2026-02-30"], ["--since", "last tuesday"]):
        p = _cli(["usage", *bad], claude, home)
        assert p.returncode == 1 and "Traceback" not in p.stderr and p.stderr.strip().count("\n") == 0, (bad, p.stderr)


def test_since_and_until_cut_by_response_time(real: Catalog) -> None:
    days = usage_report(real, UsageQuery(by="day"), PriceTable())["rows"]
    mid = days[len(days) // 2]["day"]
    before = usage_report(real, UsageQuery(by="day", until=mid), PriceTable())  # `until` a date: that day included
    after = usage_report(real, UsageQuery(by="day", since=mid + "T00:00:00Z"), PriceTable())
    assert before["rows"][-1]["day"] == mid and after["rows"][0]["day"] == mid
    both = before["total"]["tokens"]["output"] + after["total"]["tokens"]["output"]
    whole = usage_report(real, UsageQuery(by="day"), PriceTable())["total"]["tokens"]["output"]
    assert both == whole + days[len(days) // 2]["tokens"]["output"]


# --------------------------------------------------------------------------- every surface agrees
@pytest.fixture(scope="module")
def surfaces(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from jacked.service import Jacked
    from jacked.surfaces.mcp import JackedService
    from jacked.surfaces.ui.server import make_server, serve_in_thread

    home = tmp_path_factory.mktemp("usage-surfaces")
    settings = load_settings(REAL, jacked_home=str(home), user_name="tester")
    jk = Jacked(settings)
    jk.scan()
    mcp = JackedService(settings, scan=False)
    server = make_server(settings, "127.0.0.1", 0, None)
    serve_in_thread(server)
    base = f"http://127.0.0.1:{server.server_address[1]}"

    def web(path: str) -> Any:
        with urllib.request.urlopen(base + path, timeout=120) as res:
            return json.loads(res.read())

    yield {"jacked": jk, "mcp": mcp, "web": web}
    server.shutdown()
    server.server_close()
    jk.close()


def _four(tokens: dict[str, Any]) -> tuple[int, ...]:
    return tuple(tokens[k] for k in KINDS)


def test_stats_sessions_turns_usage_web_and_mcp_give_the_same_totals(surfaces: dict[str, Any]) -> None:
    from jacked.query.stats import StatsQuery

    jk, mcp, web = surfaces["jacked"], surfaces["mcp"], surfaces["web"]
    by_session = {r["session"]: r for r in jk.usage(UsageQuery(by="session"))["rows"]}
    listed = jk.sessions()
    web_rows = {r["session_id"]: r for r in web("/api/sessions?limit=500")["sessions"]}
    checked = 0
    for s in listed:
        sid = s["session_id"]
        u = by_session.get(sid)
        if u is None:  # a session without any API response (prompts only)
            assert _four(s["tokens"]) == (0, 0, 0, 0)
            continue
        want = (_four(u["tokens"]), u["cost_usd"])
        turns = jk.turns(sid)
        in_turns = [sum(t["usage"]["tokens"][k] for t in turns["turns"])
                    + turns.get("usage_outside_turns", {"tokens": {k: 0}})["tokens"][k] for k in KINDS]
        stats = jk.stats(StatsQuery(session_id=sid))["tokens"]
        mcp_stats = json.loads(mcp.stats(session_id=sid))["tokens"]
        web_stats = web(f"/api/stats?session={sid}")["tokens"]
        web_page = web(f"/api/sessions/{sid}")["session"]
        seen = {
            "sessions": (_four(s["tokens"]), s["cost_usd"]),
            "turns": (_four(turns["usage"]["tokens"]), turns["usage"]["cost_usd"]),
            "turns summed": (tuple(in_turns), u["cost_usd"]),
            "stats": (_four(stats), stats["cost_usd"]),
            "mcp stats": (_four(mcp_stats), mcp_stats["cost_usd"]),
            "web stats": (_four(web_stats), web_stats["cost_usd"]),
            "web list": (_four(web_rows[sid]["tokens"]), web_rows[sid]["cost_usd"]),
            "web session": (_four(web_page["tokens"]), web_page["cost_usd"]),
        }
        assert {k: v for k, v in seen.items() if v != want} == {}, (sid, want)
        checked += 1
    assert checked >= 20
    # a repo and everything: usage and stats (web, MCP) count the same responses
    repo = max(by_session.values(), key=lambda r: r["cost_usd"])["repo_name"]
    for filt in ({}, {"repo": repo}):
        total = jk.usage(UsageQuery(by="model", **filt))["total"]
        stats = jk.stats(StatsQuery(**filt))["tokens"]
        mcp_stats = json.loads(mcp.stats(**filt))["tokens"]
        web_stats = web("/api/stats" + (f"?repo={repo}" if filt else ""))["tokens"]
        for seen in (stats, mcp_stats, web_stats):
            assert (_four(seen), seen["cost_usd"]) == (_four(total["tokens"]), total["cost_usd"]), filt


# --------------------------------------------------------------------------- other coding agents
def test_opencode_sessions_use_the_same_model_and_keep_the_cost_opencode_recorded(tmp_path: Path) -> None:
    """opencode's hand fixture: each session's own (main-chain) tokens as its independent counter
    reads them, priced by the table, and what opencode itself recorded kept beside it."""
    sys.path.insert(0, str(Path(__file__).parent / "agents"))
    import count_opencode

    fixture = Path(__file__).parent / "fixtures" / "opencode" / "hand"
    data = tmp_path / "xdg"
    shutil.copytree(fixture, data / "opencode")
    claude = tmp_path / "claude"
    claude.mkdir()
    p = _cli(["usage", "--by", "session", "--agent", "opencode", "--json"], claude, tmp_path / "jh",
             XDG_DATA_HOME=str(data))
    assert p.returncode == 0, p.stderr
    rows = {r["session"]: r for r in json.loads(p.stdout)["rows"]}
    counted = count_opencode.count_dir(fixture)["sessions"]
    assert set(counted) <= set(rows)
    for sid, c in counted.items():
        main = rows[sid]["by_role"].get("main", {"tokens": dict.fromkeys(KINDS, 0)})["tokens"]
        assert (main["input"], main["output"], main["cache_read"], main["cache_creation"]) == (
            c["input_tokens"], c["output_tokens"], c["cache_read_tokens"], c["cache_creation_tokens"]), sid
    total = json.loads(p.stdout)["total"]
    assert total["cost_usd"] is not None and total["cost_usd"] > 0 and total["agent_cost_usd"] > 0


def test_retrieve_headers_carry_the_session_cost(tmp_path: Path) -> None:
    from jacked.query.retrieve import retrieve

    claude = _busy_session(tmp_path)
    cat = Catalog(tmp_path / "home" / "catalog.db")
    Scanner(cat, claude).scan()
    priced = retrieve(cat, [SID], budget=2000, check_git=False, prices=PriceTable.with_overrides(PRICED))
    assert "Cost: $0.01 · 5 API calls (subagents, compactions included)" in priced.text
    assert priced.sessions[0]["cost_usd"] == list_sessions(cat, prices=PriceTable.with_overrides(PRICED))[0]["cost_usd"]
    unknown = retrieve(cat, [SID], budget=2000, check_git=False)
    assert "Cost: unknown · 5 API calls" in unknown.text and unknown.sessions[0]["cost_usd"] is None
    assert unknown.used <= unknown.budget


def test_a_prompts_only_session_has_an_unknown_cost_not_a_free_one() -> None:
    from jacked.query.history import with_usage

    rows = with_usage(Catalog(":memory:"), [{"session_id": "gone", "source": "history"},
                                           {"session_id": "quiet", "source": "transcript"}])
    assert [(r["api_calls"], r["cost_usd"]) for r in rows] == [(0, None), (0, 0.0)]
