"""Write opencode sessions from a neutral spec, in opencode's own on-disk formats.

    write_session(root, spec)                     -> [root/opencode.db]         (newer releases)
    write_session(root, spec, layout="storage")   -> the JSON files written     (older releases)

`root` is opencode's data folder (`$XDG_DATA_HOME/opencode`). The spec (a generated corpus's
neutral form):

    {"session_id", "cwd", "started_at" (ISO), "model", "title" (or None),
     "turns": [{"prompt", "at" (ISO), "assistant", "input_tokens", "output_tokens",
                "calls": [{"batch", "kind": read|write|edit|shell|search, "path", "command",
                           "content", "old", "new", "output", "error", "exit_code"}]}]}

As opencode writes them: each prompt is a user message with one text part; each batch of calls
is one assistant message (one model step: `step-start`, the tool parts, `step-finish`); the
answer is a last assistant message with a text part. The turn's tokens are on the answer's
`step-finish` (the steps before it have zero tokens), so the turn's total is the spec's. A
failed shell call completes with a non-zero `metadata.exit` (opencode's bash tool reports the
exit code, it does not fail); any other failed call has `state.status` "error".

Standard library only; imports nothing from jacked. The SQL schema follows opencode's drizzle
tables (`packages/opencode/src/session/session.sql.ts`, `project/project.sql.ts`).
"""
from __future__ import annotations

import difflib
import hashlib
import json
import sqlite3
from datetime import datetime, UTC
from pathlib import Path
from typing import Any

VERSION = "1.2.0"
SCHEMA = """
CREATE TABLE IF NOT EXISTS project (
    id TEXT PRIMARY KEY, worktree TEXT NOT NULL, vcs TEXT, name TEXT, icon_url TEXT, icon_color TEXT,
    time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, time_initialized INTEGER,
    sandboxes TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS session (
    id TEXT PRIMARY KEY, project_id TEXT NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    parent_id TEXT, slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL,
    share_url TEXT, summary_additions INTEGER, summary_deletions INTEGER, summary_files INTEGER,
    summary_diffs TEXT, revert TEXT, permission TEXT,
    time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, time_compacting INTEGER, time_archived INTEGER
);
CREATE INDEX IF NOT EXISTS session_project_idx ON session (project_id);
CREATE INDEX IF NOT EXISTS session_parent_idx ON session (parent_id);
CREATE TABLE IF NOT EXISTS message (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
    time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS message_session_idx ON message (session_id);
CREATE TABLE IF NOT EXISTS part (
    id TEXT PRIMARY KEY, message_id TEXT NOT NULL REFERENCES message(id) ON DELETE CASCADE,
    session_id TEXT NOT NULL, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS part_message_idx ON part (message_id);
CREATE INDEX IF NOT EXISTS part_session_idx ON part (session_id);
"""

Message = tuple[dict[str, Any], list[dict[str, Any]]]


def ms(ts: str) -> int:
    dt = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def iso(t: int) -> str:
    return datetime.fromtimestamp(t / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class _Ids:
    """Ascending ids as opencode makes them (`msg_…`, `prt_…`), unique to one session."""

    def __init__(self, session_id: str) -> None:
        self.tag = hashlib.blake2b(session_id.encode(), digest_size=5).hexdigest()
        self.n = 0

    def __call__(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n:06d}{self.tag}"


def _diff(path: str, before: str, after: str) -> tuple[str, int, int]:
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), path, path, lineterm=""))
    added = sum(1 for ln in lines[2:] if ln.startswith("+"))
    removed = sum(1 for ln in lines[2:] if ln.startswith("-"))
    return "Index: " + path + "\n" + "=" * 67 + "\n" + "\n".join(lines) + "\n", added, removed


