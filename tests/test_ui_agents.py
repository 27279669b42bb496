"""The web view knows the agent of every session: `/api/health` lists the agents, the session list
has an agent column and filter (`/api/sessions?agent=`), the session page names it. Claude Code's
real fixtures and Gemini CLI's hand-written ones, scanned into one catalog."""
from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kit import REAL

from jacked.catalog import Catalog
from jacked.config import load_settings
from jacked.ingest.scan import scan
from jacked.surfaces.ui.server import make_server, serve_in_thread

GEMINI_HOME = Path(__file__).parent / "fixtures" / "gemini" / "hand"  # holds .gemini/


def _get(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=60) as res:
        return json.loads(res.read())


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    home = tmp_path_factory.mktemp("ui-agents")
    settings = load_settings(REAL, jacked_home=str(home), user_name="tester")
    cat = Catalog(settings.catalog_path)
    report = scan(cat, settings.claude_dir, agents={"gemini": GEMINI_HOME / ".gemini"})
    cat.close()
    server = make_server(settings, "127.0.0.1", 0)
    serve_in_thread(server)
    yield {"base": f"http://127.0.0.1:{server.server_address[1]}", "report": report}
    server.shutdown()
    server.server_close()


def test_health_lists_each_agent_with_its_sessions(site: dict[str, Any]) -> None:
    agents = {a["name"]: a for a in _get(site["base"], "/api/health")["agents"]}
    gemini = site["report"].agents["gemini"]
    assert agents["gemini"]["label"] == "Gemini CLI" and agents["gemini"]["sessions"] > 0
    assert agents["gemini"]["sessions"] <= gemini["sessions"]  # listed sessions of those found
    assert agents["claude"]["sessions"] > 0 and agents["codex"]["sessions"] == 0


def test_session_list_filters_by_agent(site: dict[str, Any]) -> None:
    every = _get(site["base"], "/api/sessions?limit=200")
    only = _get(site["base"], "/api/sessions?limit=200&agent=gemini")
    assert only["total"] == sum(r["agent"] == "gemini" for r in every["sessions"]) > 0
    assert {r["agent"] for r in only["sessions"]} == {"gemini"}
    claude = _get(site["base"], "/api/sessions?limit=200&agent=claude")
    assert claude["total"] + only["total"] == every["total"]
    detail = _get(site["base"], f"/api/sessions/{only['sessions'][0]['session_id']}")
    assert detail["session"]["agent"] == "gemini"


def test_session_page_carries_decisions_and_feedback(site: dict[str, Any]) -> None:
    """What the session page badges: each turn's decisions and feedback (the plan-mode session of the
    real fixtures approves plans and answers questions; the CodeRabbit one rejects a plan)."""
    from kit import DEEP

    detail = _get(site["base"], f"/api/sessions/{DEEP}")
    decisions = [d for t in detail["turns"] for d in t.get("decisions") or []]
    assert decisions and detail["session"].get("decision_count") == len(decisions)
    assert {d["kind"] for d in decisions} >= {"question", "plan"}
    assert all(d.get("text") for d in decisions)
