"""Write Qwen Code sessions from a neutral spec, as Qwen Code 2025-11 on records them.

    write_session(root, spec) -> [chat file]

`root` is the `.qwen` folder (`QWEN_RUNTIME_DIR`). The spec is the one of `write_gemini.py`,
whose messages (the calls, their results and displays, as Gemini CLI builds them: Qwen Code
kept those tools) are recorded here as Qwen Code's JSONL records
(`packages/core/src/services/chatRecordingService.ts`):
`projects/<cwd, non-alphanumerics as dashes>/chats/<session id>.jsonl`, one record per line,
chained by `parentUuid`; a prompt a `user` record, a batch of calls one `assistant` record of
`functionCall` parts followed by one `tool_result` record per call (its `functionResponse` and
`toolCallResult` status), the answer an `assistant` record with the turn's `usageMetadata`,
and the title a `custom_title` system record.

Standard library only; imports nothing from jacked.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

_spec = importlib.util.spec_from_file_location("write_gemini_for_qwen", Path(__file__).with_name("write_gemini.py"))
assert _spec and _spec.loader
write_gemini = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(write_gemini)


def project_name(cwd: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in cwd)


def records(spec: dict[str, Any]) -> list[dict[str, Any]]:
    sid, cwd = spec["session_id"], spec["cwd"]
    out: list[dict[str, Any]] = []

    def add(rtype: str, ts: str, **kw: Any) -> None:
        out.append({"uuid": f"{sid[:8]}-{len(out):04d}", "parentUuid": out[-1]["uuid"] if out else None,
                    "sessionId": sid, "timestamp": ts, "type": rtype, "cwd": cwd, "version": "0.3.0",
                    "gitBranch": "main", **kw})

    for msg, _twice in write_gemini.messages(spec):
        if msg["type"] == "user":
            if any("functionResponse" in p for p in msg["content"]):
                continue  # the results: written below, one record per call
            add("user", msg["timestamp"], message={"role": "user", "parts": msg["content"]})
        elif msg.get("toolCalls"):
            add("assistant", msg["timestamp"], model=msg["model"], message={"role": "model", "parts": [
                {"functionCall": {"id": tc["id"], "name": tc["name"], "args": tc["args"]}} for tc in msg["toolCalls"]]})
            for tc in msg["toolCalls"]:
                add("tool_result", tc["timestamp"], message={"role": "user", "parts": tc["result"]},
                    toolCallResult={"callId": tc["id"], "status": tc["status"], "resultDisplay": tc["resultDisplay"]})
        else:
            tokens = msg.get("tokens") or {}
            add("assistant", msg["timestamp"], model=msg["model"],
                message={"role": "model", "parts": [{"text": msg["content"]}] if msg["content"] else []},
                usageMetadata={"promptTokenCount": tokens.get("input", 0), "candidatesTokenCount": tokens.get("output", 0),
                               "totalTokenCount": tokens.get("total", 0)})
    if spec.get("title") and out:
        add("system", out[-1]["timestamp"], subtype="custom_title",
            systemPayload={"customTitle": spec["title"], "titleSource": "auto"})
    return out


def write_session(root: Path, spec: dict[str, Any]) -> list[Path]:
    """Write one session under `root` (the `.qwen` folder); returns the chat file written."""
    chats = root / "projects" / project_name(spec["cwd"]) / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    path = chats / f"{spec['session_id']}.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records(spec)),
                    encoding="utf-8")
    return [path]
