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


def _cli(settings: Settings, *args: str) -> Any:
    from jacked.surfaces.cli.main import app

    env = {"CLAUDE_CONFIG_DIR": str(settings.claude_dir), "JACKED_HOME": str(settings.home),
           "JACKED_USER_NAME": "ada", **suite_mode()}
    done = CliRunner().invoke(app, [*args, "--json"], env=env)
    assert done.exit_code == 0, (args, done.output)
    return json.loads(done.stdout)


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
    for name, answer in cli.items():
        _valid(name, answer)
    for name, answer in mcp.items():
        _valid(name, answer["items"] if name == "sessions" else answer)
    for name, answer in web.items():
        _valid("sessions" if name == "searched" else name, answer["sessions"] if name in ("sessions", "searched") else answer)
    assert web["searched"]["search"]["mode"] == "hybrid" and web["searched"]["sessions"][0]["matches"]

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


def test_index_and_forget_reports_validate(indexed: Settings, tmp_path: Path) -> None:
    """The writing commands' reports, on a copy of the index (forgetting changes it)."""
    home = tmp_path / "home"
    shutil.copytree(indexed.home, home)
    copy = load_settings(indexed.claude_dir, jacked_home=str(home), user_name="ada")
    sid = Jacked(copy, scan=False).sessions()[-1]["session_id"]
    index = _cli(copy, "index", sid)
    _valid("index", index)
    assert index["sessions_indexed"] + index["sessions_unchanged"] == 1
    forget = _cli(copy, "forget", sid, "--yes")
    _valid("forget", forget)
    assert forget["forgotten"] == [sid] and forget["points_deleted"] > 0


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
