"""opencode's two stores of the same records: JSON files (older releases) and SQLite (newer ones).

Both hold a session's info, its messages and each message's parts. The JSON store, under
`<data dir>/storage/`:

    project/<projectID>.json                  worktree, vcs
    session/<projectID>/<sessionID>.json      id, parentID, directory, title, version, time
    message/<sessionID>/<messageID>.json      role, time, modelID, tokens, summary, error, ...
    part/<messageID>/<partID>.json            text, tool, step-start, step-finish, ...

The SQLite store (`<data dir>/opencode.db`, `opencode-<channel>.db` for other channels) has tables
`session` (one column per field), `message` and `part` (the same JSON minus the ids, in a `data`
column), read by `jacked.sources.opencode.db`. opencode migrates the JSON store into the
database once and may leave the files: a session found in a database is not read again from them.

OpenCode 2.x keeps a session's conversation in another shape, in the same database: table
`session_v2` (the session, one column per field) and `session_message` (one row per record:
`type` `user`, `assistant` (one model step, its parts inline), `shell`, `compaction`, `idle`, ...,
ordered by `seq`, the record's JSON in `data`). The older tables stay beside them.

Records come back as `RawSession`s, plain dicts as opencode wrote them, ordered as opencode
orders them (messages and parts by id, which opencode makes ascending in time; 2.x records by
`seq`); `build` turns them into the agent-neutral model. A record that does not decode is
counted, never fatal.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from jacked.sources.base import stat_fingerprint

MAX_RECORD_BYTES = 64 << 20  # a part file larger than this is passed over (counted malformed)


@dataclass(slots=True)
class RawSession:
    """One opencode session as stored: its info, its messages with their parts, its children."""

    session_id: str
    location: str  # the session file, or `<db>#<id>`
    info: dict[str, Any] = field(default_factory=dict)
    messages: list[tuple[dict[str, Any], list[dict[str, Any]]]] = field(default_factory=list)
    # OpenCode 2.x: the session's `session_message` records in `seq` order, each its `data` with
    # the row's `id` and `type` (a session has either these or `messages`)
    entries: list[dict[str, Any]] = field(default_factory=list)
    project: dict[str, Any] = field(default_factory=dict)  # worktree, vcs (when known)
    records: int = 0  # records read: the session, its messages and parts
    malformed: int = 0  # records that do not decode to an object
    children: list[RawSession] = field(default_factory=list)  # subagent (task) sessions


def _load(path: Path) -> tuple[dict[str, Any] | None, bool]:
    """(the JSON object in a file, whether the file was there at all)."""
    try:
        if path.stat().st_size > MAX_RECORD_BYTES:
            return None, True
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return None, False  # removed since it was listed (opencode deletes reverted messages)
    except (OSError, orjson.JSONDecodeError):
        return None, True  # half-written, unreadable or not JSON
    return (data if isinstance(data, dict) else None), True


def decode(raw: Any) -> dict[str, Any] | None:
    if isinstance(raw, (bytes, str)):
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        return data if isinstance(data, dict) else None
    return None


def _json_files(directory: Path) -> list[os.DirEntry[str]]:
    """The `*.json` entries of a folder, by name (a missing folder has none)."""
    try:
        with os.scandir(directory) as it:
            entries = [e for e in it if e.name.endswith(".json") and not e.name.startswith(".")]
    except (FileNotFoundError, NotADirectoryError):
        return []
    entries.sort(key=lambda e: e.name)
    return entries


# ------------------------------------------------------------------ the JSON store
class FileStore:
    """`<data dir>/storage/`: one JSON file per session, message and part."""

    def __init__(self, storage: Path) -> None:
        self.storage = storage

    def sessions(self, errors: list[str]) -> dict[str, tuple[Path, dict[str, Any]]]:
        """{session id: (its file, its info)}; an unreadable info file keeps the session, with
        an empty info (its messages may still be whole)."""
        found: dict[str, tuple[Path, dict[str, Any]]] = {}
        for project_dir in _subdirs(self.storage / "session"):
            for entry in _json_files(project_dir):
                path = Path(entry.path)
                info, present = _load(path)
                if not present:
                    continue
                if info is None:
                    errors.append(f"{path}: not a JSON object (read without its info)")
                    info = {}
                info.setdefault("projectID", project_dir.name)
                # The id is the file's name, as opencode takes it (its own migrations moved files
                # without rewriting them): it also names the session's message folder.
                found.setdefault(path.stem, (path, info))
        return found

    def files_of(self, session_id: str) -> list[Path]:
        """The message and part files of a session (not its info file)."""
        paths: list[Path] = []
        for entry in _json_files(self.storage / "message" / session_id):
            paths.append(Path(entry.path))
            paths.extend(Path(p.path) for p in _json_files(self.storage / "part" / entry.name[:-5]))
        return paths

    def fingerprint(self, paths: list[Path]) -> str:
        return stat_fingerprint(paths)

    def project(self, project_id: Any) -> dict[str, Any]:
        if not isinstance(project_id, str) or not project_id or "/" in project_id or "\\" in project_id:
            return {}
        data, _ = _load(self.storage / "project" / f"{project_id}.json")
        return data or {}

    def read(self, session_id: str, path: Path) -> RawSession:
        """The session whose info file is `path`, read whole from the files as they are now."""
        info, present = _load(path)
        if not present:
            raise OSError(f"{path}: the session file is gone")
        raw = RawSession(session_id, str(path.absolute()), info=info or {}, records=1, malformed=int(info is None))
        raw.project = self.project(raw.info.get("projectID") or path.parent.name)
        for entry in _json_files(self.storage / "message" / session_id):
            message, present = _load(Path(entry.path))
            if not present:
                continue
            raw.records += 1
            if message is None:
                raw.malformed += 1
                continue
            mid = entry.name[:-5]
            message.setdefault("id", mid)
            parts = []
            for pentry in _json_files(self.storage / "part" / mid):
                part, present = _load(Path(pentry.path))
                if not present:
                    continue
                raw.records += 1
                if part is None:
                    raw.malformed += 1
                    continue
                part.setdefault("id", pentry.name[:-5])
                parts.append(part)
            raw.messages.append((message, parts))
        raw.messages.sort(key=lambda m: str(m[0].get("id")))
        return raw


def _subdirs(directory: Path) -> list[Path]:
    try:
        with os.scandir(directory) as it:
            return sorted(Path(e.path) for e in it if e.is_dir() and not e.name.startswith("."))
    except (FileNotFoundError, NotADirectoryError):
        return []
