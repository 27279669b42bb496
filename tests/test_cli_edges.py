"""The edges a new user trips over (issue 37, items 8–16), run as a user runs the CLI."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kit import REAL

JACKED = Path(sys.executable).parent / "jacked"
EXPORT_SID = "ef958aa1"


def env_for(home: Path, claude: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude), JACKED_HOME=str(home), JACKED_USER_NAME="tester",
               NO_COLOR="1")
    env.update(extra)
    return env


def run(args: list[str], home: Path, claude: Path = REAL, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(JACKED), *args], capture_output=True, text=True, env=env_for(home, claude, **extra),
                          timeout=300)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    h = tmp_path_factory.mktemp("edges-home")
    assert run(["scan"], h).returncode == 0
    return h


# --- 14: a reader that leaves early ------------------------------------------------------------


@pytest.mark.parametrize("args", [["export"], ["show", EXPORT_SID], ["sessions", "-n", "30"], ["export", "--help"]])
def test_closed_pipe_ends_quietly_with_0(home: Path, args: list[str]) -> None:
    cmd = " ".join([str(JACKED), *args])
    p = subprocess.run(["bash", "-c", f"set -o pipefail; {cmd} | head -c 10 >/dev/null"], capture_output=True,
                       text=True, env=env_for(home, REAL), timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""


# --- 10: `show` piped keeps its lines whole --------------------------------------------------


def test_show_piped_is_not_wrapped_at_80_columns(home: Path) -> None:
    p = run(["show", EXPORT_SID], home)
    assert p.returncode == 0, p.stderr
    header = p.stdout.splitlines()[1]
    # the whole header on one line: the id, the folder and the turn count
    assert header.startswith("ef958aa1-0e93-49f0-bb71-150f63befcd1") and header.endswith("3 turns"), header
    assert max(len(line) for line in p.stdout.splitlines()) > 120


# --- 11: a forgotten session says so ----------------------------------------------------------


def test_show_of_a_forgotten_session_says_it_was_forgotten(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert run(["scan"], home).returncode == 0
    assert run(["forget", "29ccd257", "--yes"], home).returncode == 0
    for args in (["show", "29ccd257"], ["turns", "29ccd257-68b1-427f-ae5f-6524b7cb6f20", "--json"]):
        p = run(args, home)
        assert p.returncode == 1 and p.stdout == ""
        assert p.stderr.startswith("jacked: session 29ccd257-68b1-427f-ae5f-6524b7cb6f20 was forgotten on "), p.stderr
        assert "jacked scan" not in p.stderr and len(p.stderr.splitlines()) == 1
    # a prefix of nothing at all still points at scan
    assert "jacked scan" in run(["show", "fffffff0"], home).stderr


# --- 12: a JACKED_HOME that cannot be made -----------------------------------------------------


@pytest.mark.parametrize("args", [["sessions"], ["status", "--json"], ["search", "plan mode"], ["backfill"]])
def test_a_jacked_home_that_cannot_be_made_is_named(tmp_path: Path, args: list[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    p = run(args, blocker / "jacked")
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == (f"jacked: JACKED_HOME {blocker / 'jacked'}: cannot make this folder (a file is in the way): "
                        "point it at a folder you can write\n")


# --- 8: `sessions --since / --until` --------------------------------------------------------------


def test_sessions_since_until(home: Path) -> None:
    every = json.loads(run(["sessions", "--json", "-n", "1000"], home).stdout)
    assert len(every) == 27

    def listed(*args: str) -> list[str]:
        p = run(["sessions", "--json", "-n", "1000", *args], home)
        assert p.returncode == 0, p.stderr
        return [r["session_id"] for r in json.loads(p.stdout)]

    # active on or after the 1st of January 2026, started by the end of the 17th of July 2025
    since = [r["session_id"] for r in every if (r["ended_at"] or r["started_at"]) >= "2026-01-01"]
    until = [r["session_id"] for r in every if r["started_at"] <= "2025-07-17T23:59:59.999Z"]
    assert len(since) == 6 and len(until) == 11
    assert listed("--since", "2026-01-01") == since
    assert listed("--until", "2025-07-17") == until  # a bare date: that whole day is in
    assert listed("--since", "2025-07-01", "--until", "2025-07-17") == [
        s for s in until if next(r for r in every if r["session_id"] == s)["ended_at"] >= "2025-07-01"]
    p = run(["sessions", "--since", "last tuesday"], home)
    assert p.returncode == 1 and p.stderr.startswith("jacked: cannot read --since 'last tuesday'")


# --- 16: plurals and --help ------------------------------------------------------------------------


def test_one_is_singular(home: Path) -> None:
    listed = run(["sessions", "-n", "30"], home).stdout
    one_turn = [ln for ln in listed.splitlines() if ln[:8] in ("94604a7b", "256ba646", "29ccd257")]
    assert len(one_turn) == 3 and all(" 1 turn " in ln for ln in one_turn), one_turn
    assert not re.search(r"\b1 turns", listed) and " 3 turns " in listed
    shown = run(["show", "94604a7b"], home).stdout
    assert shown.splitlines()[1].endswith(" · 1 turn"), shown.splitlines()[1]
    calls = run(["show", "f852ad25", "--turn", "2"], home).stdout  # one call, which failed
    assert "1 call · 1 error" in calls and not re.search(r"\b1 (calls|errors)\b", calls)
    p = run(["show", "94604a7b", "--turn", "5"], home)
    assert p.stderr == "jacked: session 94604a7b has no turn 5 (it has 1 turn)\n"


def test_retrieve_says_1_unit(home: Path) -> None:
    p = run(["retrieve", "03eb5929", "--max-tokens", "560"], home)
    assert p.returncode == 0, p.stderr
    left_out = [ln for ln in p.stdout.splitlines() if ln.startswith("Left out to fit the budget")]
    assert left_out == ["Left out to fit the budget: 1 unit (46 tokens: 1 user_message)"]


@pytest.mark.parametrize("args", [["--help"], ["sessions", "--help"], ["search", "--help"], ["forget", "--help"]])
def test_help_shows_no_type_beside_flags(home: Path, args: list[str]) -> None:
    p = run(args, home)
    assert p.returncode == 0 and "--help" in p.stdout
    assert "<bool>" not in p.stdout
    if args != ["--help"]:
        assert "<str>" in p.stdout or "<int" in p.stdout  # options that take a value keep their type


# --- 15: nothing written outside JACKED_HOME --------------------------------------------------------


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def test_nothing_is_written_outside_jacked_home(tmp_path: Path) -> None:
    """A backfill (the model and the index) and a search write into JACKED_HOME and nowhere else:
    not HOME (onnxruntime's telemetry store), not the temp folder, not the Claude directory."""
    claude, home, tmp, jacked_home = (tmp_path / n for n in ("claude", "home", "tmp", "jacked"))
    shutil.copytree(REAL / "projects" / "-experiments-ideas", claude / "projects" / "-experiments-ideas")
    home.mkdir()
    tmp.mkdir()
    before = _files(claude)
    # a clean environment: onnxruntime writes nothing when it believes it runs in CI
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "TMPDIR": str(tmp), "CLAUDE_CONFIG_DIR": str(claude),
           "JACKED_HOME": str(jacked_home), "JACKED_USER_NAME": "tester", "NO_COLOR": "1"}
    env.update({k: os.environ[k] for k in ("CODEX_HOME", "GEMINI_CLI_HOME", "XDG_DATA_HOME") if k in os.environ})
    for args in (["backfill"], ["search", "an idea worth keeping"], ["status"]):
        p = subprocess.run([str(JACKED), *args], capture_output=True, text=True, env=env, timeout=600)
        assert p.returncode == 0, p.stderr
    assert _files(home) == set()
    assert _files(tmp) == set()
    assert _files(claude) == before
    assert (jacked_home / "catalog.db").is_file()


