"""Aider as a transcript source.

Aider keeps no central store: it appends each repository's chat to `.aider.chat.history.md`
in that repository's git root (or the folder it ran in; `--chat-history-file` /
`AIDER_CHAT_HISTORY_FILE` name another file), and what was typed, with times, to
`.aider.input.history` beside it. The same on Linux, macOS and Windows.

So the source's folder is one to search for those files: `JACKED_AIDER_ROOT` when set (tests, or
a folder of projects), else the home folder when it holds Aider's own `~/.aider` (else nothing is
searched), walked to a bounded depth without hidden folders,
dependency and build folders, and not into a git repository's own folders (Aider writes at
the git root) (a history file kept elsewhere is found when the root holds it). Each `# aider chat started at …` block of a file is one session, found with a fingerprint of
its own text: a file that grew re-reads its last session only.
"""
from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from jacked.sources.aider.history import Block, parse_lines, split_sessions
from jacked.sources.aider.turns import PARSER_VERSION, build_turns, utc_of_local
from jacked.sources.base import FoundSession
from jacked.sources.model import Session
from jacked.sources.paths import repo_name_of

CHAT_FILE = ".aider.chat.history.md"
INPUT_FILE = ".aider.input.history"
AIDER_DIR = ".aider"
MAX_DEPTH = 5  # below the root: ~/code/org/repo is three
MAX_DIRS = 20_000  # a walk stops here (and says so) rather than crawl a whole disk
MAX_FILE_BYTES = 64 * 1024 * 1024
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "site-packages", "venv", "env", "Library", "AppData",
                       "Applications", "target", "build", "dist", "vendor", "snap", "go", "Pictures", "Music",
                       "Movies", "Videos"})


def find_chat_files(root: Path, errors: list[str]) -> list[Path]:
    """Every Aider chat history file under `root` (a bounded walk)."""
    found: list[Path] = []
    visited = 0
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        visited += 1
        if visited > MAX_DIRS:
            errors.append(f"{root}: stopped after {MAX_DIRS} folders; set JACKED_AIDER_ROOT to the folder of your projects")
            break
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        # Aider writes at the git root: a repository's own folders are not searched (the walk
        # stays among the folders that hold repositories, whatever their size)
        is_repo = any(entry.name == ".git" for entry in entries)
        for entry in entries:
            try:
                if entry.name == CHAT_FILE and entry.is_file():
                    found.append(Path(entry.path))
                elif not is_repo and depth < MAX_DEPTH and entry.is_dir(follow_symlinks=False) \
                        and not entry.name.startswith(".") and entry.name not in SKIP_DIRS:
                    stack.append((Path(entry.path), depth + 1))
            except OSError:
                continue
    return sorted(found)


def session_id_of(path: Path, block: Block) -> str:
    """Stable while the file grows: its path, the session's header time and its place among equals."""
    digest = hashlib.blake2b(f"{path.absolute()}\0{block.key}".encode(), digest_size=12).hexdigest()
    return f"aider-{digest}"


_INPUT_TIME = re.compile(r"^# (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\s*$")


def read_input_history(path: Path) -> list[tuple[str, str]]:
    """(UTC time, text) of every input in `.aider.input.history`: a `# time` line, then the
    input's lines each prefixed with `+`."""
    try:
        raw = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out: list[tuple[str, str]] = []
    when: str | None = None
    lines: list[str] = []

    def flush() -> None:
        if when is not None and lines:
            ts = utc_of_local(when)
            if ts:
                out.append((ts, "\n".join(lines)))

    for line in raw.splitlines():
        m = _INPUT_TIME.match(line)
        if m:
            flush()
            when, lines = m.group(1), []
        elif line.startswith("+"):
            lines.append(line[1:])
    flush()
    return out


class InputTimes:
    """A file's input history, read on first use and shared by the file's sessions."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: list[tuple[str, str]] | None = None

    def entries(self) -> list[tuple[str, str]]:
        if self._entries is None:
            self._entries = read_input_history(self.path)
        return self._entries


class AiderSource:
    """Aider (aider.chat): the chat history file of every repository found under the root."""

    name = "aider"
    label = "Aider"
    parser_version = PARSER_VERSION

    def default_root(self, environ: Mapping[str, str]) -> Path:
        configured = environ.get("JACKED_AIDER_ROOT", "").strip()
        if configured:
            return Path(configured).expanduser()
        home_text = environ.get("HOME", "").strip() or environ.get("USERPROFILE", "").strip()
        home = Path(home_text) if home_text else Path(os.path.expanduser("~"))
        # Aider's own folder (caches, analytics) says it is installed: only then is the home
        # searched, so a machine without Aider is never walked (and "nothing to read" still shows)
        return home if (home / AIDER_DIR).is_dir() else home / AIDER_DIR

    def discover(self, root: Path, errors: list[str]) -> Iterable[FoundSession]:
        for path in find_chat_files(root, errors):
            yield from self._sessions(path, errors)

    def _sessions(self, path: Path, errors: list[str]) -> Iterator[FoundSession]:
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES:
                errors.append(f"{path}: {size} bytes, over the {MAX_FILE_BYTES} read; skipped")
                return
            text = path.read_bytes().decode("utf-8", errors="replace")
        except OSError as e:
            errors.append(f"{path}: {e.strerror or e}")
            return
        prompt_times = InputTimes(path.parent / INPUT_FILE)  # read once, when a session of this file is read
        for block in split_sessions(text):
            # the blank line Aider writes before the next header is not a change of this session
            body = block.text.rstrip().encode("utf-8", "surrogatepass")
            fingerprint = hashlib.blake2b(body, digest_size=12).hexdigest()
            sid = session_id_of(path, block)
            yield FoundSession(sid, f"{path.absolute()}#{block.key}", [path], fingerprint,
                               extra={"path": path, "block": block, "prompt_times": prompt_times})

    def read(self, found: FoundSession) -> Session:
        path: Path = found.extra["path"]
        block: Block = found.extra["block"]
        started = utc_of_local(block.started)
        parsed = parse_lines(block.text)
        holder = found.extra.get("prompt_times")
        times = holder.entries() if isinstance(holder, InputTimes) else read_input_history(path.parent / INPUT_FILE)
        if started is not None:
            times = [(ts, text) for ts, text in times if ts >= started]
        built = build_turns(parsed.lines, started, times)
        cwd = str(path.parent.absolute())
        last = max((t.started_at for t in built.turns if t.started_at), default=started)
        return Session(session_id=found.session_id, file=str(path.absolute()), agent="aider",
                       project_dir=path.parent.name, cwd=cwd, repo_name=repo_name_of(cwd),
                       version_first=built.versions[0] if built.versions else None,
                       version_last=built.versions[-1] if built.versions else None,
                       started_at=started or (built.turns[0].started_at if built.turns else None), ended_at=last,
                       turns=built.turns, texts=built.texts, models=built.models, lines=parsed.raw_lines,
                       message_lines=built.message_lines)
