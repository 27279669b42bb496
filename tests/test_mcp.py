"""`jacked mcp` end to end: the server runs as a subprocess, the official SDK's stdio client lists
its tools and calls each one on real fixture sessions (indexed with the real model and Edge shard)."""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit import DEEP, REAL

from jacked.config import load_settings
from jacked.surfaces.mcp import MAX_RESULT_TOKENS, TOOL_NAMES, page
from jacked.util.tokens import count_tokens

CI = "fe869ecb-c176-478f-9734-7e4b8ef12cff"
SESSIONS = (DEEP, CI, "cb2e607c-c758-415a-8b45-c49e4631906a")


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> tuple[Path, Path]:
    from jacked.index.indexer import Indexer

    claude = tmp_path_factory.mktemp("mcp-claude")
    for sid in SESSIONS:
        src = next(REAL.rglob(f"{sid}.jsonl"))
        dst = claude / "projects" / src.parent.name / src.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, dst)
        for agent in src.parent.glob("agent-*.jsonl"):  # flat 2.0.x subagents of these sessions
            if sid in agent.read_text(errors="replace")[:2000]:
                shutil.copy(agent, dst.parent / agent.name)
    shutil.copytree(REAL / "plans", claude / "plans")
    home = tmp_path_factory.mktemp("mcp-home")
    assert Indexer(load_settings(claude, jacked_home=str(home), user_name="ada")).backfill().errors == []
    return claude, home


async def _session(claude: Path, home: Path) -> dict[str, Any]:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    exe = Path(sys.executable).parent / "jacked"
    params = StdioServerParameters(command=str(exe), args=["mcp"], env={
        "CLAUDE_CONFIG_DIR": str(claude), "JACKED_HOME": str(home), "JACKED_USER_NAME": "ada",
        "JACKED_DAEMON": os.environ.get("JACKED_DAEMON", ""),
        "PATH": os.environ.get("PATH", "")})
    calls = {
        "search": {"query": "add tar archive support to the manifest", "scope": "turns", "limit": 3},
        "retrieve": {"session_ids": [DEEP[:8]], "max_tokens": 3000},
        "list_sessions": {"limit": 2},
        "get_session": {"session_id": DEEP[:8]},
        "list_turns": {"session_id": DEEP, "limit": 4},
        "get_turn": {"session_id": DEEP, "turn_index": 6, "limit": 10},
        "timeline": {"session_id": DEEP, "types": ["error", "file"], "limit": 5},
        "file_history": {"path": "deep_manifest/deep_manifest.py", "limit": 3},
        "stats": {"tool": "Edit"},
        "restore": {"session_id": CI, "max_tokens": 2000},
    }
    out: dict[str, Any] = {}
    async with Client(params) as client:
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        for name, args in calls.items():
            r = await client.call_tool(name, args)
            out[name] = (r.is_error, r.content[0].text)
        r = await client.call_tool("list_sessions", {"offset": 2, "limit": 2})
        out["list_sessions_2"] = (r.is_error, r.content[0].text)
        r = await client.call_tool("get_turn", {"session_id": "no-such-session", "turn_index": 1})
        out["bad"] = (r.is_error, r.content[0].text)
    return out


def test_every_tool_over_stdio(setup: tuple[Path, Path]) -> None:
    out = anyio.run(_session, *setup)
    assert out["tools"] == sorted(TOOL_NAMES)
    for name in TOOL_NAMES:
        is_error, body = out[name]
        assert not is_error, f"{name}: {body}"
        assert count_tokens(body) <= MAX_RESULT_TOKENS < 25_000
    data = {name: json.loads(out[name][1]) for name in TOOL_NAMES}
    assert data["search"]["results"][0]["session_id"] == DEEP
    assert data["retrieve"]["used"] <= 3000 and "deep-manifest" in data["retrieve"]["text"]
    first = data["list_sessions"]
    assert first["total"] == 3 and len(first["items"]) == 2 and first["next_offset"] == 2
    second = json.loads(out["list_sessions_2"][1])
    assert len(second["items"]) == 1 and second["next_offset"] is None
    assert {s["session_id"] for s in first["items"] + second["items"]} == set(SESSIONS)
    assert data["get_session"]["session_id"] == DEEP and data["get_session"]["summary"].startswith("Session in")
    assert data["list_turns"]["total"] == 9 and data["list_turns"]["next_offset"] == 4
    turn = data["get_turn"]
    assert turn["turn"]["index"] == 6 and turn["total"] == 55 and len(turn["items"]) == 10
    assert {e["type"] for e in data["timeline"]["items"]} <= {"error", "file"} and data["timeline"]["total"] == 27
    assert data["file_history"]["items"][0]["operation"] == "edit" and data["file_history"]["total"] == 10
    assert data["stats"]["sessions"] == 3 and data["stats"]["tool_detail"]["tool"] == "Edit"
    assert data["restore"]["used"] <= 2000 and "## Goal" in data["restore"]["text"]
    is_error, message = out["bad"]
    assert is_error and "no session 'no-such-session'" in message


