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
from collections.abc import Callable, Iterator
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


def discover(projects_dir: Path, flat_parent: Callable[[Path], str | None] | None = None,
             errors: list[str] | None = None) -> list[SessionFiles]:
    """Every session under `projects_dir`, sorted by project folder then session id.

    `flat_parent(path)` may answer a flat agent file's parent from a cache; when it returns
    None the file's first record is read. A folder that cannot be listed and a transcript name
    that is not a regular file (a FIFO would block its reader forever) are skipped, each with a
    line in `errors`; the other sessions are found all the same.
    """
    errors = [] if errors is None else errors
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
    for project in sorted((e for e in _listing(projects_dir, errors) if _kind(e) == "dir"), key=lambda e: e.name):
        for entry in sorted(_listing(project.path, errors), key=lambda e: e.name):
            name = entry.name
            kind = _kind(entry)
            if name.endswith(".jsonl") and kind != "dir":
                if kind != "file":
                    errors.append(_not_regular(entry.path))
                    continue
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
            elif kind == "dir":
                subs, compactions, results = session_dir_files(entry.path, errors)
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


def main_files(projects_dir: Path) -> list[tuple[str, str, Path]]:
    """(session id, project folder, path) of every session's main file under `projects_dir`
    (`<project>/<session>.jsonl`, regular files only), unsorted: what a glance reads. Unlike
    `discover`, no agent file is opened and no session folder is listed."""
    out: list[tuple[str, str, Path]] = []
    if not projects_dir.is_dir():
        return out
    errors: list[str] = []  # what cannot be listed is the full scan's to report
    for project in _listing(projects_dir, errors):
        if _kind(project) != "dir":
            continue
        for entry in _listing(project.path, errors):
            name = entry.name
            if name.endswith(".jsonl") and not name.startswith("agent-") and _kind(entry) == "file":
                out.append((name[:-len(".jsonl")], project.name, Path(entry.path)))
    return out


def session_dir_files(session_dir: str | os.PathLike[str], errors: list[str] | None = None,
                      ) -> tuple[list[SubagentFile], list[SubagentFile], list[Path]]:
    """(subagent files, compaction files, tool-results files) of a `<session>/` folder.

    Agent files anywhere below `subagents/`, each with its `.meta.json` (and, in a workflow
    run's folder, the run's `journal.jsonl`) when the listing shows one: nothing is stat-ed.
    One listing of the session folder tells which of its parts exist. Only regular files are
    taken; a folder that cannot be listed and an agent file or tool output that is not a regular
    file are skipped with a line in `errors`.
    """
    errors = [] if errors is None else errors
    try:
        with os.scandir(session_dir) as it:
            present = {e.name for e in it if _kind(e) == "dir"}
    except (FileNotFoundError, NotADirectoryError):  # not a folder, or gone
        return [], [], []
    except OSError as e:
        errors.append(_unlistable(session_dir, e))
        return [], [], []
    subs: list[SubagentFile] = []
    compactions: list[SubagentFile] = []
    if "subagents" in present:
        for folder, entries in _walk(os.path.join(session_dir, "subagents"), errors):
            listed = {e.name for e in entries if _kind(e) == "file"}
            journal = Path(folder, JOURNAL_NAME) if JOURNAL_NAME in listed else None
            for entry in entries:
                name = entry.name
                if name.startswith("agent-") and name.endswith(".jsonl"):
                    if name not in listed:
                        errors.append(_not_regular(entry.path))
                        continue
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
        for entry in _listing(os.path.join(session_dir, TOOL_RESULTS_DIR), errors):
            kind = _kind(entry)
            if kind == "file":
                results.append(Path(entry.path))
            elif kind != "dir":
                errors.append(_not_regular(entry.path))
    return (sorted(subs, key=lambda f: f.path), sorted(compactions, key=lambda f: f.path),
            sorted(results))


def _kind(entry: os.DirEntry[str]) -> str:
    """"dir", "file" (a regular file, S_ISREG) or "other" (a FIFO, socket, device, broken link)
    of a listed entry, symlinks followed; the type comes with the listing (no stat but for links)."""
    try:
        if entry.is_dir():
            return "dir"
        return "file" if entry.is_file() else "other"
    except OSError:
        return "other"


def _listing(folder: str | os.PathLike[str], errors: list[str]) -> list[os.DirEntry[str]]:
    """The entries of `folder`; none, with a line in `errors`, when it cannot be listed."""
    try:
        with os.scandir(folder) as it:
            return list(it)
    except FileNotFoundError:  # gone since it was listed
        return []
    except OSError as e:
        errors.append(_unlistable(folder, e))
        return []


def _walk(top: str, errors: list[str]) -> Iterator[tuple[str, list[os.DirEntry[str]]]]:
    """(folder, its entries other than folders) for `top` and every folder below it, like
    `os.walk` (symlinked folders not followed) but with the listing's entry types, and a line
    in `errors` for a folder that cannot be listed."""
    stack = [top]
    while stack:
        folder = stack.pop()
        others: list[os.DirEntry[str]] = []
        for e in _listing(folder, errors):
            if _kind(e) != "dir":
                others.append(e)
            elif not e.is_symlink():
                stack.append(e.path)
        yield folder, others


def _unlistable(folder: str | os.PathLike[str], e: OSError) -> str:
    return f"{os.fspath(folder)}: cannot list this folder ({e.strerror or e}): what it holds is not read"


def _not_regular(path: str) -> str:
    return f"{path}: not a regular file (a FIFO, socket, device or broken link): not read"
