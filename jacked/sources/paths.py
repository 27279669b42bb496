"""Path facts every source shares."""
from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote, urlparse


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


def path_of_uri(uri: object) -> str | None:
    """A folder URI (`file:///home/me/app`, `vscode-remote://ssh-remote+h/srv/app`) as a path."""
    if not isinstance(uri, str) or not uri.strip():
        return None
    if "://" not in uri:
        return uri
    parsed = urlparse(uri)
    path = unquote(parsed.path)
    if len(path) > 2 and path[0] == "/" and path[2] == ":":  # file:///C:/Users/...
        path = path[1:]
    return path or None


def resolve_path(path: str | None, cwd: str | None) -> str | None:
    """A path a tool named relative to the workspace, made absolute when the folder is known."""
    if not path or not cwd or path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        return path
    return posixpath.normpath(posixpath.join(cwd, path)) if cwd.startswith("/") else f"{cwd}\\{path}"
