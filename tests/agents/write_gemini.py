"""Write Gemini CLI sessions from a neutral spec, in Gemini CLI's own on-disk formats.

    write_session(root, spec)                    -> [chat file]   JSON Lines (2026-04 on)
    write_session(root, spec, layout="json")     -> [chat file]   one JSON document (2025-08 … 2026-04)
    write_session(root, spec, project="hash")    -> the project folder named by the SHA-256 of the cwd
                                                    (before 2026) instead of a short name

`root` is the `.gemini` folder. The spec (a generated corpus's neutral form):

    {"session_id", "cwd", "started_at" (ISO), "model", "title" (or None),
     "turns": [{"prompt", "at" (ISO), "assistant", "input_tokens", "output_tokens",
                "calls": [{"batch", "kind": read|write|edit|shell|search, "path", "command",
                           "content", "old", "new", "output", "error", "exit_code"}]}]}

As Gemini CLI writes them: `tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl`, the
project folder a short name with `.project_root` and a `projects.json` entry (or the hash);
each prompt a `user` message; each batch of calls one `gemini` message whose `toolCalls` are
the batch, followed (JSON Lines) by the `user` message of their `functionResponse`s; the answer a
last `gemini` message carrying the turn's tokens (written twice in JSON Lines, as Gemini CLI
does when the usage arrives after the text). Tools: read_file, write_file, replace,
run_shell_command, grep_search. A failed shell call reports its exit code ("Exit Code: n",
status "success", as Gemini CLI records it); any other failed call has status "error". The
title is the session's `summary`. Each prompt is also logged in the project's `logs.json`.

Standard library only; imports nothing from jacked.
"""
from __future__ import annotations

import difflib
import hashlib
import json
import re
from datetime import datetime, timedelta, UTC
from pathlib import Path
from typing import Any

TOOLS = {"read": "read_file", "write": "write_file", "edit": "replace", "shell": "run_shell_command",
         "search": "grep_search"}


def _dt(ts: str) -> datetime:
    d = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return d if d.tzinfo else d.replace(tzinfo=UTC)


def _iso(d: datetime) -> str:
    return d.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _slug(text: str) -> str:
    return re.sub(r"^-|-$", "", re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", text.lower()))) or "project"


def project_folder(root: Path, cwd: str, project: str = "slug") -> Path:
    """The project's folder under `tmp/`, registered as Gemini CLI registers it."""
    tmp = root / "tmp"
    if project == "hash":
        folder = tmp / hashlib.sha256(cwd.encode()).hexdigest()
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    registry_path = root / "projects.json"
    registry = json.loads(registry_path.read_text()) if registry_path.is_file() else {"projects": {}}
    slug = registry["projects"].get(cwd)
    if slug is None:
        base, n = _slug(cwd.rstrip("/").rsplit("/", 1)[-1]), 0
        taken = set(registry["projects"].values())
        slug = base
        while slug in taken:
            n += 1
            slug = f"{base}-{n}"
        registry["projects"][cwd] = slug
        root.mkdir(parents=True, exist_ok=True)
        registry_path.write_text(json.dumps(registry, indent=2))
    folder = tmp / slug
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".project_root").write_text(cwd)
    return folder


def _file_diff(path: str, before: str, after: str) -> str:
    name = path.rsplit("/", 1)[-1]
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), f"{name}\tCurrent", f"{name}\tProposed",
                                 lineterm="")
    return "Index: " + name + "\n" + "=" * 67 + "\n" + "\n".join(lines) + "\n"


def _tool_call(call: dict[str, Any], call_id: str, when: str, pid: int) -> dict[str, Any]:
    kind = call["kind"]
    name = TOOLS[kind]
    path = call.get("path") or ""
    output = call.get("output") or ""
    failed = bool(call.get("error"))
    display: Any = output
    if kind == "read":
        args: dict[str, Any] = {"file_path": path}
    elif kind == "write":
        args = {"file_path": path, "content": call.get("content") or ""}
        if not failed:
            display = {"fileDiff": _file_diff(path, "", args["content"]), "fileName": path.rsplit("/", 1)[-1],
                       "filePath": path, "originalContent": "", "newContent": args["content"], "isNewFile": True}
            output = output or f"Successfully created and wrote to new file: {path}."
    elif kind == "edit":
        old, new = call.get("old") or "", call.get("new") or ""
        args = {"file_path": path, "old_string": old, "new_string": new, "instruction": "Apply the change"}
        if not failed:
            display = {"fileDiff": _file_diff(path, old, new), "fileName": path.rsplit("/", 1)[-1], "filePath": path,
                       "originalContent": old, "newContent": new}
            output = output or f"Successfully modified file: {path} (1 replacements)."
    elif kind == "shell":
        args = {"command": call.get("command") or "", "description": "Run a command"}
    else:
        args = {"pattern": call.get("command") or "", "dir_path": path or "."}
    status = "success"
    response: dict[str, Any] = {"output": output}
    if kind == "shell":
        code = call.get("exit_code")
        if failed and not code:
            status, response = "error", {"error": output}
        else:
            text = f"Output: {output or '(empty)'}"
            if code:
                text += f"\nExit Code: {code}"
            response = {"output": text + f"\nProcess Group PGID: {pid}"}
    elif failed:
        status, response = "error", {"error": output}
    return {"id": call_id, "name": name, "args": args,
            "result": [{"functionResponse": {"id": call_id, "name": name, "response": response}}],
            "status": status, "timestamp": when, "resultDisplay": display, "displayName": name,
            "description": "", "renderOutputAsMarkdown": kind != "shell"}


