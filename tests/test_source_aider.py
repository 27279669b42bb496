"""Aider as a transcript source: reading checked against an independent count, hand-checked
details of real and hand-written sessions, a scan into the catalog (incremental, read-only),
`status --json` and bad input."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from jacked.catalog import Catalog
from jacked.ingest.agents import source_status
from jacked.ingest.scan import Scanner
from jacked.query.history import turns_json
from jacked.sources.aider.source import CHAT_FILE, AiderSource, find_chat_files
from jacked.sources.aider.turns import count, utc_of_local
from jacked.sources.base import FoundSession
from jacked.sources.model import Session
from jacked.sources.registry import SOURCES

HERE = Path(__file__).parent
FIX = HERE / "fixtures" / "aider"
HAND = FIX / "hand"
REAL = FIX / "real"
SOURCE = AiderSource()


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Aider writes local times: read them as UTC here, whatever this machine's zone."""
    monkeypatch.setenv("TZ", "UTC")
    import time
    time.tzset()


def _module(name: str) -> ModuleType:
    path = HERE / "agents" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"aider_test_{name}", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


counter = _module("count_aider")


def _found(root: Path) -> list[FoundSession]:
    errors: list[str] = []
    found = list(SOURCE.discover(root, errors))
    assert errors == []
    return found


def _key(found: FoundSession) -> str:
    """The counter's name of a session: `<folder>/<header time>#<n>`."""
    path, started, ordinal = found.location.rsplit("#", 2)
    return f"{Path(path).parent.name}/{started}#{ordinal}"


def _read_all(root: Path) -> dict[str, Session]:
    return {_key(f): SOURCE.read(f) for f in _found(root)}


@pytest.fixture(scope="module")
def hand() -> dict[str, Session]:
    return _read_all(HAND)


@pytest.fixture(scope="module")
def real() -> dict[str, Session]:
    return _read_all(REAL)


# --------------------------------------------------------------------------- against the independent count
@pytest.mark.parametrize("root", [HAND, REAL], ids=["hand", "real"])
def test_counts_match_the_independent_count(root: Path) -> None:
    expected = counter.count(root)
    sessions = _read_all(root)
    assert set(sessions) == set(expected["by_session"])
    for key, want in expected["by_session"].items():
        s = sessions[key]
        calls = [i for t in s.turns for i in t.invocations]
        events = [e for t in s.turns for e in t.events]
        got = {
            "turns": len([t for t in s.turns if t.index >= 1]),
            "tool_calls": len(calls),
            "errors": sum(i.is_error for i in calls),
            "input_tokens": sum(t.metrics.input_tokens for t in s.turns),
            "output_tokens": sum(t.metrics.output_tokens for t in s.turns),
            "cache_read_tokens": sum(t.metrics.cache_read_tokens for t in s.turns),
            "cache_creation_tokens": sum(t.metrics.cache_creation_tokens for t in s.turns),
            "rejections": sum(e.type == "feedback" and e.data.get("kind") == "tool_rejected" for e in events),
            "interrupted_turns": sum(t.interrupted for t in s.turns),
            "edits_applied": sum(i.tool_name in ("edit", "write") and not i.is_error for i in calls),
        }
        assert got == want, key
        assert s.message_lines > 0
    # the figures as of writing, so a change in either reading shows
    summary = {k: expected[k] for k in ("sessions", "turns", "tool_calls", "errors")}
    assert summary == ({"sessions": 4, "turns": 11, "tool_calls": 11, "errors": 4} if root == HAND
                       else {"sessions": 26, "turns": 59, "tool_calls": 18, "errors": 5})