def _tool(call: dict[str, Any], call_id: str, start: int) -> tuple[str, dict[str, Any]]:
    """(tool name, state) of one spec call."""
    kind, path, output = call["kind"], call.get("path"), call.get("output") or ""
    failed = bool(call.get("error"))
    meta: dict[str, Any] = {}
    if kind == "read":
        name, inp = "read", {"filePath": path}
        meta = {"preview": output[:200]}
    elif kind == "write":
        name, inp = "write", {"filePath": path, "content": call.get("content") or ""}
        meta = {"diagnostics": {}, "filepath": path, "exists": False}
    elif kind == "edit":
        old, new = call.get("old") or "", call.get("new") or ""
        name, inp = "edit", {"filePath": path, "oldString": old, "newString": new}
        diff, added, removed = _diff(path or "file", old, new)
        meta = {"diagnostics": {}, "diff": diff,
                "filediff": {"file": path, "before": old, "after": new, "additions": added, "deletions": removed}}
    elif kind == "shell":
        name, inp = "bash", {"command": call.get("command") or "", "description": "Runs a command"}
        code = call.get("exit_code")
        code = code if isinstance(code, int) else (1 if failed else 0)
        meta = {"output": output, "exit": code, "description": "Runs a command", "truncated": False}
        state = {"status": "completed", "input": inp, "output": output, "title": inp["command"], "metadata": meta,
                 "time": {"start": start, "end": start + 400}}
        return name, state  # a failed shell call: completed, with its non-zero exit code
    else:  # search
        name, inp = "grep", {"pattern": call.get("command") or "TODO", "path": path}
        meta = {"matches": output.count("\n") + bool(output), "truncated": False}
    if failed:
        return name, {"status": "error", "input": inp, "error": output or "Error",
                      "time": {"start": start, "end": start + 400}}
    return name, {"status": "completed", "input": inp, "output": output, "title": path or name, "metadata": meta,
                  "time": {"start": start, "end": start + 400}}


def records(spec: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], list[Message]]:
    """(project, session info, messages with their parts) of a spec, as opencode stores them."""
    sid, cwd, model = spec["session_id"], spec["cwd"], spec["model"]
    ids = _Ids(sid)
    created = ms(spec["started_at"])
    project_id = hashlib.sha1(cwd.encode()).hexdigest()
    project = {"id": project_id, "worktree": cwd, "vcs": "git", "time": {"created": created, "updated": created}}
    messages: list[Message] = []
    end = created
    path_info = {"cwd": cwd, "root": cwd}
    for turn in spec["turns"]:
        at = ms(turn["at"])
        user_id = ids("msg")
        user = {"id": user_id, "sessionID": sid, "role": "user", "time": {"created": at}, "agent": "build",
                "model": {"providerID": "anthropic", "modelID": model}}
        messages.append((user, [{"id": ids("prt"), "sessionID": sid, "messageID": user_id, "type": "text",
                                 "text": turn["prompt"]}]))
        t = at + 1000
        batches: dict[int, list[dict[str, Any]]] = {}
        for call in turn.get("calls", []):
            batches.setdefault(int(call.get("batch", 0)), []).append(call)
        steps = [("tool-calls", calls) for _, calls in sorted(batches.items())] + [("stop", [])]
        for i, (reason, calls) in enumerate(steps):
            last = i == len(steps) - 1
            tokens = {"input": turn.get("input_tokens", 0) if last else 0,
                      "output": turn.get("output_tokens", 0) if last else 0,
                      "reasoning": 0, "cache": {"read": 0, "write": 0}}
            mid = ids("msg")
            parts: list[dict[str, Any]] = [{"id": ids("prt"), "sessionID": sid, "messageID": mid, "type": "step-start"}]
            for call in calls:
                call_id = "toolu_" + ids("call")[5:]
                name, state = _tool(call, call_id, t)
                parts.append({"id": ids("prt"), "sessionID": sid, "messageID": mid, "type": "tool", "callID": call_id,
                              "tool": name, "state": state})
            if last and turn.get("assistant"):
                parts.append({"id": ids("prt"), "sessionID": sid, "messageID": mid, "type": "text",
                              "text": turn["assistant"], "time": {"start": t + 500, "end": t + 900}})
            parts.append({"id": ids("prt"), "sessionID": sid, "messageID": mid, "type": "step-finish",
                          "reason": reason, "cost": 0, "tokens": tokens})
            info = {"id": mid, "sessionID": sid, "role": "assistant", "time": {"created": t, "completed": t + 1000},
                    "parentID": user_id, "modelID": model, "providerID": "anthropic", "mode": "build",
                    "agent": "build", "path": path_info, "cost": 0, "tokens": tokens, "finish": reason}
            messages.append((info, parts))
            end = t + 1000
            t += 1500
    title = spec.get("title") or f"New session - {iso(created)}"
    info = {"id": sid, "slug": "generated", "version": VERSION, "projectID": project_id, "directory": cwd,
            "title": title, "time": {"created": created, "updated": end}}
    return project, info, messages


