"""An independent count of an OpenHands file store (`~/.openhands`), straight from its events.

Standard library only and nothing from jacked, so jacked's reading of the same folder is checked
against a second, deliberately plain reading rather than against itself.

    python tests/agents/count_openhands.py FILE_STORE [--json]

Rules, as OpenHands records a conversation (`sessions/<id>/` and
`users/<user>/conversations/<id>/`):
* its events are `events/<n>.json` (JSON objects), and events only `event_cache/*.json` pages hold
  (lists of events, by `id`); a conversation with no event file nor page is not counted;
* a turn is an event with `source` "user", `action` "message" and non-blank `args.content`;
* a tool call is an event with `source` "agent" and an `action` other than message, finish,
  system, start, recall, condensation, condensation_request, change_agent_state, null, reject,
  pause, resume, stop and loop_recovery, unless its `args.confirmation_state` (older:
  `is_confirmed`) is "awaiting_confirmation": OpenHands writes that action again, under a new id,
  once the user answers;
* approved: a call "confirmed" whose action had been awaiting confirmation (the agent action
  before it was the awaiting one); refused: a call "rejected" or answered by `user_rejected`;
* interrupted: a turn (from its prompt to the next) with an `agent_state_changed` observation to
  "stopped" or "paused", counted once;
* it failed when an observation whose `cause` is its `id` is `error` or `user_rejected`, or is a
  `run` whose `extras.metadata.exit_code` is an integer other than 0 and -1, or when its own
  `args.confirmation_state` is "rejected";
* tokens: the `usage` of each distinct `tool_call_metadata.model_response.id` of agent actions
  (`prompt_tokens`, `completion_tokens`), once per response.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

NOT_CALLS = {"message", "finish", "system", "start", "recall", "condensation", "condensation_request",
             "change_agent_state", "null", "reject", "pause", "resume", "stop", "loop_recovery"}


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _events(folder: Path) -> list[dict[str, Any]] | None:
    files = [p for p in (folder / "events").glob("*.json") if p.stem.isdigit()]
    pages = list((folder / "event_cache").glob("*.json"))
    if not files and not pages:
        return None
    by_id: dict[int, dict[str, Any]] = {}
    for path in files:
        event = _json(path)
        if isinstance(event, dict):
            by_id[int(path.stem)] = event
    for page in pages:
        events = _json(page)
        for event in events if isinstance(events, list) else []:
            if isinstance(event, dict) and isinstance(event.get("id"), int):
                by_id.setdefault(event["id"], event)
    return list(by_id.values())


def count_conversation(events: list[dict[str, Any]]) -> dict[str, int]:
    turns = approved = interrupted = 0
    calls: dict[Any, bool] = {}
    refused: set[Any] = set()
    responses: dict[str, dict[str, Any]] = {}
    awaiting = stopped = False
    for e in sorted(events, key=lambda e: e.get("id") if isinstance(e.get("id"), int) else -1):
        args = e.get("args") if isinstance(e.get("args"), dict) else {}
        if e.get("source") == "user" and e.get("action") == "message" and isinstance(args.get("content"), str) \
                and args["content"].strip():
            turns += 1
            stopped = False
        extras = e.get("extras") if isinstance(e.get("extras"), dict) else {}
        if e.get("observation") == "agent_state_changed" and extras.get("agent_state") in ("stopped", "paused") \
                and turns and not stopped:
            interrupted += 1
            stopped = True
        if e.get("source") == "agent" and isinstance(e.get("action"), str):
            state = args.get("confirmation_state", args.get("is_confirmed"))
            if e["action"] not in NOT_CALLS and state == "awaiting_confirmation":
                awaiting = True
            elif e["action"] not in NOT_CALLS:
                calls[e.get("id")] = state == "rejected"
                if state == "rejected":
                    refused.add(e.get("id"))
                approved += state == "confirmed" and awaiting
                awaiting = False
            meta = e.get("tool_call_metadata") if isinstance(e.get("tool_call_metadata"), dict) else {}
            response = meta.get("model_response") if isinstance(meta.get("model_response"), dict) else {}
            if isinstance(response.get("id"), str) and response["id"].strip():
                responses.setdefault(response["id"], response.get("usage") if isinstance(response.get("usage"),
                                                                                       dict) else {})
    for e in events:
        if e.get("cause") in calls and isinstance(e.get("observation"), str):
            extras = e.get("extras") if isinstance(e.get("extras"), dict) else {}
            meta = extras.get("metadata") if isinstance(extras.get("metadata"), dict) else {}
            code = meta.get("exit_code", extras.get("exit_code"))
            if e["observation"] == "user_rejected":
                refused.add(e["cause"])
            if e["observation"] in ("error", "user_rejected") or (
                    e["observation"] == "run" and type(code) is int and code not in (0, -1)):
                calls[e["cause"]] = True

    def tokens(key: str) -> int:
        return sum(u[key] for u in responses.values() if type(u.get(key)) is int)

    return {"turns": turns, "tool_calls": len(calls), "errors": sum(calls.values()),
            "input_tokens": tokens("prompt_tokens"), "output_tokens": tokens("completion_tokens"),
            "approved": approved, "rejected": len(refused), "interrupted": interrupted}


def count_dir(root: Path) -> dict[str, Any]:
    folders = sorted((root / "sessions").glob("*/")) + sorted((root / "users").glob("*/conversations/*/"))
    sessions: dict[str, dict[str, int]] = {}
    for folder in folders:
        events = _events(folder)
        if events is not None:
            sessions[folder.name] = count_conversation(events)
    totals = {k: sum(s[k] for s in sessions.values()) for k in
              ("turns", "tool_calls", "errors", "input_tokens", "output_tokens", "approved", "rejected",
               "interrupted")}
    totals["sessions"] = len(sessions)
    return {"sessions": sessions, "totals": totals}


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--json"]
    result = count_dir(Path(args[0]) if args else Path.home() / ".openhands")
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
    else:
        for sid, row in sorted(result["sessions"].items()):
            print(sid, " ".join(f"{k}={v}" for k, v in row.items()))
        print("totals", " ".join(f"{k}={v}" for k, v in result["totals"].items()))
