"""Write Continue sessions from a neutral spec, as Continue saves them.

    write_session(continue_dir, spec) -> the session id

`continue_dir` is Continue's global folder (`~/.continue`). The spec (a generated corpus's
neutral form):

    {"session_id", "cwd", "started_at" (ISO), "model", "title" (or None),
     "turns": [{"prompt", "at" (ISO), "assistant", "input_tokens", "output_tokens",
                "calls": [{"batch", "kind": read|write|edit|shell|search, "path", "command",
                           "content", "old", "new", "output", "error", "exit_code"}]}]}

As Continue writes them (`core/util/history.ts`: `sessions/<id>.json`, and the list
`sessions/sessions.json`): each prompt a `user` message; each batch of calls one `assistant`
message with its `toolCalls` and their `toolCallStates` (`done`, or `errored` for a failed call:
Continue reports a failing command as an error), each call answered by a `tool` message; the
answer a last `assistant` message with the turn's `usage`.

Standard library only; imports nothing from jacked.
"""
from __future__ import annotations

import json
from datetime import datetime, UTC
from pathlib import Path
from typing import Any

TOOLS = {"read": "read_file", "write": "create_new_file", "edit": "edit_existing_file",
         "shell": "run_terminal_command", "search": "grep_search"}


def _args(call: dict[str, Any]) -> dict[str, Any]:
    kind = call["kind"]
    if kind == "shell":
        return {"command": call.get("command") or "", "waitForCompletion": True}
    if kind == "search":
        return {"query": call.get("command") or "TODO"}
    if kind == "write":
        return {"filepath": call.get("path"), "contents": call.get("content") or ""}
    if kind == "edit":
        return {"filepath": call.get("path"), "changes": call.get("new") or ""}
    return {"filepath": call.get("path")}


def history_of(spec: dict[str, Any]) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = []
    model = spec.get("model") or "default"
    for n, turn in enumerate(spec["turns"]):
        history.append({"message": {"role": "user", "content": turn["prompt"]}, "contextItems": []})
        batches: dict[int, list[dict[str, Any]]] = {}
        for call in turn.get("calls") or []:
            batches.setdefault(int(call.get("batch", 0)), []).append(call)
        k = 0
        for _, calls in sorted(batches.items()):
            tool_calls, states, answers = [], [], []
            for call in calls:
                k += 1
                cid = f"call_{n}_{k}"
                tool_call = {"id": cid, "type": "function",
                             "function": {"name": TOOLS[call["kind"]], "arguments": json.dumps(_args(call))}}
                output = call.get("output") or ""
                tool_calls.append(tool_call)
                states.append({"toolCallId": cid, "toolCall": tool_call, "parsedArgs": _args(call),
                               "status": "errored" if call.get("error") else "done",
                               "output": [{"name": TOOLS[call["kind"]], "description": "", "content": output}]})
                answers.append({"message": {"role": "tool", "content": output, "toolCallId": cid}, "contextItems": []})
            history.append({"message": {"role": "assistant", "content": "", "toolCalls": tool_calls},
                            "contextItems": [], "toolCallStates": states,
                            "promptLogs": [{"modelTitle": model, "modelProvider": "anthropic", "prompt": "",
                                            "completion": ""}]})
            history.extend(answers)
        history.append({"message": {"role": "assistant", "content": turn.get("assistant") or "",
                                    "usage": {"promptTokens": turn.get("input_tokens") or 0,
                                              "completionTokens": turn.get("output_tokens") or 0}},
                        "contextItems": [], "promptLogs": [{"modelTitle": model, "modelProvider": "anthropic",
                                                            "prompt": "", "completion": ""}]})
    return history


def write_session(continue_dir: Path, spec: dict[str, Any]) -> str:
    """One session from a spec into Continue's folder (`sessions.json` added to)."""
    folder = continue_dir / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    sid = spec["session_id"]
    session = {"sessionId": sid, "title": spec.get("title") or "New Session", "workspaceDirectory": spec.get("cwd") or "",
               "history": history_of(spec), "mode": "agent", "chatModelTitle": spec.get("model")}
    (folder / f"{sid}.json").write_text(json.dumps(session, indent=2), encoding="utf-8")
    listing = folder / "sessions.json"
    listed = json.loads(listing.read_text(encoding="utf-8")) if listing.exists() else []
    created = datetime.fromisoformat(spec["started_at"].replace("Z", "+00:00"))
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    listed.append({"sessionId": sid, "title": session["title"], "dateCreated": str(int(created.timestamp() * 1000)),
                   "workspaceDirectory": session["workspaceDirectory"]})
    listing.write_text(json.dumps(listed, indent=2), encoding="utf-8")
    return sid