def _tokens(inp: int, out: int) -> dict[str, int]:
    return {"input": inp, "output": out, "cached": 0, "thoughts": 0, "tool": 0, "total": inp + out}


def messages(spec: dict[str, Any]) -> list[tuple[dict[str, Any], bool]]:
    """The session's messages in order, each with whether Gemini CLI writes it twice (JSONL)."""
    out: list[tuple[dict[str, Any], bool]] = []
    sid = spec["session_id"]
    model = spec.get("model") or "gemini-2.5-pro"
    for t_i, turn in enumerate(spec["turns"]):
        at = _dt(turn["at"])
        out.append(({"id": f"{sid[:8]}-u{t_i}", "timestamp": _iso(at), "type": "user",
                     "content": [{"text": turn["prompt"]}]}, False))
        batches: dict[int, list[dict[str, Any]]] = {}
        for call in turn.get("calls") or []:
            batches.setdefault(int(call.get("batch", 0)), []).append(call)
        step = 0
        for b_i, calls in enumerate(batches.values()):
            step += 2
            when = _iso(at + timedelta(seconds=step))
            tool_calls = [_tool_call(c, f"{TOOLS[c['kind']]}_{t_i}_{b_i}_{c_i}", _iso(at + timedelta(seconds=step + 1)),
                                     1000 + t_i * 100 + b_i * 10 + c_i)
                          for c_i, c in enumerate(calls)]
            out.append(({"id": f"{sid[:8]}-g{t_i}-{b_i}", "timestamp": when, "type": "gemini", "content": "",
                         "thoughts": [], "model": model, "toolCalls": tool_calls}, False))
            out.append(({"id": f"{sid[:8]}-r{t_i}-{b_i}", "timestamp": _iso(at + timedelta(seconds=step + 1)),
                         "type": "user", "content": [tc["result"][0] for tc in tool_calls]}, False))
        out.append(({"id": f"{sid[:8]}-a{t_i}", "timestamp": _iso(at + timedelta(seconds=step + 2)), "type": "gemini",
                     "content": turn.get("assistant") or "", "thoughts": [], "model": model,
                     "tokens": _tokens(int(turn.get("input_tokens") or 0), int(turn.get("output_tokens") or 0))}, True))
    return out


def write_session(root: Path, spec: dict[str, Any], layout: str = "jsonl", project: str = "slug") -> list[Path]:
    """Write one session under `root` (the `.gemini` folder); returns the chat file written."""
    folder = project_folder(root, spec["cwd"], project)
    chats = folder / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    sid = spec["session_id"]
    start = _dt(spec["started_at"])
    msgs = messages(spec)
    last = max([_dt(m["timestamp"]) for m, _ in msgs] or [start])
    meta = {"sessionId": sid, "projectHash": hashlib.sha256(spec["cwd"].encode()).hexdigest(),
            "startTime": _iso(start), "lastUpdated": _iso(last), "kind": "main"}
    name = f"session-{_iso(start)[:16].replace(':', '-')}-{sid[:8]}"
    if layout == "json":
        doc = dict(meta, messages=[m for m, _ in msgs])
        if spec.get("title"):
            doc["summary"] = spec["title"]
        path = chats / f"{name}.json"
        path.write_text(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        lines = [dict(meta, lastUpdated=_iso(start))]
        for m, twice in msgs:
            if twice:
                lines.append({k: v for k, v in m.items() if k != "tokens"})
            lines.append(m)
            lines.append({"$set": {"lastUpdated": m["timestamp"]}})
        if spec.get("title"):
            lines.append({"$set": {"summary": spec["title"]}})
        path = chats / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in lines))
    logs_path = folder / "logs.json"
    logs = json.loads(logs_path.read_text()) if logs_path.is_file() else []
    for i, turn in enumerate(spec["turns"]):
        logs.append({"sessionId": sid, "messageId": i, "type": "user", "message": turn["prompt"],
                     "timestamp": _iso(_dt(turn["at"]))})
    logs_path.write_text(json.dumps(logs, indent=2, ensure_ascii=False))
    return [path]