# --- 13: backfill counts add up; a broken link is reported once ------------------------------------

UUID_NAME = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.jsonl$")


def _transcripts_with_a_prompt(projects: Path) -> set[str]:
    """Session files holding a user line, counted from the files themselves (not by jacked)."""
    out = set()
    for path in projects.glob("*/*.jsonl"):
        if UUID_NAME.match(path.name) and path.is_file() and any(
                json.loads(ln).get("type") == "user" for ln in path.read_text().splitlines() if ln.strip()):
            out.add(path.stem)
    return out


def test_backfill_counts_add_up_and_a_broken_link_is_said_once(tmp_path: Path) -> None:
    claude, home = tmp_path / "claude", tmp_path / "home"
    for project in ("-src-experiments-claude_p", "-experiments-ideas"):
        shutil.copytree(REAL / "projects" / project, claude / "projects" / project)
    junk = claude / "projects" / "-experiments-ideas"
    (junk / "empty.jsonl").write_text("")
    (junk / "summary-only.jsonl").write_text('{"type":"summary","summary":"a label","leafUuid":"nowhere"}\n')
    (junk / "broken.jsonl").symlink_to(tmp_path / "gone.jsonl")
    sessions = _transcripts_with_a_prompt(claude / "projects")
    not_sessions = len(list((claude / "projects").glob("*/*.jsonl"))) - len(sessions) - 1  # less the broken link
    assert len(sessions) == 5 and not_sessions == 3  # a95fea4a holds summaries only

    first = run(["backfill"], home, claude)
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("broken.jsonl") == 1
    assert first.stdout.startswith("5 sessions indexed, 0 unchanged;"), first.stdout
    assert run(["forget", "94604a7b", "--yes"], home, claude).returncode == 0

    again = run(["backfill", "--json"], home, claude)
    report = json.loads(again.stdout)
    assert (report["sessions_indexed"], report["sessions_unchanged"], report["sessions_forgotten"],
            report["files_without_session"]) == (0, len(sessions) - 1, 1, not_sessions)
    assert len(report["errors"]) == 1 and "broken.jsonl" in report["errors"][0]  # still listed in the JSON
    assert again.stderr == ""  # but said once
    text = run(["backfill"], home, claude)
    assert text.stdout.startswith("0 sessions indexed, 4 unchanged;"), text.stdout
    assert "passed over: 1 forgotten (`jacked forget --list`), 3 files holding no session" in text.stdout
    for args in (["sessions"], ["scan"]):
        p = run(args, home, claude)
        assert p.returncode == 0 and "broken.jsonl" not in p.stderr, p.stderr
    assert "4 sessions (0 read, 4 unchanged)" in run(["scan"], home, claude).stdout


def test_a_first_scan_counts_sessions_not_files(tmp_path: Path) -> None:
    p = run(["scan", "--json"], tmp_path / "home")
    report = json.loads(p.stdout)
    sessions = _transcripts_with_a_prompt(REAL / "projects")
    assert len(sessions) == 27
    # 51 file groups: 27 sessions, 24 summary-only files and subagent files whose session is gone
    assert (report["sessions"], report["sessions_scanned"], report["files_without_session"]) == (27, 27, 24)
