"""An independent count of an opencode data folder, straight from its records.

Standard library only (json, sqlite3) and nothing from jacked, so jacked's reading of the same
folder is checked against a second, deliberately plain reading rather than against itself.

    python tests/agents/count_opencode.py DATA_DIR [--json]

Rules, as opencode records a session:
* stores: `opencode*.db` (tables session/message/part, JSON in `data`) and the JSON files under
  `storage/` (session/<project>/<id>.json, message/<session>/<id>.json, part/<message>/<id>.json);
  a session found in a database is not counted again from the files;
* OpenCode 2.x, in the same databases: sessions in `session_v2` (before it, `session`), their
  records in `session_message` (`type`, `seq`, JSON in `data`); a session that has such records
  is counted from them alone (see "2.x records" below), any other from message/part;
* a session is one whose parentID names no session of the same store, with at least one
  message; the others (task subagents) count under their top-level session, at any depth;
* a turn is a user message with a text part the person wrote (not `synthetic`, not `ignored`,
  not blank), or a `subtask` part, or, lacking both, an attached `file` part (and no compaction);
* a tool call is a `tool` part of the session's own messages; it failed when its state is
  `error`, or when a `bash` call completed with a non-zero `metadata.exit`;
* refused: a tool part in state `error` whose error starts "The user rejected permission to use
  this" (the permission prompt answered "reject"); interrupted: a turn (from one counted user
  message to the next) with an assistant message whose `error.name` is "MessageAbortedError",
  counted once;
* tokens: the `step-finish` parts of each assistant message, else (none) the message's own
  `tokens` when any is non-zero; output counts reasoning too.

2.x records (one model step per `assistant` record, its parts inline in `content`):
* a turn is a `user` record with non-blank `text`, or lacking it, attached `files`; a command
  the user ran (`shell`) is neither a turn nor a tool call;
* a tool call is a `tool` item of an `assistant` record's `content`; it failed when its
  `state.status` is `error`, when it completed with `state.metadata.error` true, or when a
  `shell` call completed with a non-zero `state.metadata.exit`;
* refused as above (the error a string or `error.message`); interrupted: a turn with an `idle`
  record of `outcome` "interrupted", counted once;
* tokens: the `tokens` of every `assistant` and `compaction` record (the summarising call),
  each counted once; output counts reasoning too.
"""
from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

Message = tuple[dict[str, Any], list[dict[str, Any]]]
# (session infos, 1.x messages by session, 2.x records by session)
Store = tuple[dict[str, dict[str, Any]], dict[str, list[Message]], dict[str, list[dict[str, Any]]]]


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _db_store(db: Path) -> Store:
    conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        infos: dict[str, dict[str, Any]] = {}
        for table in ("session_v2", "session"):
            if table in tables:
                for row in conn.execute(f"SELECT id, parent_id, title FROM {table}"):
                    infos.setdefault(row[0], {"id": row[0], "parentID": row[1], "title": row[2]})
        records: dict[str, list[dict[str, Any]]] = {}
        if "session_message" in tables:
            for sid, kind, data in conn.execute(
                    "SELECT session_id, type, data FROM session_message ORDER BY session_id, seq"):
                try:
                    record = json.loads(data)
                except ValueError:
                    record = None
                records.setdefault(sid, [])  # a session with 2.x rows is read from them only
                if isinstance(record, dict):
                    records[sid].append({**record, "type": kind})
        messages: dict[str, list[Message]] = {sid: [] for sid in infos}
        by_id: dict[str, Message] = {}
        v1 = {"session", "message", "part"} <= tables
        for mid, sid, data in conn.execute("SELECT id, session_id, data FROM message ORDER BY id") if v1 else ():
            try:
                info = json.loads(data)
            except ValueError:
                continue
            if isinstance(info, dict) and sid in messages:
                by_id[mid] = (info, [])
                messages[sid].append(by_id[mid])
        for mid, data in conn.execute("SELECT message_id, data FROM part ORDER BY message_id, id") if v1 else ():
            try:
                part = json.loads(data)
            except ValueError:
                continue
            if isinstance(part, dict) and mid in by_id:
                by_id[mid][1].append(part)
    finally:
        conn.close()
    return infos, messages, records


