"""`jacked stats`: figures checked by hand on a real session and against the generator's truth."""
from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from kit import GEN_CORPUS, REAL

from jacked.catalog import Catalog
from jacked.ingest.scan import Scanner
from jacked.query.stats import StatsQuery, compute_stats

SIX_ERRORS = "2b4ed4c0-b905-41de-9238-273db3ec737a"  # 2.1.17: one turn, nine calls, six refused


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    cat = Catalog(tmp_path_factory.mktemp("stats-real") / "catalog.db")
    Scanner(cat, REAL).scan()
    return cat


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Catalog, dict[str, Any]]:
    out = tmp_path_factory.mktemp("stats-gen") / "claude"
    subprocess.run([sys.executable, str(GEN_CORPUS), "--out", str(out), "--sessions", "60", "--seed", "11"], check=True,
                   capture_output=True)
    cat = Catalog(out.parent / "catalog.db")
    Scanner(cat, out).scan()
    return cat, json.loads((out / "truth.json").read_text())


def test_hand_checked_session(real: Catalog) -> None:
    # Read off the raw file: WebSearch✗ Bash Bash Bash✗ Bash✗ Bash✗ Glob Bash✗ Read✗, one call per response.
    s = compute_stats(real, StatsQuery(session_id=SIX_ERRORS, tool="Bash"))
    assert (s["sessions"], s["turns"], s["tool_calls"], s["tool_error_count"]) == (1, 1, 9, 6)
    assert s["tool_usage"] == {"Bash": 6, "Glob": 1, "Read": 1, "WebSearch": 1}
    assert s["tool_errors"] == {"Bash": 4, "Read": 1, "WebSearch": 1}
    pairs = {tuple(x["tools"]): x["count"] for x in s["sequences"] if x["n"] == 2}
    assert pairs == {("Bash", "Bash"): 4, ("WebSearch", "Bash"): 1, ("Bash", "Glob"): 1, ("Glob", "Bash"): 1,
                     ("Bash", "Read"): 1}
    triples = {tuple(x["tools"]): x["count"] for x in s["sequences"] if x["n"] == 3}
    assert triples[("Bash", "Bash", "Bash")] == 3 and triples[("Glob", "Bash", "Read")] == 1
    assert s["parallel"]["batches"] == 0
    d = s["tool_detail"]
    assert d["calls"] == 6 and d["errors"] == 4 and d["position"] == {"middle": 6}
    assert d["preceded_by"] == {"Bash": 4, "Glob": 1, "WebSearch": 1}
    assert d["followed_by"] == {"Bash": 4, "Glob": 1, "Read": 1}
    failing = {c["command"]: c["failed"] for c in s["bash_failing"]}
    assert failing["claude --version"] == 1


def test_real_totals_match_per_turn_metrics(real: Catalog) -> None:
    s = compute_stats(real, StatsQuery())
    usage: Counter[str] = Counter()
    for (m,) in real.db.execute("SELECT metrics FROM turns"):
        usage.update(json.loads(m)["tool_usage"])
    assert s["tool_usage"] == dict(usage)
    assert s["sessions"] == 27 and s["turns"] == 99  # sessions with at least one turn
    # 7acd37a8 turn 2: three Bash calls fired together; ef958aa1 turn 1: batches of 6, 6, 5, 5
    assert s["parallel"]["sizes"]["6"] >= 2 and s["parallel"]["share_by_tool"]
    assert s["tokens"]["input"] > 0 and s["tokens"]["output"] > 0 and s["tokens"]["by_model"]
    assert s["time"]["turns_timed"] > 0


def test_filters(real: Catalog) -> None:
    deep = compute_stats(real, StatsQuery(repo="deep-manifest"))
    assert deep["sessions"] == 1 and deep["turns"] == 9
    assert compute_stats(real, StatsQuery(since="2099-01-01"))["turns"] == 0
    recent = compute_stats(real, StatsQuery(since="2026-04-01"))
    assert 0 < recent["turns"] < 99


def _truth_turns(truth: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [t["invocations"] for s in truth["sessions"] for t in s["turns"]]


def test_against_generator_truth(generated: tuple[Catalog, dict[str, Any]]) -> None:
    cat, truth = generated
    s = compute_stats(cat, StatsQuery(top=1000, tool="Edit"))
    turns = _truth_turns(truth)
    usage = Counter(i["tool_name"] for t in turns for i in t)
    errors = Counter(i["tool_name"] for t in turns for i in t if i["is_error"])
    assert s["turns"] == len(turns)
    assert s["tool_usage"] == dict(usage) and s["tool_errors"] == dict(errors)
    grams: Counter[tuple[str, ...]] = Counter()
    sizes: Counter[int] = Counter()
    before: Counter[str] = Counter()
    for t in turns:
        names = [i["tool_name"] for i in t]
        for k in (2, 3, 4):
            grams.update(tuple(names[j:j + k]) for j in range(len(names) - k + 1))
        sizes.update(Counter(Counter(i["sequence"] for i in t).values()))
        before.update(names[j - 1] if j else "<turn start>" for j, n in enumerate(names) if n == "Edit")
    got = {tuple(x["tools"]): x["count"] for x in s["sequences"]}
    assert got == dict(grams)
    assert s["parallel"]["sizes"] == {str(k): v for k, v in sorted(sizes.items()) if k > 1}
    assert s["tool_detail"]["preceded_by"] == dict(before)


def test_cli_json(tmp_path: Path) -> None:
    import os

    exe = Path(sys.executable).parent / "jacked"
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(REAL), JACKED_HOME=str(tmp_path))
    p = subprocess.run([str(exe), "stats", "--json", "--tool", "Edit"], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert {"sessions", "turns", "tool_usage", "tool_errors", "sequences", "tool_detail"} <= set(data)
    bad = subprocess.run([str(exe), "stats", "--since", "yesterday-ish"], capture_output=True, text=True, env=env)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
