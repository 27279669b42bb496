"""One typed, published schema for every surface (jacked.schema, docs/schema.md): each answer of the
CLI's `--json`, the MCP tools and the web API, asked about the real fixtures, validates against the
JSON Schema `jacked schema NAME` prints (closed objects: a key the types do not name fails), and
the three surfaces give the same JSON for the same question. Real fixtures, model and Edge shard."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from kit import REAL, suite_mode
from typer.testing import CliRunner

from jacked.config import Settings, load_settings
from jacked.schema import json_schema, to_json
from jacked.schema.answers import ANSWERS
from jacked.service import Jacked

PROJECTS = ("-src-experiments-claude_p", "-src-deep-manifest", "-experiments-worktrees")
QUERY = "explore the code and plan the change"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> Settings:
    claude = tmp_path_factory.mktemp("schema-claude")
    for project in PROJECTS:
        shutil.copytree(REAL / "projects" / project, claude / "projects" / project)
    shutil.copytree(REAL / "plans", claude / "plans")
    settings = load_settings(claude, jacked_home=str(tmp_path_factory.mktemp("schema-home")), user_name="ada")
    assert Jacked(settings).backfill().errors == []
    return settings


def _cli(settings: Settings, *args: str, lines: bool = False, env: dict[str, str] | None = None) -> Any:
    """`jacked ARGS --json`'s answer (`lines`: a command printing JSON Lines, without `--json`)."""
    from jacked.surfaces.cli.main import app

    env = {"CLAUDE_CONFIG_DIR": str(settings.claude_dir), "JACKED_HOME": str(settings.home),
           "JACKED_USER_NAME": "ada", **suite_mode(), **(env or {})}
    done = CliRunner().invoke(app, [*args] if lines else [*args, "--json"], env=env)
    assert done.exit_code == 0, (args, done.output)
    return [json.loads(line) for line in done.stdout.splitlines()] if lines else json.loads(done.stdout)


