"""Write Cursor chats from a neutral spec, in Cursor's own SQLite state (`state.vscdb`).

    write_session(user_dir, spec) -> the composer id

`user_dir` is Cursor's `User` folder (`~/.config/Cursor/User`). The spec (a generated corpus's
neutral form):

    {"session_id", "cwd", "started_at" (ISO), "model", "title" (or None),
     "turns": [{"prompt", "at" (ISO), "assistant", "input_tokens", "output_tokens",
                "calls": [{"batch", "kind": read|write|edit|shell|search, "path", "command",
                           "content", "old", "new", "output", "error", "exit_code"}]}]}

As Cursor writes them (`globalStorage/state.vscdb`, table `cursorDiskKV`): the chat is a
`composerData:<id>` row listing its bubbles in `fullConversationHeadersOnly`; each bubble a
`bubbleId:<id>:<bubble>` row: the prompt a user bubble (`type` 1), each tool call an assistant
bubble (`type` 2) with `toolFormerData` (the calls of one batch share a `modelCallId`), the
answer an assistant bubble with the turn's `tokenCount`. The workspace's database
(`workspaceStorage/<hash>/state.vscdb`, `ItemTable` key `composer.composerData`) lists the chat,
and `workspace.json` names the folder. A failed terminal command completes with a non-zero
`exitCode`; any other failed call has `status` "error".

Standard library only; imports nothing from jacked.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import uuid
from datetime import datetime, UTC
from pathlib import Path
from typing import Any

SCHEMA = ("CREATE TABLE IF NOT EXISTS ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);"
          "CREATE TABLE IF NOT EXISTS cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB);")


def ms(ts: str) -> int:
    dt = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def iso(t: int) -> str:
    return datetime.fromtimestamp(t / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def put_rows(db: Path, rows: list[tuple[str, str, Any]]) -> None:
    """(table, key, value) rows into a `state.vscdb`, created when missing; a value that is not
    text is stored as its JSON."""
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    try:
        conn.executescript(SCHEMA)
        with conn:
            for table, key, value in rows:
                text = value if isinstance(value, (str, bytes)) else json.dumps(value)
                conn.execute(f"INSERT INTO {table} (key, value) VALUES (?, ?)", (key, text))
    finally:
        conn.close()


def add_to_workspace(user_dir: Path, folder: str, composer_ids: list[str]) -> Path:
    """The workspace database of `folder` lists the chats (and `workspace.json` names the folder)."""
    ws = user_dir / "workspaceStorage" / hashlib.md5(folder.encode()).hexdigest()
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "workspace.json").write_text(json.dumps({"folder": Path(folder).as_uri() if folder.startswith("/")
                                                   else folder}))
    db = ws / "state.vscdb"
    listed: list[dict[str, Any]] = []
    if db.exists():
        conn = sqlite3.connect(db)
        try:
            row = conn.execute("SELECT value FROM ItemTable WHERE key = 'composer.composerData'").fetchone()
        finally:
            conn.close()
        listed = json.loads(row[0])["allComposers"] if row else []
    listed += [{"composerId": c, "type": "head"} for c in composer_ids]
    put_rows(db, [("ItemTable", "composer.composerData", {"allComposers": listed, "selectedComposerIds": []})])
    return db


def _tool(call: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any], dict[str, Any] | str]:
    """(name, model's args, Cursor's params, result) of one spec call."""
    kind, path, output = call["kind"], call.get("path"), call.get("output") or ""
    if kind == "read":
        return "read_file_v2", {"target_file": path}, {"targetFile": path}, {"contents": output}
    if kind in ("write", "edit"):
        old = "" if kind == "write" else call.get("old") or ""
        new = call.get("content") if kind == "write" else call.get("new")
        new = new or ""
        added, removed = len(new.splitlines()), len(old.splitlines())
        diff = "\n".join(["-" + ln for ln in old.splitlines()] + ["+" + ln for ln in new.splitlines()])
        return ("edit_file_v2", {"target_file": path, "instructions": f"{kind} {path}", "code_edit": new},
                {"relativeWorkspacePath": path},
                {"diff": {"chunks": [{"diffString": diff, "linesAdded": added, "linesRemoved": removed}]},
                 "isNewFile": kind == "write"})
    if kind == "shell":
        code = call.get("exit_code")
        code = code if isinstance(code, int) else (1 if call.get("error") else 0)
        return ("run_terminal_command_v2", {"command": call.get("command") or "", "is_background": False},
                {"command": call.get("command") or ""}, {"output": output, "exitCode": code, "rejected": False})
    return ("ripgrep_raw_search", {"pattern": call.get("command") or "TODO", "path": path},
            {"pattern": call.get("command") or "TODO"}, output)


def bubbles_of(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """A spec's bubbles, in conversation order."""
    out: list[dict[str, Any]] = []
    model = spec.get("model")
    for n, turn in enumerate(spec["turns"]):
        at = ms(turn.get("at") or spec["started_at"])
        request = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{spec['session_id']}/{n}"))

        def bubble(kind: int, k: int, n: int = n, at: int = at, request: str = request, **fields: Any) -> dict[str, Any]:
            bid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{spec['session_id']}/{n}/{k}"))
            return {"_v": 3, "type": kind, "bubbleId": bid, "createdAt": iso(at + k * 500), "requestId": request,
                    "text": "", "isAgentic": True, **fields}

        out.append(bubble(1, 0, text=turn["prompt"], modelInfo={"modelName": model}))
        batches: dict[int, list[dict[str, Any]]] = {}
        for call in turn.get("calls") or []:
            batches.setdefault(int(call.get("batch", 0)), []).append(call)
        k = 1
        for b, calls in sorted(batches.items()):
            model_call = f"{request}-{b}"
            for call in calls:
                name, args, params, result = _tool(call)
                failed = bool(call.get("error")) and call["kind"] != "shell"
                result = {"error": call.get("output") or "Error"} if failed else result
                out.append(bubble(2, k, toolFormerData={
                    "tool": 0, "name": name, "toolCallId": f"toolu_{request[:8]}_{k}", "modelCallId": model_call,
                    "status": "error" if failed else "completed", "rawArgs": json.dumps(args),
                    "params": json.dumps(params), "result": json.dumps(result) if not isinstance(result, str)
                    else json.dumps({"output": result}), "additionalData": {}}))
                k += 1
        out.append(bubble(2, k, text=turn.get("assistant") or "",
                          tokenCount={"inputTokens": turn.get("input_tokens") or 0,
                                      "outputTokens": turn.get("output_tokens") or 0}))
    return out


