"""What jacked keeps is private: files under JACKED_HOME are owner-only, whatever the umask."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from kit import REAL

from jacked.catalog import Catalog

ROOT = Path(__file__).resolve().parents[1]


def test_jacked_home_is_owner_only_under_umask_022(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    project = "-src-experiments-claude_p"
    shutil.copytree(REAL / "projects" / project, claude / "projects" / project)
    home = tmp_path / "home"
    env = {"CLAUDE_CONFIG_DIR": str(claude), "JACKED_HOME": str(home), "JACKED_USER_NAME": "ada",
           "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "JACKED_DAEMON": os.environ.get("JACKED_DAEMON", "")}
    code = "import os, sys; os.umask(0o022); sys.argv = ['jacked', 'scan']; from jacked.surfaces.cli.entry import run; run()"
    run = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    loose = [str(p) for p in [home, *home.rglob("*")] if p.stat().st_mode & 0o077]
    assert loose == []
    # An older home left world-readable is tightened on the next open.
    (home / "catalog.db").chmod(0o644)
    home.chmod(0o755)
    Catalog(home / "catalog.db").db.close()
    assert home.stat().st_mode & 0o777 == 0o700 and (home / "catalog.db").stat().st_mode & 0o777 == 0o600


def test_the_issue_find_finds_nothing_after_backfill_search_and_hook(tmp_path: Path) -> None:
    """Issue 14's check, literally: with umask 022, `find JACKED_HOME ! -perm -u=rw -o -perm /077`
    after a backfill (catalog, archive, model folder, index), a search and a hook run finds nothing;
    and a home an older jacked left loose deeper down (an index file 0644, a symlinked model) is
    fixed on the next run."""
    claude = tmp_path / "claude"
    project = "-src-experiments-claude_p"
    shutil.copytree(REAL / "projects" / project, claude / "projects" / project)
    home = tmp_path / "home"
    env = {"CLAUDE_CONFIG_DIR": str(claude), "JACKED_HOME": str(home), "JACKED_USER_NAME": "ada",
           "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    # The suite's mode (conftest.py): in-process, or through a daemon.
    env.update({k: os.environ[k] for k in ("JACKED_DAEMON", "JACKED_DAEMON_IDLE_MINUTES") if k in os.environ})

    def jacked(*args: str, stdin: str = "") -> None:
        code = (f"import os, sys; os.umask(0o022); sys.argv = ['jacked', *{list(args)!r}]; "
                "from jacked.surfaces.cli.entry import run; run()")
        done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, input=stdin, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr

    def loose() -> list[str]:
        found = subprocess.run(["find", str(home), "!", "-perm", "-u=rw", "-o", "-perm", "/077"],
                               capture_output=True, text=True, check=True).stdout.split()
        return found

    jacked("backfill")
    jacked("search", "compaction", "--json")
    transcript = next((claude / "projects" / project).glob("*.jsonl"))
    jacked("index", "--hook", stdin='{"transcript_path": "%s"}' % transcript)
    assert (home / "index").is_dir() and (home / "models").is_dir() and (home / "archive").is_dir()
    assert loose() == []
    # what an older jacked left: a loose index file and a model linked into site-packages
    index_json = next((home / "index").glob("*.json"))
    index_json.chmod(0o644)
    model = next((home / "models").glob("*/model.onnx"))
    target = model.with_name("elsewhere.onnx")
    model.replace(target)
    model.symlink_to(target)
    (home / ".owner-only").unlink()
    if env.get("JACKED_DAEMON") != "off":  # an upgrade replaces the older jacked's daemon: the new one fixes it
        jacked("daemon", "stop")
    jacked("search", "compaction", "--json")
    assert loose() == [] and not model.is_symlink()