def _mcp(settings: Settings, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    from mcp.client import Client

    from jacked.surfaces.mcp import build_server

    async def ask() -> list[Any]:
        out = []
        async with Client(build_server(settings, scan=False)) as client:
            for tool, arguments in calls:
                r = await client.call_tool(tool, arguments)
                assert not r.is_error, r.content[0].text
                out.append(json.loads(r.content[0].text))
        return out

    return anyio.run(ask)


def _web(settings: Settings, requests: list[tuple[str, str, dict[str, Any]]]) -> list[Any]:
    """Answers of the web view's own ASGI app (the server's routes and its JSON writer)."""
    from starlette.testclient import TestClient

    from jacked.surfaces.ui.api import UiApi
    from jacked.surfaces.ui.server import build_app

    api = UiApi(settings)
    try:
        client = TestClient(build_app(api, None, local=True), base_url="http://127.0.0.1")  # no lifespan: none is served
        out = []
        for method, path, data in requests:
            r = client.get(path, params=data) if method == "GET" else client.post(path, json=data)
            assert r.status_code == 200, (path, r.text)
            out.append(r.json())
        return out
    finally:
        api.close()


def _valid(name: str, answer: Any) -> None:
    errors = list(jsonschema.Draft202012Validator(json_schema(name)).iter_errors(answer))
    assert not errors, (name, [(list(e.path), e.message[:200]) for e in errors[:5]])


def _unweighted(answer: dict[str, Any]) -> dict[str, Any]:
    return {**answer, "results": [{k: v for k, v in r.items() if k != "score"} for r in answer["results"]]}


def _no_section_texts(answer: dict[str, Any]) -> dict[str, Any]:
    """`answer` as the MCP tool gives it: the sections' texts are in its `text`, once."""
    if "sessions" in answer:  # retrieve
        return {**answer, "sessions": [{**s, "sections": [{k: v for k, v in sec.items() if k != "text"}
                                                          for sec in s["sections"]]} for s in answer["sessions"]]}
    return {**answer, "sections": [{k: v for k, v in sec.items() if k != "text"} for sec in answer["sections"]]}


def test_every_surface_validates_and_agrees(indexed: Settings, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the CLI weights the repo it is run in: none of these
    sessions = _cli(indexed, "sessions")
    sid = sessions[0]["session_id"]
    cli = {"search": _cli(indexed, "search", QUERY, "-n", "5"), "sessions": sessions,
           "restore": _cli(indexed, "restore", sid), "retrieve": _cli(indexed, "retrieve", sid),
           "status": _cli(indexed, "status"), "scan": _cli(indexed, "scan")}
    mcp = dict(zip(("search", "sessions", "restore", "retrieve"), _mcp(indexed, [
        ("search", {"query": QUERY, "limit": 5}), ("list_sessions", {"limit": 200}),
        ("restore", {"session_id": sid}), ("retrieve", {"session_ids": [sid]})])))
    web = dict(zip(("search", "sessions", "retrieve", "scan", "searched"), _web(indexed, [
        ("GET", "/api/search", {"q": QUERY, "limit": "5"}), ("GET", "/api/sessions", {"limit": "500"}),
        ("POST", "/api/retrieve", {"session_ids": [sid]}), ("POST", "/api/scan", {}),
        ("GET", "/api/sessions", {"q": QUERY})])))

    assert len(cli["search"]["results"]) >= 3 and len(sessions) >= 3 and cli["restore"]["sections"]
    (tmp_path / "queries.txt").write_text(f"{QUERY}\nplan mode\n")
    batch = _cli(indexed, "search", "--batch", str(tmp_path / "queries.txt"), "-n", "5", "--json", lines=True)
    assert [b["query"] for b in batch] == [QUERY, "plan mode"] and batch[0] == cli["search"]
    for answer in batch:
        _valid("search", answer)
    for name, answer in cli.items():
        _valid(name, answer)
    for name, answer in mcp.items():
        _valid(name, answer["items"] if name == "sessions" else answer)
    for name, answer in web.items():
        _valid("sessions" if name == "searched" else name, answer["sessions"] if name in ("sessions", "searched") else answer)
    assert web["searched"]["search"]["mode"] == "hybrid" and web["searched"]["sessions"][0]["matches"]
    # A hit the catalog does not hold (a teammate's, on a server) is listed by what the search knows.
    from jacked.surfaces.ui.api import search_only_row
    _valid("web-sessions", {**web["searched"], "sessions": [search_only_row(h) for h in web["search"]["results"]]})

    # The same question, the same JSON (the MCP tool pages lists and leaves out what `text` holds;
    # the web adds what its page shows: an age, the context, why a unit was left out).
    assert mcp["search"] == web["search"]
    # the CLI weights the repo it is run in (here, none of these: every score is lowered alike)
    assert _unweighted(cli["search"]) == _unweighted(mcp["search"])
    assert cli["sessions"] == mcp["sessions"]["items"] == [
        {k: v for k, v in row.items() if k != "age"} for row in web["sessions"]["sessions"]]
    assert _no_section_texts(cli["restore"]) == mcp["restore"]
    assert _no_section_texts(cli["retrieve"]) == {
        k: v for k, v in mcp["retrieve"].items() if k not in ("text", "omitted_total")}
    assert mcp["retrieve"]["text"] == web["retrieve"]["text"] and mcp["retrieve"]["used"] > 0
    assert cli["retrieve"] == {k: v for k, v in web["retrieve"].items() if k not in ("text", "warnings", "dropped")}
    assert {k: v for k, v in cli["scan"].items() if k != "seconds"} == {
        k: v for k, v in web["scan"].items() if k != "seconds"}


DEEP = "a7da6a22-facc-4fcd-8bab-f83c87862004"  # 2.0.55: plan, subagent, file edits, failed calls
EDITED = ".gitignore"  # a file DEEP edits (a path suffix, as `file-history` takes it)
# The web's session page adds to `turns --json`: where each part sits among the turns.
SESSION_VIEW_EXTRAS = ("session", "plan_turn", "files", "errors", "compactions")


def _without(obj: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in keys}


def test_the_other_answers_validate_and_agree(indexed: Settings, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """stats, usage, turns, export, timeline, file-history and the MCP tools and web endpoints that
    give them, on a real session with a plan, a subagent, file edits and failed calls."""
    from jacked.surfaces.mcp import clip

    monkeypatch.chdir(tmp_path)
    cli = {"stats": _cli(indexed, "stats"), "stats-tool": _cli(indexed, "stats", "--tool", "Bash"),
           "stats-session": _cli(indexed, "stats", "--session", DEEP[:8]),
           "usage": _cli(indexed, "usage", "--by", "day"), "usage-session": _cli(indexed, "usage", "--by", "session"),
           "turns": _cli(indexed, "turns", DEEP[:8]), "export": _cli(indexed, "export", DEEP[:8], lines=True),
           "timeline": _cli(indexed, "timeline", DEEP[:8]), "file-history": _cli(indexed, "file-history", EDITED),
           "sessions": _cli(indexed, "sessions"), "archive": _cli(indexed, "archive"),
           "summarize-status": _cli(indexed, "summarize", "--status"), "config": _cli(indexed, "config", "--show")}
    where = next(r["cwd"] for r in cli["sessions"] if r["session_id"] == DEEP)
    cli |= {"recall": _cli(indexed, "recall", "--cwd", where),
            "prompt-recall": _cli(indexed, "recall", "--cwd", where, "--prompt", "continue the plan from last time"),
            "prompt-silent": _cli(indexed, "recall", "--cwd", where, "--prompt", "#nomem what is a monad")}
    turn = next(t for t in cli["turns"]["turns"] if 3 <= len(t["invocations"]) <= 50)
    mcp = dict(zip(("session", "turns-page", "turn-page", "timeline-page", "timeline-all", "file-history-page",
                    "stats", "stats-tool", "sessions-page"), _mcp(indexed, [
        ("get_session", {"session_id": DEEP[:8]}), ("list_turns", {"session_id": DEEP[:8], "limit": 200}),
        ("get_turn", {"session_id": DEEP[:8], "turn_index": turn["index"]}),
        ("timeline", {"session_id": DEEP[:8], "limit": 200}), ("timeline", {"limit": 20}),
        ("file_history", {"path": EDITED}), ("stats", {}), ("stats", {"tool": "Bash"}),
        ("list_sessions", {"limit": 200})])))
    web = dict(zip(("health", "repos", "web-sessions", "session-view", "turns", "stats"), _web(indexed, [
        ("GET", "/api/health", {}), ("GET", "/api/repos", {}), ("GET", "/api/sessions", {"limit": "500"}),
        ("GET", f"/api/sessions/{DEEP[:8]}", {}), ("GET", f"/api/sessions/{DEEP[:8]}/turns", {}),
        ("GET", "/api/stats", {})])))

    named = {"prompt-silent": "prompt-recall", "stats-tool": "stats", "stats-session": "stats", "usage-session": "usage", "timeline-all": "timeline-page"}
    for surface in (cli, mcp, web):
        for name, answer in surface.items():
            for one in answer if name == "export" else [answer]:
                _valid(named.get(name, name), one)
    # what the checks below stand on: the fixture session has each kind of part
    assert cli["file-history"] and cli["stats-tool"]["tool_detail"]["calls"] > 0 and cli["turns"]["subagents"]
    assert {e["type"] for e in cli["timeline"]} >= {"intent", "action", "file", "error", "llm", "subagent"}
    assert web["health"]["sessions"] == len(cli["sessions"]) and web["repos"]["repos"]
    assert cli["recall"]["sessions"] and cli["prompt-silent"] == {"text": "", "sessions": [], "tokens": 0,
                                                                  "reason": "#nomem"}

    # The same question, the same JSON. MCP shortens texts over FIELD_CHARS (`clip`), pages lists and
    # gives the turn's calls as the page's items; the web adds what its pages draw.
    assert cli["turns"] == web["turns"] == _without(web["session-view"], *SESSION_VIEW_EXTRAS) | {
        "turns": [t | {"invocations": [_without(i, "duration_ms") for i in t["invocations"]]}
                  for t in web["session-view"]["turns"]],
        "subagents": [_without(a, "invocations") for a in web["session-view"]["subagents"]]}
    row = next(r for r in cli["sessions"] if r["session_id"] == DEEP)
    assert _without(mcp["session"], "plan", "summary", "subagents", "turns") == row \
        == _without(web["session-view"]["session"], "age", "version_last")
    assert cli["export"] == [row | cli["turns"]]
    assert mcp["turn-page"]["turn"] == clip(_without(turn, "invocations")) | {"summary": mcp["turn-page"]["turn"]["summary"]}
    assert mcp["turn-page"]["items"] == clip(turn["invocations"]) and mcp["turn-page"]["next_offset"] is None
    assert [(t["index"], t["tool_call_count"]) for t in mcp["turns-page"]["items"]] == [
        (t["index"], t["metrics"]["tool_call_count"]) for t in cli["turns"]["turns"]]
    shown = mcp["timeline-page"]["items"]
    assert len(shown) > 20 and shown == clip(cli["timeline"][:len(shown)])
    assert mcp["file-history-page"]["items"] == clip(cli["file-history"])
    assert mcp["sessions-page"]["items"] == cli["sessions"] == [_without(r, "age") for r in web["web-sessions"]["sessions"]]
    assert clip(cli["stats"]) == mcp["stats"] and clip(cli["stats-tool"]) == mcp["stats-tool"]
    assert _without(web["stats"], "over_time", "cost_over_time") == cli["stats"]
    assert web["stats"]["cost_over_time"] == cli["usage"]["rows"]


def test_index_and_forget_reports_validate(indexed: Settings, tmp_path: Path) -> None:
    """The writing commands' reports, on a copy of the index (forgetting changes it)."""
    home = tmp_path / "home"
    shutil.copytree(indexed.home, home)
    copy = load_settings(indexed.claude_dir, jacked_home=str(home), user_name="ada")
    sid = Jacked(copy, scan=False).sessions()[-1]["session_id"]
    index = _cli(copy, "index", sid)
    _valid("index", index)
    assert index["sessions_indexed"] + index["sessions_unchanged"] == 1
    summarized = _cli(copy, "summarize", "--session", sid)
    _valid("summarize", summarized)
    assert summarized["sessions"] == 1 and summarized["turn_summaries_written"] + summarized["turn_summaries_kept"] > 0
    forget = _cli(copy, "forget", sid, "--yes")
    _valid("forget", forget)
    assert forget["forgotten"] == [sid] and forget["points_deleted"] > 0
    forgotten = _cli(copy, "forget", "--list")
    _valid("forgotten", forgotten)
    assert [t["session_id"] for t in forgotten["forgotten"]] == [sid]


def test_install_and_config_answers_validate(tmp_path: Path) -> None:
    """The writing commands' confirmations, in a Claude directory of their own."""
    claude = tmp_path / "claude"
    claude.mkdir()
    own = load_settings(claude, jacked_home=str(tmp_path / "home"), user_name="ada")
    codex = {"CODEX_HOME": str(tmp_path / "codex")}
    answers = {"install": _cli(own, "install"), "agent-install": _cli(own, "install", "--agent", "codex", env=codex),
               "config-set": _cli(own, "config", "set", "default_max_tokens", "6000"),
               "config-migrate": _cli(own, "config", "migrate", env={"JACKED_TEAMMATE_WEIGHT": "0.5"}),
               "config": _cli(own, "config", "--show"), "config-reset": _cli(own, "config", "--reset"),
               "uninstall": _cli(own, "uninstall"),
               "agent-uninstall": _cli(own, "uninstall", "--agent", "codex", env=codex)}
    for name, answer in answers.items():
        _valid({"uninstall": "install", "agent-uninstall": "agent-install"}.get(name, name), answer)
    assert answers["install"]["changed"] and set(answers["uninstall"]["actions"].values()) <= {"restored", "removed", "edited"}
    assert answers["config-set"]["value"] == 6000 and answers["config"]["settings"]["default_max_tokens"]["value"] == 6000
    assert answers["config-migrate"]["migrated"] and answers["config-reset"]["reset"]
    assert answers["agent-install"]["changed"] == answers["agent-uninstall"]["changed"]


def test_the_schemas_are_closed_and_printed_by_the_cli(indexed: Settings) -> None:
    """A key no type names fails validation (the schema says what an answer holds, all of it), and
    `jacked schema` prints each answer's schema as the library makes it."""
    from jacked.surfaces.cli.main import app

    answer = to_json(Jacked(indexed, scan=False).restore(Jacked(indexed, scan=False).sessions()[0]["session_id"]))
    _valid("restore", answer)
    answer["sections"][0]["colour"] = "blue"
    with pytest.raises(AssertionError, match="colour"):
        _valid("restore", answer)
    done = CliRunner().invoke(app, ["schema"], env={"JACKED_DAEMON": "off"})
    assert done.exit_code == 0 and set(json.loads(done.stdout)) == set(ANSWERS)
    assert json.loads(CliRunner().invoke(app, ["schema", "search"]).stdout) == json_schema("search")
    wrong = CliRunner().invoke(app, ["schema", "nope"])
    assert wrong.exit_code == 1 and "use one of search, sessions" in str(wrong.exception)


def test_a_client_imports_neither_pydantic_nor_the_types() -> None:
    """`jacked.schema` is on every client's path: the schema's makers stay off it."""
    code = ("import sys, jacked.schema, jacked.surfaces.cli.common, jacked.surfaces.daemon.client; "
            "print(sorted(m for m in ('pydantic', 'typing_extensions', 'jacked.schema.answers') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