def composer_of(spec: dict[str, Any], bubbles: list[dict[str, Any]]) -> dict[str, Any]:
    created = ms(spec["started_at"])
    last = max((ms(b["createdAt"]) for b in bubbles), default=created)
    data = {"_v": 10, "composerId": spec["session_id"], "createdAt": created, "lastUpdatedAt": last,
            "status": "completed", "unifiedMode": "agent", "isAgentic": True, "text": "", "richText": "",
            "modelConfig": {"modelName": spec.get("model") or "default", "maxMode": False},
            "fullConversationHeadersOnly": [{"bubbleId": b["bubbleId"], "type": b["type"]} for b in bubbles],
            "conversationMap": {}, "hasLoaded": True}
    if spec.get("title"):
        data["name"] = spec["title"]
    return data


def write_session(user_dir: Path, spec: dict[str, Any]) -> str:
    """One chat from a spec into Cursor's `User` folder (its databases created or added to)."""
    bubbles = bubbles_of(spec)
    cid = spec["session_id"]
    rows: list[tuple[str, str, Any]] = [("cursorDiskKV", f"composerData:{cid}", composer_of(spec, bubbles))]
    rows += [("cursorDiskKV", f"bubbleId:{cid}:{b['bubbleId']}", b) for b in bubbles]
    put_rows(user_dir / "globalStorage" / "state.vscdb", rows)
    if spec.get("cwd"):
        add_to_workspace(user_dir, spec["cwd"], [cid])
    return cid
