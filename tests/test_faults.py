"""Faults: every bad file is skipped, counted and reported, never fatal; every bad input is a
one-line error (CLI: exit 1 on stderr; MCP: a tool error with its message).

Unreadable files are made with chmod 000. Tests run as root here, and root reads a 000 file all
the same: as root, `unreadable()` also makes the os-level calls (listing, stat, open) fail with
EACCES for those paths, just as the kernel does for any other user. Nothing of jacked's own is
patched.
"""
from __future__ import annotations

import builtins
import errno
import io
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from kit import DEEP, REAL
from test_cli_history import jacked_cmd

from jacked.catalog import Catalog
from jacked.ingest.scan import Scanner
from datetime import UTC

BAD_PROJECT = "-Users-dain-workspace-danieldemmel-me-next"
WITH_SUBAGENTS = "ef958aa1-0e93-49f0-bb71-150f63befcd1"  # -experiments-worktrees, 6 files in subagents/


def _copy_real(tmp: Path) -> Path:
    claude = tmp / "claude"
    shutil.copytree(REAL, claude)
    return claude


def _scan(claude: Path, home: Path):  # type: ignore[no-untyped-def]
    return Scanner(Catalog(home / "catalog.db"), claude).scan()


def _env(claude: Path, home: Path) -> dict[str, str]:
    return dict(os.environ, CLAUDE_CONFIG_DIR=str(claude), JACKED_HOME=str(home), JACKED_USER_NAME="ada",
                NO_COLOR="1", HOME=str(home.parent))  # no other agent's folder of this machine


def _jacked(args: list[str], claude: Path, home: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(jacked_cmd() + args, capture_output=True, text=True, env=_env(claude, home),
                          timeout=timeout)


def _one_line_error(p: subprocess.CompletedProcess, *words: str) -> None:
    assert p.returncode == 1, (p.returncode, p.stdout[-500:], p.stderr[-2000:])
    assert "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jacked: "), p.stderr
    for w in words:
        assert w in lines[0], lines[0]


