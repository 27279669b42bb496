"""Discovery: which transcript files make up which session in a Claude directory.

Layouts handled (DESIGN "Transcript format notes"):
- `projects/<encoded-cwd>/<session>.jsonl`: a session's main file;
- `projects/<encoded-cwd>/agent-<8hex>.jsonl`: a 2.0.x flat subagent, tied to its session
  by the `sessionId` inside it (the parent's id);
- `projects/<encoded-cwd>/<session>/subagents/**/agent-*.jsonl` (+ `.meta.json`): 2.1.x;
- inline `isSidechain` lines (1.0.x) live inside the main file and are found while reading.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from jacked.transcript.reader import first_record


@dataclass(slots=True)
class SubagentFile:
    path: Path
    layout: str  # "flat" | "subagents_dir"
    meta_path: Path | None = None


@dataclass(slots=True)
class SessionFiles:
    """The files of one session: its main file (if present) and its subagent files."""

    session_id: str
    project_dir: str
    main: Path | None = None
    subagents: list[SubagentFile] = field(default_factory=list)

    def all_paths(self) -> list[Path]:
        paths = [self.main] if self.main else []
        paths += [s.path for s in self.subagents]
        return paths


def is_agent_file(path: Path) -> bool:
    return path.name.startswith("agent-") and path.suffix == ".jsonl"


def discover(projects_dir: Path, flat_parent: Callable[[Path], str | None] | None = None) -> list[SessionFiles]:
    """Every session under `projects_dir`, sorted by project folder then session id.

    `flat_parent(path)` may answer a flat agent file's parent from a cache; when it returns
    None the file's first record is read.
    """
    sessions: dict[str, SessionFiles] = {}

    def get(sid: str, project: str) -> SessionFiles:
        sf = sessions.get(sid)
        if sf is None:
            sf = sessions[sid] = SessionFiles(session_id=sid, project_dir=project)
        return sf

    if not projects_dir.is_dir():
        return []
    # os.scandir: the entry types come with the listing, so no file is stat-ed here.
    for project in sorted((e for e in os.scandir(projects_dir) if e.is_dir()), key=lambda e: e.name):
        for entry in sorted(os.scandir(project.path), key=lambda e: e.name):
            name = entry.name
            if name.endswith(".jsonl") and not entry.is_dir():
                path = Path(entry.path)
                if name.startswith("agent-"):
                    parent = flat_parent(path) if flat_parent else None
                    if parent is None:
                        rec = first_record(path)
                        parent = rec.get("sessionId") if rec else None
                    if not isinstance(parent, str) or not parent:
                        parent = path.stem  # unknown parent: keep it as its own group
                    get(parent, project.name).subagents.append(SubagentFile(path, "flat"))
                else:
                    get(path.stem, project.name).main = path
            elif entry.is_dir():
                found = _subagents_dir_files(os.path.join(entry.path, "subagents"))
                if found:
                    get(name, project.name).subagents.extend(found)
    return sorted(sessions.values(), key=lambda s: (s.project_dir, s.session_id))


def _subagents_dir_files(root: str) -> list[SubagentFile]:
    """`agent-*.jsonl` files anywhere below a session's `subagents/` folder, sorted, each with
    its `.meta.json` when there is one (seen in the listing: nothing is stat-ed)."""
    found = []
    for folder, _, names in os.walk(root):  # a missing folder yields nothing
        listed = set(names)
        for name in names:
            if name.startswith("agent-") and name.endswith(".jsonl"):
                meta = name[:-len(".jsonl")] + ".meta.json"
                found.append(SubagentFile(Path(folder, name), "subagents_dir",
                                          Path(folder, meta) if meta in listed else None))
    return sorted(found, key=lambda f: f.path)


def repo_name_of(cwd: str | None) -> str | None:
    """The last component of a POSIX or Windows path."""
    if not cwd:
        return None
    parts = [p for p in cwd.replace("\\", "/").rstrip("/").split("/") if p]
    return parts[-1] if parts else cwd