def test_pages_stay_within_the_bound() -> None:
    items = [{"i": i, "text": "word " * 3000} for i in range(50)]
    body = json.loads(text := page(items, 0, 50))
    assert count_tokens(text) <= MAX_RESULT_TOKENS
    assert 0 < len(body["items"]) < 50 and body["next_offset"] == len(body["items"])
    assert body["items"][0]["text"].endswith("chars not shown]")
    last = json.loads(page(items, 49, 10))
    assert last["next_offset"] is None and last["items"][0]["i"] == 49


def test_retrieve_answer_carries_the_whole_context(tmp_path: Path) -> None:
    """The context is bounded by the token budget, not cut to FIELD_CHARS: `used` counts exactly what
    is returned, and the block ends with its footer."""
    from jacked.query.retrieve import FOOTER
    from jacked.surfaces.mcp import FIELD_CHARS, JackedService
    from jacked.util.tokens import with_margin

    claude = tmp_path / "claude"
    src = next(REAL.rglob(f"{DEEP}.jsonl"))
    (claude / "projects" / src.parent.name).mkdir(parents=True)
    shutil.copy(src, claude / "projects" / src.parent.name / src.name)
    svc = JackedService(load_settings(claude, jacked_home=str(tmp_path / "home"), user_name="ada"))
    for mode in ("full", "smart"):
        text = svc.retrieve([DEEP[:8]], mode=mode, max_tokens=50_000)
        assert count_tokens(text) <= MAX_RESULT_TOKENS
        r = json.loads(text)
        context = r["text"]
        assert r["budget"] == MAX_RESULT_TOKENS - 1000
        assert count_tokens(context) == r["used"] and with_margin(r["used"]) <= r["budget"]
        assert f"Used: {r['used']:,} |" in context
        assert context.endswith(FOOTER + "\n") and "chars not shown]" not in context
        if mode == "full":
            assert len(context) > FIELD_CHARS and r["used"] > 2000


