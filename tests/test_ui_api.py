"""The `jacked ui` JSON API, over real HTTP, on the real fixtures and on a small indexed corpus.

The server runs in-process on port 0 in a thread (one per module fixture); the catalog is
scanned from the fixtures into a temp JACKED_HOME; search runs on a real Edge shard with the
real offline model. Each endpoint's answer is checked against the library function the CLI
prints (`turns_json`, `compute_stats`, `retrieve`, `search_many`).
"""
from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kit import GEN_CORPUS, REAL

from jacked.catalog import Catalog
from jacked.config import load_settings
from jacked.query.history import turns_json
from jacked.ingest.scan import scan
from jacked.surfaces.ui.server import UiConfigError, make_server, serve_in_thread

WORKTREES = "ef958aa1-0e93-49f0-bb71-150f63befcd1"


class Client:
    """A tiny HTTP client for one server: JSON in, (status, JSON or bytes, headers) out."""

    def __init__(self, base: str) -> None:
        self.base = base

    def call(self, path: str, body: Any = None, headers: dict[str, str] | None = None,
             method: str | None = None, raw: bytes | None = None) -> tuple[int, Any, Any]:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        hdrs = dict(headers or {})
        if body is not None and "Content-Type" not in hdrs:
            hdrs["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data=data, headers=hdrs, method=method)
        try:
            with urllib.request.urlopen(req, timeout=120) as res:  # headers: case-insensitive
                status, payload, h = res.status, res.read(), res.headers
        except urllib.error.HTTPError as e:
            status, payload, h = e.code, e.read(), e.headers
        if h.get("Content-Type", "").startswith("application/json"):
            return status, json.loads(payload), h
        return status, payload, h

    def ok(self, path: str, body: Any = None) -> Any:
        status, data, _ = self.call(path, body)
        assert status == 200, (path, status, data)
        return data


def _serve(settings: Any, host: str = "127.0.0.1", token: str | None = None) -> tuple[Any, Client]:
    server = make_server(settings, host, 0, token)
    serve_in_thread(server)
    return server, Client(f"http://127.0.0.1:{server.server_address[1]}")


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The real fixtures, scanned into a temp catalog (no index), served on a free port."""
    home = tmp_path_factory.mktemp("ui-home")
    settings = load_settings(REAL, jacked_home=str(home), user_name="tester")
    catalog = Catalog(settings.catalog_path)
    scan(catalog, settings.claude_dir)
    server, client = _serve(settings)
    yield {"settings": settings, "catalog": catalog, "client": client}
    server.shutdown()
    server.server_close()
    catalog.close()


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> Iterator[dict[str, Any]]:
    """A 6-session generated corpus with a real index (Edge shard, offline model)."""
    from jacked.index.indexer import Indexer

    claude = tmp_path_factory.mktemp("ui-corpus") / "claude"
    subprocess.run([sys.executable, str(GEN_CORPUS), "--out", str(claude), "--sessions", "6", "--seed", "2"],
                   check=True, capture_output=True)
    settings = load_settings(claude, jacked_home=str(tmp_path_factory.mktemp("ui-ix-home")), user_name="ada")
    Indexer(settings).backfill()
    server, client = _serve(settings)
    yield {"settings": settings, "client": client, "truth": json.loads((claude / "truth.json").read_text())}
    server.shutdown()
    server.server_close()


# --------------------------------------------------------------------------- health, repos, list
def test_health_reports_totals_and_no_index(fx: dict[str, Any]) -> None:
    d = fx["client"].ok("/api/health")
    assert d["ok"] and d["sessions"] == 27 and d["turns"] == 99 and d["index"] is False
    assert "smart" in d["retrieve_modes"] and "plan" in d["content_types"]


def test_repos_count_sessions(fx: dict[str, Any]) -> None:
    repos = {r["repo_name"]: r["sessions"] for r in fx["client"].ok("/api/repos")["repos"]}
    assert repos["claude-code-log"] == 12 and repos["worktrees"] >= 1
    assert sum(repos.values()) <= 27


def test_sessions_list_rows_and_paging(fx: dict[str, Any]) -> None:
    c = fx["client"]
    first = c.ok("/api/sessions?limit=10")
    assert first["total"] == 27 and len(first["sessions"]) == 10 and first["search"] is None
    row = first["sessions"][0]
    for key in ("session_id", "repo_name", "cwd", "started_at", "ended_at", "turn_count", "title", "first_prompt",
                "age", "tool_call_count", "tool_error_count"):
        assert key in row
    starts = [r["started_at"] or "" for r in first["sessions"]]
    assert starts == sorted(starts, reverse=True)
    second = c.ok("/api/sessions?limit=10&offset=10")
    assert not {r["session_id"] for r in first["sessions"]} & {r["session_id"] for r in second["sessions"]}
    everything = c.ok("/api/sessions?limit=500")["sessions"]
    cli_like = {r["session_id"] for r in fx["catalog"].list_sessions()}
    assert {r["session_id"] for r in everything} == cli_like


def test_sessions_filters_repo_and_dates(fx: dict[str, Any]) -> None:
    c = fx["client"]
    rows = c.ok("/api/sessions?repo=claude-code-log&limit=100")["sessions"]
    assert len(rows) == 12 and {r["repo_name"] for r in rows} == {"claude-code-log"}
    day = c.ok("/api/sessions?since=2026-04-18&until=2026-04-18")["sessions"]
    assert WORKTREES in {r["session_id"] for r in day}
    assert all((r["started_at"] or "")[:10] <= "2026-04-18" for r in day)
    assert c.ok("/api/sessions?since=2999-01-01")["total"] == 0


def test_text_filter_without_index_says_so(fx: dict[str, Any]) -> None:
    d = fx["client"].ok("/api/sessions?q=experiment")
    assert d["search"]["mode"] == "substring" and "jacked backfill" in d["search"]["note"]
    assert WORKTREES in {r["session_id"] for r in d["sessions"]}
    status, err, _ = fx["client"].call("/api/search?q=anything")
    assert status == 409 and "backfill" in err["error"]


@pytest.mark.parametrize("query", ["limit=0", "limit=x", "offset=-1", "since=notadate"])
def test_bad_list_params_are_400(fx: dict[str, Any], query: str) -> None:
    status, err, _ = fx["client"].call("/api/sessions?" + query)
    assert status == 400 and err["error"]


# --------------------------------------------------------------------------- session page
def test_session_detail_matches_turns_json(fx: dict[str, Any]) -> None:
    d = fx["client"].ok(f"/api/sessions/{WORKTREES[:8]}")
    expect = turns_json(fx["catalog"], WORKTREES)
    assert d["session_id"] == WORKTREES and d["session"]["repo_name"] == "worktrees"
    assert len(d["turns"]) == len(expect["turns"]) == 3
    for got, want in zip(d["turns"], expect["turns"]):
        assert [(i["tool_use_id"], i["sequence"], i["parallel_group"]) for i in got["invocations"]] == \
               [(i["tool_use_id"], i["sequence"], i["parallel_group"]) for i in want["invocations"]]
        assert got["metrics"] == want["metrics"]
    batches = sum(1 for t in d["turns"] for n in Counter(i["sequence"] for i in t["invocations"]).values() if n > 1)
    assert batches == 9
    timed = [i["duration_ms"] for t in d["turns"] for i in t["invocations"]]
    assert all(x is None or x >= 0 for x in timed) and any(x for x in timed)
    subs = [a for a in d["subagents"] if not a["is_warmup"]]
    assert subs and all(a["summary_text"] for a in subs) and any(a["invocations"] for a in subs)
    assert {x["kind"] for x in d["texts"]} == {"recap"}


def test_session_files_carry_diffs_and_errors(fx: dict[str, Any]) -> None:
    sid = fx["catalog"].db.execute(
        "SELECT session_id FROM invocations WHERE owner = '' AND diff IS NOT NULL AND is_error = 0 "
        "GROUP BY session_id ORDER BY COUNT(*) DESC LIMIT 1").fetchone()[0]
    d = fx["client"].ok(f"/api/sessions/{sid}")
    assert d["files"] and any(f["diff"] for f in d["files"])
    assert all(f["operation"] in ("edit", "write", "create") for f in d["files"])
    err_sid = fx["catalog"].db.execute("SELECT session_id FROM sessions WHERE tool_error_count > 0 LIMIT 1").fetchone()[0]
    e = fx["client"].ok(f"/api/sessions/{err_sid}")
    failed = [i for t in e["turns"] for i in t["invocations"] if i["is_error"]]
    assert failed and {x["tool_use_id"] for x in e["errors"]} == {i["tool_use_id"] for i in failed}


def test_plan_sits_in_the_turn_that_approved_it(fx: dict[str, Any]) -> None:
    sid = fx["catalog"].db.execute(
        "SELECT s.session_id FROM sessions s JOIN invocations i ON i.session_id = s.session_id "
        "WHERE s.plan IS NOT NULL AND i.tool_name = 'ExitPlanMode' AND i.owner = '' LIMIT 1").fetchone()
    assert sid is not None, "the real fixtures hold a7da6a22 (a plan and its ExitPlanMode call)"
    d = fx["client"].ok(f"/api/sessions/{sid[0]}")
    assert d["plan"] and d["plan_turn"] is not None
    turn = next(t for t in d["turns"] if t["index"] == d["plan_turn"])
    assert any(i["tool_name"] == "ExitPlanMode" for i in turn["invocations"])


def test_turns_endpoint_is_the_cli_contract(fx: dict[str, Any]) -> None:
    d = fx["client"].ok(f"/api/sessions/{WORKTREES}/turns")
    assert d == json.loads(json.dumps(turns_json(fx["catalog"], WORKTREES)))


@pytest.mark.parametrize("ref,status", [("zzzz-nope", 404), ("0", 404), ("..%2F..%2Fetc", 400)])
def test_unknown_or_pathlike_sessions(fx: dict[str, Any], ref: str, status: int) -> None:
    got, err, _ = fx["client"].call(f"/api/sessions/{ref}")
    assert got == status and err["error"]


# --------------------------------------------------------------------------- stats
def test_stats_is_compute_stats_plus_series(fx: dict[str, Any]) -> None:
    from jacked.query.stats import StatsQuery, compute_stats

    d = fx["client"].ok("/api/stats")
    want = compute_stats(fx["catalog"], StatsQuery())
    series = d.pop("over_time")
    costs = d.pop("cost_over_time")
    assert d == json.loads(json.dumps(want))
    # cost per day: `jacked usage --by day`, summing to the stats' total
    assert sum(x["cost_usd"] for x in costs) == pytest.approx(want["tokens"]["cost_usd"], abs=1e-5)
    assert [x["day"] for x in costs] == sorted(x["day"] for x in costs)
    assert sum(x["turns"] for x in series) == want["turns"] == 99
    assert sum(x["tool_calls"] for x in series) == want["tool_calls"]
    assert [x["day"] for x in series] == sorted(x["day"] for x in series)
    one = fx["client"].ok(f"/api/stats?session={WORKTREES[:8]}&repo=worktrees")
    assert one["sessions"] == 1 and one["parallel"]["batches"] == 9
    status, err, _ = fx["client"].call("/api/stats?since=whenever")
    assert status == 400


# --------------------------------------------------------------------------- retrieve
def test_retrieve_is_exactly_the_library_result(fx: dict[str, Any]) -> None:
    from jacked.query.retrieve import retrieve

    body = {"session_ids": [WORKTREES[:8]], "mode": "smart", "budget": 4000, "git": False}
    d = fx["client"].ok("/api/retrieve", body)
    want = retrieve(fx["catalog"], [WORKTREES], mode="smart", budget=4000,
                    margin=fx["settings"].token_safety_margin, check_git=False)
    assert d["text"] == want.text and d["used"] == want.used <= 4000
    got = {k: v for k, v in d.items() if k not in ("text", "warnings", "dropped")}
    got["omitted"] = [{k: v for k, v in o.items() if k != "reason"} for o in got["omitted"]]
    assert got == json.loads(json.dumps(want.to_json()))


def test_retrieve_says_what_was_left_out_and_why(fx: dict[str, Any]) -> None:
    ids = [r["session_id"] for r in fx["client"].ok("/api/sessions?limit=6")["sessions"]]
    d = fx["client"].ok("/api/retrieve", {"session_ids": ids, "mode": "full", "budget": 600, "git": False})
    assert d["used"] <= 600 and (d["omitted"] or d["dropped"])
    assert all(o["reason"] for o in d["omitted"]) and all(x["reason"] for x in d["dropped"])


@pytest.mark.parametrize("body,status", [({}, 400), ({"session_ids": [WORKTREES], "mode": "nope"}, 400),
                                         ({"session_ids": [WORKTREES], "budget": 10}, 400),
                                         ({"session_ids": ["zzzz-nope"]}, 404)])
def test_retrieve_bad_requests(fx: dict[str, Any], body: dict[str, Any], status: int) -> None:
    got, err, _ = fx["client"].call("/api/retrieve", body)
    assert got == status and err["error"]


def test_post_needs_json_and_get_routes_refuse_post(fx: dict[str, Any]) -> None:
    c = fx["client"]
    got, _, _ = c.call("/api/retrieve", raw=b"session_ids=x", headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert got == 415
    got, _, _ = c.call("/api/retrieve", raw=b"{not json", headers={"Content-Type": "application/json"})
    assert got == 400
    got, _, _ = c.call("/api/sessions", body={})
    assert got == 405
    got, _, _ = c.call("/api/nothing-here")
    assert got == 404


def test_scan_endpoint_is_incremental(fx: dict[str, Any]) -> None:
    d = fx["client"].ok("/api/scan", {})
    assert d["sessions"] == 27 and d["files_opened"] == 0


# --------------------------------------------------------------------------- static files and safety
def test_static_page_is_served_with_a_strict_policy(fx: dict[str, Any]) -> None:
    c = fx["client"]
    status, page, headers = c.call("/")
    assert status == 200 and b"/static/app.js" in page
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    for asset in ("/static/app.js", "/static/app.css", "/static/favicon.svg", "/favicon.ico"):
        got, body, _ = c.call(asset)
        assert got == 200 and body, asset
    # offline: no asset refers to another host
    for asset in ("/", "/static/app.js", "/static/app.css"):
        text = c.call(asset)[1].decode()
        assert "https://" not in text and "//cdn" not in text, asset
    assert c.call("/static/nope.js")[0] == 404


def test_foreign_host_header_is_refused(fx: dict[str, Any]) -> None:
    got, err, _ = fx["client"].call("/api/health", headers={"Host": "evil.example:8377"})
    assert got == 403 and "localhost" in err["error"]


def test_non_local_host_needs_a_token(fx: dict[str, Any]) -> None:
    with pytest.raises(UiConfigError):
        make_server(fx["settings"], "0.0.0.0", 0, None)
    with pytest.raises(UiConfigError):
        make_server(fx["settings"], "127.0.0.1", 0, "  ")


def test_token_is_required_on_every_request(fx: dict[str, Any]) -> None:
    server, c = _serve(fx["settings"], token="s3cret-token")
    try:
        assert c.call("/api/health")[0] == 401
        assert c.call("/static/app.js")[0] == 401
        assert c.call("/api/health?token=wrong")[0] == 401
        assert c.call("/api/health?token=s3cret-token")[0] == 200
        assert c.call("/api/health", headers={"X-Jacked-Token": "s3cret-token"})[0] == 200
        assert c.call("/api/health", headers={"Authorization": "Bearer s3cret-token"})[0] == 200
        status, _, headers = c.call("/?token=s3cret-token")
        assert status == 200 and "jacked_token=s3cret-token" in headers.get("Set-Cookie", "")
        assert c.call("/static/app.js", headers={"Cookie": "jacked_token=s3cret-token"})[0] == 200
    finally:
        server.shutdown()
        server.server_close()


# --------------------------------------------------------------------------- hybrid search
def test_search_endpoint_is_jacked_search(indexed: dict[str, Any]) -> None:
    from jacked.query.search import SearchOptions, search_many

    q = indexed["truth"]["queries"][0]
    d = indexed["client"].ok("/api/search?q=" + urllib.request.quote(q["query"]) + "&limit=5")
    want = search_many(indexed["settings"], [q["query"]], SearchOptions(limit=5))[0]
    assert [r["session_id"] for r in d["results"]] == [r["session_id"] for r in want["results"]]
    assert set(q["relevant_session_ids"]) & {r["session_id"] for r in d["results"]}
    for key in ("session_id", "score", "repo_name", "timestamp", "age", "matches"):
        assert key in d["results"][0]


def test_sessions_text_filter_uses_hybrid_search_with_types(indexed: dict[str, Any]) -> None:
    c = indexed["client"]
    assert c.ok("/api/health")["index"] is True
    q = indexed["truth"]["queries"][0]
    d = c.ok("/api/sessions?q=" + urllib.request.quote(q["query"]))
    assert d["search"]["mode"] == "hybrid" and d["search"]["note"] is None
    assert d["sessions"][0]["session_id"] in q["relevant_session_ids"]
    assert d["sessions"][0]["turn_count"] is not None and d["sessions"][0]["matches"]
    plans = c.ok("/api/sessions?types=plan&q=" + urllib.request.quote(q["query"]))
    assert all(m["content_type"] == "plan" for r in plans["sessions"] for m in r["matches"])
    bad, err, _ = c.call("/api/sessions?types=nonsense&q=x")
    assert bad == 400 and "content type" in err["error"]


def test_generated_session_places_compactions_and_texts(indexed: dict[str, Any]) -> None:
    truth = indexed["truth"]["sessions"]
    s = next((x for x in truth if x.get("compacted") or x.get("compact_summaries")), None)
    assert s is not None, "the generated corpus of this seed has a compacted session"
    d = indexed["client"].ok(f"/api/sessions/{s['session_id']}")
    kinds = {x["kind"] for x in d["texts"]}
    assert "compact_summary" in kinds and d["compactions"]
    turns = {t["index"] for t in d["turns"]}
    assert all(c["turn_index"] in turns for c in d["compactions"])
    assert any(t["compacted"] for t in d["turns"])
    assert all(x["turn_index"] is None or isinstance(x["turn_index"], int) for x in d["texts"])


# --------------------------------------------------------------------------- the command
def _start_cli(args: list[str], home: Path) -> tuple[subprocess.Popen, str]:
    import os

    exe = Path(sys.executable).parent / "jacked"
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(REAL), JACKED_HOME=str(home), JACKED_USER_NAME="tester")
    proc = subprocess.Popen([str(exe), "ui", "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    line = proc.stdout.readline() if proc.stdout else ""
    return proc, line


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_jacked_ui_command_serves_and_prints_its_url(tmp_path: Path, host: str) -> None:
    proc, line = _start_cli(["--host", host], tmp_path / "home")
    try:
        assert "jacked ui: serving" in line, (line, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        url = line.split(" at ", 1)[1].strip()
        if host == "0.0.0.0":
            assert "?token=" in url  # generated and printed: the only way in
            bare = url.split("?", 1)[0]
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(bare + "api/health", timeout=30)
            assert refused.value.code == 401
            token = url.split("?token=", 1)[1]
            health_url = bare + "api/health?token=" + token
        else:
            assert "token" not in url
            health_url = url + "api/health"
        with urllib.request.urlopen(health_url, timeout=30) as res:
            assert json.loads(res.read())["sessions"] == 27
    finally:
        proc.terminate()
        proc.wait(timeout=30)