# --------------------------------------------------------------------------- real sessions (Aider's own repo)
def test_real_edit_commit_and_tokens(real: dict[str, Session]) -> None:
    s = real["utils/2024-08-05 19:33:32#0"]
    assert s.agent == "aider" and s.cwd and s.cwd.endswith("fixtures/aider/real/utils") and s.repo_name == "utils"
    assert s.started_at == "2024-08-05T19:33:32.000Z" and s.version_first == "0.47.2-dev"
    assert s.models == ["claude-3-5-sonnet-20240620"]
    assert [t.prompt for t in s.turns] == ["Use the Spinner instead of the inlined custom spinner", "/diff", "/ex"]
    first = s.turns[0]
    (edit,) = first.invocations
    assert (edit.tool_name, edit.file_path, edit.is_error) == ("edit", "aider/utils.py", False)
    assert "Commit fd43cd4 feat: Use the Spinner" in edit.result_brief
    # the SEARCH/REPLACE block of the reply, counted line by line
    assert (edit.lines_added, edit.lines_removed) == (4, 9)
    assert (first.metrics.input_tokens, first.metrics.output_tokens, first.metrics.api_calls) == (5244, 604, 1)
    assert first.assistant_text and first.assistant_text.startswith("Certainly! I'll modify the `run_install`")
    assert [t.is_slash_command for t in s.turns] == [False, True, True]


def test_real_head_of_a_cut_file_is_a_session(real: dict[str, Session]) -> None:
    s = real["utils/head#0"]
    assert s.started_at is None
    (turn,) = [t for t in s.turns if t.index >= 1]
    assert turn.prompt.startswith("# Fix any errors below, if possible.") and turn.interrupted


def test_real_cache_hits_and_models(real: dict[str, Session]) -> None:
    s = real["cache/2024-08-19 13:46:54#0"]
    (turn,) = s.turns
    assert (turn.metrics.input_tokens, turn.metrics.cache_read_tokens, turn.metrics.output_tokens) == (21523, 13952, 9)
    assert s.models == ["deepseek/deepseek-coder"]


def test_real_failed_edits_and_lint(real: dict[str, Session]) -> None:
    s = real["sessions/2024-08-06 08:47:10#0"]
    calls = [i for t in s.turns for i in t.invocations]
    assert sum(i.is_error for i in calls) == 4
    lint = [i for i in calls if i.tool_name == "lint"]
    assert lint and all(i.is_error and i.command and "tmp.lint.sh" in i.command for i in lint)


# --------------------------------------------------------------------------- hand-written sessions
def test_hand_batch_of_edits_write_and_shell(hand: dict[str, Session]) -> None:
    s = hand["webapp/2025-06-02 09:15:00#0"]
    assert s.version_first == "0.84.0"
    assert s.models == ["anthropic/claude-sonnet-4-20250514", "openrouter/deepseek/deepseek-chat"]
    turn = s.turns[1]
    assert turn.prompt == "add a /health endpoint that returns the git sha,\nand a test for it"
    # the input history gives the prompt its own time
    assert turn.started_at == "2025-06-02T09:16:02.500Z"
    assert [(i.tool_name, i.file_path, i.parallel_group) for i in turn.invocations] == [
        ("edit", "app/routes.py", 1), ("edit", "app/server.py", 2), ("write", "tests/test_health.py", 3),
        ("bash", None, 4)]
    assert [(i.lines_added, i.lines_removed) for i in turn.invocations[:3]] == [(5, 0), (3, 0), (5, 0)]
    assert turn.metrics.bash_commands == ["pytest tests/test_health.py"]
    # the command's output goes to the terminal only; a command that could not start is an error
    assert turn.invocations[3].is_error and "No such file or directory" in turn.invocations[3].result_brief
    assert turn.metrics.files_modified == ["app/routes.py", "app/server.py"]
    assert turn.metrics.files_written == ["tests/test_health.py"]
    (call,) = turn.llm_calls
    assert (call.input_tokens, call.cache_creation_tokens, call.cache_read_tokens, call.output_tokens) == (
        3400, 1200, 2000, 412)


