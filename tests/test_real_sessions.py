"""Real Claude Code transcripts (shared fixtures), with figures checked by hand against the raw files.

Each pinned tuple per turn is: (tool calls, API responses with tool calls, sizes of the parallel
batches, tool errors, files read, files written, files modified, lines added, lines removed,
bash commands, failed bash commands, duration_ms from turn_duration or None).
"""
from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import pytest
from kit import FIXTURES, REAL

from jacked.catalog import Catalog
from jacked.query.history import catalog_for_path, list_sessions, turns_json
from jacked.ingest.scan import Scanner

PINNED: dict[str, dict[int, tuple[Any, ...]]] = {
    # 2.1.114, worktrees: six subagents in <session>/subagents/, parallel Agent batches, turn_duration
    "ef958aa1-0e93-49f0-bb71-150f63befcd1": {
        1: (27, 9, (6, 6, 5, 5), 0, 0, 0, 0, 0, 0, 4, 0, 247515),
        2: (13, 6, (2, 2, 3, 3, 2), 0, 0, 0, 0, 0, 0, 5, 0, 152878),
        3: (0, 0, (), 0, 0, 0, 0, 0, 0, 0, 0, None),
    },
    # 2.0.55, plan mode: slug humble-doodling-wolf, ExitPlanMode, one Explore subagent (flat)
    "a7da6a22-facc-4fcd-8bab-f83c87862004": {
        1: (0, 0, (), 0, 0, 0, 0, 0, 0, 0, 0, None),
        2: (0, 0, (), 0, 0, 0, 0, 0, 0, 0, 0, None),
        3: (12, 7, (3, 4), 0, 3, 0, 1, 2, 1, 8, 0, None),
        4: (8, 4, (2, 2, 3), 1, 2, 0, 0, 0, 0, 4, 1, None),
        5: (2, 2, (), 0, 0, 0, 0, 0, 0, 2, 0, None),
        6: (55, 55, (), 2, 4, 1, 3, 763, 31, 14, 2, None),
        7: (6, 6, (), 1, 1, 1, 0, 135, 230, 0, 0, None),
        8: (25, 23, (3,), 0, 2, 0, 2, 34, 17, 8, 0, None),
        9: (0, 0, (), 0, 0, 0, 0, 0, 0, 0, 0, None),
    },
    # 2.0.37, flat agent-<8hex>.jsonl layout with Warmup agents
    "cb2e607c-c758-415a-8b45-c49e4631906a": {
        1: (19, 19, (), 4, 1, 0, 1, 8, 8, 5, 2, None),
        2: (2, 2, (), 0, 0, 0, 1, 45, 7, 0, 0, None),
        3: (49, 49, (), 3, 2, 0, 2, 80, 46, 16, 2, None),
        4: (4, 4, (), 0, 0, 0, 0, 0, 0, 4, 0, None),
        5: (2, 2, (), 0, 1, 0, 1, 3, 0, 0, 0, None),
    },
    # 2.0.42, /init slash command, Write that creates a file (empty patch: all lines added)
    "7acd37a8-2745-4b58-a8a9-46164b22ad9e": {
        1: (15, 6, (3, 3, 3, 3, 2), 0, 8, 1, 0, 107, 0, 5, 0, None),
        2: (3, 1, (3,), 3, 0, 0, 0, 0, 0, 2, 2, None),
        3: (0, 0, (), 0, 0, 0, 0, 0, 0, 0, 0, None),
        4: (11, 6, (2, 3, 2, 2), 1, 0, 2, 1, 38, 8, 4, 1, None),
        5: (26, 11, (2, 2, 3, 3, 2, 3, 3, 3, 2, 2), 1, 3, 0, 7, 18, 24, 2, 0, None),
        6: (16, 7, (2, 3, 2, 2, 3, 3), 1, 0, 2, 3, 142, 27, 0, 0, None),
    },
    # 1.0.24, MultiEdit, a created file, failing bash
    "fe869ecb-c176-478f-9734-7e4b8ef12cff": {
        1: (13, 13, (), 2, 1, 1, 1, 42, 1, 6, 2, None),
        2: (19, 19, (), 4, 1, 0, 2, 15, 18, 6, 4, None),
        3: (0, 0, (), 0, 0, 0, 0, 0, 0, 0, 0, None),
    },
    # 2.1.17, one turn with six tool errors
    "2b4ed4c0-b905-41de-9238-273db3ec737a": {
        1: (9, 9, (), 6, 0, 0, 0, 0, 0, 6, 4, None),
    },
}


@pytest.fixture(scope="module")
def real_catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    cat = Catalog(tmp_path_factory.mktemp("real") / "catalog.db")
    report = Scanner(cat, REAL).scan()
    assert report.errors == []
    return cat


