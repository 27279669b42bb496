"""Write OpenHands conversations from a neutral spec, as its event stream stores them.

    write_session(file_store, spec) -> the conversation id

`file_store` is OpenHands' file store (`~/.openhands`). The spec (a generated corpus's neutral
form):

    {"session_id", "cwd", "started_at" (ISO), "model", "title" (or None),
     "turns": [{"prompt", "at" (ISO), "assistant", "input_tokens", "output_tokens",
                "calls": [{"batch", "kind": read|write|edit|shell|search, "path", "command",
                           "content", "old", "new", "output", "error", "exit_code"}]}]}

As OpenHands writes them (`sessions/<id>/events/<n>.json`, `event_to_dict`'s shape): each prompt
a user `message` action; each call an agent action (`run`, `read`, `edit`) with its
`tool_call_metadata` (the calls of one batch share a model response, whose `usage` is zero but
for the turn's last response) followed by its observation (`cause`: the action's id): `run` with
`metadata.exit_code`, `read`, `edit`, or `error` for a failed call; the answer an agent
`message` carrying the turn's tokens in its own model response. A search is a `grep` run.

Standard library only; imports nothing from jacked.
"""
from __future__ import annotations

import json
from datetime import datetime, timedelta, UTC
from pathlib import Path
from typing import Any


def _when(ts: str, seconds: float) -> str:
    dt = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    if dt.tzinfo is not None:
        dt = dt.astimezone(UTC).replace(tzinfo=None)
    return (dt + timedelta(seconds=seconds)).isoformat(timespec="microseconds")


def _action(call: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(action, function name, args) of one spec call."""
    kind, path = call["kind"], call.get("path")
    if kind in ("shell", "search"):
        command = call.get("command") or "" if kind == "shell" else f"grep -rn {call.get('command') or 'TODO'} ."
        return "run", "execute_bash", {"command": command, "is_input": False, "thought": "", "blocking": False,
                                       "hidden": False, "confirmation_state": "confirmed"}
    if kind == "read":
        return "read", "str_replace_editor", {"path": path, "start": 0, "end": -1, "thought": "",
                                              "impl_source": "oh_aci"}
    if kind == "write":
        return "edit", "str_replace_editor", {"path": path, "command": "create", "file_text": call.get("content") or "",
                                              "thought": "", "impl_source": "oh_aci"}
    return "edit", "str_replace_editor", {"path": path, "command": "str_replace", "old_str": call.get("old") or "",
                                          "new_str": call.get("new") or "", "thought": "", "impl_source": "oh_aci"}


def _observation(call: dict[str, Any], action: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    output = call.get("output") or ""
    if call.get("error") and call["kind"] not in ("shell", "search"):
        return "error", {"error_id": ""}
    if action == "run":
        code = call.get("exit_code")
        code = code if isinstance(code, int) else (1 if call.get("error") else 0)
        return "run", {"command": args["command"], "metadata": {"exit_code": code}, "hidden": False}
    if action == "read":
        return "read", {"path": args["path"], "impl_source": "oh_aci"}
    if args["command"] == "create":
        return "edit", {"path": args["path"], "prev_exist": False, "old_content": None, "new_content": output or
                        args["file_text"], "impl_source": "oh_aci"}
    return "edit", {"path": args["path"], "prev_exist": True, "old_content": args["old_str"],
                    "new_content": args["new_str"], "impl_source": "oh_aci"}


def events_of(spec: dict[str, Any]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    model = spec.get("model") or "claude-sonnet-4"

    def add(event: dict[str, Any]) -> int:
        event["id"] = len(events)
        events.append(event)
        return event["id"]

    for n, turn in enumerate(spec["turns"]):
        at = turn.get("at") or spec["started_at"]
        add({"timestamp": _when(at, 0), "source": "user", "message": turn["prompt"], "action": "message",
             "args": {"content": turn["prompt"], "image_urls": [], "wait_for_response": False}})
        batches: dict[int, list[dict[str, Any]]] = {}
        for call in turn.get("calls") or []:
            batches.setdefault(int(call.get("batch", 0)), []).append(call)
        step = 0
        for b, calls in sorted(batches.items()):
            step += 1
            rid = f"chatcmpl-{spec['session_id'][:8]}-{n}-{b}"
            response = {"id": rid, "model": model, "usage": {"prompt_tokens": 0, "completion_tokens": 0}}
            for k, call in enumerate(calls):
                action, function, args = _action(call)
                meta = {"function_name": function, "tool_call_id": f"toolu_{n}_{b}_{k}", "model_response": response,
                        "total_calls_in_response": len(calls)}
                cause = add({"timestamp": _when(at, step), "source": "agent", "message": "", "action": action,
                             "args": args, "tool_call_metadata": meta})
                observation, extras = _observation(call, action, args)
                add({"timestamp": _when(at, step + 0.5), "source": "agent", "message": "", "cause": cause,
                     "observation": observation, "content": call.get("output") or "", "extras": extras,
                     "tool_call_metadata": meta})
        usage = {"prompt_tokens": turn.get("input_tokens") or 0, "completion_tokens": turn.get("output_tokens") or 0}
        add({"timestamp": _when(at, step + 1), "source": "agent", "message": turn.get("assistant") or "",
             "action": "message", "args": {"content": turn.get("assistant") or "", "image_urls": None},
             "tool_call_metadata": {"function_name": "", "tool_call_id": "", "total_calls_in_response": 0,
                                    "model_response": {"id": f"chatcmpl-{spec['session_id'][:8]}-{n}-answer",
                                                       "model": model, "usage": usage}}})
    return events


def write_session(file_store: Path, spec: dict[str, Any]) -> str:
    """One conversation from a spec into OpenHands' file store."""
    sid = spec["session_id"].replace("-", "")
    folder = file_store / "sessions" / sid
    (folder / "events").mkdir(parents=True, exist_ok=True)
    for event in events_of(spec):
        (folder / "events" / f"{event['id']}.json").write_text(json.dumps(event), encoding="utf-8")
    (folder / "metadata.json").write_text(json.dumps({
        "conversation_id": sid, "title": spec.get("title"), "selected_repository": None,
        "created_at": spec["started_at"], "llm_model": spec.get("model")}), encoding="utf-8")
    return sid