def test_hand_decisions_and_feedback(hand: dict[str, Session]) -> None:
    s = hand["webapp/2025-06-02 09:15:00#0"]
    third = s.turns[2]
    assert [(i.tool_name, i.file_path, i.sequence) for i in third.invocations] == [
        ("read", "tests/conftest.py", 0), ("edit", "tests/test_health.py", 1)]
    assert (third.invocations[1].lines_added, third.invocations[1].lines_removed) == (6, 1)  # a unified diff
    feedback = [e.data for e in third.events if e.type == "feedback"]
    assert [(f["kind"], f["tool_name"], f["target"]) for f in feedback] == [
        ("tool_rejected", "read", "docs/testing.md"), ("tool_rejected", "bash", "rm -rf build && make deploy")]
    approvals = [e.data for e in s.turns[1].events if e.type == "decision"]
    assert [(a["question"], a["target"], a["outcome"]) for a in approvals] == [
        ("Create new file?", "tests/test_health.py", "approved"),
        ("Run shell command?", "pytest tests/test_health.py", "approved")]
    last = next(t for t in s.turns if t.prompt == "explain what the health check covers")
    assert last.interrupted and [e.data["kind"] for e in last.events] == ["interrupted"]
    assert last.metrics.cache_read_tokens == 1_200_000


def test_hand_failed_edits_then_lint(hand: dict[str, Session]) -> None:
    turn = hand["webapp/2025-06-02 09:15:00#0"].turns[3]
    assert [(i.tool_name, i.is_error, i.sequence) for i in turn.invocations] == [
        ("edit", True, 0), ("edit", True, 0), ("edit", False, 1), ("lint", True, 1), ("edit", False, 2)]
    assert turn.metrics.tool_error_count == 3 and turn.metrics.api_calls == 3
    assert "F821 undefined name 'GIT_SHA'" in turn.invocations[3].result_brief


def test_hand_slash_shell_escape_and_model_switch(hand: dict[str, Session]) -> None:
    s = hand["webapp/2025-06-02 09:15:00#0"]
    prompts = [(t.prompt, t.is_slash_command) for t in s.turns]
    assert ("!git log --oneline -3", True) in prompts and ("/ex", True) in prompts
    switched = next(t for t in s.turns if t.prompt == "explain what the health check covers")
    assert switched.llm_calls[0].model == "openrouter/deepseek/deepseek-chat"


def test_hand_edge_cases(hand: dict[str, Session]) -> None:
    # a header with nothing typed is no session; two sessions started in the same second are two
    assert set(k for k in hand if k.startswith("notes/")) == {
        "notes/2025-07-01 18:05:00#0", "notes/2025-07-01 18:05:00#1", "notes/2025-07-01 18:30:12#0"}
    rejected = hand["notes/2025-07-01 18:05:00#0"]
    assert rejected.turns[0].prompt == "write notes.txt with a café shopping list"  # an undecodable byte later on
    assert rejected.turns[0].invocations == []
    assert [e.data["tool_name"] for e in rejected.turns[0].events] == ["write"]
    cut = hand["notes/2025-07-01 18:30:12#0"]  # the last reply still being written
    assert cut.turns[0].assistant_text == "The TODO file lists three open items: the parser, the docs and"


def test_token_figures_and_local_times() -> None:
    assert [count(x) for x in ("811", "5,244", "2.1k", "1.2M", "13,952")] == [811, 5244, 2100, 1_200_000, 13952]
    assert utc_of_local("2024-08-05 19:33:02") == "2024-08-05T19:33:02.000Z"
    assert utc_of_local("not a time") is None


# --------------------------------------------------------------------------- discovery
def test_discovery_is_bounded_and_skips_hidden_dependency_and_repository_folders(tmp_path: Path) -> None:
    history = (HAND / "notes" / CHAT_FILE).read_bytes()
    for folder in ("code/org/app", ".cache/x", "code/app/node_modules/pkg", "a/b/c/d/e/f/g", "code/repo/sub"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / CHAT_FILE).write_bytes(history)
    (tmp_path / "code/repo/.git").mkdir()  # a repository: its own folders are not searched
    (tmp_path / "code/repo" / CHAT_FILE).write_bytes(history)
    errors: list[str] = []
    assert [p.relative_to(tmp_path).as_posix() for p in find_chat_files(tmp_path, errors)] == [
        f"code/org/app/{CHAT_FILE}", f"code/repo/{CHAT_FILE}"]
    assert errors == []


