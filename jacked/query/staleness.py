"""Staleness of a past session's context: by age, and by what changed in its repo since.

Age levels (DESIGN "Retrieve"): under 7 days none; 7–29 days info; 30–89 warning; 90 and
more strong. The clock is injectable (`now=`) so the boundaries can be tested exactly.

Where the session's working directory still exists and is a git repository, the files the
session wrote or edited are checked against git: committed changes since the session
ended (`git log --since`), and uncommitted changes made after it (`git status` plus the
file's mtime). Git is asked with a short timeout and never makes the check fail: any
problem simply means "unknown" (`git_checked=False`).
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

import orjson

from jacked.util.time import now_utc, parse_ts, relative_age

__all__ = ["LEVELS", "Staleness", "age_level", "age_message", "assess", "changed_files_since",
           "touched_files", "GIT_TIMEOUT_S"]

LEVELS = ("none", "info", "warning", "strong")
GIT_TIMEOUT_S = 2.0
MAX_FILES_CHECKED = 200  # a session that touched thousands of files: check the first ones
MAX_FILES_SHOWN = 10


def age_level(days: float | None) -> str:
    """The staleness level of a session that ended `days` ago (whole days count)."""
    if days is None:
        return "none"
    d = int(days) if days >= 0 else 0  # 6.9 days is still "6 days": the boundary is the 7th day
    if d < 7:
        return "none"
    if d < 30:
        return "info"
    if d < 90:
        return "warning"
    return "strong"


def age_message(level: str, days: int) -> str | None:
    """The notice shown for an age level (the seed's wording, without emoji)."""
    if level == "info":
        return (f"NOTE: this context is {days} days old. Code may have changed - verify the current "
                "state if anything seems off.")
    if level == "warning":
        return (f"STALENESS NOTICE: this context is {days} days old. Code, APIs or project structure may "
                "have changed. Use it as a starting point for WHERE to look, not necessarily WHAT is there now.")
    if level == "strong":
        return (f"OLD CONTEXT WARNING: this context is {days} days old (~{days // 30} months). Significant "
                "changes are likely. Treat it as historical reference only and re-explore the code before "
                "making changes.")
    return None


@dataclass
class Staleness:
    """How stale one session's context is; `to_json` is the `staleness` object of retrieve."""

    level: str = "none"
    age_days: int | None = None
    age: str = "unknown"
    message: str | None = None
    git_checked: bool = False
    repo_on_disk: bool = False
    files_touched: int = 0
    changed_files: list[str] = field(default_factory=list)
    commits_since: int | None = None

    @property
    def files_message(self) -> str | None:
        if not self.changed_files:
            return None
        shown = ", ".join(self.changed_files[:MAX_FILES_SHOWN])
        more = f" and {len(self.changed_files) - MAX_FILES_SHOWN} more" if len(self.changed_files) > MAX_FILES_SHOWN else ""
        return (f"{len(self.changed_files)} of the {self.files_touched} files this session changed have "
                f"changed since it ended: {shown}{more}. Re-read them before relying on this context.")

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, "age_days": self.age_days, "age": self.age, "message": self.message,
                "git_checked": self.git_checked, "repo_on_disk": self.repo_on_disk,
                "files_touched": self.files_touched, "changed_files": self.changed_files,
                "commits_since": self.commits_since, "files_message": self.files_message}


def touched_files(catalog: Any, session_id: str) -> list[str]:
    """Files the session (and its subagents) wrote or edited, first-seen order.

    From the main turns' metrics (`files_written`, `files_modified`) plus the successful
    Write/Edit calls of subagents, which the parent's metrics do not count.
    """
    seen: dict[str, None] = {}
    for t in catalog.turn_rows(session_id):
        try:
            m = orjson.loads(t["metrics"]) if t["metrics"] else {}
        except orjson.JSONDecodeError:
            continue
        for p in (m.get("files_written") or []) + (m.get("files_modified") or []):
            if isinstance(p, str) and p:
                seen.setdefault(p, None)
    for path in catalog.subagent_files_written(session_id):
        seen.setdefault(path, None)
    return list(seen)


