"""An independent count of a Cursor `User` folder, straight from its databases.

Standard library only (json, sqlite3) and nothing from jacked, so jacked's reading of the same
folder is checked against a second, deliberately plain reading rather than against itself.

    python tests/agents/count_cursor.py USER_DIR [--json]

Rules, as Cursor records a chat:
* databases: `globalStorage/state.vscdb`, then every `workspaceStorage/*/state.vscdb`; a chat is
  a `composerData:<id>` row of table `cursorDiskKV` (an id already counted from an earlier
  database is not counted again) whose value is a JSON object;
* its bubbles are the `bubbleId:<id>:*` rows (when there are none, the composer's own
  `conversation` array or `conversationMap` values);
* a chat whose `subagentInfo.parentComposerId` names a chat of the same database is a subagent
  run, counted under its top-level chat (any depth); a chat with no bubble is not counted;
* a turn is a user bubble (`type` 1) whose `text` is not blank;
* a tool call is an assistant bubble (`type` 2) with a `toolFormerData` object that has a
  `name` or a `tool`; it failed when its `status` is "error", its `userDecision` "rejected",
  its `result` (JSON text) an object with a non-empty `error`, or when a terminal command's
  result has a non-zero integer `exitCode`;
* approved / refused: a tool call whose `userDecision` is "accepted" / "rejected"; interrupted: a
  chat whose `status` is "aborted" (its last turn);
* tokens: every bubble's `tokenCount.inputTokens` / `outputTokens` (integers);
* Cursor 0.4x kept a workspace's whole composer chats in that workspace database's `ItemTable`
  key `composer.composerData`: each `allComposers` entry (an object with a `composerId` not
  already counted) with bubbles of its own (its `conversation` array, else its
  `conversationMap` values) is a chat of those bubbles (later releases list only headers there);
* the older chat pane (`ItemTable` key `workbench.panel.aichat.view.aichat.chatdata` of a
  workspace database): each tab with a user bubble (`type` "user") with text is a chat; its turns
  are those bubbles; it has no tool calls.
"""
from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

TERMINAL_TOOLS = {"run_terminal_cmd", "run_terminal_command", "run_terminal_command_v2"}


