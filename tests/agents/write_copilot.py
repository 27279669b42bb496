"""Write GitHub Copilot CLI sessions from a neutral spec, as Copilot CLI logs them.

    write_session(root, spec) -> [events.jsonl]

`root` is the `.copilot` folder (`COPILOT_HOME`); the session goes to
`session-state/<session id>/events.jsonl`. The spec is the one of `write_gemini.py`.

As the Copilot SDK's event types have them (`nodejs/src/generated/session-events.ts`): a
`session.start` with the working-directory context; each prompt a `user.message`; each batch of
calls one `assistant.message` whose `toolRequests` are the batch (view, create, edit, bash,
grep), each call's `tool.execution_start` and `tool.execution_complete` (`success: false` with
an `error` for a failed call); the turn's tokens one `assistant.usage`; the answer a last
`assistant.message`; the title a `session.title_changed`.

Standard library only; imports nothing from jacked.
"""
from __future__ import annotations

import json
from datetime import datetime, timedelta, UTC
from pathlib import Path
from typing import Any

TOOLS = {"read": "view", "write": "create", "edit": "edit", "shell": "bash", "search": "grep"}


def _dt(ts: str) -> datetime:
    d = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return d if d.tzinfo else d.replace(tzinfo=UTC)


def _iso(d: datetime) -> str:
    return d.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _args(call: dict[str, Any]) -> dict[str, Any]:
    kind, path = call["kind"], call.get("path") or ""
    if kind == "read":
        return {"path": path}
    if kind == "write":
        return {"path": path, "file_text": call.get("content") or ""}
    if kind == "edit":
        return {"path": path, "old_str": call.get("old") or "", "new_str": call.get("new") or ""}
    if kind == "shell":
        return {"command": call.get("command") or "", "description": "Run a command"}
    return {"pattern": call.get("command") or "", "path": path}


def events(spec: dict[str, Any]) -> list[dict[str, Any]]:
    sid = spec["session_id"]
    model = spec.get("model") or "claude-sonnet-4.5"
    out: list[dict[str, Any]] = []

    def add(etype: str, data: dict[str, Any], when: datetime) -> None:
        out.append({"type": etype, "data": data, "id": f"{sid[:8]}-{len(out):05d}", "timestamp": _iso(when),
                    "parentId": out[-1]["id"] if out else None})

    start = _dt(spec["started_at"])
    add("session.start", {"sessionId": sid, "version": 1, "producer": "copilot-agent", "copilotVersion": "0.0.400",
                          "startTime": _iso(start), "selectedModel": model,
                          "context": {"cwd": spec["cwd"], "gitRoot": spec["cwd"], "branch": "main"}}, start)
    for t_i, turn in enumerate(spec["turns"]):
        at = _dt(turn["at"])
        add("user.message", {"content": turn["prompt"]}, at)
        batches: dict[int, list[dict[str, Any]]] = {}
        for call in turn.get("calls") or []:
            batches.setdefault(int(call.get("batch", 0)), []).append(call)
        step = at
        for b_i, calls in enumerate(batches.values()):
            step += timedelta(seconds=2)
            ids = [f"call_{t_i}_{b_i}_{c_i}" for c_i in range(len(calls))]
            add("assistant.message", {"messageId": f"{sid[:8]}-m{t_i}-{b_i}", "content": "", "model": model,
                                      "toolRequests": [{"toolCallId": cid, "name": TOOLS[c["kind"]], "arguments": _args(c)}
                                                       for cid, c in zip(ids, calls)]}, step)
            for cid, call in zip(ids, calls):
                add("tool.execution_start", {"toolCallId": cid, "toolName": TOOLS[call["kind"]], "arguments": _args(call)}, step)
            step += timedelta(seconds=1)
            for cid, call in zip(ids, calls):
                done: dict[str, Any] = {"toolCallId": cid, "success": not call["error"]}
                if call["error"]:
                    done["error"] = {"message": call.get("output") or "failed", "code": "failure"}
                else:
                    done["result"] = {"content": call.get("output") or ""}
                add("tool.execution_complete", done, step)
        step += timedelta(seconds=2)
        add("assistant.usage", {"model": model, "inputTokens": int(turn.get("input_tokens") or 0),
                                "outputTokens": int(turn.get("output_tokens") or 0)}, step)
        add("assistant.message", {"messageId": f"{sid[:8]}-a{t_i}", "content": turn.get("assistant") or "",
                                  "model": model}, step)
    if spec.get("title") and out:
        add("session.title_changed", {"title": spec["title"]}, _dt(out[-1]["timestamp"]))
    return out


def write_session(root: Path, spec: dict[str, Any]) -> list[Path]:
    folder = root / "session-state" / spec["session_id"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "events.jsonl"
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events(spec)), encoding="utf-8")
    return [path]
