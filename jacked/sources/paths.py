"""Path facts every source shares."""
from __future__ import annotations


def repo_name_of(cwd: str | None) -> str | None:
    """The repo a session worked in: the last component of its POSIX or Windows cwd."""
    if not cwd:
        return None
    parts = [p for p in cwd.replace("\\", "/").rstrip("/").split("/") if p]
    return parts[-1] if parts else cwd