def _file_store(storage: Path) -> Store:
    infos: dict[str, dict[str, Any]] = {}
    for path in sorted(storage.glob("session/*/*.json")):
        info = _json(path)
        info = info if isinstance(info, dict) else {}
        infos.setdefault(path.stem, info)  # opencode takes a session's id from its file's name
    messages: dict[str, list[Message]] = {}
    for sid in infos:
        messages[sid] = []
        for mpath in sorted((storage / "message" / sid).glob("*.json")):
            info = _json(mpath)
            if not isinstance(info, dict):
                continue
            parts = [p for p in (_json(pp) for pp in sorted((storage / "part" / mpath.stem).glob("*.json")))
                     if isinstance(p, dict)]
            messages[sid].append((info, parts))
    return infos, messages, {}


def _is_turn(parts: list[dict[str, Any]]) -> bool:
    kinds = [p.get("type") for p in parts]
    typed = any(p.get("type") == "text" and not p.get("synthetic") and not p.get("ignored")
                and isinstance(p.get("text"), str) and p["text"].strip() for p in parts)
    return typed or "subtask" in kinds or ("file" in kinds and "compaction" not in kinds)


def _tokens(info: dict[str, Any], parts: list[dict[str, Any]]) -> list[int]:
    steps = [p.get("tokens") for p in parts if p.get("type") == "step-finish"]
    if not steps:
        steps = [info.get("tokens")]
    total = [0, 0, 0, 0]
    for t in steps:
        if not isinstance(t, dict):
            continue
        cache = t.get("cache") if isinstance(t.get("cache"), dict) else {}
        row = [t.get("input") or 0, (t.get("output") or 0) + (t.get("reasoning") or 0),
               cache.get("read") or 0, cache.get("write") or 0]
        total = [a + b for a, b in zip(total, row)]
    return total


def _calls(messages: list[Message]) -> tuple[int, int]:
    calls = errors = 0
    for info, parts in messages:
        if info.get("role") != "assistant":
            continue
        for p in parts:
            if p.get("type") != "tool":
                continue
            calls += 1
            state = p.get("state") if isinstance(p.get("state"), dict) else {}
            meta = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
            exit_code = meta.get("exit")
            if state.get("status") == "error" or (
                    p.get("tool") == "bash" and state.get("status") == "completed"
                    and isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0):
                errors += 1
    return calls, errors


REFUSED = "The user rejected permission to use this"


def _refused(state: dict[str, Any]) -> bool:
    error = state.get("error")
    text = error if isinstance(error, str) else error.get("message") if isinstance(error, dict) else None
    return state.get("status") == "error" and isinstance(text, str) and text.lstrip().startswith(REFUSED)


def _feedback(messages: list[Message]) -> tuple[int, int]:
    """(refused calls, interrupted turns) of a session's 1.x messages."""
    refused = interrupted = 0
    stopped = False
    for info, parts in messages:
        if info.get("role") == "user" and _is_turn(parts):
            stopped = False
        if info.get("role") != "assistant":
            continue
        refused += sum(1 for p in parts if p.get("type") == "tool" and isinstance(p.get("state"), dict)
                       and _refused(p["state"]))
        error = info.get("error") if isinstance(info.get("error"), dict) else {}
        if error.get("name") == "MessageAbortedError" and not stopped:
            interrupted += 1
            stopped = True
    return refused, interrupted