def _shape(turn: dict[str, Any]) -> tuple[Any, ...]:
    m = turn["metrics"]
    batches = collections.Counter(i["sequence"] for i in turn["invocations"])
    parallel = tuple(batches[s] for s in sorted(batches) if batches[s] > 1)
    return (m["tool_call_count"], len(batches), parallel, m["tool_error_count"], len(m["files_read"]),
            len(m["files_written"]), len(m["files_modified"]), m["lines_added"], m["lines_removed"],
            len(m["bash_commands"]), m["bash_error_count"],
            turn["duration_ms"] if turn["duration_source"] == "turn_duration" else None)


@pytest.mark.parametrize("session_id", sorted(PINNED))
def test_pinned_sessions(real_catalog: Catalog, session_id: str) -> None:
    turns = turns_json(real_catalog, session_id)["turns"]
    assert {t["index"]: _shape(t) for t in turns} == PINNED[session_id]


def test_parallel_groups_number_calls_within_a_batch(real_catalog: Catalog) -> None:
    turn = turns_json(real_catalog, "ef958aa1-0e93-49f0-bb71-150f63befcd1")["turns"][0]
    batch = [(i["tool_name"], i["parallel_group"]) for i in turn["invocations"] if i["sequence"] == 4]
    assert batch == [("TaskUpdate", 1), ("TaskUpdate", 2), ("TaskUpdate", 3), ("Agent", 4), ("Agent", 5), ("Agent", 6)]
    solo = [i["parallel_group"] for i in turn["invocations"] if i["sequence"] == 0]
    assert solo == [0]


def test_worktrees_session_has_its_six_subagents(real_catalog: Catalog) -> None:
    data = turns_json(real_catalog, "ef958aa1-0e93-49f0-bb71-150f63befcd1")
    subs = sorted((s["turn_index"], s["agent_id"], s["agent_type"], s["tool_call_count"]) for s in data["subagents"])
    assert subs == [(1, "a4ca7529859c158c2", "general-purpose", 24), (1, "a52886dc180afb356", "general-purpose", 17),
                    (1, "ab1e6e141221a29ab", "general-purpose", 17), (2, "a36efb2a1231c41e2", "general-purpose", 7),
                    (2, "a6aa8ad077d9ea083", "general-purpose", 6), (2, "aef063ba534d73153", "general-purpose", 6)]
    assert all(len(s["summary_text"] or "") > 500 for s in data["subagents"])
    agent_calls = {i["tool_use_id"]: i["agent_id"] for t in data["turns"] for i in t["invocations"]
                   if i["tool_name"] == "Agent"}
    assert sorted(agent_calls.values()) == sorted(s["agent_id"] for s in data["subagents"])
    assert [x["kind"] for x in data["texts"]] == ["recap", "recap"]


def test_plan_mode_session_has_its_plan(real_catalog: Catalog) -> None:
    data = turns_json(real_catalog, "a7da6a22-facc-4fcd-8bab-f83c87862004")
    plan_file = (REAL / "plans" / "humble-doodling-wolf.md").read_text()
    assert data["plan_source"] == "file" and data["plan"] == plan_file
    row = real_catalog.get_session_row("a7da6a22-facc-4fcd-8bab-f83c87862004")
    assert row["slug"] == "humble-doodling-wolf"
    explore = [s for s in data["subagents"] if not s["is_warmup"]]
    assert [(s["agent_id"], s["agent_type"], s["turn_index"]) for s in explore] == [("c8d9b115", "Explore", 6)]


def test_flat_layout_warmups_are_not_linked(real_catalog: Catalog) -> None:
    subs = turns_json(real_catalog, "cb2e607c-c758-415a-8b45-c49e4631906a")["subagents"]
    assert sorted((s["agent_id"], s["is_warmup"]) for s in subs) == [
        ("2b93909d", True), ("645808c9", True), ("ea02459f", False)]


def test_sessions_listing_counts(real_catalog: Catalog) -> None:
    rows = list_sessions(real_catalog)
    # 46 main files: 17 empty, 2 of summaries or snapshots only (not sessions), 27 with a human prompt
    assert len(rows) == 27
    assert all(r["turn_count"] for r in rows)
    assert not any(r["session_id"].startswith("agent-") for r in rows)
    assert {r["repo_name"] for r in rows if r["session_id"].startswith("ef958aa1")} == {"worktrees"}


def _all_fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*.jsonl"))


@pytest.mark.parametrize("path", _all_fixture_files(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_fixture_file_is_read(path: Path) -> None:
    catalog, sid, report = catalog_for_path(path)
    data = turns_json(catalog, sid)
    assert report.errors == []
    for t in data["turns"]:
        for inv in t["invocations"]:
            assert inv["sequence"] >= 0 and inv["parallel_group"] >= 0
