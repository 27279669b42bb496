"""A read-only JACKED_HOME (and Claude directory) with a valid jacked.json: the settings load, the
read commands answer or fail in one line, and nothing is written.

Not root: `chmod -R a-w`. Root writes through mode bits, so there the folders are bound read-only
onto themselves in a private mount namespace (`unshare -m`); the test skips when neither is possible.
"""
from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kit import REAL

from jacked.config import load_settings

JACKED = Path(sys.executable).parent / "jacked"
PROJECT = "-src-deep-manifest"  # one real session with a subagent
SESSION = "a7da6a22-facc-4fcd-8bab-f83c87862004"
LATER = "-experiments-ideas"


def tree_bytes(*roots: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every path under `roots` with its mode, mtime and bytes (b"" for a folder)."""
    return {str(p): (p.stat().st_mode, p.stat().st_mtime_ns, b"" if p.is_dir() else p.read_bytes())
            for root in roots for p in sorted(root.rglob("*"))}


def jacked_env(claude: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JACKED_")}
    # In-process: the daemon would need to write its socket in the home.
    env.update(CLAUDE_CONFIG_DIR=str(claude), JACKED_DAEMON="off", NO_COLOR="1")
    return env


def top_results(stdout: str) -> list[tuple[str, str]]:
    """(session, its matched points) of a `search --json` answer's first results."""
    return [(r["session_id"], json.dumps(r["matches"], sort_keys=True)) for r in json.loads(stdout)["results"][:5]]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, dense_embedder: Any) -> tuple[Path, Path]:
    """A Claude directory whose jacked.json names the JACKED_HOME, and that home backfilled."""
    from jacked.index.indexer import Indexer

    claude = tmp_path_factory.mktemp("ro-claude")
    shutil.copytree(REAL / "projects" / PROJECT, claude / "projects" / PROJECT)
    home = tmp_path_factory.mktemp("ro-home")
    config = claude / "jacked.json"
    config.write_text(json.dumps({"jacked_home": str(home), "user_name": "ada"}))
    config.chmod(0o600)
    indexer = Indexer(load_settings(claude))
    assert indexer.backfill().errors == []
    # As when a backfill's process ends: the archive manifest's last connection closes and takes its
    # -wal and -shm with it, which a read-only home cannot make again (`sqlite3` then needs `immutable`).
    del indexer
    gc.collect()
    assert (home / "archive" / "manifest.db").exists() and not (home / "archive" / "manifest.db-shm").exists()
    # A transcript written after the backfill: a read-only home neither catalogs nor archives it.
    shutil.copytree(REAL / "projects" / LATER, claude / "projects" / LATER)
    return claude, home


@pytest.fixture(scope="module")
def writable_search(site: tuple[Path, Path]) -> list[tuple[str, str]]:
    """The top results of the test's search on the home while it is still writable."""
    p = subprocess.run([str(JACKED), "search", "manifest", "--json"], env=jacked_env(site[0]),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return top_results(p.stdout)


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


@pytest.fixture()
def read_only(site: tuple[Path, Path]) -> Iterator[list[str]]:
    """The command prefix that runs a process with the site's two folders read-only."""
    claude, home = site
    if os.geteuid() != 0:
        for root in (claude, home):
            subprocess.run(["chmod", "-R", "a-w", str(root)], check=True)
        try:
            yield []
        finally:
            for root in (claude, home):
                subprocess.run(["chmod", "-R", "u+w", str(root)], check=True)
        return
    if not _can_unshare():
        pytest.skip("running as root without `unshare -m`: no way to make a folder read-only")
    binds = " && ".join(f"mount --bind {d} {d} && mount -o remount,bind,ro {d}" for d in (claude, home))
    yield ["unshare", "-m", "sh", "-c", f'{binds} && exec "$@"', "sh"]


def test_read_only_home_loads_settings_and_answers_read_commands(site: tuple[Path, Path],
                                                                 writable_search: list[tuple[str, str]],
                                                                 read_only: list[str]) -> None:
    claude, home = site
    env = jacked_env(claude)
    before = tree_bytes(claude, home)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*read_only, *args], env=env, capture_output=True, text=True, timeout=300)

    probe = run(str(JACKED.parent / "python"), "-c", "import pathlib, sys; pathlib.Path(sys.argv[1]).touch()",
                str(home / "probe"))
    assert probe.returncode != 0 and not (home / "probe").exists(), "the home must really be read-only"
    loaded = run(str(JACKED.parent / "python"), "-c", "from jacked.config import load_settings; "
                 "s = load_settings(); print(s.home, s.sources['jacked_home'], s.user_name)")
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split() == [str(home), "file", "ada"]
    sessions = run(str(JACKED), "sessions", "--json")
    assert sessions.returncode == 0, sessions.stderr
    assert [r["session_id"] for r in json.loads(sessions.stdout)] == [SESSION]
    # One note that nothing new is indexed, not an error.
    assert sessions.stderr.strip() == f"jacked: {home} is read-only: new transcripts are not indexed"
    # With the daemon on (the default): none can make its socket there, so this process answers, quietly.
    daemon_on = subprocess.run([*read_only, "env", "-u", "JACKED_DAEMON", str(JACKED), "sessions", "--json"], env=env,
                               capture_output=True, text=True, timeout=300)
    assert (daemon_on.returncode, daemon_on.stdout, daemon_on.stderr) == (0, sessions.stdout, sessions.stderr)
    status = run(str(JACKED), "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["points"] > 0
    search = run(str(JACKED), "search", "manifest", "--json")
    assert search.returncode == 0, search.stderr
    assert top_results(search.stdout) == writable_search and writable_search
    for args in (["turns", SESSION[:8]], ["stats", "--json"], ["retrieve", SESSION[:8]], ["timeline", SESSION[:8]],
                 ["archive", "--json"], ["show", SESSION[:8]]):
        p = run(str(JACKED), *args)
        assert p.returncode == 0 and p.stdout.strip(), (args, p.stderr)
        assert "Traceback" not in p.stderr, args
    for args in (["backfill"], ["index"], ["forget", SESSION[:8], "--yes"]):
        p = run(str(JACKED), *args)
        assert p.returncode == 1, (args, p.stdout)
        assert p.stderr.strip() == (f"jacked: {home} is read-only: `jacked {args[0]}` writes there; "
                                    "make it writable or point JACKED_HOME at a folder you can write"), args
    assert tree_bytes(claude, home) == before
