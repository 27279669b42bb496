"""Timelines: a typed event stream of what happened, rebuilt from the catalog.

Event types (every event has `type`, `session_id`, `turn_index`, `timestamp`):

- `intent`     a prompt that started a turn
- `action`     a tool call: arguments and result in brief, duration
- `file`       a change to a file (Edit / MultiEdit / Write): operation, diff from the
               `structuredPatch`, content hashes before and after, and the Claude Code
               `file-history/` backup that holds the file's earlier content, where present
- `error`      a failed tool call or command with its message, and whether a later call of
               the same session succeeded at the same thing (`resolved`, `resolved_by`)
- `llm`        one API response: model and tokens
- `compaction` a compaction boundary (trigger, tokens before) or a compaction summary
- `subagent`   a subagent run started by a Task/Agent call: type, description, report
- `decision`   what was chosen, with the alternatives: an AskUserQuestion answer (`kind`
               question), an ExitPlanMode plan approved or rejected (plan), EnterPlanMode
               (plan_mode), a TodoWrite list re-planned (todos); `text` says it in one line
- `feedback`   the user's verdict: a call refused (tool_rejected, plan_rejected, with the
               reason given), an interruption (interrupted), a prompt correcting the turn
               before it (correction); `text` says it in one line
- `snapshot`   the state a turn started from: cwd, branch, Claude Code version, model,
               permission mode, files Claude Code backed up (see `jacked.sources.decisions`)

Everything shown here was redacted before it was stored (see `jacked.sources.redact`).
"""
from __future__ import annotations

import heapq
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

from jacked.catalog import Catalog, timeline_queries
from jacked.errors import JackedError
from jacked.util.time import parse_ts
from jacked.sources.model import WRITE_TOOLS
from jacked.sources.attempts import FILE_TOOLS, resolutions
from jacked.sources.briefs import content_hash
from jacked.sources.decisions import decision_text, feedback_text

EVENT_TYPES = ("intent", "action", "file", "error", "llm", "compaction", "subagent", "decision", "feedback",
               "snapshot")
BRIEF_CHARS = 600  # arguments and results in brief: the full text is one `jacked turns` away
# Order of event kinds at the same moment: the state it started from, the prompt, the response,
# its call, what the call did, what was decided, what the user said about it.
_RANK = {"snapshot": -1, "intent": 0, "compaction": 1, "llm": 2, "action": 3, "file": 4, "error": 5, "subagent": 6,
         "decision": 7, "feedback": 8}
TURN_EVENT_TYPES = frozenset({"decision", "feedback", "snapshot"})  # stored as turn_events rows


class TimelineError(JackedError, ValueError):
    """A timeline request the user must fix (an unknown event type)."""


@dataclass
class TimelineQuery:
    """Which events: of one session or of a repo (or all), of some types, touching one file."""

    session_id: str | None = None
    types: list[str] | None = None
    repo: str | None = None
    file: str | None = None
    limit: int | None = None
    offset: int = 0

    def validate(self) -> None:
        for t in self.types or []:
            if t not in EVENT_TYPES:
                raise TimelineError(f"unknown event type {t!r}: use one of {', '.join(EVENT_TYPES)}")


def _brief(text: str | None, limit: int = BRIEF_CHARS) -> str | None:
    if text is None:
        return None
    return text if len(text) <= limit else text[:limit] + f"… [+{len(text) - limit} chars]"


def _ms_between(a: str | None, b: str | None) -> int | None:
    x, y = parse_ts(a), parse_ts(b)
    if x is None or y is None:
        return None
    return max(0, int((y - x).total_seconds() * 1000))


def _resolve_path(path: str, cwd: str | None) -> str:
    """A file-history path (often relative to the session's cwd) as an absolute one."""
    if path.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", path) or not cwd:
        return path
    return posixpath.normpath(posixpath.join(cwd.replace("\\", "/"), path))


def path_matches(stored: str | None, wanted: str) -> bool:
    """An absolute `wanted` path matches exactly; a relative one matches as a path suffix."""
    if not stored:
        return False
    s = stored.replace("\\", "/")
    w = wanted.replace("\\", "/").rstrip("/")
    if w.startswith("/") or re.match(r"^[A-Za-z]:/", w):
        return s == w
    w = w[2:] if w.startswith("./") else w
    return s == w or s.endswith("/" + w)


class BackupIndex:
    """The file-history backups of one session, looked up by absolute path and time."""

    def __init__(self, catalog: Catalog, session_id: str, cwd: str | None, claude_dir: Path | None) -> None:
        self.by_path: dict[str, list[dict[str, Any]]] = {}
        self.root = claude_dir / "file-history" / session_id if claude_dir else None
        for r in timeline_queries.backup_rows(catalog, session_id):
            self.by_path.setdefault(_resolve_path(r["path"], cwd), []).append(r)

    def before(self, path: str | None, timestamp: str | None) -> dict[str, Any] | None:
        """The newest backup of `path` taken no later than `timestamp` (the change's result time:
        Claude Code backs a file up just before it applies the change, after the call was written)."""
        if not path:
            return None
        found = None
        for b in self.by_path.get(path, []):
            if timestamp and b["backup_time"] and b["backup_time"] > timestamp:
                break
            found = b
        if found is None:
            return None
        out: dict[str, Any] = {"version": found["version"], "backup_file": found["backup_file"],
                               "backup_time": found["backup_time"], "available": False}
        if found["backup_file"] and self.root is not None:
            f = self.root / found["backup_file"]
            out["content_path"] = str(f)
            if f.is_file():
                out["available"] = True
                try:
                    out["content_hash"] = content_hash(f.read_bytes().decode("utf-8", "surrogateescape"))
                except OSError:
                    out["available"] = False
        elif found["backup_file"] is None:
            out["note"] = "the file did not exist before this change"
        return out


