"""The search-filter table (jacked.query.filters): a new filter is one entry, and the CLI, the
MCP `search` tool and `GET /api/search` all take it with no other change. Real fixtures, model
and Edge shard."""
from __future__ import annotations

import json
import shutil
from typing import Any

import anyio
import pytest
import typer
from kit import REAL
from typer.testing import CliRunner

from jacked.config import load_settings
from jacked.query import filters
from jacked.query.filters import SearchFilterSpec
from jacked.service import Jacked

PROJECT = "-experiments-worktrees"  # its sessions ran on git branch "master"
BRANCH = SearchFilterSpec("branch", "git_branch", "value", "Only sessions on this git branch.")


@pytest.fixture()
def with_branch_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(filters, "FILTERS", [*filters.FILTERS, BRANCH])


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> Any:
    claude = tmp_path_factory.mktemp("filters-claude")
    shutil.copytree(REAL / "projects" / PROJECT, claude / "projects" / PROJECT)
    settings = load_settings(claude, jacked_home=str(tmp_path_factory.mktemp("filters-home")), user_name="ada")
    assert Jacked(settings).backfill().errors == []
    return settings


QUERY = "teammates researching in separate git worktrees"


def test_cli_has_an_option_per_filter(with_branch_filter: None, indexed: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from jacked.surfaces.cli import search as search_cli

    app = typer.Typer()
    app.callback()(lambda: None)  # keep `search` a subcommand
    search_cli.register(app)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(indexed.claude_dir))
    monkeypatch.setenv("JACKED_HOME", str(indexed.home))
    monkeypatch.setenv("JACKED_USER_NAME", "ada")
    # answered in this process: the filter added here is in this process's table, not in a daemon's
    monkeypatch.setenv("JACKED_DAEMON", "off")
    runner = CliRunner()
    assert "--branch" in runner.invoke(app, ["search", "--help"]).output
    hit = runner.invoke(app, ["search", QUERY, "--branch", "master", "--json"])
    miss = runner.invoke(app, ["search", QUERY, "--branch", "no-such-branch", "--json"])
    assert hit.exit_code == 0 and json.loads(hit.output)["results"]
    assert miss.exit_code == 0 and json.loads(miss.output)["results"] == []


async def _search_tool(server: Any, args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    from mcp.client import Client

    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        r = await client.call_tool("search", args)
        return tools["search"].input_schema, json.loads(r.content[0].text)


def test_mcp_search_tool_takes_every_filter(with_branch_filter: None, indexed: Any) -> None:
    from jacked.surfaces.mcp import build_server

    schema, hit = anyio.run(_search_tool, build_server(indexed, scan=False), {"query": QUERY, "branch": "master"})
    assert {"branch", "repo", "user", "agent_type", "since"} <= set(schema["properties"])
    assert hit["results"]
    _, miss = anyio.run(_search_tool, build_server(indexed, scan=False), {"query": QUERY, "branch": "no-such-branch"})
    assert miss["results"] == []


def test_web_api_takes_every_filter(with_branch_filter: None, indexed: Any) -> None:
    from jacked.surfaces.ui.api import UiApi

    api = UiApi(indexed)
    assert api.search({"q": QUERY, "branch": "master"})["results"]
    assert api.search({"q": QUERY, "branch": "no-such-branch"})["results"] == []


def test_filters_are_anded_and_known_ones_still_work(indexed: Any) -> None:
    from jacked.query.search import SearchOptions

    jacked = Jacked(indexed, scan=False)
    assert jacked.search(QUERY, SearchOptions(filters={"repo": "worktrees"}))["results"]
    assert jacked.search(QUERY, SearchOptions(filters={"repo": "worktrees", "user": "bob"}))["results"] == []
    assert jacked.search(QUERY, SearchOptions(repo="elsewhere"))["results"] == []


def test_unknown_names_and_values_are_one_line_errors_naming_the_valid_ones(indexed: Any) -> None:
    """A typo in a filter's name or in a value of a closed set is an error that names the valid ones,
    on the CLI (one line, exit 1), in the web API (400) and in the service (the MCP tool: test_mcp)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from jacked.index.content_types import CONTENT_TYPES
    from jacked.query.search import SearchError, SearchOptions
    from jacked.surfaces.ui.api import ApiError, UiApi

    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(indexed.claude_dir), JACKED_HOME=str(indexed.home),
               JACKED_USER_NAME="ada")
    exe = str(Path(sys.executable).parent / "jacked")
    types = f"unknown content type 'bogus': use one of {', '.join(CONTENT_TYPES)}"
    from jacked.sources.registry import SOURCES

    agents = f"unknown agent 'cobol': use one of {', '.join(SOURCES)}"
    for args, want in ((["--type", "plan", "--type", "bogus"], types), (["--agent", "cobol"], agents)):
        p = subprocess.run([exe, "search", QUERY, *args], capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 1 and p.stdout == "" and p.stderr.strip().endswith(want), p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr

    api = UiApi(indexed)
    try:
        for params, want in (({"types": "plan,bogus"}, types), ({"agent": "cobol"}, agents),
                             ({"colour": "1"}, "unknown parameter 'colour': /api/search takes q, scope, mine, limit, "
                                               "types, repo, user, agent, agent_type, since")):
            with pytest.raises(ApiError) as e:
                api.search({"q": QUERY, **params})
            assert e.value.status == 400 and str(e.value) == want
        with pytest.raises(ApiError) as e:
            api.sessions({"q": QUERY, "colour": "1"})
        assert e.value.status == 400 and str(e.value).startswith("unknown parameter 'colour': /api/sessions takes q,")
        assert api.search({"q": QUERY, "types": "plan,subagent_summary"})["results"]
    finally:
        api.close()

    with pytest.raises(SearchError, match="unknown filter 'colour': use one of types, repo, user"):
        Jacked(indexed, scan=False).search(QUERY, SearchOptions(filters={"colour": "1"}))