def write_db(db: Path, project: dict[str, Any], sessions: list[tuple[dict[str, Any], list[Message]]]) -> None:
    """Sessions (with their project) into an opencode database, created if missing."""
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(SCHEMA)
        t = project.get("time", {})
        conn.execute("INSERT OR REPLACE INTO project (id, worktree, vcs, time_created, time_updated) "
                     "VALUES (?, ?, ?, ?, ?)",
                     (project["id"], project["worktree"], project.get("vcs"), t.get("created", 0), t.get("updated", 0)))
        for info, messages in sessions:
            times = info.get("time", {})
            conn.execute(
                "INSERT OR REPLACE INTO session (id, project_id, parent_id, slug, directory, title, version, "
                "time_created, time_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (info["id"], project["id"], info.get("parentID"), info.get("slug", ""), info.get("directory", ""),
                 info.get("title", ""), info.get("version", ""), times.get("created", 0), times.get("updated", 0)))
            for message, parts in messages:
                data = {k: v for k, v in message.items() if k not in ("id", "sessionID")}
                created = message.get("time", {}).get("created", 0)
                conn.execute("INSERT OR REPLACE INTO message (id, session_id, time_created, time_updated, data) "
                             "VALUES (?, ?, ?, ?, ?)", (message["id"], info["id"], created, created, json.dumps(data)))
                for part in parts:
                    pdata = {k: v for k, v in part.items() if k not in ("id", "sessionID", "messageID")}
                    conn.execute("INSERT OR REPLACE INTO part (id, message_id, session_id, time_created, time_updated, "
                                 "data) VALUES (?, ?, ?, ?, ?, ?)",
                                 (part["id"], message["id"], info["id"], created, created, json.dumps(pdata)))
        conn.commit()
    finally:
        conn.close()


def write_storage(root: Path, project: dict[str, Any], info: dict[str, Any], messages: list[Message]) -> list[Path]:
    """One session as the JSON store's files under `root/storage/`; the paths written."""
    storage = root / "storage"
    written: list[Path] = []

    def put(path: Path, data: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        written.append(path)

    put(storage / "project" / f"{project['id']}.json", project)
    put(storage / "session" / project["id"] / f"{info['id']}.json", info)
    for message, parts in messages:
        put(storage / "message" / info["id"] / f"{message['id']}.json", message)
        for part in parts:
            put(storage / "part" / message["id"] / f"{part['id']}.json", part)
    return written


def write_session(root: Path, spec: dict[str, Any], layout: str = "db") -> list[Path]:
    """One session from a spec under opencode's data folder `root`: into `opencode.db` (added to
    it when it exists), or as the JSON store's files (`layout="storage"`)."""
    project, info, messages = records(spec)
    if layout == "storage":
        return write_storage(root, project, info, messages)
    db = root / "opencode.db"
    write_db(db, project, [(info, messages)])
    return [db]