def file_operation(tool: str, created: bool) -> str:
    if tool in WRITE_TOOLS:
        return "create" if created else "write"
    return "edit"


def session_events(catalog: Catalog, session_id: str, types: set[str], claude_dir: Path | None = None,
                   file: str | None = None) -> list[dict[str, Any]]:
    """Every event of one session (of the wanted types), in order."""
    row = catalog.get_session_row(session_id)
    if row is None:
        return []
    sid = session_id
    events: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    turns = {t["turn_index"]: t for t in catalog.turn_rows(sid)}

    def add(ev_type: str, turn_index: int | None, ts: str | None, order: int, **data: Any) -> None:
        if ev_type not in types:
            return
        t = turns.get(turn_index) if turn_index is not None else None
        when = ts or (t["started_at"] if t else None) or ""
        key = (turn_index if turn_index is not None else -1, when, _RANK[ev_type], order)
        events.append((key, {"type": ev_type, "session_id": sid, "turn_index": turn_index, "timestamp": ts, **data}))

    if file is None:
        for t in turns.values():
            if t["prompt"] is not None:
                add("intent", t["turn_index"], t["started_at"], 0, prompt=t["prompt"],
                    is_slash_command=bool(t["is_slash_command"]), interrupted=bool(t["interrupted"]))
        if "llm" in types:
            for c in timeline_queries.main_llm_calls(catalog, sid):
                add("llm", c["turn_index"], c["timestamp"], c["ord"], model=c["model"], message_id=c["message_id"],
                    input_tokens=c["input_tokens"], output_tokens=c["output_tokens"],
                    cache_read_tokens=c["cache_read_tokens"], cache_creation_tokens=c["cache_creation_tokens"],
                    tool_calls=c["tool_calls"])
        if "compaction" in types:
            for e in timeline_queries.compaction_events(catalog, sid):
                add("compaction", e["turn_index"], e["timestamp"], e["ord"], kind="boundary",
                    **orjson.loads(e["data"] or "{}"))
            for x in catalog.text_rows(sid):
                if x["kind"] == "compact_summary":
                    add("compaction", x["turn_index"], x["timestamp"], 100 + x["ord"], kind="summary",
                        summary=_brief(x["text"], 1500))
        stored = types & TURN_EVENT_TYPES
        for e in timeline_queries.turn_event_rows(catalog, sid, stored) if stored else []:
            add(e["type"], e["turn_index"], e["timestamp"], e["ord"], **turn_event_fields(e["type"], e["data"]))
        if "subagent" in types:
            for a in catalog.subagent_rows(sid):
                if a["is_warmup"]:
                    continue
                add("subagent", a["turn_index"], a["started_at"], a["ord"], agent_id=a["agent_id"],
                    agent_type=a["agent_type"], description=a["description"], layout=a["layout"],
                    tool_use_id=a["tool_use_id"], ended_at=a["ended_at"], tool_call_count=a["tool_call_count"],
                    tool_error_count=a["tool_error_count"], summary=_brief(a["summary_text"], 1500))
    if types & {"action", "file", "error"}:
        invs = catalog.invocation_rows(sid)
        solved = resolutions(invs) if "error" in types else {}
        backups = BackupIndex(catalog, sid, row.get("cwd"), claude_dir) if "file" in types else None
        for r in invs:
            if file is not None and not path_matches(r["file_path"], file):
                continue
            ti, order = r["turn_index"], r["ord"]
            add("action", ti, r["timestamp"], order, tool_name=r["tool_name"], tool_use_id=r["tool_use_id"],
                sequence=r["sequence"], parallel_group=r["parallel_group"], is_error=bool(r["is_error"]),
                file_path=r["file_path"], command=r["command"], input=_brief(r["input_brief"]),
                result=_brief(r["result_brief"]), duration_ms=_ms_between(r["timestamp"], r["result_timestamp"]))
            if r["tool_name"] in FILE_TOOLS and not r["is_error"] and backups is not None:
                add("file", ti, r["timestamp"], order, path=r["file_path"], tool_name=r["tool_name"],
                    tool_use_id=r["tool_use_id"], operation=file_operation(r["tool_name"], bool(r["file_created"])),
                    lines_added=r["lines_added"], lines_removed=r["lines_removed"], diff=r["diff"],
                    before_hash=r["before_hash"], after_hash=r["after_hash"],
                    backup=backups.before(r["file_path"], r["result_timestamp"] or r["timestamp"]))
            if r["is_error"]:
                by = solved.get((ti, order))
                add("error", ti, r["result_timestamp"] or r["timestamp"], order, tool_name=r["tool_name"],
                    tool_use_id=r["tool_use_id"], command=r["command"], file_path=r["file_path"],
                    message=_brief(r["result_brief"]), resolved=by is not None, resolved_by=by)
    events.sort(key=lambda e: e[0])
    return [e for _, e in events]