def _load(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def _rows(db: Path, table: str) -> list[tuple[str, Any]]:
    conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone():
            return []
        return [(str(k), v) for k, v in conn.execute(f"SELECT key, value FROM {table}")]
    finally:
        conn.close()


def _figures(bubbles: list[Any]) -> dict[str, int]:
    turns = calls = errors = tin = tout = approved = refused = 0
    for b in bubbles:
        if not isinstance(b, dict):
            continue
        if b.get("type") in (1, "user") and isinstance(b.get("text"), str) and b["text"].strip():
            turns += 1
        tokens = b.get("tokenCount") if isinstance(b.get("tokenCount"), dict) else {}
        tin += tokens["inputTokens"] if type(tokens.get("inputTokens")) is int else 0
        tout += tokens["outputTokens"] if type(tokens.get("outputTokens")) is int else 0
        tool = b.get("toolFormerData")
        if b.get("type") != 2 or not isinstance(tool, dict) or not (tool.get("name") or tool.get("tool") is not None):
            continue
        calls += 1
        approved += tool.get("userDecision") == "accepted"
        refused += tool.get("userDecision") == "rejected"
        result = _load(tool.get("result")) if isinstance(tool.get("result"), str) else tool.get("result")
        result = result if isinstance(result, dict) else {}
        code = result.get("exitCode")
        if (tool.get("status") == "error" or tool.get("userDecision") == "rejected"
                or (isinstance(result.get("error"), str) and result["error"].strip())
                or (tool.get("name") in TERMINAL_TOOLS and type(code) is int and code != 0)):
            errors += 1
    return {"turns": turns, "tool_calls": calls, "errors": errors, "input_tokens": tin, "output_tokens": tout,
            "approved": approved, "rejected": refused, "interrupted": 0}


def _chats(db: Path, seen: set[str]) -> dict[str, dict[str, Any]]:
    composers: dict[str, dict[str, Any]] = {}
    bubbles: dict[str, list[tuple[str, Any]]] = {}
    for key, value in _rows(db, "cursorDiskKV"):
        if key.startswith("composerData:"):
            data = _load(value)
            cid = key[len("composerData:"):]
            if isinstance(data, dict) and cid not in seen:
                composers[cid] = data
        elif key.startswith("bubbleId:"):
            cid, _, bid = key[len("bubbleId:"):].partition(":")
            bubbles.setdefault(cid, []).append((bid, _load(value)))
    seen.update(composers)

    def own(cid: str) -> list[Any]:
        return [b for _, b in bubbles[cid]] if bubbles.get(cid) else _kept_bubbles(composers[cid])

    def parent(cid: str) -> Any:
        info = composers[cid].get("subagentInfo")
        return info.get("parentComposerId") if isinstance(info, dict) else None

    out: dict[str, dict[str, Any]] = {}
    for cid in composers:
        if parent(cid) in composers or not own(cid):
            continue
        figures = _figures(own(cid))
        figures["interrupted"] = int(composers[cid].get("status") == "aborted" and figures["turns"] > 0)
        descendants, stack = [], [c for c in composers if parent(c) == cid]
        while stack:
            child = stack.pop()
            if child in descendants or child == cid:
                continue
            descendants.append(child)
            stack.extend(c for c in composers if parent(c) == child)
        figures["subagents"] = len(descendants)
        figures["subagent_tool_calls"] = sum(_figures(own(c))["tool_calls"] for c in descendants)
        out[cid] = figures
    return out


def _kept_bubbles(data: dict[str, Any]) -> list[Any]:
    """A chat's bubbles kept in its own value: its `conversation` array, else its `conversationMap` values."""
    if isinstance(data.get("conversation"), list) and data["conversation"]:
        return list(data["conversation"])
    return list(data["conversationMap"].values()) if isinstance(data.get("conversationMap"), dict) else []


def _listed(db: Path, key: str, field: str) -> list[dict[str, Any]]:
    """The objects of the list `field` of the JSON value at `key` of a database's `ItemTable`."""
    out: list[dict[str, Any]] = []
    for name, value in _rows(db, "ItemTable"):
        data = _load(value) if name == key else None
        if isinstance(data, dict) and isinstance(data.get(field), list):
            out.extend(item for item in data[field] if isinstance(item, dict))
    return out


def _workspace_composers(db: Path, seen: set[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for entry in _listed(db, "composer.composerData", "allComposers"):
        cid = entry.get("composerId")
        if isinstance(cid, str) and cid not in seen and _kept_bubbles(entry):
            seen.add(cid)
            out[cid] = {**_figures(_kept_bubbles(entry)), "subagents": 0, "subagent_tool_calls": 0}
    return out


def _tabs(db: Path, seen: set[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for tab in _listed(db, "workbench.panel.aichat.view.aichat.chatdata", "tabs"):
        if tab.get("tabId") in seen or not isinstance(tab.get("bubbles"), list):
            continue
        figures = _figures(tab["bubbles"])
        if figures["turns"]:
            seen.add(tab["tabId"])
            out[tab["tabId"]] = {**figures, "subagents": 0, "subagent_tool_calls": 0}
    return out


def count_dir(user_dir: Path) -> dict[str, Any]:
    """{"sessions": {id: {...}}, "totals": {...}} for a Cursor `User` folder."""
    dbs = [user_dir / "globalStorage" / "state.vscdb"]
    dbs += sorted((user_dir / "workspaceStorage").glob("*/state.vscdb"))
    sessions: dict[str, dict[str, Any]] = {}
    seen: set[str] = set()
    usable = []
    for db in dbs:
        if not db.is_file():
            continue
        try:
            sessions.update(_chats(db, seen))
            usable.append(db)
        except sqlite3.DatabaseError:
            continue  # not a database: nothing to count
    for db in usable:
        sessions.update(_workspace_composers(db, seen))
    for db in usable:
        sessions.update(_tabs(db, seen))
    totals = {k: sum(s[k] for s in sessions.values()) for k in
              ("turns", "tool_calls", "errors", "input_tokens", "output_tokens", "subagents", "approved", "rejected",
               "interrupted")}
    totals["sessions"] = len(sessions)
    return {"sessions": sessions, "totals": totals}


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--json"]
    result = count_dir(Path(args[0]) if args else Path.home() / ".config" / "Cursor" / "User")
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
    else:
        for sid, row in sorted(result["sessions"].items()):
            print(sid, " ".join(f"{k}={v}" for k, v in row.items()))
        print("totals", " ".join(f"{k}={v}" for k, v in result["totals"].items()))