def _git(args: list[str], cwd: Path, timeout: float) -> str | None:
    """stdout of a git command, or None on any failure (no git, not a repo, timeout)."""
    try:
        p = subprocess.run(["git", *args], cwd=str(cwd), capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"})
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return p.stdout if p.returncode == 0 else None


def changed_files_since(cwd: str | Path, files: list[str], since: datetime,
                        timeout: float = GIT_TIMEOUT_S) -> tuple[list[str], int | None] | None:
    """(files of `files` changed since `since`, commits in the repo since) — None when unknown.

    A file counts as changed when a commit since `since` touched it, or when it has
    uncommitted changes (or was deleted) and was modified after `since`.
    """
    root = Path(cwd)
    if not root.is_dir():
        return None
    top = _git(["rev-parse", "--show-toplevel"], root, timeout)
    if top is None or not top.strip():
        return None
    top_path = Path(top.strip())
    rel: dict[str, str] = {}  # repo-relative posix path -> the path as the session named it
    for f in files[:MAX_FILES_CHECKED]:
        p = Path(f) if os.path.isabs(f) else root / f
        try:
            r = p.resolve().relative_to(top_path.resolve())
        except (ValueError, OSError):
            continue  # outside the repo (or a Windows path on POSIX): git cannot say
        rel[str(PurePosixPath(*r.parts))] = f
    iso = since.isoformat()
    count_out = _git(["rev-list", "--count", f"--since={iso}", "HEAD"], top_path, timeout)
    commits = int(count_out.strip()) if count_out and count_out.strip().isdigit() else None
    if not rel:
        return [], commits
    changed: dict[str, None] = {}
    log = _git(["log", f"--since={iso}", "--name-only", "--format=", "--", *rel], top_path, timeout)
    if log is None:
        return None
    for line in log.splitlines():
        line = line.strip()
        if line in rel:
            changed.setdefault(rel[line], None)
    status = _git(["status", "--porcelain", "--no-renames", "--", *rel], top_path, timeout)
    for line in (status or "").splitlines():
        path = line[3:].strip().strip('"')
        if path not in rel:
            continue
        full = top_path / path
        try:
            modified_after = full.stat().st_mtime > since.timestamp()
        except OSError:
            modified_after = True  # deleted since
        if modified_after:
            changed.setdefault(rel[path], None)
    return [f for f in rel.values() if f in changed], commits


def assess(row: dict[str, Any], files: list[str] | None = None, now: datetime | None = None,
           check_git: bool = True, timeout: float = GIT_TIMEOUT_S) -> Staleness:
    """The staleness of a session from its catalog row (`ended_at`, else `started_at`, and `cwd`).

    `files` are the files the session touched (see `touched_files`); git is consulted only
    when `check_git` and the session's cwd exists on disk. Never raises.
    """
    now = now or now_utc()
    ended = parse_ts(row.get("ended_at")) or parse_ts(row.get("started_at"))
    st = Staleness()
    if ended is not None:
        days = max(0.0, (now - ended).total_seconds() / 86400)
        st.age_days = int(days)
        st.level = age_level(days)
        st.age = relative_age(ended, now)
        st.message = age_message(st.level, st.age_days)
    cwd = row.get("cwd") or ""
    st.files_touched = len(files or [])
    try:
        st.repo_on_disk = bool(cwd) and Path(cwd).is_dir()
    except OSError:
        st.repo_on_disk = False
    if check_git and st.repo_on_disk and ended is not None:
        try:
            res = changed_files_since(cwd, files or [], ended, timeout)
        except Exception:  # staleness is advice: it must never break a retrieve
            res = None
        if res is not None:
            st.git_checked = True
            st.changed_files, st.commits_since = res
    return st
