"""What jacked keeps is private: files under JACKED_HOME are owner-only, whatever the umask."""
from __future__ import annotations

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
           "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
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