def test_retrieve_answer_fits_the_bound_with_its_whole_context(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Every real session in full mode: many units left out. The list of omitted units is shortened
    to fit, never the context; with no headroom and no margin, the JSON escapes of the context push
    the answer over the bound, and the budget shrinks until it fits."""
    from kit import scanned_real

    from jacked.query.retrieve import FOOTER
    from jacked.surfaces import mcp
    from jacked.util.tokens import with_margin

    scanned_real(tmp_path / "home")  # the catalog of every real session (the service does not scan)
    for headroom, margin in ((mcp.RETRIEVE_HEADROOM, 0.1), (0, 0.0)):
        monkeypatch.setattr(mcp, "RETRIEVE_HEADROOM", headroom)
        settings = load_settings(tmp_path / "claude", jacked_home=str(tmp_path / "home"), user_name="ada",
                                 token_safety_margin=margin)
        svc = mcp.JackedService(settings, scan=False)
        ids = [r["session_id"] for r in svc.catalog.list_sessions()]
        assert len(ids) > 20
        text = svc.retrieve(ids, mode="full", max_tokens=50_000)
        assert count_tokens(text) <= MAX_RESULT_TOKENS
        r = json.loads(text)
        assert count_tokens(r["text"]) == r["used"] and with_margin(r["used"], margin) <= r["budget"]
        assert r["text"].endswith(FOOTER + "\n") and r["used"] > 5000
        assert r["omitted_total"] > len(r["omitted"])
        # with headroom the list keeps a run of entries; without, the shrunk budget may leave it none
        assert len(r["omitted"]) > 0 or not headroom
        if headroom:
            # the sessions' own entries (`retrieve --json`'s, as on every surface) share the bound:
            # with a dozen of them the budget shrinks below the headroom's
            assert r["budget"] <= MAX_RESULT_TOKENS - headroom and len(r["sessions"]) > 10
        else:
            assert r["budget"] < MAX_RESULT_TOKENS  # shrunk: the escaped context did not fit


def test_list_sessions_reads_the_catalog_a_page_at_a_time(tmp_path: Path) -> None:
    """Pages read with LIMIT/OFFSET from the catalog join up to the whole list, in its order, with
    the catalog's own count as their total (for all sessions and for one repo)."""
    from kit import scanned_real

    from jacked.surfaces.mcp import JackedService

    scanned_real(tmp_path / "home")
    svc = JackedService(load_settings(tmp_path / "claude", jacked_home=str(tmp_path / "home"), user_name="ada"),
                        scan=False)
    everything = svc.catalog.list_sessions()
    repo = max({r["repo_name"] for r in everything if r["repo_name"]},
               key=lambda name: sum(r["repo_name"] == name for r in everything))
    for repo_arg, expected in ((None, everything), (repo, [r for r in everything if r["repo_name"] == repo])):
        assert len(expected) > 3
        seen: list[str] = []
        offset: int | None = 0
        while offset is not None:
            body = json.loads(svc.list_sessions(repo_arg, offset=offset, limit=3))
            assert body["total"] == len(expected) and body["offset"] == offset and len(body["items"]) <= 3
            seen += [s["session_id"] for s in body["items"]]
            offset = body["next_offset"]
        assert seen == [r["session_id"] for r in expected]


async def _calls(server: Any, calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, list[tuple[bool, str]]]:
    from mcp.client import Client

    async with Client(server) as client:
        out = []
        for name, args in calls:
            r = await client.call_tool(name, args)
            out.append((r.is_error, r.content[0].text))
        return client.server_info, out


def test_errors_are_one_line_in_the_tools_terms(tmp_path: Path) -> None:
    """A missing or unknown argument, a value of the wrong type or out of range: one line naming
    the argument (never a CLI flag, never a validation dump), the known arguments or values listed;
    and the server reports jacked's version."""
    from kit import scanned_real

    from jacked import __version__
    from jacked.index.content_types import CONTENT_TYPES
    from jacked.surfaces.mcp import build_server

    scanned_real(tmp_path / "home")
    settings = load_settings(tmp_path / "claude", jacked_home=str(tmp_path / "home"), user_name="ada")
    ids = [p.stem for p in REAL.rglob("*.jsonl") if len(p.stem) == 36][:12]
    info, out = anyio.run(_calls, build_server(settings, scan=False), [
        ("search", {}),
        ("search", {"query": "tar archive", "colour": 1}),
        ("search", {"query": "tar archive", "types": ["bogus"]}),
        ("search", {"query": "tar archive", "agent": "cobol"}),
        ("search", {"query": "tar archive", "limit": "many"}),
        ("retrieve", {"session_ids": [DEEP], "max_tokens": -5}),
        ("retrieve", {"session_ids": ids, "max_tokens": 100}),
        ("restore", {"session_id": DEEP, "max_tokens": -5}),
        ("get_turn", {"session_id": DEEP}),
    ])
    assert info.version == __version__ and info.name == "jacked"
    for is_error, message in out:
        assert is_error and "\n" not in message and "pydantic" not in message and "--" not in message, message
    texts = [m for _, m in out]
    assert texts[0].endswith("search: query is required")
    assert "unknown argument 'colour'" in texts[1] and "query, scope, limit, types, repo" in texts[1]
    assert "unknown content type 'bogus'" in texts[2] and ", ".join(CONTENT_TYPES) in texts[2]
    assert "unknown agent 'cobol': use one of claude, codex, gemini, opencode" in texts[3]
    assert "limit: input should be a valid integer" in texts[4] and "'many'" in texts[4]
    assert texts[5].endswith("max_tokens must be at least 100 (given -5)")
    assert "max_tokens 100 cannot hold" in texts[6]
    assert texts[7].endswith("max_tokens must be at least 1 (given -5)")
    assert texts[8].endswith("get_turn: turn_index is required")
