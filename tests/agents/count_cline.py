"""An independent count of Cline-family task folders (Cline, Roo Code, Kilo Code), straight from
their `ui_messages.json`.

Standard library only and nothing from jacked.

    python tests/agents/count_cline.py CONFIG_DIR EXTENSION_ID [--json]

`CONFIG_DIR` holds the editors' user folders (`~/.config` on Linux); every
`<editor>/User/globalStorage/<EXTENSION_ID>/tasks/<id>/` is counted. Rules, as the extension
writes a task (`src/shared/ExtensionMessage.ts`, `src/core/task/`):
* a session is a task folder with `ui_messages.json` (or, before 2024-10, `claude_messages.json`);
  a file cut short counts the complete messages before the cut;
* messages with `partial: true` are not counted;
* a turn is a `say` of `task` or `user_feedback` with text or images, or the file's first
  counted message when it is a `say: "text"` (how Roo Code and early Cline open a task);
* a tool call is an `ask` or `say` of `tool`, `command`, `use_mcp_server` or
  `browser_action_launch`; it failed when a `diff_error`, `clineignore_error` or
  `command_permission_denied` comes after it before the next call, or when the next
  `api_req_started` request's `[<tool> for '…'] Result:` section for it starts with
  "The user denied this operation." or "The tool execution failed";
* refused: a call whose result section starts "The user denied this operation." (a request with
  no such sections but that sentence: as many of the calls last asked for as it says it);
  interrupted: an `api_req_started` whose `cancelReason` is "user_cancelled";
* tokens: `tokensIn`, `tokensOut`, `cacheReads` of each `api_req_started` (JSON in its text).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

CALLS = ("tool", "command", "use_mcp_server", "browser_action_launch")
FAILS = ("diff_error", "clineignore_error", "rooignore_error", "command_permission_denied")
REFUSED_OR_FAILED = ("The user denied this operation.", "The tool execution failed", "Error executing", "<error>")
NAMES = {"readFile": "read_file", "editedExistingFile": "replace_in_file", "newFileCreated": "write_to_file",
         "appliedDiff": "apply_diff", "searchFiles": "search_files", "listFilesTopLevel": "list_files",
         "listFilesRecursive": "list_files", "codebaseSearch": "codebase_search", "newTask": "new_task"}


def _messages(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        data = json.loads(text)
        return data if isinstance(data, list) else []
    except ValueError:
        pass
    out, dec, i = [], json.JSONDecoder(), text.find("[") + 1
    while 0 < i < len(text):
        while i < len(text) and text[i] in " \r\n\t,":
            i += 1
        try:
            obj, i = dec.raw_decode(text, i)
        except ValueError:
            break
        out.append(obj)
    return out


def _name(m: dict[str, Any], kind: str) -> str:
    if kind == "command":
        return "execute_command"
    if kind == "tool":
        try:
            tool = json.loads(m.get("text") or "{}").get("tool", "")
        except ValueError:
            tool = ""
        return NAMES.get(tool, tool)
    return "mcp" if kind == "use_mcp_server" else "browser_action"


def count_messages(messages: list[Any]) -> dict[str, int]:
    out = {"turns": 0, "tool_calls": 0, "errors": 0, "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
           "rejected": 0, "interrupted": 0}
    pending: list[list[Any]] = []  # [name, failed, asked] of the calls since the last request
    seen_text = False  # the file's first message, when a `say: "text"`, is the task (Roo Code, early Cline)
    for m in messages:
        if not isinstance(m, dict) or m.get("partial") is True:
            continue
        kind = m.get(m.get("type")) if m.get("type") in ("say", "ask") else None
        text = m.get("text") if isinstance(m.get("text"), str) else ""
        opens = m["type"] == "say" and kind == "text" and not seen_text
        seen_text = True
        if opens or m["type"] == "say" and kind in ("task", "user_feedback"):
            out["turns"] += bool(text.strip() or m.get("images") or m.get("files"))
        elif kind in CALLS:
            out["tool_calls"] += 1
            pending.append([_name(m, kind), False, m["type"] == "ask"])
        elif m["type"] == "say" and kind in FAILS and pending:
            pending[-1][1] = True
        elif m["type"] == "say" and kind == "api_req_started":
            try:
                info = json.loads(text)
            except ValueError:
                info = {}
            info = info if isinstance(info, dict) else {}
            request = info.get("request") if isinstance(info.get("request"), str) else ""
            sections = re.split(r"^\[(\w+)(?: for '.*?')?\] Result:\n?", request, flags=re.M)[1:]
            results = list(zip(sections[0::2], (s.strip() for s in sections[1::2])))
            for call in pending:
                match = next((r for r in results if r[0] == call[0]), None)
                if match is None and call[0] == "mcp" and results:
                    match = results[0]
                if match is not None:
                    results.remove(match)
                    call[1] = call[1] or match[1].startswith(REFUSED_OR_FAILED)
                    out["rejected"] += match[1].startswith("The user denied this operation.")
            if not sections and "The user denied this operation." in request:
                out["rejected"] += min(request.count("The user denied this operation."), sum(c[2] for c in pending))
            out["interrupted"] += info.get("cancelReason") == "user_cancelled"
            out["errors"] += sum(1 for c in pending if c[1])
            pending = []
            for key, field in (("input_tokens", "tokensIn"), ("output_tokens", "tokensOut"), ("cache_read_tokens", "cacheReads")):
                v = info.get(field)
                out[key] += v if isinstance(v, int) and v > 0 else 0
    out["errors"] += sum(1 for c in pending if c[1])
    return out


def count(config: Path, extension_id: str) -> dict[str, Any]:
    by_session: dict[str, dict[str, int]] = {}
    for task in sorted(config.glob(f"*/User/globalStorage/{extension_id}/tasks/*")):
        ui = next((task / n for n in ("ui_messages.json", "claude_messages.json") if (task / n).is_file()), None)
        if ui is not None:
            by_session[task.name] = count_messages(_messages(ui))
    total = {k: sum(c[k] for c in by_session.values()) for k in ("turns", "tool_calls", "errors", "rejected",
                                                                 "interrupted")}
    return {"sessions": len(by_session), **total, "by_session": by_session}


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--json"]
    result = count(Path(args[0]), args[1])
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
    else:
        print(f"sessions {result['sessions']}  turns {result['turns']}  tool calls {result['tool_calls']}  "
              f"errors {result['errors']}")
