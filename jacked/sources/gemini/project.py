"""Which folder a Gemini CLI project is: the session's cwd.

Gemini CLI keeps a project's files in `~/.gemini/tmp/<id>/`, where `<id>` was the SHA-256 of
the project root path (until 2026) and is now a short name registered in
`~/.gemini/projects.json` (`{"projects": {"<root>": "<id>"}}`) with the root written in
`<id>/.project_root`. Every chat file also records `projectHash`, the SHA-256 of the root.

The cwd is, in this order: the `.project_root` file; the root `projects.json` maps to the
folder's name (or whose hash is the folder's name or the file's `projectHash`); else an
absolute path the session itself names (workspace directories, tool-call paths and the
shell's "[current working directory …]") or one of its parent folders — only when its
SHA-256 is the `projectHash`, so the cwd is never a guess. Otherwise it stays unknown (None).
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import orjson

PROJECT_ROOT_FILE = ".project_root"
REGISTRY_FILE = "projects.json"
MAX_CANDIDATES = 2000
_HASH = re.compile(r"^[0-9a-f]{64}$")


def sha256_of(path: str) -> str:
    return hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()


def is_hash_name(name: str) -> bool:
    return bool(_HASH.match(name))


def read_registry(root: Path) -> dict[str, str]:
    """{folder name or hash: project root} from `projects.json` (empty when absent or broken)."""
    try:
        data: Any = orjson.loads((root / REGISTRY_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return {}
    out: dict[str, str] = {}
    for path, slug in projects.items():
        if isinstance(path, str) and path:
            if isinstance(slug, str) and slug:
                out.setdefault(slug, path)
            out.setdefault(sha256_of(path), path)
    return out


def marker_root(project_dir: Path) -> str | None:
    """The project root written in the folder's `.project_root`, if any."""
    try:
        text = (project_dir / PROJECT_ROOT_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def known_root(project_dir: Path, registry: dict[str, str]) -> str | None:
    """The root a project folder is known to belong to, without reading its sessions."""
    return marker_root(project_dir) or registry.get(project_dir.name)


def _ancestors(path: str) -> Iterable[str]:
    pure = PureWindowsPath(path) if re.match(r"^[A-Za-z]:[\\/]", path) else PurePosixPath(path)
    yield str(pure)
    for parent in pure.parents:
        if str(parent) in ("/", pure.anchor):
            break
        yield str(parent)


def root_from_paths(project_hash: str | None, paths: Iterable[str]) -> str | None:
    """The path among `paths` and their parents whose SHA-256 is `project_hash`."""
    if not project_hash or not is_hash_name(project_hash):
        return None
    seen: set[str] = set()
    for path in paths:
        for candidate in _ancestors(path.strip().rstrip("/\\") or path):
            if candidate in seen:
                continue
            seen.add(candidate)
            if sha256_of(candidate) == project_hash:
                return candidate
            if len(seen) >= MAX_CANDIDATES:
                return None
    return None


_ABS_IN_TEXT = re.compile(r"(?m)^\s*-\s+(/[^\n]*?|[A-Za-z]:\\[^\n]*?)\s*$|working in the directory:?\s+(\S[^\n]*?)\s*$")


def paths_in_context(text: str) -> list[str]:
    """Absolute paths listed in a `<session_context>` message (its workspace directories)."""
    out = []
    for m in _ABS_IN_TEXT.finditer(text[:20000]):
        value = m.group(1) or m.group(2)
        if value:
            out.append(value.rstrip(". "))
    return out
