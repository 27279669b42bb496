"""Write Cline-family tasks (Cline, Roo Code, Kilo Code) from a neutral spec, as the extension
records them in `ui_messages.json`.

    write_session(root, spec) -> [ui_messages.json]
    expected_calls(turn)      -> (calls, errors) the task's messages can tell of that turn

`root` is the extension's storage folder (`globalStorage/<extension id>`, or `JACKED_CLINE_DIR`
and the like); the task goes to `tasks/<session id>/`. The spec is the one of `write_gemini.py`.

As Cline writes a task (`src/core/task/index.ts`, `src/core/task/tools/`, cline/cline
`791d2389966d927396830470c51d456d04687b69^`): the first prompt a `say: "task"`, later ones
`say: "user_feedback"`; each model request a `say: "api_req_started"` whose text is JSON with
the request sent (the prompt and the environment details naming the workspace, or the last
calls' results as `[<tool> for '<path>'] Result:` sections) and its tokens; each call of a batch
a `say: "tool"` (JSON: readFile, newFileCreated, editedExistingFile with a SEARCH/REPLACE diff,
searchFiles) or a `say: "command"` with its `command_output`; the answer a
`say: "completion_result"`. A failed edit is followed by `diff_error`; any other failed call but
a command reports "The tool execution failed …" as its result. Cline records no exit code: a
command that failed is not told apart (`expected_calls`).

Standard library only; imports nothing from jacked.
"""
from __future__ import annotations

import json
from datetime import datetime, UTC
from pathlib import Path
from typing import Any

TOOLS = {"read": "read_file", "write": "write_to_file", "edit": "replace_in_file", "search": "search_files",
         "shell": "execute_command"}


def expected_calls(turn: dict[str, Any]) -> tuple[int, int]:
    calls = turn["calls"]
    return len(calls), sum(1 for c in calls if c["error"] and c["kind"] != "shell")


def _ms(ts: str) -> int:
    d = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return int((d if d.tzinfo else d.replace(tzinfo=UTC)).timestamp() * 1000)


def _call_messages(call: dict[str, Any], at: int) -> list[dict[str, Any]]:
    kind, path = call["kind"], call.get("path") or ""
    if kind == "shell":
        return [{"ts": at, "type": "say", "say": "command", "text": call.get("command") or ""},
                {"ts": at + 1, "type": "say", "say": "command_output", "text": call.get("output") or ""}]
    if kind == "read":
        data: dict[str, Any] = {"tool": "readFile", "path": path, "content": path}
    elif kind == "write":
        data = {"tool": "newFileCreated", "path": path, "content": call.get("content") or ""}
    elif kind == "edit":
        data = {"tool": "editedExistingFile", "path": path,
                "diff": f"------- SEARCH\n{(call.get('old') or '').rstrip(chr(10))}\n=======\n"
                        f"{(call.get('new') or '').rstrip(chr(10))}\n+++++++ REPLACE"}
    else:
        data = {"tool": "searchFiles", "path": path, "regex": call.get("command") or "", "content": call.get("output") or ""}
    out = [{"ts": at, "type": "say", "say": "tool", "text": json.dumps(data)}]
    if kind == "edit" and call["error"]:
        out.append({"ts": at + 1, "type": "say", "say": "diff_error", "text": path})
    return out


def _result(call: dict[str, Any]) -> str:
    name, target = TOOLS[call["kind"]], call.get("command") if call["kind"] == "shell" else call.get("path")
    output = call.get("output") or ""
    if call["error"] and call["kind"] != "shell":
        text = f"The tool execution failed with the following error:\n<error>\n{output}\n</error>"
    elif call["kind"] == "shell":
        text = f"Command executed.\nOutput:\n{output}"
    else:
        text = output or "(tool did not return anything)"
    return f"[{name} for '{target}'] Result:\n{text}"


def messages(spec: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    env = f"<environment_details>\n# Current Working Directory ({spec['cwd']}) Files\n</environment_details>"
    model = {"providerId": "anthropic", "modelId": spec.get("model") or "claude-sonnet-4-5", "mode": "act"}
    for t_i, turn in enumerate(spec["turns"]):
        at = _ms(turn["at"])
        out.append({"ts": at, "type": "say", "say": "task" if t_i == 0 else "user_feedback", "text": turn["prompt"]})
        batches: dict[int, list[dict[str, Any]]] = {}
        for call in turn.get("calls") or []:
            batches.setdefault(int(call.get("batch", 0)), []).append(call)
        request = (f"<task>\n{turn['prompt']}\n</task>" if t_i == 0 else f"<feedback>\n{turn['prompt']}\n</feedback>")
        tokens = {"tokensIn": int(turn.get("input_tokens") or 0), "tokensOut": int(turn.get("output_tokens") or 0)}
        step = at + 10
        for calls in [*batches.values(), []]:
            out.append({"ts": step, "type": "say", "say": "api_req_started", "modelInfo": model,
                        "text": json.dumps({"request": f"{request}\n\n{env}", **tokens, "cacheWrites": 0,
                                            "cacheReads": 0, "cost": 0.0})})
            tokens = {"tokensIn": 0, "tokensOut": 0}
            for c_i, call in enumerate(calls):
                out.extend(_call_messages(call, step + 10 + c_i * 5))
            request = "\n\n".join(_result(c) for c in calls)
            step += 100
        out.append({"ts": step, "type": "say", "say": "completion_result", "text": turn.get("assistant") or ""})
    return out


def write_session(root: Path, spec: dict[str, Any]) -> list[Path]:
    task = root / "tasks" / spec["session_id"]
    task.mkdir(parents=True, exist_ok=True)
    path = task / "ui_messages.json"
    path.write_text(json.dumps(messages(spec), ensure_ascii=False), encoding="utf-8")
    return [path]
