"""An independent count of a Continue folder (`~/.continue`), straight from its session files.

Standard library only and nothing from jacked, so jacked's reading of the same folder is checked
against a second, deliberately plain reading rather than against itself.

    python tests/agents/count_continue.py CONTINUE_DIR [--json]

Rules, as Continue records a session (`sessions/<sessionId>.json`, not `sessions.json`):
* a session is a file holding a JSON object with a `history` list in which at least one item's
  `message.role` is "user" or "assistant"; a file that is not JSON is not counted;
* a turn is a user message whose content (a string, or the `text` of its `type: "text"` parts)
  is not blank;
* a tool call is an assistant message's `toolCalls` entry with a `function.name`, or a
  `toolCallStates` entry (or the older single `toolCallState`) whose `toolCallId` no such entry
  has and whose `toolCall.function.name` is set; it failed when its state's `status` is
  "errored" or "canceled" (canceled: the user rejected it, or stopped the response before it ran);
* tokens: each assistant message's `usage.promptTokens` / `completionTokens`.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content
                       if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str))
    return ""


def _number(v: Any) -> int:
    return v if type(v) is int else 0


def count_file(path: Path) -> dict[str, int] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("history"), list):
        return None
    turns = calls = errors = tin = tout = messages = refused = 0
    for item in data["history"]:
        message = item.get("message") if isinstance(item, dict) else None
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role in ("user", "assistant"):
            messages += 1
        if role == "user" and _text(message.get("content")).strip():
            turns += 1
        if role != "assistant":
            continue
        usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
        tin += _number(usage.get("promptTokens"))
        tout += _number(usage.get("completionTokens"))
        states = item.get("toolCallStates")
        if not isinstance(states, list):
            states = [item.get("toolCallState")]
        by_id = {s["toolCallId"]: s for s in states if isinstance(s, dict) and isinstance(s.get("toolCallId"), str)}
        listed = message.get("toolCalls") if isinstance(message.get("toolCalls"), list) else []
        ids = set()
        for call in listed:
            if isinstance(call, dict):
                ids.add(call.get("id"))
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str) and function["name"].strip():
                calls += 1
                errors += by_id.get(call.get("id"), {}).get("status") in ("errored", "canceled")
                refused += by_id.get(call.get("id"), {}).get("status") == "canceled"
        for cid, state in by_id.items():
            function = state.get("toolCall", {}).get("function") if isinstance(state.get("toolCall"), dict) else None
            if cid not in ids and isinstance(function, dict) and isinstance(function.get("name"), str) \
                    and function["name"].strip():
                calls += 1
                errors += state.get("status") in ("errored", "canceled")
                refused += state.get("status") == "canceled"
    if not messages:
        return None
    return {"turns": turns, "tool_calls": calls, "errors": errors, "input_tokens": tin, "output_tokens": tout,
            "rejected": refused}


def count_dir(root: Path) -> dict[str, Any]:
    sessions: dict[str, dict[str, int]] = {}
    for path in sorted((root / "sessions").glob("*.json")):
        if path.name == "sessions.json":
            continue
        figures = count_file(path)
        if figures is not None:
            sessions[path.stem] = figures
    totals = {k: sum(s[k] for s in sessions.values()) for k in
              ("turns", "tool_calls", "errors", "input_tokens", "output_tokens", "rejected")}
    totals["sessions"] = len(sessions)
    return {"sessions": sessions, "totals": totals}


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--json"]
    result = count_dir(Path(args[0]) if args else Path.home() / ".continue")
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
    else:
        for sid, row in sorted(result["sessions"].items()):
            print(sid, " ".join(f"{k}={v}" for k, v in row.items()))
        print("totals", " ".join(f"{k}={v}" for k, v in result["totals"].items()))