def unreadable(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`path` (a file or a folder) becomes unreadable: chmod 000, and as root (which chmod does not
    stop) the os-level calls fail as the kernel fails them for other users: a folder cannot be
    listed and nothing inside it can be stat-ed or opened; a file cannot be opened."""
    is_dir = path.is_dir()
    mode = path.stat().st_mode & 0o777
    path.chmod(0)
    target = os.path.abspath(path)

    def norm(p: Any) -> str | None:
        if isinstance(p, int):
            return None
        try:
            return os.path.abspath(os.fsdecode(os.fspath(p)))
        except TypeError:
            return None

    def inside(p: Any) -> bool:
        n = norm(p)
        return n is not None and n.startswith(target + os.sep)

    def listing(p: Any) -> bool:
        n = norm(p)
        return n is not None and (n == target or n.startswith(target + os.sep))

    def denied(p: Any) -> PermissionError:
        return PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(os.fspath(p)))

    if os.geteuid() == 0:
        for name in ("scandir", "listdir"):
            real = getattr(os, name)

            def lister(p: Any = ".", *a: Any, _real: Any = real, **kw: Any) -> Any:
                if is_dir and listing(p):
                    raise denied(p)
                return _real(p, *a, **kw)

            monkeypatch.setattr(os, name, lister)
        for name in ("stat", "lstat"):
            real = getattr(os, name)

            def stat(p: Any, *a: Any, _real: Any = real, **kw: Any) -> Any:
                if is_dir and inside(p):
                    raise denied(p)
                return _real(p, *a, **kw)

            monkeypatch.setattr(os, name, stat)
        for mod, name in ((builtins, "open"), (io, "open"), (os, "open")):
            real = getattr(mod, name)

            def opener(p: Any, *a: Any, _real: Any = real, **kw: Any) -> Any:
                if (inside(p) if is_dir else norm(p) == target):
                    raise denied(p)
                return _real(p, *a, **kw)

            monkeypatch.setattr(mod, name, opener)
    _RESTORE.append((path, mode))


_RESTORE: list[tuple[Path, int]] = []


@pytest.fixture(autouse=True)
def _restore_modes():  # type: ignore[no-untyped-def]
    """Modes back after each test (after monkeypatch's undo), so tmp_path can be cleaned up."""
    yield
    while _RESTORE:
        path, mode = _RESTORE.pop()
        path.chmod(mode)


# --------------------------------------------------------------------------- scan
def test_unreadable_project_folder_is_skipped_and_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One project folder that cannot be listed: the others' sessions are all read, the folder is
    named in the report's errors (and in `scan --json`'s `errors`, the same list)."""
    without = _copy_real(tmp_path / "without")
    shutil.rmtree(without / "projects" / BAD_PROJECT)
    want = _scan(without, tmp_path / "base")  # what the other folders hold
    claude = _copy_real(tmp_path)
    unreadable(claude / "projects" / BAD_PROJECT, monkeypatch)
    report = _scan(claude, tmp_path / "home")
    assert report.session_ids == want.session_ids and report.sessions_scanned == want.sessions_scanned
    assert (report.sessions, report.turns) == (want.sessions, want.turns) and want.sessions > 0
    bad = [e for e in report.errors if BAD_PROJECT in e]
    assert len(bad) == 1 and "ermission denied" in bad[0], report.errors
    assert report.to_json()["errors"] == report.errors


def test_project_folder_unreadable_later_keeps_its_sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scanned once, then unreadable: its sessions stay in the catalog as they were (not taken
    for deleted transcripts), the others are unaffected, the folder is reported."""
    claude = _copy_real(tmp_path)
    home = tmp_path / "home"
    first = _scan(claude, home)
    assert first.errors == []
    unreadable(claude / "projects" / BAD_PROJECT, monkeypatch)
    second = _scan(claude, home)
    assert second.sessions == first.sessions
    assert any(BAD_PROJECT in e for e in second.errors), second.errors
    cat = Catalog(home / "catalog.db")
    sources = {r.get("source") or "transcript" for r in (cat.get_session_row(s) for s in first.session_ids) if r}
    assert sources == {"transcript"}


def test_unreadable_subagent_file_keeps_its_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One subagent file that cannot be opened: its session is still read (every turn), the file
    is skipped and named in the errors; a later scan reads it once it is readable again."""
    claude = _copy_real(tmp_path)
    base = _scan(claude, tmp_path / "base")
    want = Catalog(tmp_path / "base" / "catalog.db").get_session_row(WITH_SUBAGENTS)
    assert want and want["turn_count"] > 0
    subagents = claude / "projects" / "-experiments-worktrees" / WITH_SUBAGENTS / "subagents"
    sub = sorted(subagents.glob("agent-*.jsonl"))[0]
    unreadable(sub, monkeypatch)
    report = _scan(claude, tmp_path / "home")
    cat = Catalog(tmp_path / "home" / "catalog.db")
    row = cat.get_session_row(WITH_SUBAGENTS)
    assert row is not None and row["turn_count"] == want["turn_count"]
    assert report.sessions == base.sessions
    bad = [e for e in report.errors if sub.name in e]
    assert len(bad) == 1 and "ermission denied" in bad[0], report.errors
    monkeypatch.undo()
    sub.chmod(0o644)
    again = _scan(claude, tmp_path / "home")
    assert again.errors == [] and WITH_SUBAGENTS in again.changed_session_ids


def _release(fifos: list[Path]) -> None:
    """Wake any reader still blocked on one of the FIFOs (a writer that opens and closes)."""
    for f in fifos:
        try:
            os.close(os.open(f, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def test_fifo_named_jsonl_is_skipped_and_reported(tmp_path: Path) -> None:
    """FIFOs named like transcripts (a main file, a flat agent file, a subagents/ file) and one in
    tool-results/: every scan used to wait on them forever. They are skipped (the stat of a
    listing: not a regular file), each named once, on stderr as one line and in `--json`."""
    claude = _copy_real(tmp_path)
    expected = _scan(claude, tmp_path / "base").sessions
    proj = claude / "projects" / "-src-deep-manifest"
    session_dir = claude / "projects" / "-experiments-worktrees" / WITH_SUBAGENTS
    (session_dir / "tool-results").mkdir()
    fifos = [proj / "00000000-0000-4000-8000-000000000fff.jsonl", proj / "agent-0000fff0.jsonl",
             session_dir / "subagents" / "agent-a000000000000fff0.jsonl",
             session_dir / "tool-results" / "toolu_fff.txt"]
    for f in fifos:
        os.mkfifo(f)
    home = tmp_path / "home"
    try:
        p = _jacked(["scan", "--json"], claude, home, timeout=60)
        text = _jacked(["scan"], claude, home, timeout=60)
    finally:
        _release(fifos)
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert report["sessions"] == expected
    for f in fifos:
        hits = [e for e in report["errors"] if str(f) in e]
        assert len(hits) == 1 and "not a regular file" in hits[0], report["errors"]
    assert text.returncode == 0, text.stderr
    lines = [ln for ln in text.stderr.splitlines() if ln.strip()]
    assert len(lines) == len(fifos) and all(ln.startswith("skipped: ") for ln in lines), text.stderr


# --------------------------------------------------------------------------- time options
BAD_SINCE = ["99999y", "10000y", "999999999999999999999d", "99999999999999999999999999h", "1e9d", "-5d",
             "9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00", "soon"]


@pytest.mark.parametrize("value", BAD_SINCE)
def test_since_out_of_range_is_a_time_parse_error(value: str) -> None:
    from jacked.util.time import TimeParseError, parse_since

    with pytest.raises(TimeParseError, match="--since"):
        parse_since(value)


def test_since_at_the_edges_is_read() -> None:

    from jacked.util.time import parse_since

    assert parse_since("0001-01-01").year == 1
    assert parse_since("9999-12-31").year == 9999
    assert parse_since("2026-01-31T10:00:00+02:00").tzinfo == UTC  # "a UTC datetime"
    assert parse_since("2026-01-31T10:00:00+02:00").hour == 8


@pytest.mark.parametrize("value", ["99999y", "9999-12-31T23:59:59-01:00"])
def test_cli_since_overflow_is_one_line(tmp_path: Path, value: str) -> None:
    p = _jacked(["stats", "--no-scan", "--since", value], tmp_path / "claude", tmp_path / "home")
    _one_line_error(p, "--since", value)


async def _call(server: Any, name: str, args: dict[str, Any]) -> tuple[bool, str]:
    from mcp.client import Client

    async with Client(server) as client:
        r = await client.call_tool(name, args)
        return r.is_error, r.content[0].text


def test_mcp_since_overflow_is_a_tool_error(tmp_path: Path) -> None:
    from jacked.config import load_settings
    from jacked.surfaces.mcp import build_server

    settings = load_settings(tmp_path / "claude", jacked_home=str(tmp_path / "home"), user_name="ada")
    is_error, text = anyio.run(_call, build_server(settings, scan=False), "stats", {"since": "99999y"})
    assert is_error
    assert "99999y" in text and "since" in text and len(text.splitlines()) == 1, text


# --------------------------------------------------------------------------- install
def _untouched(claude: Path, names: set[str]) -> None:
    assert {p.name for p in claude.iterdir()} == names  # no skills/, no state file, no backups


@pytest.mark.parametrize("content", [b'"\\n"', b'{"a": "\\ud800"}', b'\xff{}', b'[' * 100_000])
def test_install_refuses_a_bad_settings_file_before_touching_anything(tmp_path: Path, content: bytes) -> None:
    """Not an object, a lone surrogate, not UTF-8, nested past the parser: one line, exit 1, and
    nothing written (not the skill either: all or nothing)."""
    from jacked.surfaces.install import InstallError, install

    (tmp_path / "settings.json").write_bytes(content)
    with pytest.raises(InstallError, match="settings.json"):
        install(tmp_path, exe="/opt/jacked/bin/jacked")
    _untouched(tmp_path, {"settings.json"})
    assert (tmp_path / "settings.json").read_bytes() == content
    p = _jacked(["install"], tmp_path, tmp_path / "home")
    _one_line_error(p, "settings.json")
    _untouched(tmp_path, {"settings.json", "home"} if (tmp_path / "home").exists() else {"settings.json"})


def test_install_refuses_a_bad_mcp_file_before_writing_settings(tmp_path: Path) -> None:
    from jacked.surfaces.install import InstallError, install

    (tmp_path / "settings.json").write_bytes(b'{"model": "opus"}')
    (tmp_path / ".claude.json").write_bytes(b'{"mcpServers": []}')
    with pytest.raises(InstallError, match="mcpServers"):
        install(tmp_path, mcp=True, exe="/opt/jacked/bin/jacked")
    _untouched(tmp_path, {"settings.json", ".claude.json"})
    assert (tmp_path / "settings.json").read_bytes() == b'{"model": "opus"}'


def test_uninstall_refuses_a_bad_settings_file_before_touching_anything(tmp_path: Path) -> None:
    from jacked.surfaces.install import InstallError, install, uninstall

    install(tmp_path, exe="/opt/jacked/bin/jacked")
    (tmp_path / "settings.json").write_bytes(b'{"a": "\\ud800", "hooks": {}}')
    skill = tmp_path / "skills" / "jacked" / "SKILL.md"
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(InstallError, match="settings.json"):
        uninstall(tmp_path)
    assert skill.exists()
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_install_writes_through_a_symlinked_settings_file(tmp_path: Path) -> None:
    """settings.json a symlink into a dotfiles repo: the target is updated (the link stays a
    link), a backup is kept, and uninstall puts the target's bytes back."""
    from jacked.surfaces.install import install, uninstall

    claude = tmp_path / "claude"
    claude.mkdir()
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    original = b'{\n  "model": "opus"\n}\n'
    dotfiles.write_bytes(original)
    (claude / "settings.json").symlink_to(dotfiles)
    report = install(claude, exe="/opt/jacked/bin/jacked")
    link = claude / "settings.json"
    assert link.is_symlink() and link.resolve() == dotfiles
    data = json.loads(dotfiles.read_text())
    assert data["model"] == "opus" and "Stop" in data["hooks"]
    assert [Path(b).read_bytes() for b in report.backups] == [original]
    uninstall(claude)
    assert link.is_symlink() and dotfiles.read_bytes() == original


# --------------------------------------------------------------------------- transcript paths
@pytest.fixture()
def outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """(claude dir, home, a transcript outside the Claude dir with its flat subagent); HOME in tmp
    (no other agent's folder of this machine is read)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    src = next(REAL.rglob(f"{DEEP}.jsonl"))
    elsewhere = tmp_path / "elsewhere" / "projects" / src.parent.name
    elsewhere.mkdir(parents=True)
    for f in src.parent.iterdir():
        if f.name == src.name or f.name.startswith("agent-"):
            shutil.copy(f, elsewhere / f.name)
    claude = tmp_path / "claude"
    (claude / "projects").mkdir(parents=True)
    return claude, tmp_path / "home", elsewhere / src.name


def test_commands_accept_a_transcript_path_like_show(outside: tuple[Path, Path, Path]) -> None:
    claude, home, path = outside
    show = _jacked(["show", str(path)], claude, home)
    assert show.returncode == 0 and DEEP in show.stdout, show.stderr
    retrieve = _jacked(["retrieve", str(path), "--no-git", "--json"], claude, home)
    assert retrieve.returncode == 0, retrieve.stderr
    assert [s["session_id"] for s in json.loads(retrieve.stdout)["sessions"]] == [DEEP]
    export = _jacked(["export", str(path)], claude, home)
    assert export.returncode == 0, export.stderr
    rows = [json.loads(line) for line in export.stdout.splitlines()]
    assert [r["session_id"] for r in rows] == [DEEP] and rows[0]["turns"]
    stats = _jacked(["stats", "--session", str(path), "--json"], claude, home)
    assert stats.returncode == 0, stats.stderr
    data = json.loads(stats.stdout)
    assert data["filters"]["session"] == DEEP and data["turns"] == len(rows[0]["turns"]) > 0


def test_service_resolves_several_transcript_paths(outside: tuple[Path, Path, Path]) -> None:
    from jacked.config import load_settings
    from jacked.errors import JackedError
    from jacked.service import Jacked

    claude, home, path = outside
    other = next(p for p in REAL.rglob("*.jsonl") if "subagents" not in p.parts and not p.name.startswith("agent-")
                 and p.stem != DEEP)
    copy = path.parent / other.name
    shutil.copy(other, copy)
    jk = Jacked(load_settings(claude, jacked_home=str(home), user_name="ada"))
    rows = jk.export([str(path), str(copy)])
    assert [r["session_id"] for r in rows] == [DEEP, other.stem]
    # A cataloged session and a transcript outside in one call: one clear line.
    shutil.copytree(other.parent, claude / "projects" / other.parent.name, dirs_exist_ok=True)
    jk = Jacked(load_settings(claude, jacked_home=str(home), user_name="ada"))
    with pytest.raises(JackedError, match="separately"):
        jk.export([other.stem, str(path)])


def test_mcp_tools_accept_a_transcript_path(outside: tuple[Path, Path, Path]) -> None:
    from jacked.config import load_settings
    from jacked.surfaces.mcp import build_server

    claude, home, path = outside
    server = build_server(load_settings(claude, jacked_home=str(home), user_name="ada"))
    for tool, args in (("stats", {"session_id": str(path)}), ("timeline", {"session_id": str(path), "limit": 1}),
                       ("restore", {"session_id": str(path), "max_tokens": 500})):
        is_error, text = anyio.run(_call, server, tool, args)
        assert not is_error, (tool, text)
        if tool == "stats":
            assert json.loads(text)["filters"]["session"] == DEEP
        elif tool == "restore":
            assert json.loads(text)["session_id"] == DEEP


def test_since_error_names_its_option() -> None:
    from jacked.util.time import TimeParseError, parse_since

    with pytest.raises(TimeParseError, match="^until '99999y' is out of range"):
        parse_since("99999y", option="until")


def test_search_since_overflow_is_a_time_parse_error() -> None:
    """The search filter (CLI `search --since`, the MCP `search` tool, the web API) reads it the same way."""
    from jacked.query.filters import conditions
    from jacked.util.time import TimeParseError, now_utc

    with pytest.raises(TimeParseError, match="out of range"):
        conditions({"since": "99999y"}, now_utc())
