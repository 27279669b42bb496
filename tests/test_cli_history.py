"""The CLI as a user runs it: `scan`, `sessions`, `turns`, `export`, `show`, and clean errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kit import FIXTURES, REAL


def jacked_cmd() -> list[str]:
    script = Path(sys.executable).parent / "jacked"
    return [str(script)] if script.exists() else [sys.executable, "-m", "jacked.surfaces.cli.main"]


def run(args: list[str], home: Path, claude: Path = REAL, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude), JACKED_HOME=str(home), JACKED_USER_NAME="tester",
               NO_COLOR="1")
    return subprocess.run(jacked_cmd() + args, capture_output=True, text=True, env=env, input=stdin, timeout=300)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli-home")


def test_scan_json_reports_sessions_turns_and_skipped(home: Path) -> None:
    p = run(["scan", "--json"], home)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["sessions"] == 27 and report["turns"] == 99
    assert "lines_skipped" in report and report["errors"] == []
    again = json.loads(run(["scan", "--json"], home).stdout)
    assert again["files_opened"] == 0 and again["sessions_unchanged"] == again["sessions_scanned"] + again["sessions_unchanged"]


def test_sessions_json_shape(home: Path) -> None:
    p = run(["sessions", "--json", "-n", "5", "--repo", "claude-code-log"], home)
    rows = json.loads(p.stdout)
    assert len(rows) == 5 and all(r["repo_name"] == "claude-code-log" for r in rows)
    for key in ("session_id", "repo_name", "cwd", "started_at", "ended_at", "turn_count", "title"):
        assert key in rows[0]


def test_turns_by_prefix_and_contract_keys(home: Path) -> None:
    p = run(["turns", "ef958aa1", "--json"], home)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["session_id"] == "ef958aa1-0e93-49f0-bb71-150f63befcd1"
    turn = data["turns"][0]
    for key in ("index", "prompt", "started_at", "duration_ms", "invocations", "metrics"):
        assert key in turn
    for key in ("tool_name", "tool_use_id", "sequence", "parallel_group", "is_error"):
        assert key in turn["invocations"][0]
    for key in ("tool_call_count", "tool_error_count", "tool_usage", "files_read", "files_written",
                "files_modified", "lines_added", "lines_removed", "bash_commands", "bash_error_count"):
        assert key in turn["metrics"]


def test_turns_of_a_path_outside_the_claude_dir(home: Path) -> None:
    path = FIXTURES / "handwritten" / "claude-code-log" / "sidechain.jsonl"
    p = run(["turns", str(path), "--json"], home)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["turns"]


def test_export_is_json_lines_one_per_session(home: Path) -> None:
    p = run(["export", "ef958aa1", "a7da6a22"], home)
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    assert [x["session_id"][:8] for x in lines] == ["ef958aa1", "a7da6a22"]
    assert lines[0]["turns"] and lines[0]["repo_name"] == "worktrees"


def test_show_marks_parallel_batches_and_errors(home: Path) -> None:
    p = run(["show", "ef958aa1", "--turn", "1"], home)
    assert p.returncode == 0, p.stderr
    assert "parallel ×6" in p.stdout and "turn 1" in p.stdout and "turn 2" not in p.stdout
    err = run(["show", "2b4ed4c0"], home)
    assert "✗" in err.stdout


def test_show_gives_the_typed_prompt_and_the_ide_context(home: Path) -> None:
    # issue 37: the real fixture's prompts start with an <ide_opened_file> wrapper; /mcp was typed
    p = run(["show", "9e953218", "--turn", "1"], home)
    assert p.returncode == 0, p.stderr
    assert "> I have @public/tokenizer.css" in p.stdout and "<ide_opened_file>" not in p.stdout
    assert "IDE: The user opened the file" in p.stdout  # (piped output wraps at 80 columns today)
    mcp = json.loads(run(["turns", "0d3a8e6f", "--json"], home).stdout)
    assert "/mcp" in [t["prompt"] for t in mcp["turns"]]
    assert not any("<command-name>" in (t["prompt"] or "") for t in mcp["turns"])


@pytest.mark.parametrize("args", [["turns", "zzzz-not-a-session"], ["turns", "0"], ["show", "ef958aa1", "--turn", "99"],
                                  ["sessions", "-n", "0"], ["turns"], ["no-such-command"]])
def test_bad_input_is_one_clean_line(home: Path, args: list[str]) -> None:
    p = run(args, home)
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_missing_claude_dir_is_a_clean_error(tmp_path: Path) -> None:
    p = run(["scan", "--json"], tmp_path / "home", claude=tmp_path / "nowhere")
    assert p.returncode == 1 and "projects" in p.stderr and p.stdout == ""


def test_unreadable_lines_of_a_path_are_counted_on_stderr(home: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"broken\n\x00\xff garbage\n')
    p = run(["turns", str(bad), "--json"], home)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["turns"] == []  # stdout stays the JSON contract
    assert p.stderr.strip() == f"jacked: skipped 2 unreadable line(s) of {bad}"
