"""The real public transcripts of the newer agent sources (`tests/fixtures/<agent>/real/`, each
folder's README names its repository, commit and licence), backfilled together into one index: a
string found in one session only finds that session first, and nothing else comes from another
agent's folder."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jacked.config import load_settings
from jacked.query.options import SearchOptions
from jacked.service import Jacked

FIXTURES = Path(__file__).parent / "fixtures"
ROOTS = {  # the variable that points each agent's scan at its real fixture
    "JACKED_CURSOR_DIR": FIXTURES / "cursor" / "real" / "User",
    "CONTINUE_GLOBAL_DIR": FIXTURES / "continue" / "real",
    "COPILOT_HOME": FIXTURES / "copilot" / "real" / ".copilot",
}
CASES = [  # (agent, what someone would search for, the one session that holds it)
    ("cursor", "remove the green line appearing in the command window", "b2ee92b8-c589-40ff-9dff-bf3b8f792ff9"),
    ("cursor", "native-run ERR_SDK_NOT_FOUND Android SDK root", "33d81a85-badb-4f6e-99b9-96da6038cde9"),
    ("continue", "black check line length 88 would reformat", "28fdaafd-5b3a-4342-90db-c3581e27b607"),
    ("continue", "pgai install script SQL syntax error postgres", "67733f7c-959d-4521-b326-779efe1967e7"),
    ("continue", "devcontainer postCreateCommand exit code 126", "e67044fc-0564-442d-b747-50127063ff40"),
    ("copilot", "how can I tell if the engram server has started up yet", "8baa78ec-b203-4c7f-b1d3-c1170ae84b7d"),
    ("copilot", "break down feature 007 into epics tasks and subtasks", "07c40cd0-ff51-4d6e-bdcd-ac2f90877203"),
]


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> list[dict[str, Any]]:
    claude = tmp_path_factory.mktemp("real-agents-claude")  # no Claude Code sessions: only the agents'
    settings = load_settings(claude, jacked_home=str(tmp_path_factory.mktemp("real-agents-home")), user_name="ada")
    with pytest.MonkeyPatch.context() as mp:
        for name, root in ROOTS.items():
            mp.setenv(name, str(root))
        assert Jacked(settings).backfill().errors == []
        return Jacked(settings).search_many([query for _, query, _ in CASES], SearchOptions(limit=3))


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{a}-{sid[:8]}" for a, _, sid in CASES])
def test_a_string_of_one_session_finds_it_first(answers: list[dict[str, Any]], case: int) -> None:
    agent, _, session_id = CASES[case]
    top = answers[case]["results"][0]
    assert (top["agent"], top["session_id"]) == (agent, session_id)
