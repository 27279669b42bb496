"""Write Codex CLI sessions from a neutral spec, in Codex's own rollout format.

    write_session(root, spec)                     -> the rollout written (0.4x–0.5x envelope lines)
    write_session(root, spec, layout="legacy")    -> the rollout written (spring 2025: bare items)

`root` is CODEX_HOME; the file goes to `sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl`.
The spec (a generated corpus's neutral form):

    {"session_id", "cwd", "started_at" (ISO), "model", "title" (or None),
     "turns": [{"prompt", "at" (ISO), "assistant", "input_tokens", "output_tokens",
                "calls": [{"batch", "kind": read|write|edit|shell|search, "path", "command",
                           "content", "old", "new", "output", "error", "exit_code"}]}]}

As Codex writes them: a turn opens with `task_started`, the injected environment context (first
turn), `turn_context` and the prompt twice (a user `message` item and a `user_message` event).
Each batch of calls is one model response: a `reasoning` item, its calls, their outputs, then a
`token_count`; the answer is a last response (assistant `message`, `agent_message` event,
`token_count`) before `task_complete`. Reads, searches and commands are `shell` calls (Codex
reads files with the shell) whose output is the JSON `{output, metadata: {exit_code}}`; writes
and edits are `apply_patch` custom tool calls. The turn's tokens are spread over its responses
(each gets some, the last the remainder), with `input_tokens` counting the cached part as OpenAI
does, so jacked's input + cache reads per turn are the spec's `input_tokens`.

Standard library only; imports nothing from jacked.
"""
from __future__ import annotations

import json
import shlex
from datetime import datetime, timedelta, UTC
from pathlib import Path
from typing import Any

CLI_VERSION = "0.46.0"


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(UTC)


def _iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _usage(i: int, c: int, o: int) -> dict[str, int]:
    return {"input_tokens": i, "cached_input_tokens": c, "output_tokens": o, "reasoning_output_tokens": 0,
            "total_tokens": i + o}


def _split(total: int, n: int) -> list[int]:
    base = total // n
    return [base] * (n - 1) + [total - base * (n - 1)]


def _patch(call: dict[str, Any]) -> str:
    path = call.get("path") or "file.txt"
    if call["kind"] == "write":
        body = "\n".join("+" + ln for ln in str(call.get("content") or "").splitlines())
        return f"*** Begin Patch\n*** Add File: {path}\n{body}\n*** End Patch\n"
    old = "\n".join("-" + ln for ln in str(call.get("old") or "").splitlines())
    new = "\n".join("+" + ln for ln in str(call.get("new") or "").splitlines())
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n{old}\n{new}\n*** End Patch\n"


def _shell_command(call: dict[str, Any]) -> str:
    kind, path = call["kind"], call.get("path")
    if kind == "read":
        return f"sed -n '1,200p' {shlex.quote(path or '.')}"
    if kind == "search":
        return f"rg -n {shlex.quote(str(call.get('command') or ''))} {shlex.quote(path or '.')}"
    return str(call.get("command") or "true")