def turn_event_fields(etype: str, data: str | None) -> dict[str, Any]:
    """A decision, feedback or snapshot row's fields, with decisions and feedback said in one line."""
    d = orjson.loads(data or "{}")
    if etype == "decision":
        d["text"] = decision_text(d)
    elif etype == "feedback":
        d["text"] = feedback_text(d)
    return d


def timeline(catalog: Catalog, q: TimelineQuery, claude_dir: Path | None = None) -> list[dict[str, Any]]:
    """The `timeline --json` list (see `iter_timeline`)."""
    return list(iter_timeline(catalog, q, claude_dir))


def iter_timeline(catalog: Catalog, q: TimelineQuery, claude_dir: Path | None = None) -> Iterator[dict[str, Any]]:
    """The events of one session, or of every session (of a repo) oldest first, from `q.offset`, at
    most `q.limit`: read as they are consumed (`TimelineError` at once if `q` is bad)."""
    q.validate()
    types = set(q.types or EVENT_TYPES)
    if q.session_id:
        events: Iterator[dict[str, Any]] = iter(session_events(catalog, q.session_id, types, claude_dir, q.file))
    else:
        counted = {"decision": "decision_count", "feedback": "feedback_count"}
        sessions = timeline_queries.timeline_sessions(
            catalog, q.repo, q.file, with_errors=types <= {"error"},
            with_counts=[counted[t] for t in types] if types <= set(counted) else ())
        events = _across_sessions(catalog, sessions, types, claude_dir, q.file)
    end = None if q.limit is None else q.offset + q.limit
    return islice(events, q.offset, end)


def _in_time(events: list[dict[str, Any]], start: str) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """A session's events in its own order, each with the moment it sorts at among other sessions'
    events: its timestamp, but never before its session's start or an event before it (an event
    without a timestamp takes the one before it), so each session keeps its own order."""
    at = start
    for position, event in enumerate(events):
        at = max(at, event["timestamp"] or "")
        yield at, position, event


def _across_sessions(catalog: Catalog, sessions: list[tuple[str, str]], types: set[str],
                     claude_dir: Path | None, file: str | None) -> Iterator[dict[str, Any]]:
    """The events of `sessions` ((id, start) oldest first) merged by time. A session is read only
    when the merge reaches its start, and let go when its last event is out: a page of the timeline
    reads the sessions it shows, and the whole of it holds only the sessions open at one moment."""
    open_streams: list[tuple[str, int, int, dict[str, Any], Iterator[tuple[str, int, dict[str, Any]]]]] = []

    def push(rank: int, stream: Iterator[tuple[str, int, dict[str, Any]]]) -> None:
        head = next(stream, None)
        if head is not None:  # rank and position break ties: no two entries compare their events
            heapq.heappush(open_streams, (head[0], rank, head[1], head[2], stream))

    upcoming = iter(enumerate(sessions))
    following = next(upcoming, None)
    while True:
        # a session starting no later than the earliest event waiting may hold an earlier one
        while following is not None and (not open_streams or following[1][1] <= open_streams[0][0]):
            rank, (sid, start) = following
            push(rank, _in_time(session_events(catalog, sid, types, claude_dir, file), start))
            following = next(upcoming, None)
        if not open_streams:
            return
        _, rank, _, event, stream = heapq.heappop(open_streams)
        yield event
        push(rank, stream)


def file_history(catalog: Catalog, path: str, claude_dir: Path | None = None,
                 repo: str | None = None) -> list[dict[str, Any]]:
    """`file-history PATH --json`: every recorded change to a file across sessions, oldest first."""
    rows = [r for r in timeline_queries.file_change_rows(catalog, path, FILE_TOOLS, repo)
            if path_matches(r["file_path"], path)]
    rows.sort(key=lambda r: (r["timestamp"] or "", r["session_id"], r["turn_index"], r["ord"]))
    backup_cache: dict[str, BackupIndex] = {}
    out = []
    for r in rows:
        sid = r["session_id"]
        if sid not in backup_cache:
            backup_cache[sid] = BackupIndex(catalog, sid, r["session_cwd"], claude_dir)
        out.append({
            "session_id": sid, "turn_index": r["turn_index"], "timestamp": r["timestamp"],
            "operation": file_operation(r["tool_name"], bool(r["file_created"])), "tool_name": r["tool_name"],
            "path": r["file_path"], "repo_name": r["repo_name"], "lines_added": r["lines_added"],
            "lines_removed": r["lines_removed"], "diff": r["diff"], "before_hash": r["before_hash"],
            "after_hash": r["after_hash"],
            "backup": backup_cache[sid].before(r["file_path"], r["result_timestamp"] or r["timestamp"]),
        })
    return out
