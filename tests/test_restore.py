"""`jacked restore`: a brief within the budget, made of whole items, that says where the session stopped."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kit import DEEP, REAL, assistant, claude_dir_with, prompt, result, scanned_real, text, tool_use

from jacked.catalog import Catalog
from jacked.query.restore import RestoreError, restore_brief
from jacked.ingest.scan import Scanner
from jacked.util.tokens import count_tokens

CI = "fe869ecb-c176-478f-9734-7e4b8ef12cff"


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    return scanned_real(tmp_path_factory.mktemp("restore-real"))


@pytest.mark.parametrize("budget", [400, 900, 2500, 6000, 50_000])
def test_within_budget_and_never_cuts_a_text(real: Catalog, budget: int) -> None:
    full = {s["key"]: s["text"] for s in restore_brief(real, DEEP, 1_000_000).to_json()["sections"]}
    brief = restore_brief(real, DEEP, budget)
    data = brief.to_json()
    assert data["used"] == count_tokens(data["text"]) <= budget
    for s in data["sections"]:
        if s["key"].endswith(":facts"):  # a turn's facts: the lines of its full state, minus the prose
            prose = full[s["key"].removesuffix(":facts")].splitlines()
            assert all(ln in prose for ln in s["text"].splitlines() if not ln.startswith("Asked: ("))
        elif s["key"] != "omitted":
            assert s["text"] == full[s["key"]]  # whole items only
    assert data["sections"][0]["key"] == "header"
    if budget >= 2500:
        keys = [s["key"] for s in data["sections"]]
        assert {"goal", "stopped", "artifacts"} <= set(keys)
    if budget < 6000:
        assert data["omitted"]


def test_content_of_a_real_brief(real: Catalog) -> None:
    text = restore_brief(real, CI, 20_000).text
    assert "## Goal\nHey Claude, can you please add a Github Action to run tests and linting?" in text
    assert "Created:\n  - .github/workflows/ci.yml" in text
    # the session ended with /clear: the last *working* turn is 2, and the /clear is noted after it
    assert "Last working turn 2." in text and "Then: /clear" in text
    assert "Error (Bash uv run pyright)" in text and "fixed later" in text


def test_budget_too_small_is_a_clear_error(real: Catalog) -> None:
    with pytest.raises(RestoreError, match="too small"):
        restore_brief(real, DEEP, 20)


def test_interrupted_session_constraints_and_open_questions(tmp_path: Path) -> None:
    records = [
        prompt("Add a retry to the fetcher. Don't add new dependencies. It must stay Python 3.9 compatible.", 0),
        assistant("m1", tool_use("t1", "Edit", file_path="/home/dev/projects/demo/fetch.py", old_string="a",
                                 new_string="b"), 1),
        result("t1", "ok", t=2),
        assistant("m2", text("I decided to use exponential backoff instead of a fixed delay. Should the retry "
                             "count be configurable?"), 3),
        prompt("Yes, make it configurable", 10),
        assistant("m3", tool_use("t2", "Bash", command="pytest -q"), 11),
        result("t2", "Exit code 1\nFAILED test_fetch.py::test_retry", is_error=True, t=12),
        prompt("[Request interrupted by user for tool use]", 13),
    ]
    claude = claude_dir_with(tmp_path / "claude", records)
    cat = Catalog(tmp_path / "catalog.db")
    Scanner(cat, claude).scan()
    sid = cat.session_ids()[0]
    brief = restore_brief(cat, sid, 4000).text
    assert "- Don't add new dependencies." in brief and "- It must stay Python 3.9 compatible." in brief
    assert "Decisions:\n  - I decided to use exponential backoff instead of a fixed delay." in brief
    assert "Should the retry count be configurable?" in brief  # an open question
    assert "Turn 2: Bash pytest -q: Exit code 1" in brief  # an error never fixed
    assert "Last working turn 2 was interrupted by the user." in brief
    assert "Edited: fetch.py" in brief


def test_cli(tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "jacked"
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(REAL), JACKED_HOME=str(tmp_path))
    p = subprocess.run([str(exe), "restore", "a7da6a22", "--max-tokens", "1500", "--json"], capture_output=True,
                       text=True, env=env)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["budget"] == 1500 and data["used"] <= 1500 and data["session_id"] == DEEP
    p = subprocess.run([str(exe), "restore", "nope"], capture_output=True, text=True, env=env)
    assert p.returncode == 1 and "Traceback" not in p.stderr
