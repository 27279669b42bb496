"""Every source keeps a turn's raw text (issue 39): for each reader that used to keep only result
briefs (Cline, Continue, Copilot CLI, VS Code's Copilot Chat, Cursor, Goose, OpenHands), a string
that its fixture holds only in a tool result is in that turn's raw text and is found verbatim by
search; a secret planted in that tool result does not reach the raw text. Real fixtures where they
hold tool calls (Copilot CLI, OpenHands), hand-written ones otherwise (the real Continue and Cursor
chats have no tool call, the real Goose database no message, and Cline has no real task)."""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from kit import read_each

from jacked.config import load_settings
from jacked.query.options import SearchOptions
from jacked.service import Jacked
from jacked.sources.registry import SOURCES

FIXTURES = Path(__file__).parent / "fixtures"
# (the variable that points the scan at the fixture, the fixture folder, the agent, a string the
# fixture holds only in a tool result, the session holding it). Each string was picked by reading
# the fixture and checked with grep: it is in that one file, in a call's result only.
CASES = [
    # a file read, sent back in the next request's `[read_file for 'server.js'] Result:` section
    ("JACKED_CLINE_DIR", "cline/hand/config/Code/User/globalStorage/saoudrizwan.claude-dev", "cline",
     "const express = require('express')", "1760000000000"),
    ("CONTINUE_GLOBAL_DIR", "continue/hand", "continue", "src/checkout.ts:40",  # a grep's hits
     "0d7c1a52-1111-4aaa-8bbb-000000000001"),
    # a file viewed, 2,059 characters into a 22,080-character result (and the postToolUse hook's copy
    # of it): past its brief. Not a subagent's: their turns' raw text is not kept (Claude Code's neither)
    ("COPILOT_HOME", "copilot/real/.copilot", "copilot",
     "Reduce the MCP tool surface from 45 tools to approximately 15-18 focused code intelligence tools",
     "07c40cd0-ff51-4d6e-bdcd-ac2f90877203"),
    ("JACKED_VSCODE_DIR", "copilot/vscode/Code/User", "copilot",  # VS Code's Copilot Chat: a terminal's output
     "FAILED tests/checkout_test.py::test_total - KeyError: 'EUR'", "5b0c8d2e-1f3a-4b6c-9d7e-8f9a0b1c2d3e"),
    ("JACKED_CURSOR_DIR", "cursor/hand/User", "cursor", "AssertionError: 400 != 422",
     "aaaaaaaa-0000-4000-8000-00000000000a"),
    ("JACKED_GOOSE_DIR", "goose/hand", "goose", "src/cart.py:1:discount", "20260101_1"),
    ("JACKED_OPENHANDS_DIR", "openhands/real", "openhands", "Serving HTTP on 0.0.0.0 port 8000", "basic_gui_mode"),
]
IDS = [f"{agent}-{sid[:8]}" for _, _, agent, _, sid in CASES]
SECRET = "ghp_" + "Zq7Xv2Lm9Rt4Kp8Wn3Hs6Jd1Fb5Gc0Ya2Ue7Io"  # synthetic, in a GitHub token's form


def _broken_on_purpose(errors: list[str]) -> bool:
    """Whether every error is one of the hand fixtures' deliberately broken files (a VS Code chat and
    a Continue session cut short, a Cursor composer that is not an object), and all three are there."""
    return len(errors) == 3 and all(("cut short" in e or "half-written" in e or "not a JSON object" in e) for e in errors)


def _service(tmp: Path, roots: dict[str, Path], mp: pytest.MonkeyPatch) -> Jacked:
    for name, root in roots.items():
        mp.setenv(name, str(root))
    claude = tmp / "claude"  # no Claude Code sessions: only the agents'
    claude.mkdir()
    return Jacked(load_settings(claude, jacked_home=str(tmp / "home"), user_name="ada"))


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("raw-agents")
    with pytest.MonkeyPatch.context() as mp:
        service = _service(tmp, {var: FIXTURES / folder for var, folder, *_ in CASES}, mp)
        assert _broken_on_purpose(service.backfill().errors)
        answers = service.search_many([text for *_, text, _ in CASES], SearchOptions(limit=3))
        texts = {sid: service.catalog.turn_texts(sid) for *_, sid in CASES}
    return {"answers": answers, "texts": texts}


@pytest.mark.parametrize("case", range(len(CASES)), ids=IDS)
def test_a_tool_results_string_is_in_its_turns_raw_text(indexed: dict[str, Any], case: int) -> None:
    *_, text, sid = CASES[case]
    assert [i for i, raw in indexed["texts"][sid].items() if text in raw], (sid, indexed["texts"][sid])


# Where a string is within its result's brief (all but the Cline and Copilot CLI cases), the brief in
# the turn's chunk could already show it verbatim: the raw-text test above is the one that tells;
# this one holds the whole path, from the reader to the answer.
@pytest.mark.parametrize("case", range(len(CASES)), ids=IDS)
def test_a_tool_results_string_is_found_verbatim(indexed: dict[str, Any], case: int) -> None:
    _, _, agent, text, sid = CASES[case]
    top = indexed["answers"][case]["results"][0]
    assert (top["agent"], top["session_id"], top["exact"]) == (agent, sid, True)
    assert " ".join(text.split()).lower() in " ".join(top["matches"][0]["text"].split()).lower()  # the line is shown


def _plant(folder: Path, marker: str, planted: str) -> int:
    """Put `planted` in place of `marker` wherever a file (or a SQLite database's text) under
    `folder` holds it; how many files or rows were changed."""
    changed = 0
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.suffix in (".db", ".vscdb"):
            with sqlite3.connect(path) as db:
                for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                    for column in [r[1] for r in db.execute(f"PRAGMA table_info({table})") if r[2] in ("TEXT", "BLOB")]:
                        changed += db.execute(f"UPDATE {table} SET {column} = replace({column}, ?, ?) "
                                              f"WHERE {column} LIKE ?", (marker, planted, f"%{marker}%")).rowcount
            db.close()
        elif marker.encode() in (data := path.read_bytes()):
            path.write_bytes(data.replace(marker.encode(), planted.encode()))
            changed += 1
    return changed


def test_a_secret_in_a_tool_result_does_not_reach_the_raw_text(tmp_path: Path) -> None:
    roots = {}
    for var, folder, agent, marker, sid in CASES:
        copy = roots[var] = tmp_path / "fixtures" / var
        shutil.copytree(FIXTURES / folder, copy)
        assert _plant(copy, marker, f"{marker} token {SECRET}") >= 1, agent
        # the reader itself keeps the planted secret: the raw text is redacted on its way to the catalog
        read, _ = read_each(SOURCES[agent], copy)
        assert any(SECRET in (t.raw_text or "") for t in read[sid].turns), agent
    with pytest.MonkeyPatch.context() as mp:
        service = _service(tmp_path, roots, mp)
        assert _broken_on_purpose(service.scan().errors)
        for _, _, agent, marker, sid in CASES:
            held = [raw for raw in service.catalog.turn_texts(sid).values() if marker in raw]
            assert held and not any(SECRET in raw for raw in held), agent
            assert any(f"{marker} token [REDACTED" in raw for raw in held), agent
