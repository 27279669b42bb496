"""Write Goose sessions from a neutral spec, as Goose saves them.

    write_session(goose_data_dir, spec) -> the session id

`goose_data_dir` is Goose's data folder (`~/.local/share/goose`). The spec (a generated corpus's
neutral form):

    {"session_id", "cwd", "started_at" (ISO), "model", "title" (or None),
     "turns": [{"prompt", "at" (ISO), "assistant", "input_tokens", "output_tokens",
                "calls": [{"batch", "kind": read|write|edit|shell|search, "path", "command",
                           "content", "old", "new", "output", "error", "exit_code"}]}]}

As Goose writes them (block/goose `crates/goose/src/session/session_manager.rs`: the tables
`sessions` and `messages` of `sessions/sessions.db`, schema version 5, and `model_config_json` of
later releases): each prompt a `user` message with a `text` part; each batch of calls one
`assistant` message with its `toolRequest` parts, answered by one `user` message with their
`toolResponse` parts (a failed call: `isError`); the answer a last `assistant` message. Goose
keeps tokens per session only: the spec's are summed into `accumulated_*_tokens`.
`legacy=True` writes the older `sessions/<id>.jsonl` instead (a metadata line, then messages).

Standard library only; imports nothing from jacked.
"""
from __future__ import annotations

import json
import sqlite3
from datetime import datetime, UTC
from pathlib import Path
from typing import Any

TOOLS = {"read": ("developer__text_editor", "view"), "write": ("developer__text_editor", "write"),
         "edit": ("developer__text_editor", "str_replace"), "shell": ("developer__shell", None),
         "search": ("developer__shell", None)}
SCHEMA = """
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user', working_dir TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    extension_data TEXT DEFAULT '{}', total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER, accumulated_output_tokens INTEGER,
    schedule_id TEXT, recipe_json TEXT, user_recipe_values_json TEXT, provider_name TEXT, model_config_json TEXT);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL,
    content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL, timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    tokens INTEGER, metadata_json TEXT);
CREATE INDEX idx_messages_session ON messages(session_id);
INSERT INTO schema_version (version) VALUES (5);
"""
VISIBLE = {"userVisible": True, "agentVisible": True}


def epoch(at: str) -> int:
    dt = datetime.fromisoformat(at.replace("Z", "+00:00"))
    return int((dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp())


def sql_time(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def message(role: str, created: int, content: list[dict[str, Any]], **metadata: bool) -> dict[str, Any]:
    return {"role": role, "created": created, "content": content, "metadata": {**VISIBLE, **metadata}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def request(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "toolRequest", "id": call_id,
            "toolCall": {"status": "success", "value": {"name": name, "arguments": arguments}}}


def response(call_id: str, output: str, is_error: bool = False) -> dict[str, Any]:
    return {"type": "toolResponse", "id": call_id,
            "toolResult": {"status": "success", "value": {"content": [text(output)], "isError": is_error}}}


def _args(call: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    name, command = TOOLS[call["kind"]]
    if command is None:
        return name, {"command": call.get("command") or ("rg TODO" if call["kind"] == "search" else "")}
    args: dict[str, Any] = {"command": command, "path": call.get("path")}
    if command == "write":
        args["file_text"] = call.get("content") or ""
    elif command == "str_replace":
        args |= {"old_str": call.get("old") or "", "new_str": call.get("new") or ""}
    return name, args


def messages_of(spec: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n, turn in enumerate(spec["turns"]):
        at = epoch(turn.get("at") or spec["started_at"])
        out.append(message("user", at, [text(turn["prompt"])]))
        batches: dict[int, list[dict[str, Any]]] = {}
        for call in turn.get("calls") or []:
            batches.setdefault(int(call.get("batch", 0)), []).append(call)
        k = 0
        for _, calls in sorted(batches.items()):
            requests, responses = [], []
            for call in calls:
                k += 1
                cid = f"toolu_{n}_{k}"
                requests.append(request(cid, *_args(call)))
                responses.append(response(cid, call.get("output") or "", bool(call.get("error"))))
            out.append(message("assistant", at, requests))
            out.append(message("user", at, responses))
        out.append(message("assistant", at, [text(turn.get("assistant") or "")]))
    return out


def create_db(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = not path.exists()
    conn = sqlite3.connect(path)
    if fresh:
        conn.executescript(SCHEMA)
    return conn


def insert_session(conn: sqlite3.Connection, row: dict[str, Any], messages: list[dict[str, Any]]) -> None:
    conn.execute(f"INSERT INTO sessions ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})", list(row.values()))
    for m in messages:
        conn.execute("INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json) "
                     "VALUES (?, ?, ?, ?, ?)", (row["id"], m["role"], json.dumps(m["content"]), m["created"],
                                               json.dumps(m["metadata"])))
    conn.commit()


def write_session(goose_dir: Path, spec: dict[str, Any], legacy: bool = False) -> str:
    """One session from a spec into Goose's data folder."""
    sid = spec["session_id"]
    messages = messages_of(spec)
    tin = sum(t.get("input_tokens") or 0 for t in spec["turns"])
    tout = sum(t.get("output_tokens") or 0 for t in spec["turns"])
    start = epoch(spec["started_at"])
    end = max([start] + [m["created"] for m in messages])
    if legacy:
        folder = goose_dir / "sessions"
        folder.mkdir(parents=True, exist_ok=True)
        meta = {"working_dir": spec.get("cwd") or "", "description": spec.get("title") or "", "schedule_id": None,
                "message_count": len(messages), "total_tokens": tin + tout, "input_tokens": tin,
                "output_tokens": tout, "accumulated_total_tokens": tin + tout,
                "accumulated_input_tokens": tin, "accumulated_output_tokens": tout}
        lines = [json.dumps(meta)] + [json.dumps(m) for m in messages]
        (folder / f"{sid}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        return sid
    conn = create_db(goose_dir / "sessions" / "sessions.db")
    try:
        insert_session(conn, {"id": sid, "name": spec.get("title") or "", "working_dir": spec.get("cwd") or "",
                              "created_at": sql_time(start), "updated_at": sql_time(end),
                              "accumulated_input_tokens": tin, "accumulated_output_tokens": tout,
                              "accumulated_total_tokens": tin + tout, "provider_name": "anthropic",
                              "model_config_json": json.dumps({"model_name": spec.get("model") or "default"})},
                       messages)
    finally:
        conn.close()
    return sid
