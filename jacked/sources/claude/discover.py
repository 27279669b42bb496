"""Discovery: which transcript files make up which session in a Claude directory.

Layouts handled (DESIGN "Transcript format notes"):
- `projects/<encoded-cwd>/<session>.jsonl`: a session's main file;
- `projects/<encoded-cwd>/agent-<8hex>.jsonl`: a 2.0.x flat subagent, tied to its session
  by the `sessionId` inside it (the parent's id);
- `projects/<encoded-cwd>/<session>/subagents/**/agent-*.jsonl` (+ `.meta.json`): 2.1.x;
- `<session>/subagents/agent-acompact-*.jsonl`: Claude Code compacting the conversation, not
  a subagent (listed in `SessionFiles.compactions`; its output is the compaction summary);
- `<session>/subagents/workflows/<run>/agent-*.jsonl` (+ `.meta.json`, `journal.jsonl`): the
  agents of a workflow run (layout "workflow"; no Task call in the parent names them);
- `<session>/tool-results/*`: tool outputs over ~50K characters that 2.1.x moved out of the
  transcript (the result refers to the file; see `jacked.sources.claude.tool_results`);
- inline `isSidechain` lines (1.0.x) live inside the main file and are found while reading.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from jacked.sources.paths import repo_name_of  # noqa: F401 (its users import it from here)
from jacked.sources.reader import first_record

COMPACT_PREFIX = "agent-acompact"
TOOL_RESULTS_DIR = "tool-results"
JOURNAL_NAME = "journal.jsonl"


@dataclass(slots=True)
class SubagentFile:
    path: Path
    layout: str  # "flat" | "subagents_dir" | "workflow" | "acompact"
    meta_path: Path | None = None
    workflow_run: str | None = None  # layout "workflow": the run's folder name
    journal_path: Path | None = None  # layout "workflow": the run's journal.jsonl, when there is one


@dataclass(slots=True)
class SessionFiles:
    """The files of one session: its main file (if present), its subagent files, the
    compaction files (`agent-acompact-*`) and the tool outputs moved to `tool-results/`."""

    session_id: str
    project_dir: str
    main: Path | None = None
    subagents: list[SubagentFile] = field(default_factory=list)
    compactions: list[SubagentFile] = field(default_factory=list)
    tool_results: list[Path] = field(default_factory=list)

    def all_paths(self) -> list[Path]:
        """The transcripts (JSONL files read line by line): main, subagents, compactions."""
        paths = [self.main] if self.main else []
        paths += [s.path for s in self.subagents]
        paths += [s.path for s in self.compactions]
        return paths

    @property
    def session_dir(self) -> Path | None:
        """`<project>/<session>/`, where subagents/ and tool-results/ live (it may not exist)."""
        if self.main is not None:
            return self.main.parent / self.main.stem
        for sf in self.subagents + self.compactions:
            parts = sf.path.parts
            if "subagents" in parts:
                i = len(parts) - 1 - parts[::-1].index("subagents")
                return Path(*parts[:i])
            return sf.path.parent / self.session_id
        return None


def is_agent_file(path: Path) -> bool:
    return path.name.startswith("agent-") and path.suffix == ".jsonl"


def is_compaction_file(path: Path) -> bool:
    """`agent-acompact-*.jsonl`: Claude Code compacting the conversation, not a subagent."""
    return path.name.startswith(COMPACT_PREFIX) and path.suffix == ".jsonl"


def classify_agent_file(path: Path, meta_path: Path | None = None,
                        journal_path: Path | None = None) -> SubagentFile:
    """An agent file as a `SubagentFile`, its layout told by where it lies (used for files
    found on disk and for files read back from the archive alike)."""
    parts = path.parts
    if is_compaction_file(path):
        layout = "acompact"
    elif "subagents" not in parts[:-1]:
        layout = "flat"
    elif len(parts) >= 4 and parts[-3] == "workflows" and parts[-4] == "subagents":
        return SubagentFile(path, "workflow", meta_path, workflow_run=parts[-2], journal_path=journal_path)
    else:
        layout = "subagents_dir"
    return SubagentFile(path, layout, meta_path)


def discover(projects_dir: Path, flat_parent: Callable[[Path], str | None] | None = None) -> list[SessionFiles]:
    """Every session under `projects_dir`, sorted by project folder then session id.

    `flat_parent(path)` may answer a flat agent file's parent from a cache; when it returns
    None the file's first record is read.
    """
    sessions: dict[str, SessionFiles] = {}
    moved: dict[str, list[Path]] = {}  # session id -> its tool-results/ files

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
                    group = get(parent, project.name)
                    if is_compaction_file(path):
                        group.compactions.append(SubagentFile(path, "acompact"))
                    else:
                        group.subagents.append(SubagentFile(path, "flat"))
                else:
                    get(path.stem, project.name).main = path
            elif entry.is_dir():
                subs, compactions, results = session_dir_files(entry.path)
                if subs or compactions:
                    group = get(name, project.name)
                    group.subagents.extend(subs)
                    group.compactions.extend(compactions)
                if results:
                    moved[name] = results
    for sid, results in moved.items():  # a folder holding only moved outputs makes no session
        if sid in sessions:
            sessions[sid].tool_results.extend(results)
    return sorted(sessions.values(), key=lambda s: (s.project_dir, s.session_id))


def session_dir_files(session_dir: str | os.PathLike[str]) -> tuple[list[SubagentFile], list[SubagentFile], list[Path]]:
    """(subagent files, compaction files, tool-results files) of a `<session>/` folder.

    Agent files anywhere below `subagents/`, each with its `.meta.json` (and, in a workflow
    run's folder, the run's `journal.jsonl`) when the listing shows one: nothing is stat-ed.
    One listing of the session folder tells which of its parts exist.
    """
    try:
        with os.scandir(session_dir) as it:
            present = {e.name for e in it if e.is_dir()}
    except OSError:  # not a folder, or gone
        return [], [], []
    subs: list[SubagentFile] = []
    compactions: list[SubagentFile] = []
    if "subagents" in present:
        for folder, _, names in os.walk(os.path.join(session_dir, "subagents")):
            listed = set(names)
            journal = Path(folder, JOURNAL_NAME) if JOURNAL_NAME in listed else None
            for name in names:
                if name.startswith("agent-") and name.endswith(".jsonl"):
                    meta = name[:-len(".jsonl")] + ".meta.json"
                    sf = classify_agent_file(Path(folder, name), Path(folder, meta) if meta in listed else None,
                                             journal)
                    if sf.layout == "acompact":
                        compactions.append(sf)
                    else:
                        if sf.layout != "workflow":
                            sf.layout = "subagents_dir"
                        subs.append(sf)
    results: list[Path] = []
    if TOOL_RESULTS_DIR in present:
        try:
            with os.scandir(os.path.join(session_dir, TOOL_RESULTS_DIR)) as it:
                results = [Path(e.path) for e in it if not e.is_dir()]
        except OSError:
            results = []
    return (sorted(subs, key=lambda f: f.path), sorted(compactions, key=lambda f: f.path),
            sorted(results))
