"""One answer on every surface: the CLI (`jacked search --json`), the MCP `search` tool and the web
API (`GET /api/search`) asked the same query with each filter of the filter table
(jacked.query.filters) give the same sessions in the same order. Real fixtures, model and Edge shard."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit import REAL
from typer.testing import CliRunner

from jacked.config import load_settings
from jacked.query.filters import FILTERS
from jacked.service import Jacked

PROJECTS = ("-src-experiments-claude_p", "-src-deep-manifest", "-experiments-worktrees", "-experiments-ideas")
QUERY = "explore the code and plan the change"
LIMIT = 5
# Values of each filter on these sessions: one that keeps some of them, one that narrows or empties
# the answer. Every entry of the table must be here (a new filter is compared as soon as it exists).
CASES: dict[str, list[Any]] = {
    "types": [["plan"], ["user_message", "title"]],
    "repo": ["claude_p", "no-such-repo"],
    "user": ["ada", "bob"],
    "agent": ["claude", "codex"],
    "agent_type": ["Explore", "general-purpose"],
    "since": ["2026-01-01", "2026-04-01"],
}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> Any:
    claude = tmp_path_factory.mktemp("parity-claude")
    for project in PROJECTS:
        shutil.copytree(REAL / "projects" / project, claude / "projects" / project)
    settings = load_settings(claude, jacked_home=str(tmp_path_factory.mktemp("parity-home")), user_name="ada")
    assert Jacked(settings).backfill().errors == []
    return settings


def _cli(settings: Any, cases: list[tuple[str, Any]], monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    from jacked.surfaces.cli.main import app

    specs = {f.name: f for f in FILTERS}
    env = {"CLAUDE_CONFIG_DIR": str(settings.claude_dir), "JACKED_HOME": str(settings.home),
           "JACKED_USER_NAME": "ada", "JACKED_DAEMON": "off"}
    runner = CliRunner()
    out = []
    for name, value in cases:
        args = ["search", QUERY, "-n", str(LIMIT), "--json"]
        if name:
            for v in value if isinstance(value, list) else [value]:
                args += [specs[name].flags[0], v]
        r = runner.invoke(app, args, env=env)
        assert r.exit_code == 0, (args, r.output)
        out.append([x["session_id"] for x in json.loads(r.stdout)["results"]])
    return out


async def _mcp(settings: Any, cases: list[tuple[str, Any]]) -> list[list[str]]:
    from mcp.client import Client

    from jacked.surfaces.mcp import build_server

    out = []
    async with Client(build_server(settings, scan=False)) as client:
        for name, value in cases:
            r = await client.call_tool("search", {"query": QUERY, "limit": LIMIT, **({name: value} if name else {})})
            assert not r.is_error, r.content[0].text
            out.append([x["session_id"] for x in json.loads(r.content[0].text)["results"]])
    return out


def _web(settings: Any, cases: list[tuple[str, Any]]) -> list[list[str]]:
    from jacked.surfaces.ui.api import UiApi

    api = UiApi(settings)
    try:
        return [[x["session_id"] for x in api.search(
            {"q": QUERY, "limit": str(LIMIT),
             **({name: ",".join(value) if isinstance(value, list) else value} if name else {})})["results"]]
            for name, value in cases]
    finally:
        api.close()


def test_every_filter_gives_the_same_sessions_in_the_same_order_everywhere(
        indexed: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert set(CASES) == {f.name for f in FILTERS}
    # The CLI weights the repo it is run in; here that is none of the indexed ones.
    monkeypatch.chdir(tmp_path)
    cases: list[tuple[str, Any]] = [("", None)] + [(name, v) for name, values in CASES.items() for v in values]
    cli = _cli(indexed, cases, monkeypatch)
    mcp = anyio.run(_mcp, indexed, cases)
    web = _web(indexed, cases)
    everything = cli[0]
    assert len(everything) >= 3
    for (name, value), a, b, c in zip(cases, cli, mcp, web):
        assert a == b == c, (name, value, a, b, c)
    # Each filter narrows the answer for one of its values and keeps some sessions for another:
    # the surfaces agree on something that a filter changes.
    for name in CASES:
        answers = [ids for (n, _), ids in zip(cases, cli) if n == name]
        assert any(ids for ids in answers), name
        assert any(ids != everything for ids in answers), name