def test_registered_and_rooted(tmp_path: Path) -> None:
    assert SOURCES["aider"].label == "Aider"
    assert SOURCE.default_root({"JACKED_AIDER_ROOT": "/x/projects", "HOME": "/home/u"}) == Path("/x/projects")
    # the home is searched only once Aider made its own folder there
    assert SOURCE.default_root({"HOME": str(tmp_path)}) == tmp_path / ".aider"
    (tmp_path / ".aider").mkdir()
    assert SOURCE.default_root({"HOME": str(tmp_path)}) == tmp_path


# --------------------------------------------------------------------------- through the scanner
def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


def test_scan_is_incremental_and_never_writes_to_aider_files(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    shutil.copytree(HAND, root)
    before = _snapshot(root)
    claude = tmp_path / "claude"
    claude.mkdir()
    cat = Catalog(tmp_path / "catalog.db")
    first = Scanner(cat, claude, agents={"aider": root}).scan()
    assert first.errors == [] and first.sessions_scanned == 4
    rows = {r["session_id"]: r for r in cat.list_sessions()}
    assert {r["agent"] for r in rows.values()} == {"aider"}
    webapp = next(sid for sid, r in rows.items() if r["repo_name"] == "webapp")
    assert len(turns_json(cat, webapp)["turns"]) == 8
    assert _snapshot(root) == before  # bytes and times of Aider's files unchanged

    again = Scanner(cat, claude, agents={"aider": root}).scan()
    assert (again.sessions_scanned, again.sessions_unchanged) == (0, 4)

    # Aider appends a new session: only it is read; the others keep their ids
    with (root / "webapp" / CHAT_FILE).open("a", encoding="utf-8") as fh:
        fh.write("\n# aider chat started at 2025-06-03 10:00:00\n\n#### what does /health return?  \n\n"
                 "The commit sha the server was built from.\n\n> Tokens: 1.0k sent, 12 received.  \n")
    grown = Scanner(cat, claude, agents={"aider": root}).scan()
    assert (grown.sessions_scanned, grown.sessions_unchanged) == (1, 4)
    assert webapp not in grown.changed_session_ids
    new = grown.changed_session_ids[0]
    assert [t["prompt"] for t in turns_json(cat, new)["turns"]] == ["what does /health return?"]


def test_a_huge_file_is_skipped_and_counted_and_the_rest_read(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "projects"
    shutil.copytree(HAND, root)
    (root / "big").mkdir()
    (root / "big" / CHAT_FILE).write_text("# aider chat started at 2025-01-01 00:00:00\n\n#### hi  \n" + "x\n" * 60_000)
    import jacked.sources.aider.source as aider_source
    monkeypatch.setattr(aider_source, "MAX_FILE_BYTES", 100_000)
    errors: list[str] = []
    found = list(SOURCE.discover(root, errors))
    assert len(found) == 4 and len(errors) == 1 and "big" in errors[0] and "skipped" in errors[0]


def test_status_lists_aider_with_its_folder_and_sessions(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    shutil.copytree(HAND, root)
    claude = tmp_path / "claude"
    claude.mkdir()
    cat = Catalog(tmp_path / "catalog.db")
    Scanner(cat, claude, agents={"aider": root}).scan()
    listed = {s["name"]: s for s in source_status(cat, claude, environ={"JACKED_AIDER_ROOT": str(root)})}
    assert listed["aider"] == {"name": "aider", "label": "Aider", "root": str(root), "found": True, "enabled": True,
                               "sessions": 4}


def test_backfill_cli_reads_aider_and_agent_filter(tmp_path: Path) -> None:
    """`jacked backfill`, `search --agent aider` and `status --json` in subprocesses: exit 0, JSON out."""
    import subprocess
    root = tmp_path / "projects"
    shutil.copytree(HAND, root)
    env = {**os.environ, "JACKED_HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "JACKED_AIDER_ROOT": str(root), "TZ": "UTC"}
    (tmp_path / "claude").mkdir()
    jacked = [str(Path(sys.executable).parent / "jacked")]
    before = _snapshot(root)
    done = subprocess.run([*jacked, "backfill", "--json"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    found = subprocess.run([*jacked, "search", "health endpoint git sha", "--agent", "aider", "--json"], env=env,
                           capture_output=True, text=True, timeout=300)
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["results"]
    assert results and {r["agent"] for r in results} == {"aider"} and results[0]["repo_name"] == "webapp"
    status = subprocess.run([*jacked, "status", "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert status.returncode == 0, status.stderr
    aider = next(s for s in json.loads(status.stdout)["sources"] if s["name"] == "aider")
    assert (aider["root"], aider["found"], aider["sessions"]) == (str(root), True, 4)
    assert _snapshot(root) == before  # nothing written into Aider's files


def test_secrets_are_redacted_before_the_catalog(tmp_path: Path) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    root = tmp_path / "projects" / "svc"
    root.mkdir(parents=True)
    (root / CHAT_FILE).write_text(
        "\n# aider chat started at 2025-08-01 12:00:00\n\n"
        f"#### push with GITHUB_TOKEN={token} please  \n\nI'll run it.\n\n"
        f"> Tokens: 1.0k sent, 10 received.  \n> git push https://x:{token}@github.com/o/r  \n"
        "> Run shell command? [Y/n] y  \n"
        f"> Running git push https://x:{token}@github.com/o/r  \n", encoding="utf-8")
    claude = tmp_path / "claude"
    claude.mkdir()
    cat = Catalog(tmp_path / "catalog.db")
    report = Scanner(cat, claude, agents={"aider": tmp_path / "projects"}).scan()
    assert report.errors == [] and report.sessions_scanned == 1
    (row,) = cat.list_sessions()
    turns = turns_json(cat, row["session_id"])["turns"]
    dumped = json.dumps(turns)
    assert token not in dumped and "REDACTED" in turns[0]["prompt"]
    assert turns[0]["metrics"]["bash_commands"] and token not in turns[0]["metrics"]["bash_commands"][0]


def test_install_for_aider_says_there_is_no_mcp_to_register(tmp_path: Path) -> None:
    import subprocess
    env = {**os.environ, "JACKED_HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
           "HOME": str(tmp_path)}
    done = subprocess.run([str(Path(sys.executable).parent / "jacked"), "install", "--agent", "aider"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Aider takes no MCP server" in done.stderr and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written anywhere


def test_a_listed_id_names_one_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Aider's ids are `aider-` and a hash: eight characters keep two of the hash, and the real
    history has sessions sharing them. The id `sessions` shows is the fewest characters, eight or
    more, that name that one session, and it finds it."""
    from jacked.config import load_settings
    from jacked.query.history import resolve_session
    from jacked.service import Jacked

    claude = tmp_path / "claude"
    claude.mkdir()
    monkeypatch.setenv("JACKED_AIDER_ROOT", str(REAL))
    svc = Jacked(load_settings(claude, jacked_home=str(tmp_path / "home")))
    rows = svc.sessions()
    ids = [r["session_id"] for r in rows]
    shared = {i for i in ids if sum(j[:8].lower() == i[:8].lower() for j in ids) > 1}
    assert len(shared) >= 2  # the fixture has such ids: counted here, not by jacked
    for r in rows:
        sid, short = r["session_id"], r["short_id"]
        holders = [i for i in ids if i.lower().startswith(short.lower())]
        assert holders == [sid] and len(short) >= 8
        assert len(short) == 8 or sum(i.lower().startswith(short[:-1].lower()) for i in ids) > 1  # no longer than needed
        assert resolve_session(svc.catalog, short) == sid
    assert {len(r["short_id"]) for r in rows if r["session_id"] in shared} != {8}
    shown = {r["session_id"]: r["short_id"] for r in rows}
    assert all(shown[i] == i[:8] for i in ids if i not in shared)
