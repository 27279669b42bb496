"""An independent count of a Goose data folder (`~/.local/share/goose`), straight from its files.

Standard library only and nothing from jacked, so jacked's reading of the same folder is checked
against a second, deliberately plain reading rather than against itself.

    python tests/agents/count_goose.py GOOSE_DATA_DIR [--json]

Rules, as Goose records a session (`sessions/sessions.db`, tables `sessions` and `messages`, and
the older `sessions/<id>.jsonl`: a metadata line, then a message a line; a `.jsonl` whose name is
a session id in the database is not counted again):
* a session has at least one message whose role is "user" or "assistant"; a line or row that is
  not JSON is not counted;
* a turn is a user message with a `type: "text"` part whose text is not blank, unless its
  `metadata.userVisible` is false;
* a tool call is an assistant message's `toolRequest` or `frontendToolRequest` part whose
  `toolCall.status` is "success" and whose `toolCall.value.name` is set; it failed when the
  `toolResponse` with its id has `toolResult.status` "error", `value.isError` true, or a text
  starting "The user has declined to run this tool" (refused);
* approved: a call whose id an assistant's `toolConfirmationRequest` part names, answered neither
  declined nor interrupted; interrupted: a turn with a response of status "error" whose error
  starts "Interrupted by the user" (what Goose answers for calls stopped with Ctrl-C), once;
* tokens: the session's `accumulated_input_tokens` / `accumulated_output_tokens`, else its
  `input_tokens` / `output_tokens`.
"""
from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any


def _tokens(row: dict[str, Any], kind: str) -> int:
    for key in (f"accumulated_{kind}_tokens", f"{kind}_tokens"):
        if type(row.get(key)) is int and row[key]:
            return row[key]
    return 0


def _figures(messages: list[Any], meta: dict[str, Any]) -> dict[str, int] | None:
    turns = calls = 0
    requested: list[str] = []
    failed: set[str] = set()
    asked: set[str] = set()
    refused: set[str] = set()
    answered: set[str] = set()
    interrupted = 0
    stopped = False
    seen = 0
    for m in messages:
        if not isinstance(m, dict) or not isinstance(m.get("content"), list):
            continue
        if m.get("role") not in ("user", "assistant"):
            continue
        seen += 1
        parts = [p for p in m["content"] if isinstance(p, dict)]
        if m["role"] == "user":
            metadata = m.get("metadata") if isinstance(m.get("metadata"), dict) else {}
            visible = metadata.get("userVisible") is not False
            if visible and any(p.get("type") == "text" and isinstance(p.get("text"), str) and p["text"].strip()
                               for p in parts):
                turns += 1
                stopped = False
            for p in parts:
                if p.get("type") != "toolResponse":
                    continue
                result = p.get("toolResult") if isinstance(p.get("toolResult"), dict) else {}
                value = result.get("value")
                items = value.get("content") if isinstance(value, dict) else value
                texts = [c.get("text") for c in items if isinstance(c, dict)] if isinstance(items, list) else []
                declined = any(isinstance(t, str) and t.startswith("The user has declined to run this tool")
                               for t in texts[:1])
                if result.get("status") == "error" or (isinstance(value, dict) and value.get("isError") is True) \
                        or declined:
                    failed.add(str(p.get("id")))
                error = result.get("error") if isinstance(result.get("error"), str) else ""
                if declined:
                    refused.add(str(p.get("id")))
                elif result.get("status") == "error" and error.startswith("Interrupted by the user"):
                    interrupted += not stopped
                    stopped = True
                else:
                    answered.add(str(p.get("id")))
        else:
            for p in parts:
                if p.get("type") == "toolConfirmationRequest":
                    asked.add(str(p.get("id")))
                call = p.get("toolCall") if isinstance(p.get("toolCall"), dict) else {}
                value = call.get("value") if isinstance(call.get("value"), dict) else {}
                name = value.get("name")
                if p.get("type") in ("toolRequest", "frontendToolRequest") and call.get("status") == "success" \
                        and isinstance(name, str) and name.strip():
                    calls += 1
                    requested.append(str(p.get("id")))
    if not seen:
        return None
    return {"turns": turns, "tool_calls": calls, "errors": sum(r in failed for r in requested),
            "input_tokens": _tokens(meta, "input"), "output_tokens": _tokens(meta, "output"),
            "approved": sum(r in asked and r in answered for r in requested),
            "rejected": sum(r in refused for r in requested), "interrupted": interrupted}


def _loads(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def count_db(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    try:
        conn.row_factory = sqlite3.Row
        for row in conn.execute("SELECT * FROM sessions"):
            meta = dict(row)
            messages = []
            for m in conn.execute("SELECT role, content_json, metadata_json FROM messages WHERE session_id = ? "
                                  "ORDER BY id", (meta["id"],)):
                content = _loads(m["content_json"])
                if isinstance(content, list):
                    messages.append({"role": m["role"], "content": content,
                                     "metadata": _loads(m["metadata_json"]) or {}})
            figures = _figures(messages, meta)
            if figures is not None:
                out[meta["id"]] = figures
    finally:
        conn.close()
    return out


def count_jsonl(path: Path) -> dict[str, int] | None:
    records = [_loads(line) for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    meta = records[0] if records and isinstance(records[0], dict) and "role" not in records[0] else {}
    return _figures(records, meta)


def count_dir(root: Path) -> dict[str, Any]:
    folder = root / "sessions"
    sessions: dict[str, dict[str, int]] = {}
    in_db: set[str] = set()
    if (folder / "sessions.db").is_file():
        try:
            sessions.update(count_db(folder / "sessions.db"))
            conn = sqlite3.connect(f"{(folder / 'sessions.db').absolute().as_uri()}?mode=ro", uri=True)
            in_db = {r[0] for r in conn.execute("SELECT id FROM sessions")}
            conn.close()
        except sqlite3.DatabaseError:
            pass
    for path in sorted(folder.glob("*.jsonl")):
        if path.stem in in_db:
            continue
        figures = count_jsonl(path)
        if figures is not None:
            sessions[path.stem] = figures
    totals = {k: sum(s[k] for s in sessions.values()) for k in
              ("turns", "tool_calls", "errors", "input_tokens", "output_tokens", "approved", "rejected",
               "interrupted")}
    totals["sessions"] = len(sessions)
    return {"sessions": sessions, "totals": totals}


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--json"]
    result = count_dir(Path(args[0]) if args else Path.home() / ".local" / "share" / "goose")
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
    else:
        for sid, row in sorted(result["sessions"].items()):
            print(sid, " ".join(f"{k}={v}" for k, v in row.items()))
        print("totals", " ".join(f"{k}={v}" for k, v in result["totals"].items()))
