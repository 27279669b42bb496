"""An independent count of a GitHub Copilot CLI folder (`~/.copilot`), straight from its event logs.

Standard library only and nothing from jacked.

    python tests/agents/count_copilot.py COPILOT_DIR [--json]

Rules, as Copilot CLI logs a session (the Copilot SDK's `session-events.ts`):
* a session is `session-state/<id>/events.jsonl`, or (earlier) `session-state/<id>.jsonl`;
* events with an `agentId` or a `data.parentToolCallId` are a subagent's, not counted here;
* a turn is a `user.message` with non-blank `content`, not `isAutopilotContinuation`, and no
  `source` starting with `skill-`, `agent-` or `system`;
* a tool call is a distinct `toolCallId` among the `toolRequests` of `assistant.message` and the
  `tool.execution_start` / `tool.execution_complete` events; it failed when a
  `tool.execution_complete` says `success: false`, or when the user refused it (a
  `permission.completed` naming it with `result.kind` "denied-interactively-by-user": Copilot CLI
  1.0.x then writes no completion for it);
* the user's answers to permission prompts (`permission.completed`, `result.kind`): refused when
  "denied-interactively-by-user", approved when "approved", "approved-for-session" or
  "approved-for-location"; interrupted: each `abort` event;
* tokens per `assistant.usage`: inputTokens - cacheReadTokens, outputTokens, cacheReadTokens.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _events(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict):
            out.append(ev)
    return out


def _n(v: Any) -> int:
    return v if isinstance(v, int) and v > 0 else 0


def count_events(events: list[dict[str, Any]]) -> dict[str, int]:
    out = {"turns": 0, "tool_calls": 0, "errors": 0, "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
           "approved": 0, "rejected": 0, "interrupted": 0}
    calls: set[str] = set()
    failed: set[str] = set()
    for ev in events:
        data = ev.get("data") if isinstance(ev.get("data"), dict) else {}
        if ev.get("agentId") or data.get("parentToolCallId"):
            continue
        kind = ev.get("type")
        if kind == "user.message":
            source = data.get("source") if isinstance(data.get("source"), str) else ""
            out["turns"] += bool(str(data.get("content") or "").strip()) and data.get("isAutopilotContinuation") is not True \
                and not source.startswith(("skill-", "agent-", "system"))
        elif kind == "assistant.message":
            for req in data.get("toolRequests") or []:
                if isinstance(req, dict) and req.get("toolCallId"):
                    calls.add(req["toolCallId"])
        elif kind in ("tool.execution_start", "tool.execution_complete") and data.get("toolCallId"):
            calls.add(data["toolCallId"])
            if kind == "tool.execution_complete" and data.get("success") is False:
                failed.add(data["toolCallId"])
        elif kind == "permission.completed":
            result = data.get("result") if isinstance(data.get("result"), dict) else {}
            answer = result.get("kind")
            out["rejected"] += answer == "denied-interactively-by-user"
            out["approved"] += answer in ("approved", "approved-for-session", "approved-for-location")
            if answer == "denied-interactively-by-user" and data.get("toolCallId"):
                failed.add(data["toolCallId"])
        elif kind == "abort":
            out["interrupted"] += 1
        elif kind == "assistant.usage":
            cached = _n(data.get("cacheReadTokens"))
            out["input_tokens"] += max(0, _n(data.get("inputTokens")) - cached)
            out["output_tokens"] += _n(data.get("outputTokens"))
            out["cache_read_tokens"] += cached
    out["tool_calls"], out["errors"] = len(calls), len(failed)
    return out


def count(root: Path) -> dict[str, Any]:
    by_session: dict[str, dict[str, int]] = {}
    state = root / "session-state"
    for entry in sorted(state.iterdir()) if state.is_dir() else []:
        log = entry / "events.jsonl" if entry.is_dir() else entry
        if log.is_file() and log.suffix == ".jsonl":
            by_session.setdefault(entry.name if entry.is_dir() else entry.stem, count_events(_events(log)))
    total = {k: sum(c[k] for c in by_session.values()) for k in ("turns", "tool_calls", "errors")}
    return {"sessions": len(by_session), **total, "by_session": by_session}


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--json"]
    result = count(Path(args[0]) if args else Path.home() / ".copilot")
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
    else:
        print(f"sessions {result['sessions']}  turns {result['turns']}  tool calls {result['tool_calls']}  "
              f"errors {result['errors']}")
