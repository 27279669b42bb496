"""An independent count of the Copilot Chat sessions in a VS Code user folder (`Code/User`).

Standard library only and nothing from jacked.

    python tests/agents/count_copilot_vscode.py USER_DIR [--json]

Rules, as VS Code keeps a chat (microsoft/vscode `chatModel.ts`, `objectMutationLog.ts`):
* a session is `workspaceStorage/<hash>/chatSessions/<id>.json` or `.jsonl` (the `.jsonl` when
  both), or the same under `globalStorage/emptyWindowChatSessions/`; a `.json` that is not whole
  JSON is not counted (listed under `unreadable`);
* a `.jsonl` is replayed: `kind` 0 the state, 1 set the value at path `k`, 2 cut the array at `k`
  to `i` and append `v`, 3 remove; a line that is not JSON is passed over;
* a turn is each entry of `requests`;
* a tool call is each response part of kind `toolInvocationSerialized` or `textEditGroup`; it
  failed when `resultDetails.isError` is true or the user refused it;
* refused: parts whose `isConfirmed` is false or `{"type": 0}` (denied) or `{"type": 5}`
  (skipped); approved: `{"type": 4}` (the user allowed it when asked); interrupted: requests
  with `isCanceled` true;
* files edited: the distinct `uri.path` of the `textEditGroup` parts. No tokens are kept.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _replay(path: Path) -> Any:
    state: Any = None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if entry.get("kind") == 0:
            state = entry.get("v")
            continue
        keys = entry.get("k") or []
        try:
            node = state
            for key in keys[:-1]:
                node = node[key]
            last = keys[-1]
            if entry.get("kind") == 1:
                node[last] = entry.get("v")
            elif entry.get("kind") == 2:
                items = node[last] if isinstance(node, dict) and isinstance(node.get(last), list) else []
                if isinstance(entry.get("i"), int):
                    items = items[: entry["i"]]
                node[last] = items + list(entry.get("v") or [])
            elif entry.get("kind") == 3:
                node[last] = None
        except (KeyError, IndexError, TypeError):
            continue
    return state


def _sessions(user: Path) -> tuple[dict[str, Path], list[str]]:
    folders = sorted((user / "workspaceStorage").glob("*/chatSessions"))
    folders.append(user / "globalStorage" / "emptyWindowChatSessions")
    files: dict[str, Path] = {}
    for folder in folders:
        for p in sorted(folder.glob("*.json")) + sorted(folder.glob("*.jsonl")):  # the log wins
            files[p.stem] = p
    return files, []


def count(user: Path) -> dict[str, Any]:
    files, unreadable = _sessions(user)
    by_session: dict[str, dict[str, int]] = {}
    for sid, path in files.items():
        if path.suffix == ".jsonl":
            data = _replay(path)
        else:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                unreadable.append(str(path))
                continue
        requests = [r for r in (data or {}).get("requests") or [] if isinstance(r, dict)]
        calls = errors = refused = approved = 0
        edited: set[str] = set()
        for req in requests:
            for part in req.get("response") or []:
                if not isinstance(part, dict) or part.get("kind") not in ("toolInvocationSerialized", "textEditGroup"):
                    continue
                calls += 1
                details = part.get("resultDetails")
                failed = isinstance(details, dict) and details.get("isError") is True
                confirmed = part.get("isConfirmed")
                reason = confirmed.get("type") if isinstance(confirmed, dict) else None
                if confirmed is False or reason in (0, 5):
                    refused += 1
                    failed = True
                approved += reason == 4
                errors += failed
                if part.get("kind") == "textEditGroup":
                    edited.add(part["uri"]["path"])
        by_session[sid] = {"turns": len(requests), "tool_calls": calls, "errors": errors,
                           "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
                           "rejected": refused, "approved": approved, "interrupted": sum(r.get("isCanceled") is True for r in requests),
                           "files_edited": len(edited)}
    return {"sessions": len(by_session), "unreadable": unreadable, "by_session": by_session,
            "turns": sum(s["turns"] for s in by_session.values()),
            "tool_calls": sum(s["tool_calls"] for s in by_session.values())}


if __name__ == "__main__":
    result = count(Path(sys.argv[1]))
    if "--json" in sys.argv:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['sessions']} sessions, {result['turns']} turns, {result['tool_calls']} tool calls, "
              f"{len(result['unreadable'])} unreadable")
