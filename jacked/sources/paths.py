"""Path facts every source shares."""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def repo_name_of(cwd: str | None) -> str | None:
    """The repo a session worked in: the last component of its POSIX or Windows cwd."""
    if not cwd:
        return None
    parts = [p for p in cwd.replace("\\", "/").rstrip("/").split("/") if p]
    return parts[-1] if parts else cwd


def home_dir(environ: Mapping[str, str]) -> Path:
    """The user's home folder as `environ` says it (`HOME`, on Windows `USERPROFILE`), else this process's."""
    home = environ.get("HOME", "").strip() or environ.get("USERPROFILE", "").strip()
    return Path(home) if home else Path(os.path.expanduser("~"))