def write_session(root: Path, spec: dict[str, Any], layout: str = "envelope") -> Path:
    sid = spec["session_id"]
    start = _parse(spec["started_at"])
    folder = root / "sessions" / start.strftime("%Y/%m/%d")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-{start.strftime('%Y-%m-%dT%H-%M-%S')}-{sid}.jsonl"
    model = spec.get("model") or "gpt-5-codex"
    cwd = spec.get("cwd") or "/"
    lines: list[dict[str, Any]] = []
    clock = [start]

    def emit(kind: str, payload: dict[str, Any], step_ms: int = 10) -> None:
        clock[0] += timedelta(milliseconds=step_ms)
        lines.append({"timestamp": _iso(clock[0]), "type": kind, "payload": payload})

    emit("session_meta", {"id": sid, "timestamp": _iso(start), "cwd": cwd, "originator": "codex_cli_rs",
                          "cli_version": CLI_VERSION, "instructions": None, "source": "cli", "model_provider": "openai"})
    total = {"i": 0, "c": 0, "o": 0}
    for n, turn in enumerate(spec["turns"], 1):
        at = _parse(turn["at"]) if turn.get("at") else clock[0]
        clock[0] = max(clock[0], at)
        turn_id = f"{sid[:8]}-turn-{n}"
        emit("event_msg", {"type": "task_started", "turn_id": turn_id, "model_context_window": 272000})
        if n == 1:
            emit("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text":
                 f"<environment_context>\n  <cwd>{cwd}</cwd>\n  <approval_policy>on-request</approval_policy>\n"
                 "</environment_context>"}]})
        emit("turn_context", {"turn_id": turn_id, "cwd": cwd, "approval_policy": "on-request",
                              "sandbox_policy": {"type": "workspace-write"}, "model": model, "summary": "auto"})
        emit("response_item", {"type": "message", "role": "user",
                               "content": [{"type": "input_text", "text": turn["prompt"]}]})
        emit("event_msg", {"type": "user_message", "message": turn["prompt"], "images": []})
        batches: dict[int, list[dict[str, Any]]] = {}
        for call in turn.get("calls") or []:
            batches.setdefault(int(call.get("batch") or 0), []).append(call)
        responses = len(batches) + 1
        ins = _split(int(turn.get("input_tokens") or 0), responses)
        outs = _split(int(turn.get("output_tokens") or 0), responses)

        def usage(k: int, ins: list[int] = ins, outs: list[int] = outs) -> None:
            i, o = ins[k], outs[k]
            if not i and not o:
                return
            c = i * 3 // 4
            total["i"] += i
            total["c"] += c
            total["o"] += o
            emit("event_msg", {"type": "token_count", "info": {
                "total_token_usage": _usage(total["i"], total["c"], total["o"]),
                "last_token_usage": _usage(i, c, o), "model_context_window": 272000}, "rate_limits": None})

        for k, (_, calls) in enumerate(sorted(batches.items())):
            emit("response_item", {"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gAAA"},
                 step_ms=800)
            ids = []
            for j, call in enumerate(calls):
                call_id = f"call_{n}_{k}_{j}"
                ids.append(call_id)
                if call["kind"] in ("write", "edit"):
                    emit("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": call_id,
                                           "name": "apply_patch", "input": _patch(call)})
                else:
                    emit("response_item", {"type": "function_call", "name": "shell", "call_id": call_id,
                                           "arguments": json.dumps({"command": ["bash", "-lc", _shell_command(call)],
                                                                    "workdir": cwd, "timeout_ms": 120000})})
            for call_id, call in zip(ids, calls):
                code = call.get("exit_code")
                code = int(code) if code is not None else (1 if call.get("error") else 0)
                output = str(call.get("output") or "")
                if call["kind"] in ("write", "edit"):
                    output = output if code else (output or f"Success. Updated the following files:\nM {call.get('path')}\n")
                    body = json.dumps({"output": output, "metadata": {"exit_code": code, "duration_seconds": 0.0}})
                    emit("response_item", {"type": "custom_tool_call_output", "call_id": call_id, "output": body},
                         step_ms=300)
                else:
                    body = json.dumps({"output": output, "metadata": {"exit_code": code, "duration_seconds": 0.2}})
                    emit("response_item", {"type": "function_call_output", "call_id": call_id, "output": body},
                         step_ms=300)
            usage(k)
        answer = turn.get("assistant") or ""
        if answer:
            emit("response_item", {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": answer}]}, step_ms=900)
            emit("event_msg", {"type": "agent_message", "message": answer})
        usage(responses - 1)
        emit("event_msg", {"type": "task_complete", "turn_id": turn_id, "last_agent_message": answer or None})
    if spec.get("title"):
        emit("event_msg", {"type": "thread_name_updated", "thread_id": sid, "thread_name": spec["title"]})
    if layout == "legacy":
        lines = _legacy(lines)
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return path


def _legacy(lines: list[dict[str, Any]]) -> list[Any]:
    """The spring-2025 shape of the same session: a bare header line, then the response items
    alone (no events, no turn context, no timestamps), with `record_type: state` markers."""
    meta = lines[0]["payload"]
    out: list[Any] = [{"id": meta["id"], "timestamp": meta["timestamp"], "instructions": None}, {"record_type": "state"}]
    for line in lines[1:]:
        if line["type"] == "response_item":
            out.append(line["payload"])
        elif line["type"] == "event_msg" and line["payload"].get("type") == "task_complete":
            out.append({"record_type": "state"})
    return out