def _entry_figures(records: list[dict[str, Any]]) -> dict[str, Any]:
    """turns, tool calls, failed calls and tokens of a 2.x session's own records."""
    turns = calls = errors = refused = interrupted = 0
    stopped = False
    tokens = [0, 0, 0, 0]
    for r in records:
        kind = r.get("type")
        if kind == "user":
            text = r.get("text")
            if (isinstance(text, str) and text.strip()) or (isinstance(r.get("files"), list) and r["files"]):
                turns += 1
                stopped = False
        if kind == "idle" and r.get("outcome") == "interrupted" and turns and not stopped:
            interrupted += 1
            stopped = True
        if kind in ("assistant", "compaction") and isinstance(r.get("tokens"), dict):
            t = r["tokens"]
            cache = t.get("cache") if isinstance(t.get("cache"), dict) else {}
            row = [t.get("input") or 0, (t.get("output") or 0) + (t.get("reasoning") or 0),
                   cache.get("read") or 0, cache.get("write") or 0]
            tokens = [a + b for a, b in zip(tokens, row)]
        if kind != "assistant" or not isinstance(r.get("content"), list):
            continue
        for item in r["content"]:
            if not isinstance(item, dict) or item.get("type") != "tool":
                continue
            calls += 1
            state = item.get("state") if isinstance(item.get("state"), dict) else {}
            meta = state.get("metadata") if isinstance(state.get("metadata"), dict) else {}
            exit_code = meta.get("exit")
            completed = state.get("status") == "completed"
            refused += _refused(state)
            if state.get("status") == "error" or (completed and meta.get("error") is True) or (
                    completed and item.get("name") == "shell" and isinstance(exit_code, int)
                    and not isinstance(exit_code, bool) and exit_code != 0):
                errors += 1
    return {"turns": turns, "tool_calls": calls, "errors": errors, "tokens": tokens, "rejected": refused,
            "interrupted": interrupted}


def count_dir(root: Path) -> dict[str, Any]:
    """{"sessions": {id: {...}}, "totals": {...}} for an opencode data folder."""
    stores = [_db_store(db) for db in sorted(root.glob("opencode*.db"), key=lambda p: p.name != "opencode.db")]
    if (root / "storage").is_dir():
        stores.append(_file_store(root / "storage"))
    sessions: dict[str, dict[str, Any]] = {}
    seen: set[str] = set()
    for infos, messages, records in stores:
        infos = {k: v for k, v in infos.items() if k not in seen}
        seen.update(infos)
        children: dict[str, list[str]] = {}
        for sid, info in infos.items():
            if info.get("parentID") in infos:
                children.setdefault(info["parentID"], []).append(sid)

        def figures(sid: str, records: dict[str, Any] = records,
                    messages: dict[str, Any] = messages) -> dict[str, Any]:
            if sid in records:
                return _entry_figures(records[sid])
            own = messages.get(sid, [])
            tokens = [0, 0, 0, 0]
            for m_info, parts in own:
                if m_info.get("role") == "assistant":
                    tokens = [a + b for a, b in zip(tokens, _tokens(m_info, parts))]
            calls, errors = _calls(own)
            turns = sum(1 for m_info, parts in own if m_info.get("role") == "user" and _is_turn(parts))
            refused, interrupted = _feedback(own)
            return {"turns": turns, "tool_calls": calls, "errors": errors, "tokens": tokens, "rejected": refused,
                    "interrupted": interrupted}

        for sid, info in infos.items():
            if info.get("parentID") in infos or not (records.get(sid) or messages.get(sid)):
                continue
            own = figures(sid)
            tokens = own["tokens"]
            descendants, stack = [], list(children.get(sid, []))
            while stack:
                child = stack.pop()
                descendants.append(child)
                stack.extend(children.get(child, []))
            sub_calls = sum(figures(c)["tool_calls"] for c in descendants)
            sessions[sid] = {
                "turns": own["turns"],
                "tool_calls": own["tool_calls"], "errors": own["errors"],
                "input_tokens": tokens[0], "output_tokens": tokens[1],
                "cache_read_tokens": tokens[2], "cache_creation_tokens": tokens[3],
                "subagents": len(descendants), "subagent_tool_calls": sub_calls,
                "rejected": own["rejected"], "interrupted": own["interrupted"],
            }
    totals = {k: sum(s[k] for s in sessions.values()) for k in
              ("turns", "tool_calls", "errors", "input_tokens", "output_tokens", "subagents", "rejected",
               "interrupted")}
    totals["sessions"] = len(sessions)
    return {"sessions": sessions, "totals": totals}


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--json"]
    result = count_dir(Path(args[0]) if args else Path.home() / ".local" / "share" / "opencode")
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
    else:
        for sid, row in sorted(result["sessions"].items()):
            print(sid, " ".join(f"{k}={v}" for k, v in row.items()))
        print("totals", " ".join(f"{k}={v}" for k, v in result["totals"].items()))
