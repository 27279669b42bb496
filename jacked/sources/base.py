"""The transcript-source seam: what jacked needs from a coding agent's session files.

A source finds the sessions an agent wrote under its folder (`discover`) and rebuilds one
into the agent-neutral `jacked.sources.model.Session` (`read`). Everything after that — the
catalog, the index, search, retrieve, the views — is the same for every agent.

A source is one package under `jacked/sources/` plus one line in `jacked.sources.registry`.
Claude Code (`jacked.sources.claude`) is read by the incremental scanner (files resumed from
their last complete line); the other agents' sessions are small and are re-read whole when
their fingerprint changes (`jacked.ingest.agents`).
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from jacked.sources.model import Session
from jacked.sources.redact import redact_many

CLAUDE = "claude"


@dataclass(slots=True)
class FoundSession:
    """One session a source found: its id, the files it is read from, and a fingerprint that
    changes whenever what `read` returns may change (size and mtime of the files, by default)."""

    session_id: str
    location: str  # the catalog's key for it: its main file's path (or `<db>#<id>` for a database)
    files: list[Path] = field(default_factory=list)
    fingerprint: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # whatever `read` needs from discovery: each source its own


@runtime_checkable
class TranscriptSource(Protocol):
    """A coding agent whose sessions jacked reads."""

    name: str  # the `agent` of its sessions: "claude", "codex", ...
    label: str  # for people: "Codex CLI"
    parser_version: int  # bump when `read` changes what it returns: every session is re-read

    def default_root(self, environ: Mapping[str, str]) -> Path:
        """Where the agent keeps its sessions on this machine (its own variables honoured)."""
        ...

    def discover(self, root: Path, errors: list[str]) -> Iterable[FoundSession]:
        """The sessions under `root`; unreadable parts are skipped with a line in `errors`."""
        ...

    def read(self, found: FoundSession) -> Session:
        """The whole session (texts not yet redacted: the reader redacts); raises `OSError` or
        `ValueError` for a file it cannot use."""
        ...


def stat_fingerprint(paths: Iterable[Path]) -> str:
    """A fingerprint of files by name, size and mtime (no file is opened)."""
    h = hashlib.blake2b(digest_size=12)
    for p in sorted(paths):
        try:
            st = os.stat(p)
        except OSError:
            continue
        h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def redact_session(s: Session) -> Session:
    """Redact every text of a session built by a source, in one batch (as the Claude reader does)."""
    slots: list[tuple[object, str | int]] = []

    def take(obj: object, *names: str) -> None:
        for name in names:
            if isinstance(getattr(obj, name), str):
                slots.append((obj, name))

    take(s, "cwd", "git_branch", "plan")
    for unit in s.texts:
        take(unit, "text")
    turns = [*s.turns, *(t for a in s.subagents for t in a.turns)]
    for a in s.subagents:
        take(a, "description", "prompt", "summary_text", "agent_type")
    for t in turns:
        take(t, "prompt", "assistant_text", "raw_text")
        for inv in t.invocations:
            take(inv, "input_brief", "result_brief", "command", "description", "diff", "file_path")
        # the metrics were computed from the calls before redaction: their lists hold the same texts
        for items in (t.metrics.bash_commands, t.metrics.files_read, t.metrics.files_written, t.metrics.files_modified):
            slots.extend((items, i) for i, v in enumerate(items) if isinstance(v, str))
        for ev in t.events:
            if isinstance(ev.data, dict):
                for k, v in ev.data.items():
                    if isinstance(v, str):
                        slots.append((ev.data, k))
    values = redact_many([o[n] if isinstance(o, (dict, list)) else getattr(o, n)  # type: ignore[index, arg-type]  # a key or an index into a dict or list, else an attribute name
                          for o, n in slots])
    for (obj, name), value in zip(slots, values):
        if isinstance(obj, (dict, list)):
            obj[name] = value  # type: ignore[index]  # a key or an index, as the slot was taken
        else:
            setattr(obj, name, value)  # type: ignore[arg-type]  # an attribute name, as the slot was taken
    return s
